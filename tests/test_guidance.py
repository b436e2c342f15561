"""Suggested roles at load (kanon_core.guidance) on hand-made frames, the bundled sample and a generated survey
of 4,580 records with 7 categorical quasi-identifiers and a weight; the ``kanon roles`` command."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles, VariableMeta, validate_roles
from kanon_core.errors import InputError
from kanon_core.guidance import (
    ANALYSIS,
    DIRECT,
    OTHER,
    PSU,
    QI,
    RULES,
    STRATUM,
    WEIGHT,
    roles_from_assignments,
    suggest_roles,
    tokens,
)

ROOT = Path(__file__).resolve().parents[1]
SURVEY_QIS = ("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
SURVEY_WEIGHT = "sampling_weight"


def make_survey(n: int = 4580, seed: int = 20) -> pd.DataFrame:
    """A household survey shaped like sdcMicro's test data: 7 categorical quasi-identifiers coded as small
    integers, a sampling weight, household and person ids, three income-like measurements and a remark."""
    rng = np.random.default_rng(seed)
    hh = np.repeat(np.arange(1, n // 4 + 2), 4)[:n] + 1000
    frame = pd.DataFrame({
        "ori_hid": hh,
        "p_id": np.arange(1, n + 1),
        "urbrur": rng.choice([1, 2], n, p=[0.35, 0.65]),
        "roof": rng.choice([1, 2, 3, 4, 5], n, p=[0.5, 0.2, 0.15, 0.1, 0.05]),
        "walls": rng.choice([1, 2, 3], n, p=[0.6, 0.3, 0.1]),
        "water": rng.choice(range(1, 9), n, p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02]),
        "electcon": rng.choice([0, 1, 2], n, p=[0.2, 0.7, 0.1]),
        "relat": rng.choice(range(1, 10), n, p=[0.25, 0.2, 0.3, 0.08, 0.06, 0.05, 0.03, 0.02, 0.01]),
        "sex": rng.choice([1, 2], n),
        "expend": np.round(rng.lognormal(10, 1, n), 2),
        "income": np.round(rng.lognormal(10.5, 1, n), 2),
        "savings": np.round(rng.lognormal(7, 1.5, n), 2),
        SURVEY_WEIGHT: np.round(rng.uniform(20, 200, n), 4),
    })
    return frame


def write_survey(path: Path, n: int = 4580) -> Path:
    make_survey(n).to_csv(path, index=False, lineterminator="\n")
    return path


# -- the generated survey and the bundled sample ------------------------------------------------------------------
def test_generated_survey_gets_its_seven_qis_the_weight_and_its_ids():
    frame = make_survey()
    assert len(frame) == 4580
    g = suggest_roles(frame)
    r = g.roles()
    assert r.qis == SURVEY_QIS
    assert r.weight == SURVEY_WEIGHT
    assert set(r.direct_ids) == {"ori_hid", "p_id"}
    assert set(r.outcomes) == {"expend", "income", "savings"}
    reason = {s.variable: s.reason for s in g.suggestions}
    assert reason["p_id"].startswith("unique in 100 % of records")
    assert "household" in reason["ori_hid"]
    assert "measurement" in reason["income"]  # named like income, but continuous
    assert "sampling weight" in reason[SURVEY_WEIGHT]


def test_bundled_sample_suggestions_cover_its_preset_roles():
    from kanon_app.samples import SAMPLES, load_sample

    ds = load_sample("els")
    g = suggest_roles(ds.with_roles(Roles()))
    preset = SAMPLES["els"].roles
    r = g.roles()
    assert set(preset.qis) == set(r.qis)
    assert r.weight == preset.weight == "F2BYWT"
    assert r.strata == preset.strata
    assert "STU_ID" in r.direct_ids
    assert set(preset.outcomes) == set(r.outcomes)
    by = {s.variable: s for s in g.suggestions}
    assert by["BYPARACE"].reason.startswith("label suggests ethnicity")  # found through its label only
    assert by["STU_ID"].reason.startswith("unique in 100 % of records")


# -- hand-made cases, one per rule ----------------------------------------------------------------------------------
def _one(frame: pd.DataFrame, col: str, labels=None):
    return next(s for s in suggest_roles(frame, labels).suggestions if s.variable == col)


def test_record_id_share_in_reason():
    n = 1000
    ids = np.arange(n)
    ids[1] = 0  # two records share a code: 998 of 1000 unique
    s = _one(pd.DataFrame({"x": ids, "y": [1, 2] * 500}), "x")
    assert s.role == DIRECT
    assert s.reason.startswith("unique in 99.8 % of records: looks like a record id")


def test_unique_share_is_never_rounded_up_to_100():
    ids = np.arange(10000)
    ids[1] = 0  # 9998 of 10000 unique: 99.98 % is shown as 99.9, never "100"
    assert "unique in 99.9 %" in _one(pd.DataFrame({"code": ids}), "code").reason


def test_free_text_is_an_identifier_to_exclude():
    rng = np.random.default_rng(1)
    words = ["lives near the old mill", "works at the bakery on main street", "visited the clinic twice"]
    notes = [f"{rng.choice(words)} in year {i}" for i in range(300)]
    s = _one(pd.DataFrame({"remarks": notes, "a": [1, 2, 3] * 100}), "remarks")
    assert s.role == DIRECT and s.reason.startswith("free text: many long distinct strings")


def test_weight_by_name_label_and_eu_silc_codes():
    rng = np.random.default_rng(2)
    w = rng.uniform(1, 9, 100)
    frame = pd.DataFrame({"RB050": w, "q": [1, 2] * 50})
    assert _one(frame, "RB050").role == WEIGHT
    frame = pd.DataFrame({"v17": w})
    s = _one(frame, "v17", {"v17": "Personal cross-sectional weight"})
    assert s.role == WEIGHT and s.reason.startswith("label suggests")
    s = _one(pd.DataFrame({"pweight": w}), "pweight", {"pweight": "design weight"})
    assert s.reason.startswith("name and label suggest a sampling weight")
    bad = w.copy()
    bad[3] = -1
    s = _one(pd.DataFrame({"weight": bad}), "weight")
    assert s.role == OTHER and "not positive" in s.reason


def test_only_one_weight_is_suggested():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"wgt": rng.uniform(1, 2, 50), "wgt_rep1": rng.uniform(1, 2, 50)})
    g = suggest_roles(frame)
    assert [s.role for s in g.suggestions] == [WEIGHT, OTHER]
    assert g.roles().weight == "wgt"


def test_design_variables_by_name():
    frame = pd.DataFrame({"stratum": [1, 1, 2, 2] * 10, "psu": list(range(8)) * 5})
    g = suggest_roles(frame)
    assert g.role_of("stratum") == STRATUM and g.role_of("psu") == PSU


def test_household_id_shared_by_records_is_excluded():
    s = _one(pd.DataFrame({"hhid": np.repeat(np.arange(50), 4)}), "hhid")
    assert s.role == DIRECT and "household" in s.reason
    s = _one(pd.DataFrame({"Name": [f"person {i}" for i in range(20)]}), "Name")
    assert s.role == DIRECT and "personal details" in s.reason


@pytest.mark.parametrize("name", ["age", "Alter", "edad", "age_grp", "agegr", "SEXO", "Geschlecht", "gender",
                                  "region", "province", "yob", "date_of_birth", "marital", "hhcivil", "occupation",
                                  "isco08", "educ_level", "nationality", "country_birth", "ethnic", "religion",
                                  "religione", "métier"])
def test_multilingual_name_stems_suggest_a_qi(name):
    frame = pd.DataFrame({name: np.arange(40) % 7})
    s = _one(frame, name)
    assert s.role == QI and s.reason.startswith("name suggests")


@pytest.mark.parametrize("name", ["wage", "language", "average", "stage"])
def test_short_stems_do_not_match_inside_other_words(name):
    frame = pd.DataFrame({name: np.arange(40) % 7})
    s = _one(frame, name)
    assert not s.reason.startswith("name suggests")  # still a QI candidate by its categories, but not as "age"
    assert s.reason.startswith("7 categories")


def test_qi_name_with_continuous_values_is_a_measurement():
    rng = np.random.default_rng(4)
    s = _one(pd.DataFrame({"income": rng.lognormal(10, 1, 500)}), "income")
    assert s.role == ANALYSIS and "recode it into groups" in s.reason
    s = _one(pd.DataFrame({"income": np.arange(500) % 12}), "income")  # income brackets
    assert s.role == QI


def test_categories_measurements_constants_and_many_texts():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({
        "q1": rng.choice(["yes", "no", "maybe"], 200),
        "score": rng.normal(50, 10, 200),
        "same": [4] * 200,
        "town": [f"T{i % 80}" for i in range(200)],
    })
    g = suggest_roles(frame)
    assert [g.role_of(c) for c in frame.columns] == [QI, ANALYSIS, OTHER, OTHER]
    by = {s.variable: s for s in g.suggestions}
    assert by["same"].reason.startswith("the same value in every record")
    assert "80 distinct" in by["town"].reason


def test_declared_missing_codes_and_empty_cells_are_not_values():
    frame = pd.DataFrame({"x": [1, 2, -9, -9, None, 1]})
    ds = Dataset(frame, meta={"x": VariableMeta(missing_codes=(-9,))})
    [s] = suggest_roles(ds).suggestions
    assert (s.distinct, s.missing) == (2, 3)
    [s] = suggest_roles(frame).suggestions  # a bare frame: only the empty cell is missing
    assert (s.distinct, s.missing) == (3, 1)


def test_long_integer_ids_are_counted_exactly():
    base = 10**16
    ids = pd.Series([base + i for i in range(100)], dtype="int64")  # neighbours that one float would merge
    [s] = suggest_roles(pd.DataFrame({"code": ids})).suggestions
    assert s.distinct == 100 and s.reason.startswith("unique in 100 % of records")
    nullable = pd.DataFrame({"n": pd.array([1, 2, None, 2, 3] * 20, dtype="Int64")})
    [s] = suggest_roles(nullable).suggestions
    assert (s.distinct, s.missing, s.role) == (3, 20, QI)


def test_reasons_never_contain_data_values():
    frame = pd.DataFrame({"secret_code": [f"Zq{i}xx" for i in range(100)],
                          "note": [f"confidential remark number {i} Zq" for i in range(100)],
                          "sex": ["Zqm", "Zqf"] * 50})
    for s in suggest_roles(frame).suggestions:
        assert "Zq" not in s.reason


def test_rules_are_registered_in_order_and_deterministic():
    names = [r.name for r in RULES]
    assert names[0] == "free text" and names[-1] == "other" and len(set(names)) == len(names)
    frame = make_survey(300)
    assert suggest_roles(frame) == suggest_roles(frame.copy())


def test_tokens_split_names():
    assert tokens("ori_hid") == ["ori", "hid"]
    assert tokens("householdSize") == ["household", "size"]
    assert tokens("BYSEX") == ["bysex"]


# -- from the role table to Roles -------------------------------------------------------------------------------------
def test_roles_from_assignments():
    r = roles_from_assignments({"a": QI, "b": WEIGHT, "c": DIRECT, "d": ANALYSIS, "e": OTHER, "f": QI})
    assert r == Roles(qis=("a", "f"), weight="b", outcomes=("d",), direct_ids=("c",))
    with pytest.raises(InputError, match="Only one variable can be the sampling weight: b, c"):
        roles_from_assignments({"b": WEIGHT, "c": WEIGHT})
    with pytest.raises(InputError, match="Unknown role"):
        roles_from_assignments({"b": "boss"})


# -- kanon roles ---------------------------------------------------------------------------------------------------
def test_cli_roles_json(tmp_path, capsys):
    path = write_survey(tmp_path / "survey.csv", 600)
    assert main(["roles", str(path), "--json", "-"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["roles"]["qis"] == list(SURVEY_QIS) and out["roles"]["weight"] == SURVEY_WEIGHT
    assert [v["variable"] for v in out["variables"]] == list(make_survey(10).columns)
    assert {"variable", "label", "distinct", "missing", "role", "reason"} <= set(out["variables"][0])


def test_cli_roles_table_and_qi_option(tmp_path, capsys):
    path = write_survey(tmp_path / "survey.csv", 600)
    assert main(["roles", str(path)]) == 0
    text = capsys.readouterr().out
    assert "sampling_weight" in text and "looks like a record id" in text
    assert "--qi urbrur,roof,walls,water,electcon,relat,sex --weight sampling_weight" in text


def test_cli_roles_labels_from_sidecar_and_bad_file(tmp_path, capsys):
    assert main(["roles", str(ROOT / "sample_data" / "els_like.csv"), "--json", str(tmp_path / "r.json")]) == 0
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["variables"][1]["label"] == "Sex-composite"
    assert main(["roles", str(tmp_path / "absent.csv")]) == 2


# -- properties on random frames ----------------------------------------------------------------------------------
_cells = st.one_of(st.none(), st.integers(-3, 40), st.sampled_from(["a", "b", "some longer free text here", "z"]))


@st.composite
def frames(draw):
    n = draw(st.integers(1, 40))
    names = draw(st.lists(st.sampled_from(["age", "sex", "hid", "id", "weight", "wgt", "income", "x", "y", "note",
                                           "region", "psu", "strata", "v1", "v2"]), min_size=1, max_size=6,
                          unique=True))
    data = {}
    for name in names:
        kind = draw(st.sampled_from(["int", "float", "text", "mixed"]))
        if kind == "int":
            col = draw(st.lists(st.one_of(st.none(), st.integers(-5, 10**6)), min_size=n, max_size=n))
            data[name] = pd.array(col, dtype="Int64")
        elif kind == "float":
            data[name] = draw(st.lists(st.one_of(st.none(), st.floats(0.01, 1e6)), min_size=n, max_size=n))
        else:
            data[name] = pd.Series(draw(st.lists(_cells, min_size=n, max_size=n)), dtype=object).map(
                lambda v: None if v is None else str(v))
    return pd.DataFrame(data)


@given(frames())
def test_suggestions_on_random_frames_are_valid_roles_with_exact_counts(frame):
    g = suggest_roles(frame)
    assert [s.variable for s in g.suggestions] == list(frame.columns)
    assert sum(s.role == WEIGHT for s in g.suggestions) <= 1
    validate_roles(frame, g.roles())  # never a QI that is also excluded, never the weight as a QI
    for s in g.suggestions:
        observed = [v for v in frame[s.variable].tolist() if not pd.isna(v)]
        assert s.distinct == len(set(observed))  # brute force
        assert s.missing == len(frame) - len(observed)
        assert s.reason
    assert suggest_roles(frame.copy()) == g
