"""Plain sentences about a generalization: a variable taken to the top of its hierarchy is "fully
suppressed", said in words, on the search result of a real lattice search."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kanon_core.dataset import Dataset, Roles
from kanon_core.treat import lattice
from kanon_core.treat.explain import effects_table, level_effects, search_summary
from kanon_core.treat.hierarchy import TOP, Hierarchy, grouping_hierarchy


def _hs() -> dict[str, Hierarchy]:
    relat = Hierarchy(tuple((str(v), TOP) for v in range(1, 6)), "relat")
    region = grouping_hierarchy([1, 2, 3, 4], [{1: "N", 2: "N", 3: "S", 4: "S"}], name="region")
    return {"relat": relat, "region": region}


def test_level_effects_in_words():
    hs = _hs()
    effects = {e.variable: e for e in level_effects({"relat": 1, "region": 1}, hs)}
    assert effects["relat"].fully_suppressed and effects["relat"].text == \
        "relat: fully suppressed (every value released as *)"
    assert not effects["region"].fully_suppressed
    assert effects["region"].text == "region: generalized to level 1 (4 → 2 values)"
    assert level_effects({"relat": 0, "region": 0}, hs)[0].text == "relat: unchanged (5 values)"
    table = effects_table({"relat": 1, "region": 0}, hs)
    assert table["effect"].tolist() == ["fully suppressed (every value released as *)", "unchanged (4 values)"]


def test_search_result_says_when_a_variable_is_removed():
    rng = np.random.default_rng(5)
    n = 200
    frame = pd.DataFrame({"relat": rng.integers(1, 6, n), "region": rng.integers(1, 5, n)})
    # k = 60 with no record suppression: at most 3 classes, so some variable must go to the top
    ds = Dataset(frame=frame, roles=Roles(qis=("relat", "region")))
    hs = _hs()
    problem = lattice.build_problem(ds, hs, ["relat", "region"])
    result = lattice.search_optimal(problem, 60, 0.0, "prec")
    text = search_summary(result)
    gone = [q for q in result.qis if result.levels[q] == hs[q].max_level and hs[q].max_level > 0]
    assert gone  # k = 60 on 200 records: something must go
    for q in gone:
        assert f"{q}: fully suppressed" in text
    assert text.startswith("Removed entirely:")
