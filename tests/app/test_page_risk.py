"""The Risk page through AppTest: the alpha control and the records that rest on missing values."""

from __future__ import annotations

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
