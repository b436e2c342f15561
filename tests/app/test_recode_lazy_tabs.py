"""The Recode page's tabs are lazy (kanon_app.sections.lazy_tabs): only the open tab's body runs, and a click
inside a tab that changes what the rest of the app shows (a new version, other hierarchies, a message) reruns
the whole app, not only the tabs."""

from __future__ import annotations

from unittest import mock

import pytest
import streamlit.testing.v1.local_script_runner as local_script_runner
from streamlit.testing.v1 import AppTest

from kanon_core.treat import lattice

from .helpers import open_recode

QIS = ["BYSEX", "BYRACE", "BYPARED", "BYINCOME", "BYREGION"]
OTHER_TABS = {  # a widget each closed tab would draw
    "Optimal generalization": "w_gen_metric",
    "Single recode": "w_single_var",
    "Suggestions from MINUCs": "btn_sug_minucs",
    "Hierarchies": "w_hb_var",
}


@pytest.fixture
def page() -> AppTest:
    return open_recode(QIS)


def _widget_keys(at: AppTest) -> set[str]:
    return {w.key for w in [*at.button, *at.selectbox, *at.select_slider, *at.number_input]}


def _tabs_rerun(at: AppTest) -> AppTest:
    """Rerun the page as the browser does after a click inside the tabs: only their fragment runs.

    ``AppTest.run`` always reruns the whole app, so a page that forgot to rerun the app after such a click
    would pass; here the rerun request names the tabs' fragment, as the browser's does."""
    fragments = list(at._fragment_storage._fragments)
    assert len(fragments) == 1, f"the page's tabs are to be its one fragment; it has {len(fragments)}"
    fragment_id = fragments[0]
    real = local_script_runner.RerunData
    with mock.patch.object(local_script_runner, "RerunData",
                           lambda **kw: real(**kw, fragment_id_queue=[fragment_id])):
        return at.run()


def test_only_the_open_tab_runs(page, monkeypatch):
    """With "Levels" open (the default) no other tab's body runs: not the lattice of the optimal search (the
    costly part with a 100,000-level variable), nor any other tab's widgets. Opening a tab runs its body."""
    built = []
    real_build = lattice.build_problem
    monkeypatch.setattr(lattice, "build_problem", lambda *a, **kw: built.append(1) or real_build(*a, **kw))
    page.run()
    assert not page.exception
    keys = _widget_keys(page)
    assert "w_lvl_BYINCOME" in keys
    assert not keys & set(OTHER_TABS.values())
    assert not built

    page.session_state["w_recode_section"] = "Optimal generalization"
    page.run()
    assert not page.exception
    keys = _widget_keys(page)
    assert built and "w_gen_metric" in keys
    assert "w_lvl_BYINCOME" not in keys
    assert not keys & {v for tab, v in OTHER_TABS.items() if tab != "Optimal generalization"}


def test_applying_levels_inside_the_tabs_updates_the_version_shown_around_them(page):
    """The page above the tabs (and the sidebar, drawn in the same app run) shows the version just made."""
    page.select_slider(key="w_lvl_BYINCOME").set_value(2).run()
    page.button(key="btn_apply_levels").click()
    _tabs_rerun(page)
    assert not page.exception
    assert page.session_state["history"].current_id == 1
    assert any(c.value.startswith("Missing values count as") and "Version v1:" in c.value for c in page.caption)
    assert [s.value for s in page.success] == ["Generalization applied."]
    assert page.session_state["w_recode_section"] == "Levels"  # the tab stays open


def test_a_hierarchy_chosen_inside_the_tabs_is_said_and_used_by_the_page(page):
    """The scale override of the Hierarchies tab (a callback of kanon_app.hierarchy_ui) saves a hierarchy and
    says so: the page's message and its hierarchies are those after the click."""
    page.session_state["w_recode_section"] = "Hierarchies"
    page.run()
    page.selectbox(key="w_hb_var").set_value("BYREGION").run()
    page.radio(key="w_hb_scale_BYREGION").set_value("ordinal")
    _tabs_rerun(page)
    assert not page.exception
    saved = page.session_state["hierarchies"]["BYREGION"]
    assert [s.value for s in page.success] == ["BYREGION: the automatic hierarchy now treats its codes as ordinal."]
    groups = " → ".join(str(g) for g in saved.n_groups())
    assert f"In use: {saved.height} levels ({groups} values) — your own." in [c.value for c in page.caption]
