"""The Compare page's regression tab shows what kanon_core says about the three models: a number recoded into
bands entering the treated models as categories, in the words of ModelComparison.model_notes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kanon_core.dataset import Dataset, Roles
from kanon_core.utility import compare_models
from kanon_core.utility.baseline import original_with_roles
from tests.app.helpers import session_on


def test_the_model_notes_are_shown():
    rng = np.random.default_rng(2)
    n = 400
    region = rng.choice(["north", "south", "east", "west", "centre"], n)
    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "sex": rng.integers(1, 3, n), "region": region,
                          "inc": np.round(rng.normal(50, 10, n) + 8 * (region == "north"), 1),
                          "w": rng.uniform(1, 3, n)})
    ds = Dataset(frame, roles=Roles(qis=("age", "sex", "region"), weight="w", outcomes=("inc",)), name="svy")
    at = session_on(ds, w_recode_section="Levels")
    at.switch_page("pages/recode.py").run()
    at.select_slider(key="w_lvl_age").set_value(1).run()  # ages into bands: text categories
    at.button(key="btn_apply_levels").click().run()
    formula = "inc ~ age + C(sex) + C(region)"
    at.session_state["w_cmp_tab"] = "Regression"
    at.switch_page("pages/compare.py").run()
    at.text_input(key="w_cmp_formula_1").input(formula).run()
    at.button(key="btn_cmp_fit").click().run()
    assert not at.exception and not at.error
    h = at.session_state["history"]
    notes = compare_models(original_with_roles(h, h.current.id), h.current.dataset, formula).model_notes()
    assert any("recoded into categories by the treatment" in note for note in notes)
    shown = " ".join(i.value for i in at.info).replace("\\", "")
    for note in notes:
        assert note.split(": ", 1)[1][:50] in shown
