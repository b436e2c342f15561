"""The Data page's design settings: the finite population correction chosen as a role, recorded in the
recipe, used by the estimates; an invalid one is refused with one message and no version."""

from __future__ import annotations

from collections import OrderedDict

import pandas as pd
from streamlit.testing.v1 import AppTest

from kanon_core.dataset import Dataset, Roles
from kanon_core.history import History
from kanon_core.steps import SetRoles, step_from_dict
from kanon_core.utility.design import SurveyDesign

from .helpers import APP

FRAME = pd.DataFrame({"s": ["A", "A", "A", "B", "B"], "p": [1, 1, 2, 1, 2], "w": [1.0, 1.0, 2.0, 1.0, 3.0],
                      "N": [4, 4, 4, 2, 2], "bad": [4, 5, 4, 2, 2], "x": ["a", "b", "a", "b", "b"]})


def _open() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    ds = Dataset(frame=FRAME, roles=Roles(qis=("x",), weight="w", strata="s", psu="p"), name="design")
    at.session_state["history"] = History.start(ds)
    at.session_state["source"] = {"kind": "upload", "title": "design.csv", "name": "design.csv"}
    at.session_state["memo"] = OrderedDict()
    at.switch_page("pages/data.py").run()
    assert not at.exception
    return at


def _apply(at: AppTest, fpc: str) -> AppTest:
    at.selectbox(key="w_roles_fpc").select(fpc)
    at.button[[b.label for b in at.button].index("Apply roles")].click().run()
    assert not at.exception
    return at


def test_fpc_role_is_a_recorded_step_used_by_the_design():
    at = _apply(_open(), "N")
    history = at.session_state["history"]
    step = history.current.step
    assert isinstance(step, SetRoles) and step.fpc == "N"
    assert step_from_dict(step.to_dict()) == step
    design = SurveyDesign.from_dataset(history.current.dataset)
    assert design.fpc_name == "N" and design.fpc_factor.tolist() == [0.5, 0.0]


def test_invalid_fpc_is_refused_without_a_new_version():
    at = _open()
    before = at.session_state["history"].current.id
    at = _apply(at, "bad")
    assert at.session_state["history"].current.id == before
    assert any("varies within 1 stratum" in e.value for e in at.error)
