"""Export: the current version as CSV / Parquet / Stata / SPSS, the recipe, the HTML report, the project
file; and loading a recipe or a project. Files are built in memory, nothing is written to disk."""

from __future__ import annotations

import dataclasses
import datetime as dt
import zlib

import streamlit as st

from kanon_app import big_file, export_ui, prefetch, state
from kanon_app.navigation import ensure_app_navigation
from kanon_core.errors import KanonError
from kanon_core.export import DEFAULT_SUPPRESSED_CODE, SUPPRESSED_LABEL, ExportOptions, release
from kanon_core.project import Project
from kanon_core.recipe import Recipe, graft
from kanon_core.report import ReportOptions, default_formulas, report_html
from kanon_core.utility.info_loss import hierarchies_fingerprint

ensure_app_navigation()

st.title("Export")
st.caption("Download the treated data, the recipe that reproduces it (`kanon apply`), a report for the data "
           "steward and a project file to continue later. Files are built in memory on this machine.")
state.keep_widget_values()  # the choices of the page left, for when it is opened again
state.show_flash()
big_file.in_memory_notice("Export")

hist = state.history()
version = state.current()
ds = version.dataset
original = hist.original.dataset
settings = state.settings()
source = state.source()
k = state.session_k()

rel = state.memo("export_release", None, lambda: release(ds, original))
st.markdown(f"**Version v{version.id}**: {version.label} — {ds.n_records:,} records, {len(rel.frame.columns)} "
            f"variables released ({len(ds.columns) - len(rel.frame.columns)} direct identifier(s) dropped), "
            f"{rel.n_suppressed:,} suppressed cells.")


def _save_notes() -> None:
    settings["notes"] = st.session_state["w_export_notes"]


tab_data, tab_recipe, tab_report, tab_project = st.tabs(["Data", "Recipe", "Report", "Project"])

# -- data ------------------------------------------------------------------------------------------------------
with tab_data:
    state.widget_value("w_export_code", int(settings.get("suppressed_code", DEFAULT_SUPPRESSED_CODE)))
    state.widget_value("w_export_csv_code", bool(settings.get("csv_code", False)))
    c1, c2 = st.columns(2)
    code = int(c1.number_input("Code for suppressed cells", step=1, key="w_export_code",
                               help="Declared as a user-missing value in SPSS files (its text for string "
                                    "variables); used in CSV only when the box on the right is ticked."))
    csv_code = c2.checkbox("CSV: write suppressed cells as this code (else empty)", key="w_export_csv_code")
    settings["suppressed_code"], settings["csv_code"] = code, csv_code
    try:
        options = ExportOptions(suppressed_code=code, csv_code=csv_code)
        problem = export_ui.export_problem(rel, options)
    except KanonError as exc:
        options, problem = ExportOptions(), str(exc)
    st.markdown(
        f"Suppressed cells (values set to missing by kanon) stay recognisable: **SPSS** user-missing code {code} "
        f"labelled “{SUPPRESSED_LABEL}”; **Stata** extended missing `.a` (strings: empty); **CSV** "
        f"{'the code ' + str(code) if csv_code else 'empty'}; **Parquet** null. Values already missing in the "
        "original stay ordinary missing values. Labels: inside SPSS/Stata files, in the labels file for CSV/Parquet.")
    if problem:
        st.error(problem)
    # a file made on click that failed (outside a run: the browser could only say that it failed) says why here
    failures = state.download_failures()
    for message in export_ui.failure_messages(failures):
        st.error(message)
    cols = st.columns(4)
    for col, d in zip(cols, export_ui.data_downloads(hist, version, options, failures), strict=True):
        col.download_button(d.label, data=d.make, file_name=d.file_name, mime=d.mime, key=f"dl_{d.file_name}",
                            disabled=bool(problem), on_click="ignore")
    for note in state.memo("release_notes", (), lambda: export_ui.release_notes_of(version)):
        st.caption(note)
    lab = export_ui.labels_download(hist, version, options) if not problem else None
    if lab is not None:
        st.download_button(lab.label, data=lab.make(), file_name=lab.file_name, mime=lab.mime, key="dl_labels",
                           on_click="ignore")
    st.caption("`kanon apply RECIPE -o OUT.csv` (or .parquet, .dta, .sav) with this version's recipe writes the "
               "same files, byte for byte.")

# -- recipe ----------------------------------------------------------------------------------------------------
with tab_recipe:
    state.widget_value("w_export_notes", str(settings.get("notes", "")))
    st.text_area("Notes for the recipe and the report: the disclosure scenario, why these variables are "
                 "quasi-identifiers, the decisions taken", key="w_export_notes", on_change=_save_notes, height=120)
    recipe = export_ui.recipe_for(hist, source, settings, version)
    recipe_json = recipe.to_json()
    st.download_button(f"Download the recipe ({len(recipe.steps)} steps)", data=recipe_json.encode("utf-8"),
                       file_name=f"{ds.name}.recipe.json", mime="application/json", key="dl_recipe",
                       on_click="ignore")
    with st.expander("Show the recipe"):
        st.code(recipe_json, language="json")
    st.markdown("**Replay a recipe** on the data loaded now (e.g. the next wave of a survey). Its versions are "
                "added as a new branch from the original data; nothing already done is lost.")
    up = st.file_uploader("Recipe (JSON)", type=["json"], key="w_recipe_upload")
    strict = st.checkbox("Strict: stop at warnings too (e.g. a recoded category that does not occur)",
                         key="w_recipe_strict")
    if st.button("Replay the recipe", key="btn_replay_recipe", disabled=up is None):
        try:
            loaded = Recipe.from_json(up.getvalue())  # type: ignore[union-attr]
        except KanonError as exc:
            st.error(str(exc))
        else:
            result = state.run_with_progress(
                "Replaying the recipe", lambda progress: export_ui.replay_recipe(hist, loaded, strict, progress))
            if result is not None:
                proved = (f", {result.verified_steps} matching the recipe's recorded results"
                          if result.verified_steps else "")
                state.flash(f"Recipe replayed: {len(loaded.steps)} step(s){proved}, now version v{state.current().id}.")
                for w in result.warnings:
                    state.flash(w, "warning")
                st.rerun()

# -- report ----------------------------------------------------------------------------------------------------
with tab_report:
    st.markdown(f"A self-contained HTML file (works offline) for a data steward: data and roles, risk before and "
                f"after at k = {k}, the steps, suppression tables, MINUCs and the utility comparison with plots. "
                f"It holds counts and percentages only, never a record, and names no category with fewer than "
                f"k = {k} records (threshold rule: such categories are pooled, with the smallest others where the "
                f"total would give back a pooled count below k, and counts below k read '< k').")
    qis = tuple(ds.roles.qis)
    formula_key = f"w_report_formula_{zlib.crc32(repr(qis).encode()):08x}"  # the default follows the QIs
    state.widget_value(formula_key, "; ".join(default_formulas(ds, qis)))
    state.widget_value("w_report_minucs", True)
    formula_text = st.text_input("Regression model(s) for the utility check, separated by ';'", key=formula_key)
    with_minucs = st.checkbox(f"Include MINUCs (k = {k}) before and after", key="w_report_minucs")
    formulas = tuple(f.strip() for f in formula_text.split(";") if f.strip())
    # the session's hierarchies by content: Prec in the report is measured with them, as on Compare
    params = (k, formulas, with_minucs, settings.get("notes", ""), hierarchies_fingerprint(state.hierarchies()))
    built = state.memo_peek("report_html", params)
    opts = ReportOptions(k=k, notes=str(settings.get("notes", "")), created=dt.date.today().isoformat(),
                         formulas=formulas, minucs=with_minucs)
    # MINUCs already found on the MINUCs page (same QIs, k and semantics, same codes) are not searched again
    found = export_ui.minucs_of_minucs_page(hist, version, qis, k) if qis and with_minucs else None
    if (qis and with_minucs and found is None and built is None
            and prefetch.minucs_page_search_for_report(qis, opts) is None):  # else the report waits for it
        prefetch.start_report_minucs(qis, opts)  # the longest part of the report, while the officer reads
    clicked = (not state.job_running("report_html", params)
               and st.button("Build the report", key="btn_build_report", disabled=not qis))
    if clicked or state.job_running("report_html", params):
        if clicked:
            state.memo_put("report_html", params, None)  # a click rebuilds (e.g. on a new day)
        session_hs, problems = export_ui.report_hierarchies(hist, version, qis)
        for problem in problems:  # e.g. a QI with no observed values: the report is built all the same
            st.warning(f"{problem} The report measures its information loss without a hierarchy for it.")
        opts = dataclasses.replace(opts, hierarchies=session_hs)
        risks = {v.id: r for v in hist.lineage(version.id) for p, r in state.memo_found("version_risk", v) if p == k}
        ahead = (lambda: found) if found is not None else prefetch.report_minucs_ready(qis, opts)
        # the Compare page's weighted percentages of the same two files (its default Before, all QIs, Wald
        # intervals): the report uses them when they are of the variables it compares, else computes its own
        compare_key = prefetch.compare_params(version.id, qis)
        prefetch.wait_for(prefetch.COMPARE, compare_key, version.id)  # computed ahead: its result, not a second run
        compared = state.memo_peek(prefetch.COMPARE, compare_key)

        def _build(progress):
            # the counts computed ahead are waited for while the report's other sections are gathered
            html = report_html(hist, version.id, recipe_json, opts, version_risks=risks,
                               minucs=ahead, comparison=compared).encode("utf-8")
            progress.update(1.0)  # a Cancel clicked meanwhile drops the report
            return html

        built = state.run_in_background("report_html", params, "Building the report", _build,
                                        start_now=clicked)
    if not qis:
        st.info("Choose quasi-identifiers on the Data page first.")
    if built is not None:
        st.download_button(f"Download the report ({len(built) / 2**20:.1f} MB)", data=built,
                           file_name=f"{ds.name}_v{version.id}_report.html", mime="text/html", key="dl_report",
                           on_click="ignore")

# -- project ---------------------------------------------------------------------------------------------------
with tab_project:
    st.markdown("A project file remembers the data (its name and fingerprint, not its content), every "
                "version with its branches, the hierarchies and the settings. Reopening it checks the data is "
                "the same file and replays every version, checking each against its recorded result.")
    project = export_ui.project_for(hist, source, settings, state.hierarchies())
    st.download_button("Download the project file", data=project.to_json().encode("utf-8"),
                       file_name=export_ui.project_file_name(source), mime="application/json", key="dl_project",
                       on_click="ignore")
    st.markdown("**Open a project**")
    pup = st.file_uploader("Project file", type=["json"], key="w_project_upload")
    dup = st.file_uploader("Its data file (not needed for a sample or for the data loaded now)",
                           key="w_project_data_upload")
    allow = st.checkbox("Allow a changed data file (replay as on a new wave)", key="w_project_allow")
    if st.button("Open the project", key="btn_open_project", disabled=pup is None):
        try:
            proj = Project.from_json(pup.getvalue())  # type: ignore[union-attr]
            data, src = export_ui.project_data(proj, original, (dup.getvalue(), dup.name) if dup else None)
        except KanonError as exc:
            st.error(str(exc))
        else:
            result = state.run_with_progress("Reopening the project",
                                             lambda progress: proj.reopen(data, allow, progress))
            if result is not None:
                state.set_source(result.history.original.dataset, src)
                if proj.tree:  # the whole saved tree, with its version numbers
                    st.session_state["history"] = result.history
                else:  # a project of format 1: the saved lineage
                    graft(state.history(), result, 0)
                state.hierarchies().update(proj.hierarchies)
                state.settings().update(proj.settings)
                for key in ("w_export_notes", "w_export_code", "w_export_csv_code"):
                    st.session_state.pop(key, None)
                state.flash(f"Project opened: {proj.data.name}, {len(proj.recipe.steps)} step(s), "
                            f"version v{state.current().id}.")
                for w in result.warnings:
                    state.flash(w, "warning")
                st.rerun()
