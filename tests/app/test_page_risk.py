"""The Risk page through AppTest: the alpha control and the records that rest on missing values."""

from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest

from kanon_app.samples import load_sample
from kanon_core.risk.summary import risk_summary

from .helpers import APP, metric, open_page


def test_alpha_control_and_wildcard_dependent_statement():
    at = open_page("risk.py")
    ds = load_sample("els")
    qm = ds.qi_matrix()
    at1 = risk_summary(qm, 3, ds.missing, ds.weights())
    assert at1.n_wildcard_dependent > 0  # the sample has records made safe by blank cells
    shown = [w.value for w in at.warning if "only because records with missing values count as matches" in w.value]
    assert len(shown) == 1
    assert f"{at1.n_wildcard_dependent:,} records reach k = 3 only because" in shown[0]
    assert "with alpha = 0 they would be below k" in shown[0]
    assert metric(at, "Records violating k=3") == f"{at1.n_violating:,}"
    dep = next(df.value for df in at.dataframe if "fk_alpha0" in df.value.columns)
    assert len(dep) == min(1000, at1.n_wildcard_dependent)
    assert (dep["fk_alpha1"] >= 3).all() and (dep["fk_alpha0"] < 3).all()

    at.number_input(key="w_alpha").set_value(0.0).run()
    assert not at.exception
    at0 = risk_summary(qm, 3, ds.missing, ds.weights(), alpha=0.0)
    assert at0.n_violating == at1.n_violating + at1.n_wildcard_dependent
    assert metric(at, "Records violating k=3") == f"{at0.n_violating:,}"
    assert at.session_state["settings"]["alpha"] == 0.0
    assert any("counts **0**" in c.value for c in at.caption)
    # AppTest drops the sidebar after a rerun of an st.navigation app: look at a fresh run on the same state
    fresh = AppTest.from_file(APP, default_timeout=120)
    for key in ("history", "source", "memo", "settings"):
        fresh.session_state[key] = at.session_state[key]
    fresh.run()
    sidebar = " ".join(m.value for m in fresh.sidebar.markdown).replace("&lt;", "<")
    assert f"{at0.n_violating:,} < k=3, alpha 0" in sidebar


def test_measures_beyond_k():
    from kanon_core.risk.summary import risk_measures

    at = open_page("risk.py")
    ds = load_sample("els")
    qm = ds.qi_matrix()
    s = risk_summary(qm, 3, ds.missing, ds.weights())
    m = risk_measures(ds, s.sizes)
    assert metric(at, "Expected re-identifications") == f"{m.glob.expected_reidentifications:,.2f}"
    assert metric(at, "Records above 0.01") == f"{m.glob.n_above:,}"
    tabs = [t.label for t in at.tabs]
    assert f"k-anonymity (k = 3) ({s.n_violating:,})" in tabs
    assert f"individual risk above 0.01 ({m.glob.n_above:,})" in tabs
    top = int(np.nanargmax(m.individual))
    sentence = next(i.value for i in at.info if "among" in i.value)
    assert f"among {s.n_records:,} records" in sentence and "individual risk" in sentence
    assert " = " not in sentence  # no values unless asked
    at.checkbox(key="w_show_values").check().run()
    shown = next(i.value for i in at.info if "among" in i.value)
    assert shown.startswith(f"{qm.names[0]} = ")
    assert at.number_input(key="w_describe_record").value == top

    others = [c for c in ds.columns if c not in qm.names]
    sens = next(c for c in others if c.startswith("BYTX"))
    at.multiselect(key="w_sensitive").set_value([sens]).run()
    at.selectbox(key="w_household").set_value("SCH_ID").run()
    assert not at.exception
    m2 = risk_measures(ds, s.sizes, household="SCH_ID", sensitive=[sens])
    lj, tj = m2.sensitive[0].to_json(m2.table.count)
    assert metric(at, "Distinct l (min)") == f"{lj['l_diversity']:,}"
    assert metric(at, f"t-closeness (worst, {m2.sensitive[0].distance})") == f"{tj['t']:.3f}"
    assert any("SCH_ID" in w.value and "must not be released unchanged" in w.value for w in at.warning)
    labels = [t.label for t in at.tabs]
    assert any(lab.startswith(f"2-diversity of {sens}") for lab in labels)
    assert any(lab.startswith(f"0.2-closeness of {sens}") for lab in labels)
    assert any(lab.startswith("household risk above 0.01") for lab in labels)
