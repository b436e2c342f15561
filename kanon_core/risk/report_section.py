"""The report's section on risk beyond k: individual, household risk, l-diversity, t-closeness, in words.

:func:`risk_measures_section` returns the HTML of one ``<section>`` for the data stewards' report: a table
of each measure before and after treatment, the plain reading of each (:data:`~kanon_core.risk.
describe_record.READINGS`), and the warning about a household identifier. It shows counts and
summaries only, never a value of the data.
"""

from __future__ import annotations

import html

import pandas as pd

from .describe_record import READINGS, chance_in_words
from .household import HOUSEHOLD_ID_WARNING
from .summary import RiskMeasures


def measures_table(before: RiskMeasures, after: RiskMeasures | None = None) -> pd.DataFrame:
    """One row per measure, the figures as text (risks need more than the report's two decimals)."""
    def figures(m: RiskMeasures) -> dict[str, str]:
        g = m.glob
        out = {
            "Expected re-identifications": f"{g.expected_reidentifications:,.2f}",
            "Global risk (share of records)": f"{g.global_risk:.4%}",
            f"Records with individual risk above {g.threshold:g}": f"{g.n_above:,}",
            "Highest individual risk": f"{g.max_risk:.4f} ({chance_in_words(g.max_risk)})",
        }
        if m.household is not None:
            h = m.household
            out["Expected re-identifications, household level"] = f"{h.expected_reidentifications:,.2f}"
            out[f"Records in households above {g.threshold:g}"] = f"{h.n_above:,}"
        if m.table is not None:
            for s in m.sensitive:
                lj, tj = s.to_json(m.table.count)
                out[f"{s.name}: distinct l (min)"] = f"{lj['l_diversity']:,}"
                out[f"{s.name}: records whose group shares one value"] = f"{lj['records_with_l_1']:,}"
                out[f"{s.name}: entropy l (min)"] = f"{lj['entropy_l']:.2f}"
                out[f"{s.name}: recursive ({s.c:g},l) (min)"] = f"{lj['recursive_l']:,}"
                out[f"{s.name}: t-closeness, worst group ({s.distance} distance)"] = f"{tj['t']:.3f}"
        return out

    b = figures(before)
    a = figures(after) if after is not None else {}
    rows = [{"measure": k, "before": v, **({"after": a.get(k, "")} if after is not None else {})} for k, v in b.items()]
    return pd.DataFrame(rows)


def risk_measures_section(before: RiskMeasures, after: RiskMeasures | None = None,
                          section_id: str = "risk-measures") -> str:
    """HTML of the report section on the measures beyond k (before and, if given, after treatment)."""
    from ..report.html import table

    parts = [f'<section id="{html.escape(section_id)}"><h2>Risk beyond k</h2>',
             "<p>" + html.escape(
                 "Individual risk is Benedetti & Franconi's estimate as sdcMicro computes it; household risk is "
                 "sdcMicro's hierarchical risk; l-diversity follows Machanavajjhala et al. and t-closeness Li et "
                 "al. (Earth Mover's Distance, as ARX computes it).") + "</p>",
             table(measures_table(before, after), f"{section_id}-table")]
    readings = ["individual_risk", "expected_reidentifications", "global_risk"]
    if before.household is not None:
        readings.append("household_risk")
    if before.sensitive:
        readings += ["l_distinct", "l_entropy", "l_recursive", "t_closeness"]
    parts.append("<dl>" + "".join(f"<dt>{html.escape(k.replace('_', ' '))}</dt><dd>{html.escape(READINGS[k])}</dd>"
                                  for k in readings) + "</dl>")
    if before.household is not None:
        parts.append(f'<p class="warning">{html.escape(HOUSEHOLD_ID_WARNING.format(name=before.household.variable))}'
                     "</p>")
    parts.append("</section>")
    return "".join(parts)
