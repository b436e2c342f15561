"""The hierarchy builder of the Recode page: widgets that collect a builder's parameters.

Every hierarchy is made by a :mod:`kanon_core.treat.hierarchy` builder; this module only turns widget
input into its arguments (lists of numbers typed as text, a grouping table) and shows the result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from kanon_core.dataset import Dataset
from kanon_core.errors import InputError
from kanon_core.treat import hierarchy as hz
from kanon_core.treat.default_hierarchy import SCALES, default_hierarchy, scale_of, without_observed_values

from . import state

BUILDERS = {
    "capacity": "Capacity bins (Angiuli & Waldo: merge rare neighbours)",
    "intervals": "Fixed-width intervals",
    "cuts": "Intervals from cut points",
    "quantiles": "Quantile intervals",
    "topbottom": "Top/bottom coding (clipping)",
    "grouping": "Group categories",
    "masking": "Mask trailing characters (ZIP-style)",
    "dates": "Dates to month/quarter/year",
    "keep": "Keep or drop (original → *)",
    "arx": "Import an ARX hierarchy file",
}
NUMERIC_ONLY = {"capacity", "intervals", "cuts", "quantiles", "topbottom"}
NOT_FOR_NUMBERS = {"dates"}
"""Builders a column of numbers is not offered: the date builder refuses numbers (20190115 is no date to it,
:func:`kanon_core.treat.hierarchy.date_hierarchy`), so offering it showed only its refusal; years and other
numbers group with the interval builders."""
MAX_GROUPING_ROWS = 1000
"""Categories the grouping table takes: one editable row each. A postcode of 100,000 values is not grouped by
hand (and its table would hold the browser): the builder says so and points to masking, which it does not
start unasked (masking 100,000 values takes about 0.4 s, and the builder is drawn on every rerun of its tab)."""


def parse_numbers(text: str, what: str = "numbers") -> list[float]:
    """``"5, 10; 20"`` → [5, 10, 20]; a ``%`` suffix is kept as a fraction marker by :func:`parse_capacities`.

    ``float`` reads "nan" and "inf": they are refused here, as the builders refuse them (a NaN number of bins
    or capacity made ``int``/``round`` raise a ValueError the page does not show as a message)."""
    parts = [p for p in re.split(r"[,;\s]+", text.strip()) if p]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise InputError(f"Type the {what} as numbers separated by commas (e.g. 5, 10, 20).") from None
    if not all(map(math.isfinite, numbers)):
        raise InputError(f"The {what} must be finite (not NaN or infinity).")
    return numbers


def parse_capacities(text: str, n_records: int) -> list[float]:
    """Capacities as record counts or percentages of the records (``1%, 5%, 20%``)."""
    out = []
    for p in [p for p in re.split(r"[,;\s]+", text.strip()) if p]:
        try:
            out.append(float(p[:-1]) / 100 * n_records if p.endswith("%") else float(p))
        except ValueError:
            raise InputError("Type capacities as record counts or percentages (e.g. 1%, 5%, 20%).") from None
    if not all(map(math.isfinite, out)):
        raise InputError("The bin capacities must be finite (not NaN or infinity).")
    if not out:
        raise InputError("Give at least one capacity.")
    return [max(1.0, round(c)) for c in out]


def parse_levels(text: str) -> list[list[float]]:
    """Cut points per level separated by ``|`` (finest first): ``"20, 30, 40, 50 | 30, 50"``."""
    return [parse_numbers(part, "cut points") for part in text.split("|") if part.strip()]


def _values(ds: Dataset, column: str) -> pd.Series:
    s = ds.frame[column]
    return s[~ds.missing_mask(column)].dropna()


def build_widgets(ds: Dataset, column: str, is_numeric: bool) -> hz.Hierarchy | None:
    """Show the builder chosen for ``column`` and return its hierarchy (None until it can be built)."""
    options = [k for k in BUILDERS if (k not in NOT_FOR_NUMBERS if is_numeric else k not in NUMERIC_ONLY)]
    kind = st.selectbox("Builder", options, format_func=BUILDERS.get, key=f"w_hb_kind_{column}")
    values = _values(ds, column)
    key = f"w_hb_{kind}_{column}"
    if kind == "capacity":
        text = st.text_input("Capacities, one level each (records or % of records)", "1%, 5%, 20%", key=key)
        return hz.greedy_binning_hierarchy(values, parse_capacities(text, len(values)), name=column)
    if kind == "intervals":
        c1, c2, c3 = st.columns(3)
        widths = c1.text_input("Widths, one level each", "5, 10, 20", key=key)
        bottom = c2.text_input("Bottom code (optional)", "", key=key + "_b")
        top = c3.text_input("Top code (optional)", "", key=key + "_t")
        return hz.interval_hierarchy(values, parse_numbers(widths, "widths"),
                                     bottom=_opt(bottom), top=_opt(top), name=column)
    if kind == "cuts":
        text = st.text_input("Cut points per level, finest first, levels separated by |",
                             "20, 30, 40, 50, 60 | 30, 50", key=key)
        return hz.cut_hierarchy(values, parse_levels(text), name=column)
    if kind == "quantiles":
        text = st.text_input("Numbers of bins, one level each", "10, 5, 2", key=key)
        return hz.quantile_hierarchy(values, [int(x) for x in parse_numbers(text, "numbers of bins")], name=column)
    if kind == "topbottom":
        c1, c2, c3 = st.columns(3)
        bottom = c1.text_input("Bottom code (values at or below)", "", key=key + "_b")
        top = c2.text_input("Top code (values at or above)", "", key=key + "_t")
        clip = c3.checkbox("Clip (release the bound itself)", key=key + "_c")
        if not bottom.strip() and not top.strip():
            st.info("Give a bottom code, a top code or both.")
            return None
        return hz.top_bottom_hierarchy(values, bottom=_opt(bottom), top=_opt(top), clip=clip, name=column)
    if kind == "grouping":
        return _grouping(ds, column, values, key)
    if kind == "masking":  # kept per version and width: masking a postcode's 100,000 values takes ~0.4 s
        width = int(st.number_input("Pad numbers with leading zeros to width (0: no padding)", 0, 20, 0, key=key))
        return state.memo("hb_masking", (column, width),
                          lambda: hz.masking_hierarchy(values, width=width or None, name=column))
    if kind == "dates":
        levels = st.multiselect("Levels", list(hz.DATE_LEVELS), ["month", "quarter", "year"], key=key)
        return hz.date_hierarchy(values, levels, name=column)
    if kind == "keep":
        return state.memo("hb_keep", column, lambda: hz.Hierarchy(tuple((t, hz.TOP) for t in _texts(ds, column)),
                                                                  column))
    upload = st.file_uploader("ARX hierarchy CSV (one row per value, one column per level)", type=["csv", "txt"],
                              key=key)
    if upload is None:
        return None
    return hz.read_arx_hierarchy(upload.getvalue(), name=column)


def _use_scale(ds: Dataset, column: str, widget_key: str) -> None:
    scale = st.session_state[widget_key]
    try:
        state.hierarchies()[column] = default_hierarchy(ds, column, scale).with_name(column)
    except InputError as exc:
        state.flash(str(exc), "error")
    else:
        state.settings().setdefault("scales", {})[column] = scale
        state.flash(f"{column}: the automatic hierarchy now treats its codes as {scale}.")


def scale_widget(ds: Dataset, column: str) -> None:
    """The inferred scale of ``column`` (nominal or ordinal) with its reason, and the officer's override:
    choosing the other scale saves the automatic hierarchy built for it as this variable's hierarchy."""
    guess = scale_of(ds, column)
    chosen = state.settings().get("scales", {}).get(column)
    widget_key = f"w_hb_scale_{column}"
    st.session_state[widget_key] = chosen or guess.scale
    st.radio("Scale of the codes", list(SCALES), key=widget_key, horizontal=True,
             on_change=_use_scale, args=(ds, column, widget_key),
             format_func={"nominal": "nominal (unordered categories: grouped, never intervals)",
                          "ordinal": "ordinal (ordered: adjacent values binned)"}.get,
             help="Decides the automatic hierarchy. Nominal codes (relationship, region, occupation) are grouped "
                  "as categories; ordinal codes and numbers are binned into intervals of adjacent values. The "
                  "labels show no extreme or rare value: the lowest and highest bins are open (<30, >=40), and a "
                  "group names only its categories of at least 1 % of the records, and of 2 or more (4 rare categories).")
    st.caption(f"Inferred: {guess.scale}, because {guess.reason}."
               + (f" You chose {chosen}." if chosen and chosen != guess.scale else ""))


def _opt(text: str) -> float | None:
    text = text.strip()
    return None if not text else parse_numbers(text, "bound")[0]


def _texts(ds: Dataset, column: str) -> list[str]:
    qm = ds.qi_matrix([column])
    return [hz.format_number(v) if isinstance(v, (int, float)) else str(v) for v in qm.values[0]]


def n_categories(ds: Dataset, column: str) -> int:
    """Distinct observed values of ``column`` (its codes are made once per data set)."""
    return len(ds.qi_matrix([column]).values[0])


def _grouping(ds: Dataset, column: str, values: pd.Series, key: str) -> hz.Hierarchy | None:
    """An editable table: each value, its label, and its group at level 1 and (optionally) level 2 (None, with
    a note, for a variable of more than :data:`MAX_GROUPING_ROWS` categories)."""
    n = n_categories(ds, column)
    if n > MAX_GROUPING_ROWS:
        st.info(f"{column} has {n:,} categories: too many to group by hand in a table (up to "
                f"{MAX_GROUPING_ROWS:,}). Mask its trailing characters (postcodes, ZIP codes), or import an ARX "
                "hierarchy file made elsewhere.")
        return None
    qm = ds.qi_matrix([column])
    texts = _texts(ds, column)
    table = pd.DataFrame({"value": texts, "label": list(qm.labels[0]), "level 1": list(qm.labels[0]),
                          "level 2": [""] * len(texts)})
    st.caption("Type the same group name for categories to merge. Level 2 groups level-1 groups further "
               "(leave empty to stop at level 1); values with the same level-1 group need the same level-2 group.")
    edited = st.data_editor(table, key=key, hide_index=True, disabled=["value", "label"], width="stretch")
    lvl1 = {row["value"]: str(row["level 1"]).strip() or row["value"] for _, row in edited.iterrows()}
    levels = [lvl1]
    if edited["level 2"].astype(str).str.strip().ne("").any():
        lvl2 = {}
        for _, row in edited.iterrows():
            lvl2[lvl1[row["value"]]] = str(row["level 2"]).strip() or lvl1[row["value"]]
        levels.append(lvl2)
    return hz.grouping_hierarchy(values, levels, name=column)


def hierarchy_table(h: hz.Hierarchy, ds: Dataset, column: str) -> pd.DataFrame:
    """The hierarchy with each original value's label, for display.

    Each value's label goes to the row a generalization takes for it (:meth:`Hierarchy.match`: a text code to
    the row written so, "012" and "12" each to their own; a number to the row of its value); rows no value of
    the data takes have no label."""
    qm = ds.qi_matrix([column])
    label_of = [""] * h.n_values
    for row, lab in zip(h.match(qm.values[0], qm.labels[0]).tolist(), qm.labels[0], strict=True):
        if row >= 0:
            label_of[row] = lab
    frame = h.to_frame().copy()
    frame.insert(1, "label", label_of)
    return frame


def effective_hierarchies(ds: Dataset, columns: Sequence[str]) -> tuple[dict[str, hz.Hierarchy], list[str]]:
    """The officer's hierarchy per column where it still covers the data, else the default one.

    Returns the hierarchies and the columns whose stored hierarchy no longer fits (e.g. after a recode
    merged values), so the page can say so. A column with no observed value gets none
    (:func:`~kanon_core.treat.default_hierarchy.without_observed_values`: it needs none); the information-loss
    measures then read it without one, and the Recode page leaves it out and says so.
    """
    stored = state.hierarchies()
    out, stale = {}, []
    folder = state.hierarchy_folder()
    empty = set(without_observed_values(ds, columns))
    for c in columns:
        if c in empty:
            continue
        h = stored.get(c)
        if h is not None:
            qm = ds.qi_matrix([c])
            if (h.match(qm.values[0], qm.labels[0]) >= 0).all():
                out[c] = h
                continue
            stale.append(c)
        path = hz.find_hierarchy_file(folder, c) if folder else None
        out[c] = hz.read_arx_hierarchy(path, c) if path is not None else default_hierarchy(ds, c)
    return out, stale
