"""The Data page's value-label editor: type the labels of a variable's codes, or import a labels file in
the ``.labels.json`` format kanon writes next to CSV releases. Both become a ``set_value_labels`` step
(:mod:`kanon_core.value_labels`), so the labels reach every table, chart, export and the report, and
``kanon apply`` replays them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from kanon_core.dataset import Dataset
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.errors import InputError, KanonError
from kanon_core.value_labels import SetValueLabels, value_table

from . import shared_results, state

MAX_CODES = 200
"""Variables with more distinct values than this are measurements or identifiers, not coded categories."""


def labelable(ds: Dataset) -> list[str]:
    return shared_results.labelable(ds, MAX_CODES)


def editor_key(var: str) -> str:
    h = state.history()
    return f"w_vl_table_{h.uid}_{h.current_id}_{var}"


def edited_labels(base: pd.DataFrame, state_value: Mapping[str, Any] | None) -> tuple[tuple[Any, str], ...]:
    """(code, label) pairs after the officer's edits (the editor's ``{"edited_rows": {row: {column: value}}}``),
    blank labels left out."""
    labels = [str(t) for t in base["label"].fillna("")]
    for row, change in ((state_value or {}).get("edited_rows", {})).items():
        if "label" in change:
            labels[int(row)] = "" if change["label"] is None else str(change["label"])
    return tuple((v, t.strip()) for v, t in zip(base["_value"], labels, strict=True) if t.strip())


def _save(var: str, base: pd.DataFrame) -> None:
    key = editor_key(var)
    pairs = edited_labels(base, st.session_state.get(key))
    var_label = str(st.session_state.get(f"w_vl_varlabel_{key}", "") or "").strip()
    ds = state.dataset()
    labels_changed = pairs != edited_labels(base, None)
    label_changed = var_label != (ds.meta_of(var).label or "")
    if not labels_changed and not label_changed:
        state.flash("Nothing changed: edit a label in the table (or the variable label) first.", "warning")
        return
    try:
        step = SetValueLabels(((var, pairs),) if labels_changed else (),
                              ((var, var_label),) if label_changed else ())
    except InputError as exc:
        state.flash(str(exc), "error")
        return
    state.run_step(step, f"Labels of {var} saved as a step of the recipe ({len(pairs)} labelled code(s)).")


def _import() -> None:
    up = st.session_state.get("w_vl_file")
    if up is None:
        state.flash("Choose a labels file first.", "warning")
        return
    from kanon_core.recipe import parse_json

    ds = state.dataset()
    try:
        spec = parse_json(up.getvalue(), "labels file")
        step, unknown = SetValueLabels.from_spec(spec, ds.columns)
    except KanonError as exc:
        state.flash(str(exc), "error")
        return
    state.run_step(step, f"Labels imported for {len(step.columns)} variable(s) as a step of the recipe."
                   + (f" Not in the data, ignored: {', '.join(unknown)}." if unknown else ""))
    codes = tuple((var, tuple(str(c) for c in d.get("missing_codes") or ()))
                  for var, d in spec.items() if var in ds.columns and isinstance(d, dict) and d.get("missing_codes"))
    if codes:
        state.run_step(DeclareMissingValues(codes), f"Missing codes of the labels file declared for {len(codes)} "
                                                    "variable(s) (a second step).")


def render(ds: Dataset) -> None:
    options = labelable(ds)
    st.markdown("Labels turn codes into words in every table, chart and the report. Files such as SPSS or "
                "Stata bring their own; for a CSV file, type them here or import a labels file "
                "(`name.labels.json`, as kanon writes next to a CSV release).")
    if not options:
        st.caption(f"No variable has between 1 and {MAX_CODES} distinct values to label.")
    else:
        var = st.selectbox("Variable", options, key="w_vl_var",
                           format_func=lambda c: f"{c}: {ds.meta_of(c).label}" if ds.meta_of(c).label else c)
        base = value_table(ds, var)
        key = editor_key(var)
        st.text_input("Variable label", value=ds.meta_of(var).label or "", key=f"w_vl_varlabel_{key}")
        st.data_editor(
            base, key=key, hide_index=True, width="stretch", num_rows="fixed",
            disabled=["code", "records"], column_order=["code", "records", "label"],
            column_config={"code": st.column_config.TextColumn("Code"),
                           "records": st.column_config.NumberColumn("Records", format="%d"),
                           "label": st.column_config.TextColumn("Label", max_chars=500)},
        )
        st.button("Save these labels", key="btn_vl_save", on_click=_save, args=(var, base))
    st.file_uploader("Import a labels file (JSON)", type=["json"], key="w_vl_file")
    st.button("Import labels", key="btn_vl_import", on_click=_import)
