"""Data values in chart labels are inert text: no HTML tag of a value reaches a Plotly figure."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.express as px
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.utility.bias import bias_of_correlations, bias_of_means
from kanon_core.utility.compare import compare_distributions
from kanon_core.utility.model_compare import compare_models
from kanon_core.utility.plots import (
    bias_figure,
    ci_comparison_figure,
    coefficient_figure,
    inert_frame,
    inert_labels,
    inert_text,
)

LINK = '<a href="x">y</a>'
VAR = "<b>v</b>&x"


def _strings(node) -> list[str]:
    """Every string in a JSON document (keys and values)."""
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (k, *_strings(v))]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


def _tags(fig) -> list[str]:
    """Strings of the figure's data and layout holding a tag from the data (our own <extra> is fine)."""
    doc = json.loads(fig.to_json())
    return [s for s in _strings(doc) if "<a" in s or "<b>" in s]


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(8)
    n = 80
    frame = pd.DataFrame({VAR: rng.choice([LINK, "b", "c & d"], n), "h": rng.choice([1, 2], n),
                          "x": rng.normal(size=n), "w": rng.uniform(1, 3, n)})
    frame["y"] = 1 + frame["x"] + (frame[VAR] == "b") + rng.normal(size=n)
    treated = frame.copy()
    treated.loc[:9, "x"] = np.nan
    roles = Roles(qis=(VAR, "h"), weight="w")
    return Dataset(frame=frame, roles=roles), Dataset(frame=treated, roles=roles)


def test_inert_text_escapes_exactly_the_markup_characters():
    assert inert_text(LINK) == '&lt;a href="x"&gt;y&lt;/a&gt;'
    assert inert_text("a & b") == "a &amp; b" and inert_text("&lt;") == "&amp;lt;"  # an entity stays literal
    assert inert_text(12) == "12" and inert_text("plain 5%") == "plain 5%"
    assert inert_labels([LINK, 3]) == [inert_text(LINK), "3"]


def test_inert_frame_escapes_text_cells_and_names_and_keeps_numbers():
    frame = pd.DataFrame({VAR: [LINK, None, "ok"], "n": [1, 2, 3], "cat": pd.Categorical(["<i>", "a", "a"])})
    out = inert_frame(frame)
    assert list(out.columns) == [inert_text(VAR), "n", "cat"]
    assert out[inert_text(VAR)].tolist()[0] == inert_text(LINK) and pd.isna(out[inert_text(VAR)].iloc[1])
    assert out["n"].tolist() == [1, 2, 3] and out["n"].dtype == frame["n"].dtype
    assert out["cat"].tolist() == ["&lt;i&gt;", "a", "a"]
    assert frame[VAR].iloc[0] == LINK  # the input is not changed
    records = inert_frame([{"variable": LINK, "suppressed": 2}])
    assert records["variable"].tolist() == [inert_text(LINK)] and records["suppressed"].tolist() == [2]


def test_ci_comparison_figure_labels_are_inert(pair):
    table = compare_distributions(*pair).table
    fig = ci_comparison_figure(table, VAR)
    assert _tags(fig) == []
    assert inert_text(LINK) in fig.layout.xaxis.ticktext and "c &amp; d" in fig.layout.xaxis.ticktext
    assert inert_text(VAR) in fig.layout.title.text


def test_coefficient_and_bias_figures_labels_are_inert(pair):
    original, treated = pair
    # "0 base" sorts first and is the reference category, so the tagged value gets a coefficient
    o = original.frame.rename(columns={VAR: "g"}).replace({"g": {"c & d": "0 base"}})
    t = treated.frame.rename(columns={VAR: "g"}).replace({"g": {"c & d": "0 base"}})
    roles = Roles(qis=("g", "h"), weight="w")
    mc = compare_models(Dataset(frame=o, roles=roles), Dataset(frame=t, roles=roles), "y ~ x + C(g)")
    fig = coefficient_figure(mc.coefficients_long())
    assert _tags(fig) == []
    assert any("&lt;a" in s for s in fig.layout.yaxis.ticktext)
    renamed = {"x": VAR, "y": LINK}
    means = bias_of_means(original, treated, ["x", "y"]).replace(renamed)
    corr = bias_of_correlations(original, treated, ["x", "y"]).replace(renamed)
    fig = bias_figure(means, corr)
    assert _tags(fig) == []
    assert inert_text(VAR) in list(fig.data[0].x)


def test_an_express_chart_of_an_inert_frame_carries_no_tag():
    frame = pd.DataFrame({"value": [LINK, "b"], "records": [3, 4], VAR: [1, 2]})
    plain = px.bar(frame, x="value", y="records", hover_data=[VAR])
    assert _tags(plain) != []  # without escaping, the value is a live link
    safe = inert_frame(frame)
    fig = px.bar(safe, x="value", y="records", hover_data=[inert_text(VAR)], title=inert_text(f"of {VAR}"))
    assert _tags(fig) == []
    assert list(fig.data[0].x) == [inert_text(LINK), "b"]
