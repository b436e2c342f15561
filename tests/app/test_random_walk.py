"""An officer's random session: pages opened, k changed, missing values declared, levels, recodes, searches and
suppressions applied, versions undone and checked out, the report built, in random order (seeded), on 600
records of the sample. Whatever the order, no page fails, and the session's work stays reproducible: the
recipe of the current version replays on the same records to the same data with every step's recorded
result verified, and the project file reopens every version.

Single pages are tested one by one elsewhere; this walk finds what only an order of them shows (a page
reading state another page left, a version checked out under a page's memo)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from kanon_app.samples import load_sample
from kanon_core.project import Project
from kanon_core.recipe import Recipe

from .helpers import session_on

PAGES = ("data.py", "risk.py", "minucs.py", "recode.py", "suppress.py", "compare.py", "export.py")
PAGE_WEIGHTS = (1, 1, 1, 3, 1, 1, 1)  # Recode has five tabs
RECODE_TABS = ("Levels", "Optimal generalization", "Single recode", "Suggestions from MINUCs", "Hierarchies")
COMPARE_TABS = ("Weighted percentages", "Regression", "Bias and information loss")
JOBS = ("suppression", "generalize_search", "minucs", "report_html")


def _widget(at: AppTest, kind: str, key: str):
    return next((x for x in getattr(at, kind) if x.key == key), None)


def _click(at: AppTest, key: str) -> bool:
    """Click the button ``key`` when the page shows it enabled, then let the work it starts finish."""
    button = _widget(at, "button", key)
    if button is None or button.disabled:
        return False
    button.click().run()
    jobs = at.session_state.get("jobs", {})
    for name in JOBS:
        job = jobs.get(name)
        if job is not None and not job.done:
            job.wait(120)
    at.run()
    return True


def _open_tab(at: AppTest, key: str, tab: str, trail: list[str]) -> str:
    """Open the page's tab ``tab`` (its section key ``key``, bound to no widget) and say so in the trail."""
    at.session_state[key] = tab
    at.run()
    trail.append(f"tab {tab}")
    return tab


def _on_page(at: AppTest, page: str, rng: random.Random, trail: list[str]) -> None:
    """One random action on ``page`` (already open)."""
    if page == "risk.py":
        box = _widget(at, "number_input", "w_k")
        if box is not None:
            k = rng.choice((2, 3, 4))
            box.set_value(k).run()
            trail.append(f"k={k}")
    elif page == "data.py":
        roll = rng.random()
        if roll < 0.2:
            sem = _widget(at, "radio", "w_missing_sem")
            if sem is not None:
                sem.set_value(rng.choice(sem.options)).run()
                trail.append(f"missing {sem.value}")
                _click(at, "btn_apply_missing")
        elif roll < 0.5:
            var = _widget(at, "selectbox", "w_mc_var")
            if var is not None:
                var.set_value(rng.choice(var.options)).run()
                codes = next((x for x in at.text_input if x.key and x.key.startswith("w_mc_codes_")), None)
                if codes is not None:
                    codes.set_value(rng.choice(("-9", "1", "9, 99"))).run()
                    trail.append(f"declare {var.value} {codes.value}")
                    _click(at, "btn_mc")
    elif page == "minucs.py":
        if _click(at, "btn_find_minucs"):
            trail.append("find MINUCs")
            for section in ("Values to recode", "Records", "SUDA scores", "Violating QI sets"):
                at.session_state["w_minuc_section"] = section
                at.run()
    elif page == "suppress.py":
        model = _widget(at, "radio", "w_sup_model")
        if model is not None and rng.random() < 0.3:
            model.set_value(rng.choice(model.options)).run()
        if _click(at, "btn_run_suppress"):
            trail.append(f"suppress ({_widget(at, 'radio', 'w_sup_model').value})")
            if rng.random() < 0.6 and _click(at, "btn_apply_suppress"):
                trail.append("apply suppression")
    elif page == "recode.py":
        tab = _open_tab(at, "w_recode_section", rng.choice(RECODE_TABS), trail)
        if tab == "Levels":
            sliders = [s for s in at.select_slider if (s.key or "").startswith("w_lvl_")]
            for slider in rng.sample(sliders, min(2, len(sliders))):
                at.session_state[slider.key] = rng.randrange(len(slider.options))
            at.run()
            if rng.random() < 0.6 and _click(at, "btn_apply_levels"):
                trail.append("apply levels")
        elif tab == "Optimal generalization":
            if _click(at, "btn_gen_search") and rng.random() < 0.5 and _click(at, "btn_apply_search"):
                trail.append("apply generalization")
        elif tab == "Single recode":
            variable = _widget(at, "selectbox", "w_single_var")
            if variable is not None:
                variable.set_value(rng.choice(variable.options)).run()
            merge = next((x for x in at.multiselect if (x.key or "").startswith("w_single_merge_")), None)
            if merge is not None and len(merge.options) >= 3:
                at.session_state[merge.key] = rng.sample(range(len(merge.options)), 2)
                at.run()
                if _click(at, "btn_apply_single"):
                    trail.append(f"apply recode of {variable.value}")
        elif tab == "Suggestions from MINUCs" and rng.random() < 0.5:
            _click(at, "btn_sug_minucs")
    elif page == "compare.py":
        if _open_tab(at, "w_cmp_tab", rng.choice(COMPARE_TABS), trail) == "Regression":
            _click(at, "btn_cmp_fit")
    elif page == "export.py":
        minucs = _widget(at, "checkbox", "w_report_minucs")
        if minucs is not None:
            minucs.uncheck().run()
        if rng.random() < 0.5 and _click(at, "btn_build_report"):
            trail.append("report")


def _walk(seed: int, steps: int) -> tuple[AppTest, list[str], object]:
    rng = random.Random(seed)
    sample = load_sample("els")
    rows = np.sort(np.random.default_rng(seed).choice(sample.n_records, 600, replace=False))
    ds = sample.with_frame(sample.frame.iloc[rows].reset_index(drop=True))
    at = session_on(ds, timeout=300)
    trail: list[str] = []
    for _ in range(steps):
        page = rng.choices(PAGES, weights=PAGE_WEIGHTS)[0]
        at.switch_page(f"pages/{page}").run()
        _on_page(at, page, rng, trail)
        roll = rng.random()
        if roll < 0.12 and _click(at, "btn_undo"):
            trail.append("undo")
        elif roll < 0.18:
            targets = [b.key for b in at.button if (b.key or "").startswith("btn_goto_")]
            if targets:
                target = rng.choice(targets)
                _click(at, target)
                trail.append(target)
        assert not at.exception, (trail[-8:], [e.value for e in at.exception])
    return at, trail, ds


@pytest.mark.parametrize("seed", [3, 12])
def test_a_random_session_never_fails_and_replays(seed):
    at, trail, ds = _walk(seed, 40)
    history = at.session_state["history"]
    applied = sum(t.startswith("apply") for t in trail)
    assert applied >= 2 and len(history.versions) >= 3, trail  # the walk did treat the data
    recipe = Recipe.from_json(Recipe.from_history(history).to_json())
    replay = recipe.replay_checked(ds)
    assert replay.verified_steps == len(recipe.steps)  # each step's recorded result reproduced
    assert replay.history.current.dataset.frame.equals(history.current.dataset.frame)
    reopened = Project.from_json(Project.from_history(history, "sample.csv").to_json()).reopen(ds).history
    assert sorted(reopened.versions) == sorted(history.versions) and reopened.current_id == history.current_id
    for vid, version in history.versions.items():
        assert reopened.versions[vid].dataset.frame.equals(version.dataset.frame), vid
