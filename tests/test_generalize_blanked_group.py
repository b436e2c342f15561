"""Records a generalization suppresses stay in the release, blank on every quasi-identifier: one class of it,
consistent with every person an intruder looks for. Too few of them single their people out.

The search never chooses such a node (:func:`kanon_core.treat.lattice.acceptable`; its brute-force tests are in
tests/test_lattice.py and tests/test_criteria.py); here, end to end: the command line's release read back from
the intruder's side, the integer cells it keeps, and a replay on another file that makes such a group.
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.history import History
from kanon_core.recipe import apply_checked
from kanon_core.treat.hierarchy import Hierarchy
from kanon_core.treat.recode import GeneralizeStep


def write(tmp_path, rows):
    (tmp_path / "h").mkdir(exist_ok=True)
    (tmp_path / "h" / "region.csv").write_text("".join(f"{r};*\n" for r in sorted({r for r, _, _ in rows})))
    (tmp_path / "h" / "sex.csv").write_text("1;*\n2;*\n")
    with open(tmp_path / "d.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["region", "sex", "income"])
        w.writerows(rows)


def generalize(tmp_path, k: int, limit: float):
    rc = main(["generalize", str(tmp_path / "d.csv"), "--qi", "region,sex", "--hierarchies", str(tmp_path / "h"),
               "--k", str(k), "--max-suppression", str(limit), "-o", str(tmp_path / "rel.csv"),
               "--json", str(tmp_path / "g.json")])
    assert rc == 0
    return json.loads((tmp_path / "g.json").read_text()), list(csv.DictReader(open(tmp_path / "rel.csv")))


def candidates(person: tuple[str, str], release: list[dict], levels: dict) -> int:
    """Release records consistent with a person's values as the release's levels show them (blank: any)."""
    seen = {"region": person[0] if levels["region"] == 0 else "*", "sex": person[1] if levels["sex"] == 0 else "*"}
    return sum(all(r[q] in ("", seen[q]) for q in seen) for r in release)


def test_one_unique_person_is_not_left_alone_in_a_blanked_group(tmp_path):
    """Wilson et al.'s intruder knows the one person of region c: suppressing that record alone (within a 10 %
    limit) would leave one candidate, the blanked record, with its income. The search generalizes instead."""
    rows = [("a", 1, 1000 + i) for i in range(5)] + [("b", 2, 1005 + i) for i in range(5)] + [("c", 1, 1010)]
    write(tmp_path, rows)
    res, release = generalize(tmp_path, 3, 0.1)
    assert res["n_suppressed_records"] in (0,) or res["n_suppressed_records"] >= 3
    assert all(c["holds"] for c in res["criteria"])
    assert min(candidates((r, str(s)), release, res["levels"]) for r, s, _ in rows) >= 3


def test_a_group_of_k_blanked_records_is_a_release_and_keeps_integer_cells(tmp_path):
    """Three unique regions: blanking their three records (k = 3, limit 3 of 13) protects each of them among the
    three, at no generalization; the integer column sex is written as integers, not 1.0."""
    rows = ([("a", 1, 1000 + i) for i in range(5)] + [("b", 2, 1005 + i) for i in range(5)]
            + [("c", 1, 1010), ("d", 2, 1011), ("e", 1, 1012)])
    write(tmp_path, rows)
    res, release = generalize(tmp_path, 3, 3 / 13)
    assert res["levels"] == {"region": 0, "sex": 0} and res["n_suppressed_records"] == 3
    assert min(candidates((r, str(s)), release, res["levels"]) for r, s, _ in rows) >= 3
    text = (tmp_path / "rel.csv").read_text().splitlines()
    assert "a,1,1000" in text and ",,1010" in text
    assert not any(".0," in line for line in text)


def test_a_replay_that_blanks_too_few_records_says_so():
    """A step chosen on one file (three records blanked) replayed on a file where it blanks one: the replay
    warns, and a strict replay stops."""
    step = GeneralizeStep.build({"region": 0, "sex": 0}, {}, suppress_k=3, qis=("region", "sex"))
    frame = pd.DataFrame({"region": ["a"] * 5 + ["b"] * 5 + ["c"], "sex": [1] * 5 + [2] * 5 + [1],
                          "income": np.arange(11)})
    ds = Dataset(frame, roles=Roles(qis=("region", "sex")))
    cautions = apply_checked(History.start(ds), step, "Step 1")
    assert len(cautions) == 1 and "1 record(s) blank on every quasi-identifier" in cautions[0]
    assert "k=3" in cautions[0] and not re.search(r"\b(a|b|c)\b", cautions[0].split("): ", 1)[1])  # no value
    with pytest.raises(InputError, match="strict replay"):
        apply_checked(History.start(ds), step, "Step 1", strict=True)
    # three blanked records protect each other: nothing to say
    bigger = pd.concat([frame, pd.DataFrame({"region": ["d", "e"], "sex": [2, 1], "income": [11, 12]})],
                       ignore_index=True)
    assert apply_checked(History.start(Dataset(bigger, roles=Roles(qis=("region", "sex")))), step, "Step 1") == []


def test_the_blanked_group_is_judged_by_every_criterion():
    """l-diversity: three blanked records sharing one income value fail l = 2 as a group, though there are k."""
    step = GeneralizeStep.build({"region": 0}, {"region": Hierarchy((("a", "*"), ("b", "*")), "region")},
                                qis=("region",), criteria=("k=2", "l=2:income"))
    frame = pd.DataFrame({"region": ["a", "a", "b", "b", "c", "d", "e"], "income": [1, 2, 1, 2, 9, 9, 9]})
    ds = Dataset(frame, roles=Roles(qis=("region",)))
    cautions = apply_checked(History.start(ds), step, "Step 1")
    assert len(cautions) == 1 and "l=2:income" in cautions[0]


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_replay_at_scale_says_it_as_in_memory(tmp_path, engine, capsys):
    """The same caution from `kanon apply` whatever the engine, and --strict stops it."""
    from kanon_core.recipe import Recipe

    rows = [("a", 1, 1000 + i) for i in range(5)] + [("b", 2, 1005 + i) for i in range(5)] + [("c", 1, 1010)]
    write(tmp_path, rows)
    step = GeneralizeStep.build({"region": 0, "sex": 0}, {}, suppress_k=3, qis=("region", "sex"))
    Recipe(steps=(step,), roles=Roles(qis=("region", "sex"))).save(tmp_path / "r.json")
    out = tmp_path / f"rel-{engine}.csv"
    argv = ["apply", str(tmp_path / "r.json"), str(tmp_path / "d.csv"), "-o", str(out), "--engine", engine,
            "--json", str(out.with_suffix(".json"))]
    assert main(argv) == 0
    warnings = json.loads(out.with_suffix(".json").read_text())["warnings"]
    assert any("1 record(s) blank on every quasi-identifier" in w for w in warnings), warnings
    out.unlink()
    capsys.readouterr()
    assert main([*argv, "--strict"]) == 2
    assert "strict replay" in capsys.readouterr().err
