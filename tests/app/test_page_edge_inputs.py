"""Pages opened on files unlike the sample, at the edges an audit found: a quasi-identifier with no observed
value (Export's report), 40 quasi-identifiers (the MINUCs page's estimate, made while the page is drawn) and a
text quasi-identifier with one category per record in the regression model (Compare). Each page says what it
cannot do in plain words, without a traceback, and stays usable."""

from __future__ import annotations

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from kanon_core.dataset import Dataset, Roles

from .helpers import session_on


def _open(page_file: str, ds: Dataset, **state) -> AppTest:
    """The app on ``ds`` (its original version only), switched to ``pages/<page_file>``; ``state`` is set in
    the session first (e.g. the open tab)."""
    at = session_on(ds, **state)
    at.switch_page(f"pages/{page_file}").run()
    return at


def _survey(n: int, seed: int = 5, **extra) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"sex": rng.integers(1, 3, n), "region": rng.integers(1, 5, n), **extra,
                         "score": np.round(rng.normal(50, 10, n), 1), "wgt": rng.uniform(1, 3, n)})


def test_the_report_is_built_when_a_quasi_identifier_has_no_observed_value():
    """A QI whose every cell is missing has no hierarchy; the report measures its information loss without one
    (as Compare does) instead of failing: no cell of it is measured, which its row says."""
    frame = _survey(300, unasked=pd.Series([np.nan] * 300))
    ds = Dataset(frame, roles=Roles(qis=("sex", "region", "unasked"), weight="wgt", outcomes=("score",)),
                 name="survey")
    at = _open("export.py", ds)
    assert not at.exception
    at.checkbox(key="w_report_minucs").uncheck().run()
    at.button(key="btn_build_report").click().run()
    assert not at.exception and not at.error
    assert not at.warning  # nothing is wrong: a variable with no value needs no hierarchy
    labels = [b.proto.label for b in at.get("download_button")]
    assert any(lab.startswith("Download the report") for lab in labels)
    assert "Download the project file" in labels  # the rest of the page is drawn
    built = [v for key, v in at.session_state["memo"].items() if key[2] == "report_html"]
    assert built and built[0].decode("utf-8").startswith("<!DOCTYPE html>")
    assert "undefined: no cell measured" in built[0].decode("utf-8")  # its loss metric, and why


def test_recode_and_compare_work_on_the_other_quasi_identifiers_when_one_has_no_observed_value():
    """The Recode page stopped on "Variable 'unasked' has no observed values; it needs no hierarchy." on every
    tab, and Compare's information loss said the same instead of its table. Recode now says the variable is
    left out (it splits no class) and searches on the others; Compare measures it as no cell."""
    frame = _survey(300, unasked=pd.Series([np.nan] * 300))
    ds = Dataset(frame, roles=Roles(qis=("sex", "region", "unasked"), weight="wgt", outcomes=("score",)),
                 name="survey")
    at = _open("recode.py", ds, w_recode_section="Optimal generalization")
    assert not at.exception and not at.error
    assert any(i.value.startswith("unasked: no observed value, so nothing to recode") for i in at.info)
    at.button(key="btn_gen_search").click().run()
    assert not at.exception and not at.error
    assert any(m.label == "Records suppressed" for m in at.metric)
    at = _open("compare.py", ds, w_cmp_tab="Bias and information loss")
    assert not at.exception and not at.error
    loss = next(df.value for df in at.dataframe if "loss metric (LM)" in df.value.columns).set_index("variable")
    assert loss.loc["unasked", "cells"] == 0 and loss.loc["sex", "cells"] == 300


def test_the_minucs_page_with_40_quasi_identifiers_says_its_estimate_stopped():
    """With 40 QIs the sampled search of the estimate takes tens of seconds (the page did not open meanwhile):
    the estimate stops at its time budget and the page gives lower bounds as such, never as the cost, offers
    the search, and starts none unasked."""
    from kanon_app import prefetch

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"q{j}": rng.integers(0, 2 + j % 4, 1000) for j in range(40)})
    ds = Dataset(frame, roles=Roles(qis=tuple(frame.columns)), name="wide")
    at = _open("minucs.py", ds)
    assert not at.exception and not at.error
    assert not any("Estimated from" in i.value for i in at.info)  # no extrapolation shown as the cost
    [said] = [w.value for w in at.warning]
    assert said.startswith("The estimate stopped at its time limit")
    assert "so the cost of the search is not known" in said
    assert "about **" not in said and ("at least **" in said or "an unknown time" in said)
    estimates = [v for key, v in at.session_state["memo"].items() if key[2] == "minuc_estimate"]
    assert len(estimates) == 1 and estimates[0].at_least is not None
    assert at.button(key="btn_find_minucs")  # the search is offered
    assert not at.session_state[prefetch.AHEAD]  # and not started ahead: its cost is unknown


def test_compare_refuses_a_model_with_one_category_per_record():
    """A text QI with one category per record is a covariate of the default model: fitting it is refused up
    front, naming the covariate and the counts, not run out of memory."""
    n = 3000
    frame = _survey(n, code=[f"c{i:06d}" for i in range(n)])
    ds = Dataset(frame, roles=Roles(qis=("sex", "region", "code"), weight="wgt", outcomes=("score",)),
                 name="survey")
    at = _open("compare.py", ds, w_cmp_tab="Regression")
    assert not at.exception
    assert at.text_input(key="w_cmp_formula_0").value == "score ~ C(sex) + C(region) + C(code)"
    at.button(key="btn_cmp_fit").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"Covariate 'code' has {n} categories on only {n} complete record(s); the model cannot be estimated (one "
        "coefficient per category). Merge its categories or leave it out."]
    assert not [v for key, v in at.session_state["memo"].items() if key[2] == "compare_models"]
