"""The Compare page flags coefficients that must not be read as they stand (separation), next to the number."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.steps import DeclareMissingCodes
from kanon_core.utility import compare_models

from .helpers import APP

FORMULA = "y ~ x + C(g)"


def _history() -> History:
    rng = np.random.default_rng(9)
    n = 200
    x = rng.normal(size=n)
    frame = pd.DataFrame({"y": (rng.uniform(size=n) < 1 / (1 + np.exp(-x))).astype(int),
                          "g": rng.choice(["a", "b"], n).astype(object), "x": x})
    frame.loc[:1, "g"] = "zq"
    frame.loc[:1, "y"] = 1
    h = History.start(Dataset(frame=frame, roles=Roles(qis=("g",), outcomes=("y",)), name="sep"))
    h.apply(DeclareMissingCodes("g", ("zq",)))
    return h


def test_separated_coefficients_are_listed_with_their_note():
    at = AppTest.from_file(APP, default_timeout=120).run()
    h = _history()
    at.session_state["history"] = h
    at.session_state["source"] = {"kind": "upload", "title": "sep.csv", "name": "sep.csv"}
    at.session_state["memo"] = OrderedDict()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    at.session_state["w_cmp_tab"] = "Regression"  # lazy tabs: only the open one is computed
    at.run()
    at.text_input(key=f"w_cmp_formula_{h.current_id}").set_value(FORMULA).run()
    at.button(key="btn_cmp_fit").click().run()
    assert not at.exception
    assert any("must not be read as they stand" in w.value for w in at.warning)
    shown = next(df.value for df in at.dataframe if "note" in df.value.columns)
    ref = compare_models(h.original.dataset, h.current.dataset, FORMULA).coefficient_notes()
    assert len(ref) == 2  # the category in the original, '(suppressed)' in the third model
    assert shown["term"].tolist() == ref["term"].tolist()
    assert shown["note"].str.startswith("separation").all()
