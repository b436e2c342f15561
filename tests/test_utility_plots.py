"""The utility figures carry the numbers of the tables they are drawn from."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from kanon_core.dataset import Dataset, Roles
from kanon_core.errors import InputError
from kanon_core.utility.bias import bias_of_correlations, bias_of_means
from kanon_core.utility.compare import compare_distributions
from kanon_core.utility.model_compare import compare_models
from kanon_core.utility.plots import (
    bias_figure,
    ci_comparison_figure,
    ci_comparison_spec,
    coefficient_figure,
    relative_difference_histogram,
)


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(8)
    n = 80
    frame = pd.DataFrame({"g": rng.choice(["a", "b", "c"], n), "h": rng.choice([1, 2], n), "x": rng.normal(size=n),
                          "w": rng.uniform(1, 3, n)})
    frame["y"] = 1 + frame["x"] + (frame["g"] == "b") + rng.normal(size=n)
    treated = frame.copy()
    treated["g"] = treated["g"].astype(object)
    treated.loc[treated["g"] == "c", "g"] = None  # c completely suppressed
    treated.loc[:9, "x"] = np.nan
    roles = Roles(qis=("g", "h"), weight="w")
    return Dataset(frame=frame, roles=roles), Dataset(frame=treated, roles=roles)


def test_ci_comparison_has_original_and_treated_with_their_intervals(pair):
    table = compare_distributions(*pair).table
    fig = ci_comparison_figure(table, "g")
    assert isinstance(fig, go.Figure) and [t.name for t in fig.data] == ["Original", "Treated"]
    t = table[table["variable"] == "g"]
    for trace, side in zip(fig.data, ("original", "treated"), strict=True):
        assert np.allclose(trace.y, t[f"pct_{side}"])
        assert np.allclose(np.asarray(trace.y) + np.asarray(trace.error_y.array), t[f"ci_high_{side}"])
        assert np.allclose(np.asarray(trace.y) - np.asarray(trace.error_y.arrayminus), t[f"ci_low_{side}"])
    assert list(fig.layout.xaxis.ticktext) == ["a", "b", "c (gone)"]
    with pytest.raises(InputError):
        ci_comparison_figure(table, "nope")


def _plain(value):
    """A figure's JSON with Plotly's base64 arrays decoded to lists, so two encodings of one figure compare equal."""
    import base64

    if isinstance(value, dict):
        if set(value) == {"dtype", "bdata"}:
            return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).tolist()
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_the_interval_chart_as_plain_data_is_the_validated_figure(pair):
    """The report serialises :func:`ci_comparison_spec` without Plotly's validation: what it writes must be
    exactly what the validated figure writes, numbers, labels, template and all."""
    import json

    import plotly.io as pio

    table = compare_distributions(*pair).table
    spec = ci_comparison_spec(table, "g", title="A <b>title</b>")
    drawn = json.loads(pio.to_json(spec, validate=False))
    validated = json.loads(pio.to_json(go.Figure(spec)))
    assert _plain(drawn) == _plain(validated)
    assert _plain(validated) == _plain(json.loads(pio.to_json(ci_comparison_figure(table, "g", title="A <b>title</b>"))))
    white = json.loads(pio.to_json(go.Figure(layout={"template": pio.templates["plotly_white"]})))
    assert drawn["layout"]["template"]["layout"] == white["layout"]["template"]["layout"]
    assert drawn["data"][0]["type"] == "scatter" and drawn["data"][0]["y"] == table[table["variable"] == "g"][
        "pct_original"].tolist()


def test_histogram_of_relative_differences_over_compared_categories(pair):
    table = compare_distributions(*pair).table
    fig = relative_difference_histogram(table)
    assert len(fig.data) == 1 and fig.data[0].type == "histogram"
    compared = table[table["status"] == "compared"]
    assert np.allclose(sorted(fig.data[0].x), sorted(100 * compared["relative_difference"]))
    assert len(fig.data[0].x) == 4  # a, b, 1, 2: the suppressed c is not a relative difference of two estimates


def test_coefficient_figure_has_one_trace_per_model(pair):
    mc = compare_models(*pair, "y ~ x + g")
    long = mc.coefficients_long()
    fig = coefficient_figure(long)
    assert len(fig.data) == 3
    for trace, (key, res) in zip(fig.data, mc.results.items(), strict=True):
        c = res.coefficients[(res.coefficients["term"] != "(Intercept)") & res.coefficients["estimate"].notna()]
        assert np.allclose(trace.x, c["estimate"])
        assert np.allclose(np.asarray(trace.x) + np.asarray(trace.error_x.array), c["ci_high"])
        assert trace.name == long.loc[long["model"] == key, "model_label"].iloc[0]
    assert list(fig.layout.yaxis.ticktext) == list(dict.fromkeys(long["label"].astype(str)))
    single = coefficient_figure(mc.results["original"].coefficients)
    assert len(single.data) == 1


def test_bias_figure_bars_for_means_and_correlations(pair):
    original, treated = pair
    means = bias_of_means(original, treated, ["x", "y"])
    corr = bias_of_correlations(original, treated, ["x", "y"])
    fig = bias_figure(means, corr)
    assert [t.type for t in fig.data] == ["bar", "bar"]
    assert np.allclose(fig.data[0].y, 100 * means["relative_bias"])
    assert list(fig.data[1].x) == ["x × y"] and np.allclose(fig.data[1].y, corr["bias"])
    assert fig.data[1].yaxis == "y2"
    assert len(bias_figure(means=means).data) == 1 and len(bias_figure().data) == 0


# -- readable charts: class sizes, every label, titles not cut off -----------------------------------------------
def test_class_size_figure_is_log_scaled_with_the_tail_summarised():
    import pandas as pd

    from kanon_core.utility.plots import class_size_figure

    dist = pd.DataFrame({"class_size": [1, 2, 3, 5, 40, 900, 4000], "records": [500, 40, 9, 5, 40, 900, 4000]})
    fig = class_size_figure(dist, k=3, clip=20)
    bar = fig.data[0]
    assert fig.layout.yaxis.type == "log"
    assert list(bar.x) == ["1", "2", "3", "5", "≥ 20"]
    assert list(bar.y) == [500, 40, 9, 5, 40 + 900 + 4000]  # nothing lost: the tail is summed
    assert sum(bar.y) == dist["records"].sum()
    assert bar.marker.color[0] != bar.marker.color[2]  # below k stands out
    note = fig.layout.annotations[0].text
    assert "4,940 records" in note and "largest 4,000" in note
    assert list(fig.layout.xaxis.tickvals) == list(bar.x)  # every bar labelled


def test_every_variable_is_labelled_on_a_19_qi_chart():
    import plotly.express as px

    from kanon_core.utility.plots import PX_PER_LABEL, inert_text, label_every_category

    names = [f"BYVAR{i:02d}" for i in range(19)] + ["<b>x</b>"]
    fig = px.bar(x=list(range(20)), y=[inert_text(n) for n in names], orientation="h")
    label_every_category(fig, "y", names)
    assert list(fig.layout.yaxis.ticktext) == [inert_text(n) for n in names]
    assert fig.layout.yaxis.tickmode == "array"
    assert fig.layout.height >= PX_PER_LABEL * 20
    assert "<b>" not in "".join(fig.layout.yaxis.ticktext)
    fig2 = label_every_category(px.bar(x=names, y=list(range(20))), "x", names)
    assert len(fig2.layout.xaxis.tickvals) == 20 and fig2.layout.xaxis.tickangle == -45


def test_titles_wrap_instead_of_being_cut():
    from kanon_core.utility.plots import wrap_title

    title = "Share of MINUCs containing each variable (%) <script>"
    wrapped = wrap_title(title, 24)
    lines = wrapped.split("<br>")
    assert len(lines) > 1 and all(len(line) <= 24 + 15 for line in lines)
    assert "&lt;script&gt;" in wrapped and "<script>" not in wrapped
    assert " ".join(lines).replace("&lt;", "<").replace("&gt;", ">") == title


def test_class_size_figure_on_the_risk_summary_bins():
    from kanon_app.samples import load_sample
    from kanon_core.risk.summary import risk_summary
    from kanon_core.utility.plots import class_size_figure

    ds = load_sample("els")
    dist = risk_summary(ds.qi_matrix(["BYSEX", "BYRACE", "BYINCOME"]), 3, ds.missing).size_distribution
    fig = class_size_figure(dist, k=3)
    bar = fig.data[0]
    assert list(bar.x) == dist["class_size"].astype(str).tolist()  # the bins, in order
    assert sum(bar.y) == ds.n_records and fig.layout.yaxis.type == "log"
    red = [c for c, lab in zip(bar.marker.color, bar.x, strict=True) if lab in ("1", "2")]
    assert len(set(red)) == 1 and red[0] != bar.marker.color[-1]  # below k = 3 stands out
    big = int(dist["records"].iloc[10:].sum())
    assert f"{big:,} records in classes larger than 10" in fig.layout.annotations[0].text


def test_every_figure_draws_plotly_white_with_the_defaults_of_its_traces(pair):
    """The lean template is plotly_white's look: its whole layout, and for each trace a figure draws, that trace
    type's defaults; a figure drawing a trace type the template does not carry would change look, and fails."""
    import plotly.io as pio

    from kanon_core.risk.summary import risk_summary
    from kanon_core.utility.plots import class_size_figure

    original, treated = pair
    table = compare_distributions(*pair).table
    figures = [ci_comparison_figure(table, "g"), relative_difference_histogram(table),
               coefficient_figure(compare_models(*pair, "y ~ x + g").coefficients_long()),
               bias_figure(bias_of_means(original, treated, ["x", "y"]), bias_of_correlations(original, treated, ["x", "y"])),
               class_size_figure(risk_summary(original.qi_matrix(), 3).size_distribution, 3)]
    white = pio.templates["plotly_white"]
    for fig in figures:
        assert fig.layout.template.layout == white.layout
        for trace in fig.data:
            assert fig.layout.template.data[trace.type] == white.data[trace.type]
