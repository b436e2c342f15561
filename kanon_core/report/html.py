"""One self-contained HTML file: inline CSS, plotly.js inlined from the installed plotly package.

No external asset of any kind (no CDN, fonts, images or style sheets), so the report opens offline and
can be archived or mailed as one file. Figure containers get fixed ids so two renderings of the same
report differ only where the content differs.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from ..utility.info_loss import WHY_NO_LOSS_METRIC, WHY_NO_PREC
from .build import (
    CONFIDENTIALITY_NOTE,
    Report,
    conclusions,
    findable_after,
    restored_after,
    suppressed_in_words,
)
from .category_rows import REPORT_CATEGORY_ROWS, category_rows, listed_note

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1d2433;
background:#fff;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:1.5rem 2rem 4rem}
h1{font-size:1.7rem;margin:.2rem 0}h2{font-size:1.3rem;border-bottom:2px solid #e3e7ef;padding-bottom:.2rem;
margin-top:2.2rem}h3{font-size:1.05rem;margin-top:1.4rem}
.meta{color:#5a6275;font-size:.9rem}.notice{background:#f3f7ff;border-left:4px solid #3a6fd8;padding:.6rem .9rem}
.warn{background:#fff7e6;border-left:4px solid #e0a100;padding:.6rem .9rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.86rem;max-width:100%}
th,td{border-bottom:1px solid #e3e7ef;padding:.25rem .6rem;text-align:left;vertical-align:top;
overflow-wrap:anywhere;word-break:normal}
th{background:#f6f8fb}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:normal}
nav ol{columns:2;font-size:.92rem}
pre{background:#f6f8fb;padding:.8rem;overflow:auto;font-size:.8rem;max-height:32rem;white-space:pre-wrap;
overflow-wrap:anywhere}
.figure{margin:.4rem 0 1.2rem;max-width:100%}.small{font-size:.85rem;color:#5a6275}
.conclusions{background:#f3f7ff;border-left:4px solid #1d2433;padding:.4rem 1rem}
@media print{
@page{margin:1.5cm}
body{font-size:10pt;color:#000}main{max-width:none;padding:0}nav{display:none}
h2{break-after:avoid;page-break-after:avoid}h3{break-after:avoid;page-break-after:avoid}
table{font-size:8pt;width:100%}tr,.figure,.conclusions,.notice{break-inside:avoid;page-break-inside:avoid}
th,td{padding:.1rem .3rem}pre{max-height:none;overflow:visible;font-size:7pt}
a{color:#000;text-decoration:none}
}
"""


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _fmt(v: Any, why: str = "") -> str:
    """A cell's text: undefined cells empty (or the reason, when the table gives one), no "-0.00"."""
    if fmt.is_missing(v):
        return fmt.undefined(why) if why else ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f.is_integer() and abs(f) < 1e15:
            return f"{int(f):,}"
        return fmt.number(f, 2)
    return str(v)


def _counts(col: pd.Series) -> bool:
    """A count column where the threshold rule wrote "< k": numbers (or empty) and such texts only."""
    vals = col.tolist()
    masked = [v for v in vals if isinstance(v, str)]
    return bool(masked) and all(v.startswith("< ") for v in masked) and all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) or v is None
        for v in vals if not isinstance(v, str))


def table(df: pd.DataFrame, table_id: str, headers: dict[str, str] | None = None,
          why: dict[str, str] | None = None) -> str:
    """A plain HTML table; numbers right-aligned with thousands separators, floats to 2 decimals without
    "-0.00", p-values as ``< 0.001`` (:mod:`kanon_core.fmt`), headers in words. ``why`` gives, per column,
    the reason an empty cell has no value (shown instead of an empty cell)."""
    headers = headers or {}
    why = why or {}
    cols = list(df.columns)
    numeric = {c for c in cols if (pd.api.types.is_numeric_dtype(df[c].dtype) and not pd.api.types.is_bool_dtype(
        df[c].dtype)) or _counts(df[c])}
    pcols = {c for c in cols if fmt._looks_like_p(str(c)) and pd.api.types.is_float_dtype(df[c].dtype)}
    head = "".join(f'<th class="{"num" if c in numeric else ""}">{html.escape(headers.get(c, fmt.header(c)))}</th>'
                   for c in cols)
    body = []
    for row in df.itertuples(index=False):
        cells = "".join(f'<td class="{"num" if c in numeric else ""}">'
                        f'{html.escape(fmt.p_value(v, why=why.get(c, "")) if c in pcols else _fmt(v, why.get(c, "")))}'
                        "</td>" for c, v in zip(cols, row, strict=True))
        body.append(f"<tr>{cells}</tr>")
    return f'<table id="{html.escape(table_id)}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _figure(fig: Any, div_id: str) -> str:
    """A figure's div: a Plotly figure, or a figure given as plain data (already in the form Plotly
    validates, see :func:`kanon_core.utility.plots.ci_comparison_spec`), serialised as it is."""
    import plotly.io as pio

    return '<div class="figure">' + pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id,
                                                 validate=not isinstance(fig, dict),
                                                 config={"displaylogo": False, "responsive": True}) + "</div>"


def _violations_figure(report: Report) -> Any:
    import plotly.graph_objects as go

    from ..utility.plots import white_template

    v = report.violations
    fig = go.Figure()
    for side, color in (("before", "#1f77b4"), ("after", "#d62728")):
        fig.add_trace(go.Bar(x=v["k"], y=v[side], name=side.capitalize(), marker={"color": color},
                             hovertemplate="k=%{x}: %{y:,} records<extra>" + side + "</extra>"))
    fig.update_layout(title="Records in classes smaller than k, before and after", barmode="group",
                      xaxis={"title": "k", "dtick": 1}, yaxis={"title": "Records"}, template=white_template(),
                      legend={"orientation": "h", "y": 1.1}, height=380)
    return fig


def _p(text: str, cls: str = "") -> str:
    return f'<p class="{cls}">{html.escape(text)}</p>' if cls else f"<p>{html.escape(text)}</p>"


def _section(sid: str, title: str, parts: Sequence[str]) -> str:
    return f'<section id="{sid}"><h2>{html.escape(title)}</h2>{"".join(parts)}</section>'


def _summary(r: Report) -> list[str]:
    first = '<div id="conclusions" class="conclusions">' + "".join(_p(x) for x in conclusions(r)) + "</div>"
    return [first, "<h3>In detail</h3>", *_summary_detail(r)]


def _summary_detail(r: Report) -> list[str]:
    b, a = r.risk_before, r.risk_after
    findable = findable_after(r)
    safe = a.n_violating == 0 and findable is None
    lines = [
        f"The release of '{r.name}' has {r.n_records:,} records and {r.n_released} of the {r.n_variables} "
        f"variables. Risk is measured on {len(r.qis)} quasi-identifiers with missing values counted as "
        f"'{r.missing}'.",
        f"Before treatment, {b.n_violating:,} records ({100 * b.n_violating / max(r.n_records, 1):.1f}%) were in "
        f"classes smaller than k = {r.k} and {b.n_sample_uniques:,} were sample uniques; the smallest class had "
        f"{b.k_achieved} record(s).",
        (f"After treatment, every record shares its quasi-identifier values with at least {a.k_achieved} records: "
         f"the release is {r.k}-anonymous on these variables." if safe else
         f"After treatment, every record shares its quasi-identifier values with at least {a.k_achieved} records "
         f"when a blank counts as any value, but {findable[0]:,} people are findable among fewer than {r.k} "
         f"released records (suppression step {findable[1]}, from the intruder's side): the release is NOT "
         f"{r.k}-anonymous for them." if a.n_violating == 0 and findable is not None else
         f"After treatment, {a.n_violating:,} records are still in classes smaller than k = {r.k} "
         f"(smallest class {a.k_achieved}): the release is NOT {r.k}-anonymous on these variables."),
        *([f"But suppressed cells of step {restored[1]} can be restored from other variables of the release, and "
           f"with them restored {restored[0]:,} people are findable among fewer than {r.k} released records: the "
           "release does NOT protect them (see that step)."] if (restored := restored_after(r)) else []),
        f"{len(r.steps) - 1} step(s) were applied; in total {suppressed_in_words(r)}.",
    ]
    if a.n_wildcard_dependent:
        from ..risk.summary import wildcard_dependent_statement

        lines.insert(3, "After treatment, " + wildcard_dependent_statement(a.n_wildcard_dependent, r.k))
    if r.utility is not None and r.utility.comparison is not None:
        lines.append("Utility: " + r.utility.comparison.summary.sentence())
    n_withheld = int(r.masking["categories_masked"].sum()) if len(r.masking) else 0
    lines.append(f"Categories with fewer than {r.k} records are not named anywhere in this report "
                 + (f"({n_withheld:,} entries withheld; see 'What this report withholds')." if n_withheld else
                    "(none had to be withheld)."))
    return [_p(x) for x in lines]


def _data(r: Report) -> list[str]:
    parts = [_p(f"File '{r.name}': {r.n_records:,} records, {r.n_variables} variables "
                f"(fingerprint {r.fingerprint[:16]}…, which identifies the exact input file).", "meta")]
    if r.notes.strip():
        parts.append("<h3>The officer's notes (disclosure scenario and decisions)</h3>")
        parts.append("".join(_p(line) for line in r.notes.strip().splitlines() if line.strip()))
    parts.append("<h3>Variables and their roles</h3>")
    parts.append(table(r.roles, "roles"))
    return parts


def _risk(r: Report) -> list[str]:
    parts = [_p(f"Quasi-identifiers: {', '.join(r.qis)}."),
             _p("A record's class is the set of records that share its values on all quasi-identifiers "
                f"(with missing values as '{r.missing}'). A record in a class smaller than k can be singled out "
                "by an intruder who knows these variables.", "small"),
             table(r.risk_table, "risk-summary"),
             "<h3>Records violating k, for k = 2 to 10</h3>",
             table(r.violations, "violations-by-k", {"before_percent": "before (%)", "after_percent": "after (%)"}),
             _figure(_violations_figure(r), "fig-violations"),
             "<h3>Quasi-identifiers: categories before and after</h3>",
             table(r.per_qi, "per-qi")]
    return parts


def _steps(r: Report) -> list[str]:
    return [_p("Each step made a new version; the risk columns use that version's own quasi-identifiers and "
               f"k = {r.k}. Step 0 is the data as loaded.", "small"),
            table(r.steps, "steps", {f"records_below_k{r.k}": f"records below k = {r.k}"})]


def _suppression(r: Report) -> list[str]:
    parts = [_p("Suppression sets a quasi-identifier value to missing in some records. Per variable, over all "
                "steps (original versus release):"),
             table(r.suppression_overall, "suppression-overall",
                   {"pct_records": "% of records", "most_suppressed": "value suppressed most",
                    "most_suppressed_n": "its count", "most_suppressed_percent": "its share (%)"})]
    for s in r.suppression_steps:
        parts.append(f"<h3>Step {s.number}: {html.escape(s.description)}</h3>")
        parts.append(_p(f"{s.n_suppressed:,} values suppressed in {s.records_touched:,} records."))
        # the protection model (when the step names one) and the people findable below k, intruder's view
        if s.protection:
            parts.append(_p(s.protection[0].upper() + s.protection[1:] + "."))
        if s.optimality:  # what the run proved of its cost: optimal, or a bound, the gap and why
            parts.append(_p(s.optimality))
        if s.restoration:  # cells the other released variables give back (names and counts only)
            parts.append(_p(s.restoration))
        parts.append(table(s.per_variable, f"suppression-step-{s.number}"))
        if len(s.most_suppressed):
            parts.append(_p("Value suppressed most often, per variable (Wilson et al., RTI, table 3):", "small"))
            parts.append(table(s.most_suppressed, f"most-suppressed-step-{s.number}"))
        if len(s.completely_suppressed):
            parts.append(_p("Categories that disappeared completely (every occurrence suppressed):", "small"))
            parts.append(table(s.completely_suppressed, f"completely-suppressed-step-{s.number}"))
        else:
            parts.append(_p("No category disappeared completely.", "small"))
    if not r.suppression_steps:
        parts.append(_p("No local suppression step was applied.", "small"))
    return parts


def _minucs(r: Report) -> list[str]:
    m = r.minucs
    if m is None:
        return [_p(r.minuc_note or "MINUCs were not computed.", "small")]
    size = "all sizes" if m.max_size is None else f"sizes up to {m.max_size}"
    return [_p(f"A MINUC (minimal unsafe combination) of a record is a set of quasi-identifiers whose values occur "
               f"in fewer than {m.k} records while every smaller part of it occurs at least {m.k} times "
               f"({size})."),
            _p(f"Before: {m.before.total:,} MINUCs in {m.before.records_with_minucs():,} records. "
               f"After: {m.after.total:,} MINUCs in {m.after.records_with_minucs():,} records."),
            table(m.by_size, "minucs-by-size"),
            _p("Per variable: MINUCs containing it and records concerned.", "small"),
            table(m.contributions, "minucs-by-variable")]


def _utility(r: Report) -> list[str]:
    u = r.utility
    if u is None:
        return [_p("The utility comparison was not computed for this report.", "small")]
    parts = [_p("Weighted percentages of every quasi-identifier category with design-based 95% confidence "
                "intervals, on the original and on the released data (Wilson et al., RTI, section 4.2). Suppressed "
                "values leave the denominator; a globally recoded variable is compared on its new categories. "
                f"A variable with more than {REPORT_CATEGORY_ROWS:,} categories lists {REPORT_CATEGORY_ROWS:,} of "
                "them in the table (the note under it says which).",
                "small")]
    parts += [_p(n, "warn") for n in u.notes]
    figs = dict(u.figures)
    if u.comparison is not None:
        s = u.comparison.summary
        parts.append(_p(s.sentence()))
        summary = pd.DataFrame([
            ("Categories compared", s.n_categories), ("Confidence intervals overlapping", s.n_overlap),
            ("Categories without an interval (overlap not judged)", s.n_without_interval),
            ("Share overlapping (%)", round(100 * s.share_overlap, 2) if s.n_judged else float("nan")),
            ("Mean difference (points)", s.mean_difference), ("Median difference (points)", s.median_difference),
            ("Smallest difference (points)", s.min_difference), ("Largest difference (points)", s.max_difference),
            ("Categories completely suppressed", s.n_completely_suppressed),
        ], columns=["measure", "value"])
        parts.append(table(summary, "utility-summary"))
        if "Relative differences" in figs:
            parts.append(_figure(figs["Relative differences"], "fig-relative-differences"))
        cols = ["variable", "label", "status", "n_original", "pct_original", "ci_low_original", "ci_high_original",
                "n_treated", "pct_treated", "ci_low_treated", "ci_high_treated", "difference", "overlap"]
        parts.append("<h3>Per category</h3>")
        # the masked table (threshold rule), so the rows chosen can only be rows the rule lets the report name
        listed = category_rows(u.categories if u.categories is not None else u.comparison.table)
        parts.append(table(listed.table[cols], "utility-categories",
                           {"n_original": "records before", "pct_original": "% before",
                            "ci_low_original": "CI low before", "ci_high_original": "CI high before",
                            "n_treated": "records after", "pct_treated": "% after",
                            "ci_low_treated": "CI low after", "ci_high_treated": "CI high after",
                            "difference": "difference (points)", "overlap": "CIs overlap"}))
        if listed.limited:
            parts.append('<div id="utility-categories-left-out">'
                         + "".join(_p(vr.sentence(), "small") for vr in listed.limited)
                         + _p(listed_note(), "small") + "</div>")
        for i, v in enumerate(r.qis):
            if v in figs:
                parts.append(_figure(figs[v], f"fig-ci-{i}"))
    if u.info_loss is not None:
        parts.append("<h3>Information loss on the quasi-identifiers</h3>")
        parts.append(_p("Prec (Sweeney): 1 minus the average share of its hierarchy a value was generalized by "
                        "(suppressed = fully; undefined for variables recoded without a hierarchy). Loss metric "
                        "(Iyengar): the average share of a variable's values a released value stands for "
                        "(suppressed = 1). Discernibility: the sum over records of their class size, a suppressed record "
                        "charged the number of records (Bayardo & Agrawal). Cells missing in the original, or holding a code a "
                        "step declared missing (-9 \"refused\"), are not measured; the suppressed values are those of "
                        "the suppression section.", "small"))
        parts.append(table(u.info_loss.summary(), "info-loss-summary"))
        parts.append(table(u.info_loss.table, "info-loss-variables",
                           {"loss_metric": "loss metric", "prec": "Prec", "suppressed": "values suppressed"},
                           why={"prec": WHY_NO_PREC, "loss_metric": WHY_NO_LOSS_METRIC}))
    for j, mc in enumerate(u.models):
        formula = next(iter(mc.results.values())).formula
        parts.append(f"<h3>Regression: {html.escape(formula)}</h3>")
        parts.append(_p("Fitted on the original data, on the release without records with a suppressed covariate, "
                        "and on the release with suppressed values as a category (Wilson et al., RTI, table 4). A covariate "
                        f"is significant when its joint Wald test has p < {mc.alpha}, and not tested when the model "
                        "gives it no p-value (no residual degrees of freedom).", "small"))
        sig = mc.significance_table()[["model_label", "n_used", "significant", "not_significant", "not_tested"]]
        parts.append(table(sig, f"models-{j}", {"model_label": "model", "n_used": "records used"}))
        parts.append(table(mc.pvalue_table(), f"model-pvalues-{j}"))
        key = f"Model: {formula}"
        if key in figs:
            parts.append(_figure(figs[key], f"fig-model-{j}"))
    return parts


SECTIONS = (
    ("summary", "Summary"),
    ("data", "Data and roles"),
    ("risk", "Risk before and after"),
    ("risk-beyond", "Risk beyond k"),
    ("steps", "Steps"),
    ("suppression", "Suppression"),
    ("minucs", "MINUCs"),
    ("utility", "Utility: what the release costs the analyst"),
    ("recipe", "Recipe"),
    ("withheld", "What this report withholds"),
)


def _risk_beyond(r: Report) -> list[str]:
    """The risk measures' own section (kanon_core.risk.report_section), numbered like the others."""
    if r.risk_beyond is None:
        return [_p(r.risk_beyond_note or "The risk measures beyond k were not computed.", "small")]
    from ..risk.report_section import risk_measures_section

    inner = risk_measures_section(*r.risk_beyond, section_id="risk-beyond")
    return [inner[inner.index("</h2>") + len("</h2>"):inner.rindex("</section>")]]


def _withheld(r: Report) -> list[str]:
    m = r.masking
    rule = (f"Threshold rule: a category with fewer than {r.k} records in the original or in the release is not "
            f"named; its rows are pooled per variable into 'other categories with fewer than {r.k} records'. A "
            f"pooled count below {r.k} would be given back by the variable's total less the rows named, so the "
            f"smallest other categories join the pool until its counts are {r.k} or more ('pooled with the "
            f"smallest others'); only a variable small as a whole reads '< {r.k}'. Nor does the report give back a suppressed "
            f"value: when one category alone lost records, it is pooled with another, and a value that held "
            f"every suppressed cell of its variable is not named. A numeric variable without value labels has all its "
            f"values pooled when one of them is rare. The recipe above has such values replaced by "
            "'(withheld)'; the recipe file keeps them (it must, to replay) and is itself confidential.")
    if not len(m):
        return [_p(rule, "small"), _p("Nothing had to be withheld: every category shown has at least "
                                      f"{r.k} records.")]
    return [_p(rule, "small"),
            _p(f"Withheld: {int(m['categories_masked'].sum()):,} entries in {m['table'].nunique()} table(s)."),
            table(m, "withheld", {"categories_masked": "categories (or values) withheld"})]


def render_html(report: Report) -> str:
    """The report as one HTML document (a few MB: plotly.js is inlined once)."""
    builders = {"summary": _summary, "data": _data, "risk": _risk, "risk-beyond": _risk_beyond, "steps": _steps,
                "suppression": _suppression,
                "minucs": _minucs, "utility": _utility, "withheld": _withheld,
                "recipe": lambda r: [_p("The steps as data: `kanon apply` replays this recipe on the same file "
                                        "(or the next wave of the survey) and reproduces the release.", "small"),
                                     f'<pre id="recipe-json">{html.escape(r.recipe_json, quote=False)}</pre>']}
    toc = "".join(f'<li><a href="#{sid}">{html.escape(t)}</a></li>' for sid, t in SECTIONS)
    sections = "".join(_section(sid, f"{i}. {t}", builders[sid](report)) for i, (sid, t) in enumerate(SECTIONS, 1))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{html.escape(report.title)}</title><style>{CSS}</style>"
        f"<script>{_plotly_js()}</script></head><body><main>"
        f"<header><h1>{html.escape(report.title)}</h1>"
        f"<p class=\"meta\">Created {html.escape(report.created)} with kanon {html.escape(report.kanon_version)}. "
        f"k = {report.k}; {len(report.qis)} quasi-identifiers.</p>"
        f"<p class=\"notice\" id=\"confidentiality\">{html.escape(CONFIDENTIALITY_NOTE)}</p></header>"
        f"<nav><ol>{toc}</ol></nav>{sections}</main></body></html>\n"
    )


def report_html(history: Any, vid: int | None = None, recipe_json: str | None = None, options: Any = None,
                minucs: Any = None, version_risks: Any = None, comparison: Any = None) -> str:
    """Build and render in one call (what the dashboard and ``kanon apply --report`` use)."""
    from .build import ReportOptions, build_report

    return render_html(build_report(history, vid, recipe_json, options or ReportOptions(), minucs, version_risks,
                                    comparison))
