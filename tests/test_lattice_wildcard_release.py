"""Under wildcard semantics the search's chosen release meets its criteria from the person's side.

A record blanked by suppression matches every record, so in the release each kept record's class holds the
blanked records too. k-anonymity and distinct l-diversity only gain from that; entropy and recursive
l-diversity and t-closeness can lose: a class {a, b} with a blanked record a reads {a, a, b}. The search once
chose such a node (its classes judged without the blanked records). Here every release it chooses is checked
by brute force (:mod:`tests.reference.diversity`, nothing shared with kanon's measures) on the released file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InfeasibleError
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.lattice import build_problem, search_optimal
from tests.reference.diversity import brute_l_diversity, brute_t_closeness

HIERARCHIES = {"q1": (("x1", "*"), ("x2", "*")), "q2": (("y1", "*"), ("y2", "*"), ("y3", "*"))}


def _codes(frame: pd.DataFrame, qis: list[str]) -> np.ndarray:
    out = np.full((len(frame), len(qis)), -1, dtype=np.int64)
    for j, q in enumerate(qis):
        col = frame[q]
        seen = sorted({str(v) for v in col if not pd.isna(v)})
        out[:, j] = [-1 if pd.isna(v) else seen.index(str(v)) for v in col]
    return out


def _fails(spec: str, codes: np.ndarray, svals: list) -> np.ndarray:
    kind, _, rest = spec.partition("=")
    if kind == "t":
        t, _, _ = rest.partition(":")
        return brute_t_closeness(codes, svals, "wildcard", "equal") > float(t) + 1e-9
    parts = rest.split(":")
    if parts[0] == "entropy":
        return brute_l_diversity(codes, svals, "wildcard", "entropy") < float(parts[1]) * (1 - 1e-9)
    if parts[0] == "recursive":
        c, ell = (float(x) for x in parts[1].split(","))
        return brute_l_diversity(codes, svals, "wildcard", "recursive", c) < ell
    return brute_l_diversity(codes, svals, "wildcard", "distinct") < float(parts[0])


def test_a_blanked_record_that_lowers_a_kept_class_s_entropy_is_seen():
    frame = pd.DataFrame({"q1": ["x1", "x1", "x1", "x2"], "q2": ["y1", None, "y3", "y2"], "s": ["a", "b", "a", "a"]})
    ds = Dataset(frame, roles=Roles(qis=("q1", "q2")), missing="wildcard")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in HIERARCHIES.items()}, sensitive=["s"])
    with pytest.raises(InfeasibleError):  # (0, 0) blanking 2 records left every released record below 1.95
        search_optimal(problem, max_suppression=0.5, criteria=["l=entropy:1.95:s"])


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_every_chosen_release_passes_by_brute_force(data):
    n = data.draw(st.integers(3, 12))
    q1 = data.draw(st.lists(st.sampled_from(["x1", "x2", None]), min_size=n, max_size=n))
    q2 = data.draw(st.lists(st.sampled_from(["y1", "y2", "y3", None]), min_size=n, max_size=n))
    s = data.draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    spec = data.draw(st.sampled_from(["l=entropy:1.5:s", "l=entropy:1.9:s", "l=recursive:2,2:s",
                                      "l=recursive:1.5,2:s", "t=0.3:s:equal", "l=2:s"]))
    limit = data.draw(st.integers(0, n)) / n
    ds = Dataset(pd.DataFrame({"q1": q1, "q2": q2, "s": s}, dtype=object), roles=Roles(qis=("q1", "q2")),
                 missing="wildcard")
    problem = build_problem(ds, {q: Hierarchy(r, q) for q, r in HIERARCHIES.items()}, sensitive=["s"])
    try:
        res = search_optimal(problem, max_suppression=limit, criteria=[spec])
    except InfeasibleError:
        return
    released = res.step().apply(ds).frame
    assert not _fails(spec, _codes(released, ["q1", "q2"]), list(released["s"])).any()
