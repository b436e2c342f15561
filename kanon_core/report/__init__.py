"""The self-contained HTML report for a data steward: :func:`build_report` gathers the numbers from
kanon_core, :func:`render_html` writes one offline HTML file (see :mod:`.build` and :mod:`.html`)."""

from .build import (
    CONFIDENTIALITY_NOTE,
    Report,
    ReportOptions,
    build_report,
    default_formulas,
    report_minuc_k,
    report_minuc_searches,
)
from .html import SECTIONS, render_html, report_html

__all__ = ["CONFIDENTIALITY_NOTE", "SECTIONS", "Report", "ReportOptions", "build_report", "default_formulas",
           "render_html", "report_html", "report_minuc_k", "report_minuc_searches"]
