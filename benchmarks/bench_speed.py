"""Interactive speed: every row of the project's speed table, our figure beside the anchor's, as markdown.

Rows (the anchors are figures quoted from their sources, not rerun here):

* optimal generalization on Adult (30,162 records, 8 QIs with ARX's hierarchies, k = 5, Prec) at 0 % and
  1 % suppression: the public ``search_optimal`` call on a freshly built problem, as
  ``bench_generalize.py`` times it; anchor ARX's Flash (Kohlmayer et al.);
* the 8-QI search on the bundled sample (16,197 records with missing values read as wildcards; the 8 QIs
  of the demo recipe with the automatic hierarchies; k = 3) at 0 % and 1 %, with Prec, discernibility and
  average class size;
* all MINUCs at k = 2 on the seeded table of ``bench_minucs.py`` (11,204 records shaped like Wilson et
  al.'s, first 13 or all 19 QIs), and on the bundled sample's 11,204 records complete on the 19 QIs;
  anchors sdcMicro's SUDA2 and Wilson et al.'s frequency tables;
* exact suppression, default (strict) model, k = 2, on the seeded table with 19 QIs; anchor Wilson et
  al.'s record-wise programmes (SAS);
* the core calls the dashboard makes on the bundled sample (19 QIs, the app's k = 3): the Suppress page's
  run (``SuppressStep.run``) and the MINUCs page's search (``find_minucs``, on the distinct records and
  class sizes the page made as it opened, ``minuc_rows``) with the figures the page shows at once (sizes,
  variable and value contributions); the report's search, which keeps only the counts
  (``summarize_minucs``);
* the dashboard rows themselves (Chromium, real server) from ``bench_dashboard.py`` when it is present
  and not skipped (``--no-dashboard``); otherwise "not measured".

Every core row runs in a fresh process, after a warm-up call that loads the compiled kernels, and is
repeated (``--repeat``, default 3): the table shows the fastest and slowest run, and the process CPU time
(all threads). The load average of the machine is printed, since other work on a 2-core machine shows
in every wall-clock figure; CPU time is much less affected by it.

Run: python benchmarks/bench_speed.py [--repeat 3] [--only minucs13,sup19] [--no-dashboard]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402

ADULT_QIS = ("sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation")
SAMPLE_QIS_8 = ("BYSEX", "BYRACE", "BYDOB_P", "BYREGION", "BYGPARED", "BYINCOME", "BYOCCUM", "BYOCCUF")
"""The quasi-identifiers of the demo recipe (sample_data/demo.recipe.json)."""
DASHBOARD_K = 3
"""The dashboard's default k (kanon_app.state.DEFAULT_K)."""


@dataclass(frozen=True)
class Case:
    """One row: what is timed, on what, the anchor's figure and the goal (seconds)."""

    key: str
    work: str
    input: str
    anchor: str
    goal: float | None


RECODE_TEXT = "race categories 1 and 2 merged"


CASES: tuple[Case, ...] = (
    Case("gen0", "optimal generalization, 0 % suppression", "Adult, 30,162 x 8 QIs, k = 5, Prec",
         "ARX Flash 27 ms (ARX benchmark, 2015 desktop)", 0.1),
    Case("gen1", "optimal generalization, 1 % suppression", "Adult, 30,162 x 8 QIs, k = 5, Prec",
         "ARX, all settings <= 2.5 s on Ihis", 0.2),
    Case("sample8_0", "8-QI search on the sample, 0 %", "sample, 16,197 x 8 QIs (wildcard), k = 3, Prec", "—", 2.0),
    Case("sample8_1", "8-QI search on the sample, 1 %", "sample, 16,197 x 8 QIs (wildcard), k = 3, Prec", "—", 2.0),
    Case("sample8dm_0", "8-QI search on the sample, 0 %", "sample, 16,197 x 8 QIs (wildcard), k = 3, discernibility",
         "—", 2.0),
    Case("sample8dm_1", "8-QI search on the sample, 1 %", "sample, 16,197 x 8 QIs (wildcard), k = 3, discernibility",
         "—", 2.0),
    Case("sample8aecs_0", "8-QI search on the sample, 0 %",
         "sample, 16,197 x 8 QIs (wildcard), k = 3, average class size", "—", 2.0),
    Case("sample8aecs_1", "8-QI search on the sample, 1 %",
         "sample, 16,197 x 8 QIs (wildcard), k = 3, average class size", "—", 2.0),
    Case("minucs13", "all MINUCs, k = 2", "seeded table, 11,204 x 13 QIs", "sdcMicro SUDA2 core 2.63 s", 0.79),
    Case("minucs19", "all MINUCs, k = 2", "seeded table, 11,204 x 19 QIs",
         "sdcMicro 35 s; Wilson et al. 9 h", 4.0),
    Case("minucs19s", "all MINUCs, k = 2", "sample, 11,204 complete records x 19 QIs", "—", 4.0),
    Case("sup19", "exact suppression, strict (default) model, k = 2", "seeded table, 11,204 x 19 QIs",
         "Wilson et al. 5 h (record-wise, SAS)", 5.0),
    Case("dash_sup3", "Suppress page core call, strict exact, k = 3", "sample, 16,197 x 19 QIs (wildcard)", "—", 5.0),
    Case("dash_minucs", f"MINUCs page core call, k = {DASHBOARD_K}", "sample, 16,197 x 19 QIs (wildcard)", "—", 2.0),
    Case("report_minucs", f"report's MINUC counts (no list kept), k = {DASHBOARD_K}",
         "sample, 16,197 x 19 QIs (wildcard)", "—", None),
    Case("dash_minucs_recode", f"MINUCs page core call after a recode, k = {DASHBOARD_K} (the earlier search "
         "carried over)", f"sample, 16,197 x 19 QIs, {RECODE_TEXT}", "—", 2.0),
    Case("report_minucs_recode", f"report's MINUC counts after a recode, k = {DASHBOARD_K} (the original's "
         "from the MINUCs page, carried over)", f"sample, 16,197 x 19 QIs, {RECODE_TEXT}", "—", 2.0),
    Case("count_busy", "a page's class count while a MINUC search runs (another officer's, or one started ahead)",
         f"sample, 16,197 x 19 QIs (wildcard); the MINUCs page's search at k = {DASHBOARD_K} under way", "—", 1.0),
)

DASHBOARD_ROWS: tuple[tuple[str, str, float], ...] = (
    ("suppression, k = 3", "dashboard, sample: exact suppression at k = 3 (19 QIs)", 5.0),
    ("Find MINUCs", "dashboard, sample: Find MINUCs (19 QIs)", 2.0),
    ("Compare first open", "dashboard: Compare first open", 1.0),
    ("first fit of the three models", "dashboard: every click (Compare's first model fit)", 1.0),
    ("Risk page first open", "dashboard: every click (the Risk page's first open)", 1.0),
    ("build the report", "dashboard: build the report (sample)", 2.0),
    ("cold open", "dashboard: cold open", 2.0),
    ("switching MINUC sections", "dashboard: switching MINUC tabs (slowest)", 0.2),
    ("a page opened during a search started ahead", "dashboard: every click (a page opened while a search runs)", 1.0),
)


# -- the timed calls (each returns (setup, call, note)) -----------------------------------------------------
def _adult(limit: float) -> tuple[Callable[[], object], Callable[[object], object], Callable[[object], str]]:
    from kanon_core.dataset import Roles
    from kanon_core.io import load_dataset
    from kanon_core.treat.hierarchy import load_hierarchies
    from kanon_core.treat.lattice import build_problem, search_optimal

    adult = ROOT / "sample_data" / "adult"
    ds = load_dataset(adult / "adult.csv", roles=Roles(qis=ADULT_QIS))
    hierarchies = load_hierarchies(adult, ADULT_QIS)
    search_optimal(build_problem(ds, hierarchies, ADULT_QIS[:2]), 2)
    return (lambda: build_problem(ds, hierarchies, ADULT_QIS), lambda p: search_optimal(p, 5, limit, "prec"),
            lambda r: f"levels {' '.join(str(v) for v in r.level_tuple)}, {r.nodes_evaluated:,} nodes evaluated{_told(r)}")


def _sample8(limit: float, metric: str = "prec"):
    from kanon_app.samples import load_sample
    from kanon_core.treat.default_hierarchy import default_hierarchies
    from kanon_core.treat.lattice import build_problem, search_optimal

    ds = load_sample("els")
    hierarchies = default_hierarchies(ds, SAMPLE_QIS_8)
    search_optimal(build_problem(ds, hierarchies, SAMPLE_QIS_8[:2]), 2)
    return (lambda: build_problem(ds, hierarchies, SAMPLE_QIS_8),
            lambda p: search_optimal(p, DASHBOARD_K, limit, metric),
            lambda r: f"{r.nodes_evaluated:,} nodes evaluated{_told(r)}, {r.n_suppressed_records:,} records suppressed")


def _told(r) -> str:
    """The nodes the search told failing without evaluating them, by the union of passing nodes' failing records
    (for discernibility, also those with too many failing records to win)."""
    return f" (+{r.nodes_inferred:,} told failing unevaluated)" if r.nodes_inferred else ""


def _minucs(q: int, source: str):
    import numpy as np

    from kanon_core.risk.minucs import find_minucs

    if source == "seeded":
        from benchmarks.synthetic import make_els_like

        codes = np.ascontiguousarray(make_els_like()[:, :q])
    else:
        from kanon_app.samples import ELS_QIS, load_sample

        all_codes = load_sample("els").qi_matrix(list(ELS_QIS[:q])).codes
        codes = np.ascontiguousarray(all_codes[(all_codes >= 0).all(axis=1)])
    find_minucs(codes[:200, :4], k=2)
    return (lambda: codes, lambda c: find_minucs(c, k=2, missing="wildcard"),
            lambda r: f"{r.total:,} MINUCs, {r.records_with_minucs():,} records with one")


def _sup19():
    import numpy as np

    from benchmarks.synthetic import NAMES, make_els_like
    from kanon_core.treat.suppress import suppress

    codes = np.ascontiguousarray(make_els_like())
    suppress(np.ascontiguousarray(codes[:200, :3]), 2)
    return (lambda: codes, lambda c: suppress(c, 2, qis=list(NAMES)), _sup_note)


def _sup_note(r) -> str:
    return (f"{r.n_suppressed:,} cells, bound {r.lower_bound:,.0f} (gap {100 * r.gap:.1f} %), "
            f"findable below k {r.findable_below_k}")


def _dash_sup3():
    import numpy as np

    from kanon_app.samples import ELS_QIS, load_sample
    from kanon_core.treat.suppress import SuppressStep, suppress

    ds = load_sample("els")
    suppress(np.ascontiguousarray(ds.qi_matrix(list(ELS_QIS)).codes[:200, :3]), 2)
    step = SuppressStep(qis=ELS_QIS, k=DASHBOARD_K)
    return (lambda: ds, step.run, _sup_note)


def _dash_minucs():
    from kanon_app.samples import ELS_QIS, load_sample
    from kanon_core.risk.minucs import find_minucs

    ds = load_sample("els")
    find_minucs(ds.qi_matrix(list(ELS_QIS[:4])).codes[:200], k=2)

    def page(prepared):  # the click: the page made the distinct records and their class sizes as it opened
        qm, rows = prepared
        r = find_minucs(qm, k=DASHBOARD_K, missing=ds.missing, rows=rows)
        r.totals_by_size(), r.records_with_minucs(), r.variable_contributions(), r.value_contributions(qm)
        return r

    return (lambda: _page_rows(ds.qi_matrix(list(ELS_QIS)), ds.missing), page,
            lambda r: f"{r.total:,} MINUCs; the page's figures included (search {r.seconds:.2f} s)")


def _page_rows(qm, missing: str) -> tuple:
    """What the MINUCs page holds when "Find MINUCs" is clicked: the QI matrix and its distinct records with
    their class sizes (made as the page opened, shared by the estimate and the search)."""
    from kanon_core.risk.minucs import minuc_rows

    return qm, minuc_rows(qm, missing)


def _report_minucs():
    from kanon_app.samples import ELS_QIS, load_sample
    from kanon_core.risk.minucs import summarize_minucs

    ds = load_sample("els")
    summarize_minucs(ds.qi_matrix(list(ELS_QIS[:4])).codes[:200], k=2)
    return (lambda: ds.qi_matrix(list(ELS_QIS)),
            lambda qm: summarize_minucs(qm, k=DASHBOARD_K, missing=ds.missing),
            lambda r: f"{r.total:,} MINUCs counted, {r.records_with_minucs():,} records with one")


def _recoded():
    """The sample, a version with two race categories merged, and the MINUCs page's search of the original."""
    from kanon_app.samples import ELS_QIS, load_sample
    from kanon_core.history import History
    from kanon_core.risk.minucs import find_minucs
    from kanon_core.treat.recode import RecodeStep

    h = History.start(load_sample("els"))
    h.apply(RecodeStep(column="BYRACE", merge=(1, 2)))
    ds0, ds1 = h.original.dataset, h.current.dataset
    qm0 = ds0.qi_matrix(list(ELS_QIS))
    found = find_minucs(qm0, k=DASHBOARD_K, missing=ds0.missing)
    find_minucs(qm0.codes[:200, :4], k=2)
    return h, ds1, qm0, found


def _dash_minucs_recode():
    from kanon_app.samples import ELS_QIS
    from kanon_core.risk.minucs import find_minucs
    from kanon_core.risk.minucs_carry import plan_carry

    _, ds, qm0, found = _recoded()

    def page(prepared):
        qm, rows = prepared
        plan = plan_carry(found, qm0, qm, DASHBOARD_K, ds.missing, None)
        r = find_minucs(qm, k=DASHBOARD_K, missing=ds.missing, carry=plan, rows=rows)
        r.totals_by_size(), r.records_with_minucs(), r.variable_contributions(), r.value_contributions(qm)
        return r

    return (lambda: _page_rows(ds.qi_matrix(list(ELS_QIS)), ds.missing), page,
            lambda r: f"{r.total:,} MINUCs; {r.rows_carried:,} of {len(r.row_mult):,} distinct records carried")


def _report_minucs_recode():
    from kanon_app.samples import ELS_QIS
    from kanon_core.report import ReportOptions, report_minuc_searches

    h, ds, _, found = _recoded()
    opts = ReportOptions(k=DASHBOARD_K, utility=False)
    return (lambda: h.original.dataset,
            lambda original: report_minuc_searches(original, ds, tuple(ELS_QIS), opts, original_found=found),
            lambda pair: f"{pair[1].rows_carried:,} of {len(pair[1].row_mult):,} distinct records carried")


def _count_busy():
    """A page's class count (the Risk and Recode pages count the 19-QI classes under wildcard semantics) while
    the MINUCs page's search runs in the same process (another officer's, or one started ahead): the count
    waits for compute slots, granted in turn (kanon_core.threads.FairSlots)."""
    import threading

    from kanon_app.samples import ELS_QIS, load_sample
    from kanon_core.risk.classes import compute_class_sizes
    from kanon_core.risk.minucs import find_minucs

    ds = load_sample("els")
    qm = ds.qi_matrix(list(ELS_QIS))
    compute_class_sizes(qm.codes, ds.missing)
    find_minucs(qm.codes[:200, :4], k=2)
    searches: list[threading.Thread] = []

    def prepare():
        for t in searches:
            t.join()
        searches.clear()
        search = threading.Thread(target=find_minucs, args=(qm,), kwargs={"k": DASHBOARD_K, "missing": ds.missing})
        search.start()
        searches.append(search)
        time.sleep(0.5)  # the search in full swing, every compute slot taken
        return qm.codes

    def note(r) -> str:
        running = any(t.is_alive() for t in searches)
        for t in searches:
            t.join()
        return (f"{int((r.fk < DASHBOARD_K).sum()):,} records below k = {DASHBOARD_K}; the MINUC search "
                f"{'still ran' if running else 'had ended'} when the count ended (CPU s include the search's)")

    return prepare, lambda codes: compute_class_sizes(codes, ds.missing), note


SETUPS: dict[str, Callable[[], tuple]] = {
    "gen0": lambda: _adult(0.0), "gen1": lambda: _adult(0.01),
    "sample8_0": lambda: _sample8(0.0), "sample8_1": lambda: _sample8(0.01),
    "sample8dm_0": lambda: _sample8(0.0, "dm"), "sample8dm_1": lambda: _sample8(0.01, "dm"),
    "sample8aecs_0": lambda: _sample8(0.0, "aecs"), "sample8aecs_1": lambda: _sample8(0.01, "aecs"),
    "minucs13": lambda: _minucs(13, "seeded"), "minucs19": lambda: _minucs(19, "seeded"),
    "minucs19s": lambda: _minucs(19, "sample"), "sup19": _sup19, "dash_sup3": _dash_sup3,
    "dash_minucs": _dash_minucs, "report_minucs": _report_minucs,
    "dash_minucs_recode": _dash_minucs_recode, "report_minucs_recode": _report_minucs_recode,
    "count_busy": _count_busy,
}


def one(key: str, repeat: int) -> dict:
    """Time one case ``repeat`` times in this process (after its warm-up)."""
    prepare, call, note = SETUPS[key]()
    seconds = []
    cpu = []
    result = None
    for _ in range(repeat):
        arg = prepare()
        c = time.process_time()
        t = time.perf_counter()
        result = call(arg)
        seconds.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return {"min": min(seconds), "max": max(seconds), "cpu": min(cpu), "note": note(result)}


def _fmt(lo: float, hi: float) -> str:
    return f"{lo:.2f}" if abs(hi - lo) < 0.005 or hi < lo * 1.05 else f"{lo:.2f}–{hi:.2f}"


def _goal(goal: float | None) -> str:
    return "—" if goal is None else f"≤ {goal:g} s"


def _dashboard_rows(skip: bool) -> dict[str, tuple[float, str]]:
    """The dashboard's rows keyed by their work text, or {} when not measured."""
    if skip or not (ROOT / "benchmarks" / "bench_dashboard.py").exists():
        return {}
    try:
        from benchmarks.bench_dashboard import dashboard_rows
    except Exception as exc:  # noqa: BLE001 - the browser or its driver is not installed here
        print(f"dashboard rows not measured: {type(exc).__name__}", file=sys.stderr)
        return {}
    try:
        rows = dashboard_rows()
    except Exception as exc:  # noqa: BLE001 - report and print the rest of the table
        print(f"dashboard rows not measured: {type(exc).__name__}: {exc}", file=sys.stderr)
        return {}
    return {r.work: (r.seconds, r.described) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated case keys: " + ", ".join(SETUPS))
    ap.add_argument("--no-dashboard", action="store_true", help="skip the browser rows (printed as not measured)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.repeat)))
        return
    keys = [k for k in args.only.split(",") if k] or list(SETUPS)
    print(f"machine: {describe_machine()}")
    print(f"before the rows: {describe_speed(speed())}")
    lines = ["| work | input | ours (s) | CPU s | anchor | goal | note |", "|---|---|---:|---:|---|---:|---|"]
    for case in CASES:
        if case.key not in keys:
            continue
        proc = subprocess.run([sys.executable, __file__, "--one", case.key, "--repeat", str(args.repeat)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            lines.append(f"| {case.work} | {case.input} | failed | | {case.anchor} | {_goal(case.goal)} | {tail} |")
        else:
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            lines.append(f"| {case.work} | {case.input} | {_fmt(r['min'], r['max'])} | {r['cpu']:.2f} | "
                         f"{case.anchor} | {_goal(case.goal)} | {r['note']} |")
        print(lines[-1], file=sys.stderr, flush=True)
    measured = _dashboard_rows(args.no_dashboard)
    for prefix, work, goal in DASHBOARD_ROWS:
        found = [(w, v) for w, v in measured.items() if w.startswith(prefix)]
        if found:
            for w, (seconds, note) in found:
                lines.append(f"| {work} | Chromium, real server ({w}) | {seconds:.2f} | | — | {_goal(goal)} | {note} |")
        else:
            lines.append(f"| {work} | Chromium, real server | not measured | | — | {_goal(goal)} | |")
    print(f"core rows: wall seconds, fastest–slowest of {args.repeat} runs, each case in a fresh process after a "
          "warm-up; CPU s: process CPU time of the fastest (all threads; on an otherwise idle machine the wall time "
          "is about CPU / cores for the parallel parts)")
    print("\n".join(lines))
    print(f"after the rows: {describe_speed(speed())}; load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
