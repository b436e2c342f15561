"""Data: choose the sample or upload a file, set variable roles and missing-value rules."""

from __future__ import annotations

import streamlit as st

from kanon_app import state
from kanon_app.samples import SAMPLES, load_sample
from kanon_core.dataset import MISSING_HELP, MISSING_SEMANTICS, Roles
from kanon_core.describe import too_many_distinct, variable_summary
from kanon_core.errors import KanonError
from kanon_core.io import load_dataset, supported_extensions
from kanon_core.steps import DeclareMissingCodes, SetMissing, SetRoles

st.title("Data")
state.show_flash()

with st.expander("Load data", expanded=False):
    choice = st.radio("Source", ["Sample data", "Upload a file"], horizontal=True, key="w_source_kind")
    if choice == "Sample data":
        key = st.selectbox("Sample", list(SAMPLES), format_func=lambda k: SAMPLES[k].title, key="w_sample")
        st.caption(SAMPLES[key].description)
        if st.button("Load sample", key="btn_load_sample"):
            state.set_source(load_sample(key), {"kind": "sample", "key": key, "title": SAMPLES[key].title,
                                                "path": str(SAMPLES[key].path)})
            state.flash(f"Loaded: {SAMPLES[key].title}")
            st.rerun()
    else:
        st.caption("The file is read in memory and never leaves this machine.")
        up = st.file_uploader("Microdata file", type=[e.lstrip(".") for e in supported_extensions()], key="w_upload")
        if up is not None and st.button("Load this file", key="btn_load_upload"):
            try:
                ds = load_dataset(up.getvalue(), filename=up.name)
            except KanonError as exc:
                st.error(str(exc))
            else:
                state.set_source(ds, {"kind": "upload", "title": up.name, "name": up.name})
                state.flash(f"Loaded {up.name}: {ds.n_records:,} records, {len(ds.columns)} variables.")
                st.rerun()

ds = state.dataset()
src = state.source()
st.markdown(f"**{src.get('title', '')}** — {ds.n_records:,} records, {len(ds.columns)} variables "
            f"(version v{state.current().id})")

summary = state.memo("variable_summary", None, lambda: variable_summary(ds))
tab_vars, tab_preview, tab_roles, tab_missing = st.tabs(["Variables", "Preview", "Roles", "Missing values"])
with tab_vars:
    st.dataframe(summary, hide_index=True, width="stretch")
with tab_preview:
    st.dataframe(ds.frame.head(200), width="stretch")

with tab_roles:
    cols = ds.columns
    r = ds.roles
    none = "(none)"
    with st.form("roles_form"):
        qis = st.multiselect("Quasi-identifiers (known to an intruder)", cols, default=list(r.qis), key="w_roles_qis")
        c1, c2, c3 = st.columns(3)
        weight = c1.selectbox("Sampling weight", [none] + cols, index=([none] + cols).index(r.weight or none), key="w_roles_weight")
        strata = c2.selectbox("Stratum", [none] + cols, index=([none] + cols).index(r.strata or none), key="w_roles_strata")
        psu = c3.selectbox("PSU / cluster", [none] + cols, index=([none] + cols).index(r.psu or none), key="w_roles_psu")
        outcomes = st.multiselect("Outcomes / analysis variables", cols, default=list(r.outcomes), key="w_roles_outcomes")
        direct = st.multiselect("Direct identifiers (excluded from any release)", cols, default=list(r.direct_ids), key="w_roles_direct")
        confirm_many = st.checkbox("I know some quasi-identifiers have very many distinct values", key="w_roles_many")
        submitted = st.form_submit_button("Apply roles")
    if submitted:
        new = Roles(tuple(qis), None if weight == none else weight, None if strata == none else strata,
                    None if psu == none else psu, tuple(outcomes), tuple(direct))
        many = too_many_distinct(ds, list(qis))
        if many and not confirm_many:
            st.warning("These quasi-identifiers have very many distinct values, which makes almost every record "
                       "unique: " + ", ".join(f"{c} ({n:,})" for c, n in many.items())
                       + ". Recode them first, or tick the box to use them anyway.")
        else:
            try:
                check = ds.with_roles(new)
                check.weights()
                state.apply(SetRoles.from_roles(new))
            except KanonError as exc:
                st.error(str(exc))
            else:
                state.flash("Roles applied as a new version.")
                st.rerun()

with tab_missing:
    st.markdown(MISSING_HELP)
    sem = st.radio("Missing values in risk counting", MISSING_SEMANTICS, index=MISSING_SEMANTICS.index(ds.missing),
                   horizontal=True, key="w_missing_sem")
    if sem != ds.missing and st.button("Apply", key="btn_apply_missing"):
        state.apply(SetMissing(sem))
        st.rerun()
    st.markdown("**Declared missing codes** (besides empty cells), e.g. `-9, -8` or `99`")
    c1, c2 = st.columns([1, 2])
    var = c1.selectbox("Variable", ds.columns, key="w_mc_var")
    current_codes = ", ".join(map(str, ds.meta_of(var).missing_codes))
    text = c2.text_input("Codes (comma-separated)", value=current_codes, key=f"w_mc_codes_{var}")
    if st.button("Declare missing codes", key="btn_mc"):
        from kanon_core.cli.common import parse_missing_codes

        try:
            codes = parse_missing_codes(f"{var}=" + "|".join(t.strip() for t in text.split(",") if t.strip()))[var]
            state.apply(DeclareMissingCodes(var, codes))
        except KanonError as exc:
            st.error(str(exc))
        else:
            st.rerun()
