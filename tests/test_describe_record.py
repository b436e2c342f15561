"""Plain sentences per record and the readings of the measures (values only when asked)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kanon_core.dataset import Dataset, Roles
from kanon_core.risk.describe_record import READINGS, chance_in_words, describe_record, readings_for
from kanon_core.risk.summary import (
    failing_criteria,
    l_distribution,
    risk_distribution,
    risk_measures,
    risk_summary,
)


def _ds():
    frame = pd.DataFrame({
        "sex": ["f", "f", "m", "m", "m", "f"],
        "age": ["30", "30", "40", "40", None, "50"],
        "occ": ["a", "b", "c", "c", "c", "a"],
        "w": [2.0, 2.0, 1.5, 1.5, 1.5, 3.2],
    })
    return Dataset(frame=frame, roles=Roles(qis=("sex", "age"), weight="w"))


def test_sentences():
    ds = _ds()
    qm = ds.qi_matrix()
    s = risk_summary(qm, 3, "wildcard", ds.weights())
    m = risk_measures(ds, s.sizes, sensitive=["occ"])
    # record 5 (f, 50) is unique; its weight 3.2 says about 3 such people
    text = describe_record(5, qm, s.sizes, m)
    assert text.startswith("unique on sex × age among 6 records; its weight says about 3 such people in the population")
    assert "every record it matches has the same occ" in text
    assert "f" not in text.split(";")[0].replace("of", "")  # no values by default
    # record 2 (m, 40) matches record 3 and the blank-age record 4: 3 records, occ all c
    text2 = describe_record(2, qm, s.sizes, m)
    assert "shares its sex × age with 2 other records among 6 records" in text2
    assert "their weights say about 4 such people" in text2  # 1.5 * 3 = 4.5 rounds to 4 (half to even)
    # record 4 has a missing age: it matches any value
    assert "its missing age matches any value" in describe_record(4, qm, s.sizes, m)
    shown = describe_record(5, qm, s.sizes, m, show_values=True)
    assert shown.startswith("Sex = f, age = 50; unique")
    r = float(m.individual[5])
    assert f"individual risk {r:.3g}, {chance_in_words(r)}" in text


def test_fractional_sizes_sentence():
    ds = _ds()
    qm = ds.qi_matrix()
    s = risk_summary(qm, 3, "wildcard", ds.weights(), alpha=0.5)
    text = describe_record(2, qm, s.sizes)
    assert "counts 2.5 matching records on sex × age among 6 records (matches with missing values count 0.5)" in text


def test_chance_in_words_and_readings():
    assert chance_in_words(0.08) == "about 1 chance in 12"
    assert chance_in_words(0.0) == "no chance"
    assert chance_in_words(1.0) == "certain"
    assert chance_in_words(float("nan")) == "undefined"
    assert "SUDA" in READINGS["suda"] and "not probabilities" in READINGS["suda"]
    ds = _ds()
    s = risk_summary(ds.qi_matrix(), 3, "wildcard", ds.weights())
    m = risk_measures(ds, s.sizes)
    assert set(readings_for(m)) == {"individual_risk", "expected_reidentifications", "global_risk",
                                    "records_above_max_risk", "suda"}


def test_failing_criteria_and_distributions():
    ds = _ds()
    qm = ds.qi_matrix()
    s = risk_summary(qm, 2, "category", ds.weights())
    m = risk_measures(ds, s.sizes, sensitive=["occ"], max_risk=0.3)
    fails = failing_criteria(s, m, l_target=2, t_target=0.5)
    assert fails["k-anonymity (k = 2)"].tolist() == [False, False, False, False, True, True]
    np.testing.assert_array_equal(fails["individual risk above 0.3"], m.individual > 0.3)
    # category classes: {0,1} occ a,b -> l 2; {2,3} c,c -> 1; {4} c -> 1; {5} a -> 1
    assert fails["2-diversity of occ"].tolist() == [False, False, True, True, True, True]
    dist = l_distribution(m.table.per_record(m.sensitive[0].l_distinct))
    assert dict(zip(dist["l"], dist["records"]))["1"] == 4
    assert risk_distribution(np.array([0.0005, 0.01, 0.2, np.nan]))["records"].tolist() == [1, 1, 0, 0, 1, 0, 1]


def test_report_section_shows_counts_not_values():
    from kanon_core.risk.report_section import measures_table, risk_measures_section

    ds = _ds()
    frame = ds.frame.assign(hid=[1, 1, 2, 2, 3, 3])
    ds = Dataset(frame=frame, roles=ds.roles)
    s = risk_summary(ds.qi_matrix(), 3, "wildcard", ds.weights())
    m = risk_measures(ds, s.sizes, household="hid", sensitive=["occ"])
    html_text = risk_measures_section(m, m)
    assert html_text.startswith('<section id="risk-measures"><h2>Risk beyond k</h2>')
    assert "Benedetti &amp; Franconi" in html_text and "must not be released unchanged" in html_text
    tab = measures_table(m, m)
    row = tab[tab["measure"] == "Expected re-identifications"].iloc[0]
    assert row["before"] == row["after"] == f"{m.glob.expected_reidentifications:,.2f}"
    assert "occ: distinct l (min)" in tab["measure"].tolist()
    for value in ("30", "50", "f", "m"):  # no data value reaches the report
        assert f">{value}<" not in html_text
