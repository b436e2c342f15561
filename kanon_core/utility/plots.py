"""Plotly figures for the utility comparison (no UI code: the dashboard only shows them).

* :func:`ci_comparison_figure` -- per category of one variable, the original and treated weighted
  percentage with its confidence interval side by side (Wilson et al., RTI, section 4.2); the report
  takes it as plain data (:func:`ci_comparison_spec`);
* :func:`relative_difference_histogram` -- distribution of the relative differences between original
  and treated percentages (Wilson et al., RTI, Figure 1);
* :func:`coefficient_figure` -- coefficients with confidence intervals for each model (Wilson et al., RTI, table 4);
* :func:`bias_figure` -- bias of means and correlations (Angiuli & Waldo, Fig. 5 style);
* :func:`class_size_figure` -- records by class size (fk) on a log scale, the long tail of large classes
  summarised in one bar, so the classes below k stay visible next to a class of thousands;
* :func:`label_every_category` and :func:`wrap_title` -- every variable named on a 19-QI chart (Plotly
  skips category labels it finds crowded) and titles broken into lines rather than cut off;
* :func:`top_categories` and :func:`histogram_data` -- a variable of 100,000 categories (a postcode) or a
  histogram of 200,000 values drawn with a bounded number of bars: the largest categories one by one and the
  others summed in one bar that says how many it holds, a histogram's values counted into its bins here.
  A figure carries every point it draws to the browser, which stalls for seconds on 100,000 of them.

Plotly reads a subset of HTML in every text it draws (axis labels, hover text, legends, titles):
``<a href=...>`` becomes a live link, ``<span style=...>`` restyles the chart. Category labels and
variable names come from the data, so every figure here passes them through :func:`inert_text` (and the
dashboard's own charts through :func:`inert_frame`): ``<``, ``>`` and ``&`` become HTML entities, which
Plotly draws as the characters themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..errors import InputError
from .compare import STATUS_COMPARED

COLORS = {"original": "#1f77b4", "treated": "#d62728"}
DRAWN_TRACES = ("scatter", "bar", "histogram")
"""The trace types kanon's own figures draw (:func:`white_template` carries their defaults)."""
MODEL_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


@functools.cache
def white_template() -> go.layout.Template:
    """Plotly's "plotly_white" look, as every figure of this module and the report draws it: that template's
    layout and its defaults for the trace types drawn here (:data:`DRAWN_TRACES`).

    The full template also carries defaults for some twenty other trace types (colour scales of heat maps,
    3-D scenes); a figure copies its template when it is built, and copying those took two thirds of a
    small figure's time (19 interval charts of the report: 0.2 s). Built once, read only."""
    import plotly.io as pio

    full = pio.templates["plotly_white"]
    return go.layout.Template(layout=full.layout, data={t: full.data[t] for t in DRAWN_TRACES})


@functools.cache
def _white_template_json() -> str:
    import json

    return json.dumps(white_template().to_plotly_json())


def white_template_data() -> dict[str, Any]:
    """:func:`white_template` as plain data, for figures given as data (:func:`ci_comparison_spec`): a copy
    of its own for each figure (3 kB; nothing shared that a caller could change)."""
    import json

    return json.loads(_white_template_json())


def inert_text(value: Any) -> str:
    """``value`` as text Plotly shows literally: ``&``, ``<`` and ``>`` as HTML entities (no tags, no links)."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def inert_labels(values: Iterable[Any]) -> list[str]:
    """:func:`inert_text` of each value (category labels, variable names)."""
    return [inert_text(v) for v in values]


def inert_frame(data: pd.DataFrame | Iterable[Any]) -> pd.DataFrame:
    """A copy of a table for ``plotly.express``: text cells and column names made inert, numbers untouched.

    Plotly express writes column names into hover templates and cells into labels, so both are escaped;
    pass the escaped names (:func:`inert_text`) for ``x``, ``y`` or ``hover_data`` when they may contain
    ``<``, ``>`` or ``&``.
    """
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(list(data))
    cols: dict[Any, pd.Series] = {}
    for c in frame.columns:
        s = frame[c]
        if not (pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype)
                or pd.api.types.is_datetime64_any_dtype(s.dtype)):
            s = s.astype(object).map(lambda v: inert_text(v) if isinstance(v, str) else v)
        cols[inert_text(c) if isinstance(c, str) else c] = s
    return pd.DataFrame(cols, index=frame.index)


PX_PER_LABEL = 22
"""Height (px) per category on a horizontal bar chart: room for every label at the default font."""
MAX_CHART_CATEGORIES = 50
"""Categories a chart draws one by one; a variable with more (a postcode of 100,000 values) shows its largest
ones and says what it leaves out: 100,000 bars are unreadable and hold the browser for seconds."""
RAW_HISTOGRAM_VALUES = 2000
"""Values a histogram sends to the browser as they are (Plotly bins them there); more are counted into their
bins here, so a histogram of 200,000 values sends its bins, not megabytes of values."""


def wrap_title(text: str, width: int = 48) -> str:
    """``text`` made inert (:func:`inert_text`) and broken into lines of at most ``width`` characters
    (at spaces), so a title in a half-width column is wrapped, not cut off."""
    lines: list[str] = []
    for word in str(text).split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(inert_text(line) for line in lines)


def label_every_category(fig: go.Figure, axis: str, labels: Sequence[Any], min_height: int = 300) -> go.Figure:
    """Show a tick label for every category on ``axis`` ("x" or "y"): Plotly's automatic ticks drop some
    when they are crowded, which on a 19-QI chart leaves bars without a name. A horizontal chart (y) gets
    :data:`PX_PER_LABEL` pixels per label; a vertical one (x) gets its labels turned to fit."""
    texts = inert_labels(labels)
    spec = {"tickmode": "array", "tickvals": texts, "ticktext": texts, "automargin": True}
    if axis == "y":
        fig.update_yaxes(**spec)
        fig.update_layout(height=max(min_height, PX_PER_LABEL * len(texts) + 110))
    else:
        fig.update_xaxes(**spec, tickangle=-45 if len(texts) > 8 else 0)
    return fig


def others_label(n_categories: int) -> str:
    """The label of the bar that sums the categories a chart leaves out."""
    return f"all others ({n_categories:,} categories)"


def top_categories(counts: pd.DataFrame, label: str, value: str,
                   limit: int = MAX_CHART_CATEGORIES) -> tuple[pd.DataFrame, int]:
    """The rows of ``counts`` a bar chart draws, and how many categories it sums in its last bar.

    Up to ``limit`` rows ``counts`` is returned as it is (0 left out). Beyond, the ``limit - 1`` rows with the
    largest ``value`` are kept in their order and the others are summed in one last row labelled
    :func:`others_label` (every numeric column summed, so the chart's total stays that of ``counts``): one
    bar per postcode of 100,000 would be unreadable, and the browser stalls drawing them."""
    if limit < 2:
        raise ValueError("limit must be at least 2")
    if len(counts) <= limit:
        return counts, 0
    order = np.argsort(-counts[value].to_numpy(float), kind="stable")
    keep = np.zeros(len(counts), dtype=bool)
    keep[order[: limit - 1]] = True
    rest = counts[~keep]
    summed = {c: (rest[c].sum() if pd.api.types.is_numeric_dtype(counts[c].dtype)
                  and not pd.api.types.is_bool_dtype(counts[c].dtype) else None) for c in counts.columns}
    summed[label] = others_label(len(rest))
    return pd.concat([counts[keep], pd.DataFrame([summed], columns=counts.columns)], ignore_index=True), len(rest)


def histogram_data(values: Sequence[float] | np.ndarray, nbins: int,
                   raw_limit: int = RAW_HISTOGRAM_VALUES) -> dict[str, Any]:
    """The data of a :class:`plotly.graph_objects.Histogram` of ``values`` in about ``nbins`` bins.

    Up to ``raw_limit`` values they are given as they are (``x``, ``nbinsx``: Plotly chooses round bins).
    Beyond, they are counted into ``nbins`` equal bins here and given as one point per bin summed by the
    histogram (``histfunc="sum"`` with the bins fixed): the same bars, a few hundred bytes instead of one
    number per value."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) <= raw_limit:
        return {"x": x, "nbinsx": nbins}
    counts, edges = np.histogram(x, bins=nbins)
    width = float(edges[1] - edges[0])
    return {"x": (edges[:-1] + edges[1:]) / 2, "y": counts, "histfunc": "sum",
            "xbins": {"start": float(edges[0]), "end": float(edges[-1]), "size": width}}


def _lower_bound(label: Any) -> int:
    """The smallest class size a bin label stands for: ``7`` → 7, ``"11-20"`` → 11, ``">100"`` → 101."""
    import re

    text = str(label).strip()
    m = re.search(r"\d+", text)
    if m is None:
        raise InputError("A class-size bin needs a number in its label.")
    return int(m.group()) + (1 if text.startswith(">") else 0)


def class_size_figure(size_distribution: pd.DataFrame, k: int, clip: int = 20) -> go.Figure:
    """Records by class size (fk) on a log scale, bars below k in red.

    ``size_distribution`` has columns ``class_size`` and ``records``: exact sizes (numbers), whose classes
    of ``clip`` or more records are summed in one bar ("≥ 20"), or the bins of
    :func:`kanon_core.risk.summary.size_distribution` ("1", ..., "11-20", ">100"), kept in their order.
    The log scale keeps a bar of 2 records visible beside one of 15,000.
    """
    d = size_distribution[["class_size", "records"]].copy()
    binned = not pd.api.types.is_numeric_dtype(d["class_size"].dtype)
    lower = [_lower_bound(s) for s in d["class_size"]]
    if binned:
        small, tail = d, d.iloc[0:0]
        x = [str(s) for s in d["class_size"]]
    else:
        small = d[d["class_size"] < clip]
        tail = d[d["class_size"] >= clip]
        x = [str(int(s)) for s in small["class_size"]]
        lower = lower[: len(small)]
    y = [int(r) for r in small["records"]]
    colors = [COLORS["treated"] if lo < k else COLORS["original"] for lo in lower]
    if len(tail):
        x.append(f"≥ {clip}")
        y.append(int(tail["records"].sum()))
        colors.append(COLORS["original"])
    fig = go.Figure(go.Bar(x=x, y=y, marker={"color": colors}, text=[f"{v:,}" for v in y],
                           textposition="outside", cliponaxis=False,
                           hovertemplate="class size %{x}: %{y:,} records<extra></extra>"))
    if len(tail):
        note = (f"{int(tail['records'].sum()):,} records in {len(tail):,} class sizes of {clip} or more "
                f"(largest {int(tail['class_size'].max()):,})")
    elif binned and len(d) and lower[-1] > 10:
        big = int(d["records"][[lo > 10 for lo in lower]].sum())
        note = f"{big:,} records in classes larger than 10"
    else:
        note = ""
    fig.update_layout(
        title=wrap_title(f"Records by class size (fk); red: below k = {k}"),
        xaxis={"title": "Class size (records sharing the quasi-identifier values)", "type": "category",
               "tickmode": "array", "tickvals": x, "ticktext": x},
        yaxis={"title": "Records (log scale)", "type": "log"}, template=white_template(), showlegend=False,
        annotations=[{"text": inert_text(note), "xref": "paper", "yref": "paper", "x": 1, "y": 1.02,
                      "xanchor": "right", "yanchor": "bottom", "showarrow": False, "font": {"size": 11}}]
        if note else [],
    )
    return fig


def _largest_compared(table: pd.DataFrame, limit: int) -> tuple[pd.DataFrame, str]:
    """The ``limit`` categories of ``table`` with the largest percentage (before or after), in their order,
    and a note (two lines of Plotly text, holding only numbers) saying what the chart leaves out, empty when
    every category is drawn. An interval cannot be summed, so the others are named by their number and their
    share, not drawn as one point."""
    if len(table) <= limit:
        return table, ""
    size = np.fmax(table["pct_original"].to_numpy(float), table["pct_treated"].to_numpy(float))
    keep = np.zeros(len(table), dtype=bool)
    keep[np.argsort(-np.nan_to_num(size, nan=-1.0), kind="stable")[:limit]] = True
    rest = table[~keep]
    before, after = (float(np.nansum(rest[f"pct_{side}"].to_numpy(float))) for side in ("original", "treated"))
    return table[keep], (f"Drawn: the {limit:,} largest of {len(table):,} categories.<br>Not drawn: {len(rest):,} "
                         f"smaller ones, together {before:.1f} % before and {after:.1f} % after.")


def ci_comparison_spec(table: pd.DataFrame, variable: str | None = None, title: str | None = None,
                       max_categories: int = MAX_CHART_CATEGORIES) -> dict[str, Any]:
    """The figure of :func:`ci_comparison_figure` as plain data: ``{"data": [...], "layout": {...}}``.

    A variable with more than ``max_categories`` categories (a postcode) draws its largest ones and says in
    a note under the title how many it leaves out and their share.

    The report draws one such chart per variable and only serialises it, so it takes this form: building and
    validating Plotly objects took 0.28 s of the 19 charts of the sample's report, the plain form a few
    milliseconds. The form is what :class:`plotly.graph_objects.Figure` accepts, checked by its validation
    in :func:`ci_comparison_figure` (the pages' path) and in the tests. ``layout.template`` is
    :func:`white_template_data`."""
    if variable is not None:
        table = table[table["variable"] == variable]
    if table.empty:
        raise InputError("Nothing to plot: the comparison has no category for this variable.")
    table, note = _largest_compared(table, max_categories)
    labels = inert_labels(table["label"].astype(str))
    pos = np.arange(len(labels), dtype=float)
    traces = []
    for side, shift in (("original", -0.15), ("treated", 0.15)):
        pct = table[f"pct_{side}"].to_numpy(float)
        low, high = table[f"ci_low_{side}"].to_numpy(float), table[f"ci_high_{side}"].to_numpy(float)
        traces.append({
            "type": "scatter", "x": pos + shift, "y": pct, "mode": "markers",
            "name": side.capitalize(), "marker": {"color": COLORS[side], "size": 9},
            "error_y": {"type": "data", "symmetric": False, "array": high - pct, "arrayminus": pct - low},
            "text": [f"{lab}: {p:.1f}% ({lo:.1f} to {hi:.1f})" for lab, p, lo, hi in zip(labels, pct, low, high, strict=True)],
            "hovertemplate": "%{text}<extra>" + side + "</extra>",
        })
    gone = table["status"].to_numpy() != STATUS_COMPARED
    ticks = [f"{lab} (gone)" if g and pct_t == 0 else lab
             for lab, g, pct_t in zip(labels, gone, table["pct_treated"].to_numpy(float), strict=True)]
    name = variable or ", ".join(table["variable"].astype(str).unique())
    layout: dict[str, Any] = {
        "title": {"text": wrap_title(title or f"Weighted % before and after treatment: {name}")},
        "xaxis": {"tickmode": "array", "tickvals": pos.tolist(), "ticktext": ticks},
        "yaxis": {"title": {"text": "Weighted % (with confidence interval)"}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": 1.08}, "template": white_template_data(),
    }
    if note:  # under the title, above the legend
        layout["title"]["subtitle"] = {"text": note, "font": {"size": 11}}
        layout["legend"]["y"] = 1.02
        layout["legend"]["yanchor"] = "bottom"
        layout["margin"] = {"t": 140}
    return {"data": traces, "layout": layout}


def ci_comparison_figure(table: pd.DataFrame, variable: str | None = None, title: str | None = None,
                         max_categories: int = MAX_CHART_CATEGORIES) -> go.Figure:
    """Original vs treated weighted % with CIs for each category of one variable of a comparison table (a
    validated Plotly figure of :func:`ci_comparison_spec`, at most ``max_categories`` of them drawn)."""
    return go.Figure(ci_comparison_spec(table, variable, title, max_categories))


def relative_difference_histogram(table: pd.DataFrame, nbins: int = 30, title: str | None = None) -> go.Figure:
    """Histogram of relative differences (original - treated) / original, in %, over compared categories
    (of 100,000 categories, their bins: :func:`histogram_data`)."""
    compared = table[table["status"] == STATUS_COMPARED]
    rel = 100 * compared["relative_difference"].to_numpy(float)
    rel = rel[np.isfinite(rel)]
    fig = go.Figure(go.Histogram(**histogram_data(rel, nbins), marker={"color": COLORS["original"]},
                                 hovertemplate="%{x}: %{y} value(s)<extra></extra>"))
    fig.add_vline(x=0, line={"color": "grey", "dash": "dash"})
    fig.update_layout(
        title=wrap_title(title or "Relative difference between original and treated weighted percentages"),
        xaxis={"title": "Relative difference (% of the original percentage)"},
        yaxis={"title": "Number of values"}, bargap=0.05, template=white_template(),
    )
    return fig


def _largest_terms(c: pd.DataFrame, terms: list[str], limit: int) -> tuple[list[str], str]:
    """The terms a coefficient chart draws (all up to ``limit``) and a note on those it leaves out.

    Each covariate gets its share of ``limit`` (one with few terms keeps them all, what it leaves goes to the
    others), filled with its terms of the largest estimate in absolute value in any model; they keep their
    order. A model of a postcode has one coefficient per postcode: thousands of rows of a chart 40 px each."""
    if len(terms) <= limit:
        return terms, ""
    label = c["label"].astype(str)
    size = c["estimate"].abs().groupby(label, sort=False).max().reindex(terms).fillna(-1.0)
    variable = (c["variable"].astype(str) if "variable" in c.columns else pd.Series("", index=c.index))
    of_term = variable.groupby(label, sort=False).first().reindex(terms)
    groups = {v: list(g) for v, g in pd.Series(terms, index=terms).groupby(of_term.to_numpy(), sort=False)}
    keep: set[str] = set()
    remaining = limit
    for i, (_, group) in enumerate(sorted(groups.items(), key=lambda item: len(item[1]))):
        share = min(len(group), remaining // (len(groups) - i))
        keep.update(size[group].sort_values(ascending=False, kind="stable").index[:share])
        remaining -= share
    left = {v: sum(t not in keep for t in g) for v, g in groups.items()}
    text = ", ".join(f"{n:,} of {v}" if v else f"{n:,}" for v, n in left.items() if n)
    return [t for t in terms if t in keep], (
        f"Drawn: {len(keep):,} of {len(terms):,} coefficients, the largest in absolute value of each covariate."
        f"<br>Not drawn: {inert_text(text)}.")


def coefficient_figure(coefficients: pd.DataFrame, models: Sequence[str] | None = None,
                       title: str | None = None, max_terms: int = MAX_CHART_CATEGORIES) -> go.Figure:
    """Dot-and-whisker plot of coefficients with CIs per model.

    ``coefficients`` is :meth:`ModelComparison.coefficients_long` (columns ``model``, ``model_label``,
    ``term``, ``label``, ``estimate``, ``ci_low``, ``ci_high``) or a single model's table. With more than
    ``max_terms`` coefficients (a covariate of thousands of categories) it draws that many, the largest of
    each covariate, and says in a note under the title how many of which covariate it leaves out.
    """
    c = coefficients.copy()
    if "model" not in c.columns:
        c["model"] = "model"
    if "model_label" not in c.columns:
        c["model_label"] = c["model"]
    models = list(models) if models is not None else list(dict.fromkeys(c["model"]))
    terms = list(dict.fromkeys(c["label"].astype(str)))
    if not terms:
        raise InputError("Nothing to plot: the model has no coefficients.")
    terms, note = _largest_terms(c, terms, max_terms)
    if note:
        c = c[c["label"].astype(str).isin(terms)]
    index = {t: i for i, t in enumerate(terms)}
    fig = go.Figure()
    width = 0.6 / max(len(models), 1)
    for k, m in enumerate(models):
        d = c[(c["model"] == m) & c["estimate"].notna()]
        y = np.array([index[str(t)] for t in d["label"]], dtype=float) + (k - (len(models) - 1) / 2) * width
        est = d["estimate"].to_numpy(float)
        fig.add_trace(go.Scatter(
            x=est, y=y, mode="markers", name=inert_text(d["model_label"].iloc[0] if len(d) else m),
            marker={"color": MODEL_COLORS[k % len(MODEL_COLORS)], "size": 8},
            error_x={"type": "data", "symmetric": False, "array": d["ci_high"].to_numpy(float) - est,
                     "arrayminus": est - d["ci_low"].to_numpy(float)},
            text=inert_labels(d["label"].astype(str)), hovertemplate="%{text}: %{x:.3g}<extra></extra>",
        ))
    fig.add_vline(x=0, line={"color": "grey", "dash": "dash"})
    fig.update_layout(
        title=wrap_title(title or "Coefficients with confidence intervals", 70),
        yaxis={"tickmode": "array", "tickvals": list(range(len(terms))), "ticktext": inert_labels(terms),
               "autorange": "reversed"},
        xaxis={"title": "Estimate"}, legend={"orientation": "h", "y": 1.08}, template=white_template(),
        height=max(300, 40 * len(terms) + 150),
    )
    if note:  # under the title
        fig.update_layout(title_subtitle={"text": note, "font": {"size": 11}}, margin={"t": 150})
    return fig


def bias_figure(means: pd.DataFrame | None = None, correlations: pd.DataFrame | None = None) -> go.Figure:
    """Bars of the bias of means (relative, %) and of correlations (absolute) after treatment."""
    fig = go.Figure()
    if means is not None and not means.empty:
        fig.add_trace(go.Bar(x=inert_labels(means["variable"]), y=100 * means["relative_bias"], name="Mean: relative bias (%)",
                             marker={"color": COLORS["original"]}))
    if correlations is not None and not correlations.empty:
        names = inert_labels(correlations["variable_1"].astype(str) + " × " + correlations["variable_2"].astype(str))
        fig.add_trace(go.Bar(x=names, y=correlations["bias"], name="Correlation: bias", yaxis="y2",
                             marker={"color": COLORS["treated"]}))
    fig.update_layout(
        title="Bias after treatment (treated minus original)",
        yaxis={"title": "Relative bias of mean (%)"},
        yaxis2={"title": "Bias of correlation", "overlaying": "y", "side": "right"},
        barmode="group", template=white_template(), legend={"orientation": "h", "y": 1.08},
    )
    return fig
