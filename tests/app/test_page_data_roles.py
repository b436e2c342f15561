"""The Data page's getting-in path through AppTest: an upload is read at once and shows the role table
pre-filled with the suggestions, one button applies them as a recorded step and the count of records below
k appears; a failed upload keeps the "Load data" block open; the first-run guide and the glossary."""

from __future__ import annotations

import io

import pandas as pd
from streamlit.testing.v1 import AppTest

from kanon_app.roles_ui import edited_assignments
from kanon_core.glossary import GLOSSARY
from kanon_core.guidance import DIRECT, OTHER, QI, WEIGHT
from kanon_core.risk.classes import compute_class_sizes
from kanon_core.steps import SetRoles
from tests.test_guidance import SURVEY_QIS, SURVEY_WEIGHT, make_survey

from .helpers import APP, metric


def _start() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    return at


def _upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.file_uploader(key="w_upload").upload(name, data, "text/csv").run()
    assert not at.exception
    return at


def _survey_csv(n: int = 4580) -> bytes:
    buf = io.StringIO()
    make_survey(n).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue().encode()


def _role_table(at: AppTest) -> pd.DataFrame:
    return next(df.value for df in at.data_editor if "suggestion" in df.value.columns)


def test_upload_loads_at_once_and_the_table_is_prefilled_with_suggestions():
    at = _upload(_start(), "survey.csv", _survey_csv())
    hist = at.session_state["history"]
    assert hist.current.dataset.n_records == 4580 and hist.current_id == 0
    assert at.session_state["source"]["name"] == "survey.csv"
    assert not [b for b in at.button if b.label == "Load this file"]  # no second click to load
    table = _role_table(at)
    assert list(table["variable"]) == list(make_survey(10).columns)
    roles = dict(zip(table["variable"], table["role"], strict=True))
    assert tuple(v for v, r in roles.items() if r == QI) == SURVEY_QIS
    assert [v for v, r in roles.items() if r == WEIGHT] == [SURVEY_WEIGHT]
    assert {v for v, r in roles.items() if r == DIRECT} == {"ori_hid", "p_id"}
    assert table.set_index("variable").loc["roof", "distinct"] == 5
    assert "looks like a record id" in table.set_index("variable").loc["p_id", "why"]
    assert (table["suggestion"] == table["role"]).all()  # nothing set yet: the suggestions are pre-filled
    assert any("No roles are set yet" in i.value for i in at.info)
    assert not [m for m in at.markdown if "expander" in m.value]  # no stray string of the page script shown
    assert not at.metric  # no count before roles are used


def test_use_these_roles_applies_them_and_shows_the_count():
    frame = make_survey()
    at = _upload(_start(), "survey.csv", _survey_csv())
    at.button(key="btn_use_roles").click().run()
    assert not at.exception
    hist = at.session_state["history"]
    assert hist.current_id == 1
    step = hist.current.step
    assert isinstance(step, SetRoles)
    assert step.qis == SURVEY_QIS and step.weight == SURVEY_WEIGHT
    assert set(step.direct_ids) == {"ori_hid", "p_id"}
    assert set(step.outcomes) == {"expend", "income", "savings"}
    fk = compute_class_sizes(frame[list(SURVEY_QIS)].to_numpy(), "wildcard").fk
    assert metric(at, "Records violating k=3") == f"{int((fk < 3).sum()):,}"
    assert any("Roles applied as a new version. 7 quasi-identifier(s), weight sampling_weight" in s.value
               for s in at.success)
    # the new version's table shows its own roles; a second click changes nothing
    shown = dict(zip(_role_table(at)["variable"], _role_table(at)["role"], strict=True))
    assert shown == {c: hist.current.dataset.roles.role_of(c) for c in frame.columns}
    assert not any("No roles are set yet" in i.value for i in at.info)
    at.button(key="btn_use_roles").click().run()
    assert hist.current_id == 1


def test_edits_of_the_table_become_the_roles():
    base = pd.DataFrame({"variable": ["a", "b", "c"], "role": [QI, OTHER, WEIGHT]})
    assert edited_assignments(base, None) == {"a": QI, "b": OTHER, "c": WEIGHT}
    edits = {"edited_rows": {1: {"role": QI}, "2": {"role": OTHER}}, "added_rows": [], "deleted_rows": []}
    assert edited_assignments(base, edits) == {"a": QI, "b": QI, "c": OTHER}


def test_a_failed_upload_keeps_the_load_block_open_and_changes_nothing():
    at = _start()
    before = at.session_state["history"]
    at = _upload(at, "broken.csv", b"a,b,a\n1,2,3\n")
    assert any("Duplicated column names" in e.value for e in at.error)
    assert at.session_state["history"] is before
    assert at.session_state["w_load_open"] is True
    [load] = [e for e in at.expander if e.label == "Load data"]
    assert load.proto.expanded


def test_first_run_guide_is_shown_on_the_sample_and_stays_dismissed():
    at = _start()
    texts = " ".join(m.value for m in at.markdown)
    assert "Getting started in three steps" in texts
    assert texts.count("1. **") + texts.count("2. **") + texts.count("3. **") == 3
    at.button(key="btn_guide_dismiss").click().run()
    assert "Getting started" not in " ".join(m.value for m in at.markdown)
    at.switch_page("pages/risk.py").run()
    at.switch_page("pages/data.py").run()
    assert "Getting started" not in " ".join(m.value for m in at.markdown)


def test_guide_is_not_shown_for_an_uploaded_file():
    at = _upload(_start(), "survey.csv", _survey_csv(300))
    assert "Getting started" not in " ".join(m.value for m in at.markdown)


def test_glossary_is_in_the_sidebar_with_every_term():
    at = _start()
    [gloss] = [e for e in at.sidebar.expander if e.label == "Glossary"]
    text = " ".join(m.value for m in gloss.markdown)
    for term in GLOSSARY:
        assert term.term in text
    for word in ("MINUC", "SUDA", "fk and Fk", "wildcard", "Prec", "Design effect", "l-diversity", "t-closeness",
                 "Individual risk"):
        assert word in text


def test_a_workbook_with_several_sheets_waits_for_its_sheet_then_loads():
    buf = io.BytesIO()
    with pd.ExcelWriter(buf, engine="openpyxl") as xw:
        pd.DataFrame({"a": [1, 2, 3]}).to_excel(xw, sheet_name="notes", index=False)
        make_survey(200).to_excel(xw, sheet_name="persons", index=False)
    at = _start()
    before = at.session_state["history"]
    at.file_uploader(key="w_upload").upload("survey.xlsx", buf.getvalue(),
                                            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet").run()
    assert not at.exception
    assert at.session_state["history"] is before  # nothing read yet: which sheet?
    at.selectbox(key="w_sheet_survey.xlsx").select("persons").run()
    assert not at.exception
    assert at.session_state["history"].current.dataset.n_records == 200
    assert at.session_state["source"]["title"] == "survey.xlsx (sheet persons)"
    assert tuple(v for v, r in zip(_role_table(at)["variable"], _role_table(at)["role"], strict=True)
                 if r == QI) == SURVEY_QIS
