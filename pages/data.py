"""Data: choose the sample or upload a file, set variable roles, missing-value rules and value labels.

After an upload the file is read at once (an Excel workbook with several sheets asks for its sheet) and one
screen shows the role table, pre-filled with suggested roles (:mod:`kanon_core.guidance`), with a single
"Use these roles" button; the count of records below k appears next to it.
"""

from __future__ import annotations

import streamlit as st

from kanon_app import big_file, guide, labels_ui, roles_ui, shared_results, state
from kanon_app.navigation import ensure_app_navigation
from kanon_app.pager import paged
from kanon_app.samples import SAMPLES, load_sample
from kanon_core.cli.common import parse_missing_codes
from kanon_core.dataset import MISSING_HELP, MISSING_SEMANTICS, Roles, validate_roles
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.errors import KanonError
from kanon_core.io import excel_sheets, load_dataset, supported_extensions, typed_codes
from kanon_core.steps import DeclareMissingCodes, SetMissing
from kanon_core.utility.design import FPC_HELP

ensure_app_navigation()

NONE = "(none)"


# (comments, not docstrings: Streamlit would print a bare string of a page script)
LOAD_OPEN = "w_load_open"  # the "Load data" expander's open state: a failed load sets it, so the block stays open
PENDING_SHEET = "pending_sheet"  # workflow key: an uploaded Excel workbook waiting for its sheet choice
SEEN_UPLOAD = "seen_upload_id"  # workflow key: the upload last read (or refused), so each file is read once


def _load_sample() -> None:
    key = st.session_state["w_sample"]
    state.set_source(load_sample(key), {"kind": "sample", "key": key, "title": SAMPLES[key].title,
                                        "path": str(SAMPLES[key].path)})
    state.flash(f"Loaded: {SAMPLES[key].title}")


EXCEL = (".xlsx", ".xls")


def _is_excel(name: str) -> bool:
    return name.lower().endswith(EXCEL)


def _failed(message: str) -> None:
    state.flash(message, "error")
    st.session_state[LOAD_OPEN] = True  # the block stays open to try another file


def _on_upload() -> None:
    """Read an uploaded file at once; a workbook with several sheets waits for its sheet choice.

    Called as the uploader's callback and again at the top of every run of this page: Streamlit stops a
    run as soon as a new request arrives (a quick click after an upload), and what the stopped run's
    callback started is not guaranteed to survive, so the file could sit in the uploader unread. The
    upload's id makes the second call a no-op.
    """
    up = st.session_state.get("w_upload")
    if up is None:
        st.session_state.pop(SEEN_UPLOAD, None)
        return
    if st.session_state.get(SEEN_UPLOAD) == up.file_id:
        return
    st.session_state[SEEN_UPLOAD] = up.file_id
    st.session_state.pop(PENDING_SHEET, None)
    if _is_excel(up.name):
        try:
            sheets = excel_sheets(up.getvalue())
        except KanonError as exc:
            _failed(str(exc))
            return
        if len(sheets) > 1:
            st.session_state[PENDING_SHEET] = up.name
            st.session_state[LOAD_OPEN] = True
            return
    _load_upload()


def _load_upload() -> None:
    up = st.session_state.get("w_upload")
    if up is None:
        state.flash("Choose a file first.", "warning")
        return
    sheet = st.session_state.get(f"w_sheet_{up.name}") if _is_excel(up.name) else None
    try:
        ds = load_dataset(up.getvalue(), filename=up.name, sheet=sheet)
    except KanonError as exc:
        _failed(str(exc))
        return
    st.session_state.pop(PENDING_SHEET, None)
    title = f"{up.name} (sheet {sheet})" if sheet else up.name
    state.set_source(ds, {"kind": "upload", "title": title, "name": up.name, **({"sheet": sheet} if sheet else {})})
    state.flash(f"Loaded {title}: {ds.n_records:,} records, {len(ds.columns)} variables.")


def _declare_missing_like() -> None:
    ds = state.dataset()
    step = DeclareMissingValues.missing_like(ds)
    if not step.values:
        state.flash("No text that often means missing is left to declare.", "warning")
        return
    state.run_step(step, f"Declared missing in {', '.join(step.columns)} (recorded as a step of the recipe).")


def _apply_roles() -> None:
    ss = st.session_state

    def pick(key: str) -> str | None:
        return None if ss[key] == NONE else ss[key]

    try:
        new = Roles(tuple(ss["w_roles_qis"]), pick("w_roles_weight"), pick("w_roles_strata"), pick("w_roles_psu"),
                    tuple(ss["w_roles_outcomes"]), tuple(ss["w_roles_direct"]), fpc=pick("w_roles_fpc"))
        validate_roles(state.dataset().frame, new)
    except KanonError as exc:
        state.flash(str(exc), "error")
        return
    roles_ui.apply_roles(new, bool(ss.get("w_roles_many")))


def _declare_codes() -> None:
    var = st.session_state["w_mc_var"]
    text = st.session_state.get(f"w_mc_codes_{var}", "")
    try:
        codes = parse_missing_codes(f"{var}=" + "|".join(t.strip() for t in text.split(",") if t.strip()))
    except KanonError as exc:
        state.flash(str(exc), "error")
        return
    typed = typed_codes(state.dataset().frame[var], codes.get(var, ()))  # "-9" is -9 in a numeric variable
    state.run_step(DeclareMissingCodes(var, typed), f"Missing codes of {var} declared.")


_on_upload()  # a file whose callback was lost is read now (see _on_upload)
st.title("Data")
with st.container():  # one element whatever the number of messages, so the blocks below keep their place
    state.show_flash()
guide.render()
big_file.data_panel()  # a CSV or Parquet file read out of core (preview, summary, QIs for Risk)

with st.expander("Load data", key=LOAD_OPEN, on_change="rerun", icon=":material/upload_file:"):
    c_up, c_sample = st.columns([3, 2])
    with c_up:
        st.caption("Your file is read in memory as soon as it is chosen and never leaves this machine. "
                   "CSV (delimiter detected), Parquet, Excel, SPSS, Stata and SAS files are accepted.")
        up = st.file_uploader("Microdata file", type=[e.lstrip(".") for e in supported_extensions()],
                              key="w_upload", on_change=_on_upload)
        if up is not None and st.session_state.get(PENDING_SHEET) == up.name:
            try:
                sheets = excel_sheets(up.getvalue())
            except KanonError as exc:
                st.error(str(exc))
                sheets = []
            st.selectbox(f"Sheet (the workbook has {len(sheets)}; one is read)", sheets, index=None,
                         placeholder="Choose the sheet to read", key=f"w_sheet_{up.name}", on_change=_load_upload)
    with c_sample:
        key = st.selectbox("Or a sample", list(SAMPLES), format_func=lambda k: SAMPLES[k].title, key="w_sample")
        st.caption(SAMPLES[key].description)
        st.button("Load sample", key="btn_load_sample", on_click=_load_sample)

state.keep_widget_values()  # the choices of the page left, for when it is opened again
ds = state.dataset()
src = state.source()
st.markdown(f"**{src.get('title', '')}** — {ds.n_records:,} records, {len(ds.columns)} variables "
            f"(version v{state.current().id})")

missing_like = state.memo("missing_like_counts", None, lambda: shared_results.missing_like_counts(ds))
if missing_like:
    listed = ", ".join(f"{col} ({n:,})" for col, n in missing_like.items())
    st.warning(f"Text that other programs often read as missing (\"NA\", \"null\", \".\", ...) is kept as a "
               f"value here, so it is not a wildcard: {listed} cells. If it does mean missing in these "
               "variables, declare it (recorded as a step, replayed by the recipe).")
    st.button("Declare them missing", key="btn_declare_missing_like", on_click=_declare_missing_like)

st.subheader("Variables and roles")
roles_ui.render(ds)
risk_slot = st.container()  # filled at the end: the page reaches the browser before the first risk count

summary = state.memo("variable_summary", None, lambda: shared_results.variable_summary(ds))
tab_vars, tab_preview, tab_roles, tab_missing, tab_labels = st.tabs(
    ["Variables", "Preview", "Roles", "Missing values", "Value labels"])
with tab_vars:
    st.dataframe(summary, hide_index=True, width="stretch")
with tab_preview:
    st.dataframe(paged(ds.frame, "w_preview_page", noun="records"), width="stretch")  # a page of rows at a time

with tab_roles:
    cols = ds.columns
    r = ds.roles
    options = [NONE] + cols
    st.caption("The same roles as lists, with the design variables (stratum, PSU, finite population correction).")
    with st.form("roles_form"):
        st.multiselect("Quasi-identifiers (known to an intruder)", cols, default=list(r.qis), key="w_roles_qis")
        c1, c2, c3, c4 = st.columns(4)
        c1.selectbox("Sampling weight", options, index=options.index(r.weight or NONE), key="w_roles_weight")
        c2.selectbox("Stratum", options, index=options.index(r.strata or NONE), key="w_roles_strata")
        c3.selectbox("PSU / cluster", options, index=options.index(r.psu or NONE), key="w_roles_psu")
        c4.selectbox("Finite population correction", options, index=options.index(r.fpc or NONE), key="w_roles_fpc",
                     help=FPC_HELP)
        st.multiselect("Outcomes / analysis variables", cols, default=list(r.outcomes), key="w_roles_outcomes")
        st.multiselect("Direct identifiers (excluded from any release)", cols, default=list(r.direct_ids),
                       key="w_roles_direct")
        st.checkbox("I know some quasi-identifiers have very many distinct values", key="w_roles_many")
        st.form_submit_button("Apply roles", on_click=_apply_roles)

with tab_missing:
    st.markdown(MISSING_HELP)
    sem = st.radio("Missing values in risk counting", MISSING_SEMANTICS, index=MISSING_SEMANTICS.index(ds.missing),
                   horizontal=True, key="w_missing_sem")
    st.button("Apply", key="btn_apply_missing", disabled=sem == ds.missing,
              on_click=state.run_step, args=(SetMissing(sem), f"Missing values now count as {sem}."))
    st.markdown("**Declared missing codes**, e.g. `-9, -8`, `99` or `NA`. Only empty cells and declared codes "
                "are missing; text such as \"NA\" is a value until it is declared.")
    c1, c2 = st.columns([1, 2])
    var = c1.selectbox("Variable", ds.columns, key="w_mc_var")
    state.widget_value(f"w_mc_codes_{var}", ", ".join(map(str, ds.meta_of(var).missing_codes)))
    c2.text_input("Codes (comma-separated)", key=f"w_mc_codes_{var}")
    st.button("Declare missing codes", key="btn_mc", on_click=_declare_codes)

with tab_labels:
    labels_ui.render(ds)

with risk_slot:  # a fresh session's first count loads the compiled kernels (a second on 2 cores)
    roles_ui.risk_line()
