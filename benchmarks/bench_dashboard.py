"""The dashboard as an officer uses it: the real app (``streamlit run app.py``) driven in headless Chromium.

Rows (bundled ELS-like sample, 16,197 records, 19 quasi-identifiers, the app's defaults):

* cold open: a fresh server's first session, from the request until the Data page has finished its run;
  a second session on the now warm server is timed too;
* Compare first open: clicking Compare in the navigation until the weighted percentages and their charts are
  shown (the session's first charts: the browser runs Streamlit's chart code for them unless it already did;
  the launcher's page, kanon_app.page_head, has it run just after the first page is shown, so a click at once
  waits for it and one after ``--read`` seconds on the first page less or not at all);
* first fit of the three models: on Compare's Regression tab, clicking "Fit the three models" (the page's
  default model) until the coefficients' chart is drawn (the session's, and the server's, first fit);
* Risk page first open: clicking Risk in the navigation until its charts are drawn (its first visit in the
  session: the next ones reuse its counts);
* build the report: on Export, clicking "Build the report" until its download button is offered (before the
  MINUCs page has searched, so the report searches itself, and again after it, when it reuses that search);
* Find MINUCs (19 QIs, the page's default k): clicking "Find MINUCs" until the results are shown, and the time the core
  search reported from its start (which may include waits while pages were drawn). In the first session the page
  opens after the Risk page (which starts the page's default search ahead of it) and the report (which waits for
  that search); a second, new session opens the MINUCs page first and clicks at once (the search's own wait),
  and a third opens it after 5 s on the Risk page (what the search the Risk page started leaves to wait for);
* switching MINUC sections: each of the four result sections, until it is shown and the app is idle;
* Find MINUCs after a recode: race categories 1 and 2 merged on the Recode page, then "Find MINUCs" again
  (the records the merge did not touch keep the first search's MINUCs), and the report of that version;
* suppression at k = 3 (the page's default model and method): clicking "Run suppression" until the results
  are shown, with the seconds the core reported;
* a page opened while a search started ahead runs: k set to 4 on the MINUCs page (its search for k = 4 starts
  ahead of the click, about 5 s), then Recode opened at once, until it is shown (the Recode page's suggestions
  share that search; they waited for it, with the whole page, until the officer asked for it there).

Each timing runs from the click (or request) until the expected text is visible and Streamlit's script
state is back to "not running", painted. The click is an officer's (:func:`press`; the rows of earlier rounds,
in HISTORY, also held Playwright's checks of the element before it clicks: 15-70 ms on an idle page). A row
clicked at once (Compare's first open, the first report and "Find MINUCs", or after ``--read`` seconds)
runs from the moment the state before it was shown (plus the reading), the officer's click: timed from the
benchmark's own click, it left out a task the browser starts just after that state (its chart code, 0.7 s
after the first page), which the benchmark's calls before its click wait for and an officer's click waits for
too (``_timed``'s ``after``; the rows of earlier rounds were timed from the click, so Compare's first open read
0.59-0.75 s where it takes 1.6-1.8 s clicked at once). Such a row also holds the benchmark's own delay from
that state to its click, 30-50 ms on an idle static page (a frame and a few calls to the browser): the other
rows, a click after a state with no task known to follow it, are timed from the click. The end is
read on the page's own clock, at the frame after the one that first showed that state (``_SHOWN_WATCHER``).
Playwright's waits, which decide that the state is reached, look again only every half second after their first
quarter, so their own reading was up to 0.5 s late (the earlier rows were read so: a row of 0.3 s or more read
0-0.5 s above its time; in two runs the first fit read 1.10 and 1.15 s where the page showed it 0.53 and 0.57 s
after the click). Goals are those of the project's speed issue on a 2-core machine. Each row's note also gives
the CPU seconds the server and the browser spent during its wait (:mod:`benchmarks.cpu_meter`), counted until
Playwright's waits end (up to half a second after the row's end, and idle then but for Playwright's own checks):
with both on the same 2 cores, that span is at least half their sum.

Run: python benchmarks/bench_dashboard.py [--repeat 1] [--servers 1] [--skip suppress] [--read 3] [--spread N]
(``--read S``: Compare, "Find MINUCs" and the first "Build the report" are clicked after S seconds on the page
before, as an officer reading it would; the browser has then loaded its chart code in any case, and both
searches start when their page opens.)
(``--servers 3``: three fresh servers, the best of each row kept, so the cold open is a best of three too.)
(``--spread 7``: seven rounds of the rows clicked at once on one server, each reading and the median, to tell a
change from the rows' spread: run it with and without the change, servers alternated.)
Other scripts get the rows from :func:`dashboard_rows`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.cpu_meter import CpuMeter, CpuSplit, CpuTimeline, timeline_text  # noqa: E402
from benchmarks.machine import describe as describe_machine  # noqa: E402
from benchmarks.machine import describe_speed, speed  # noqa: E402
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, IDLE, VIEWPORT, _start_app, _stop  # noqa: E402

TIMEOUT_MS = int(float(os.environ.get("KANON_BENCH_TIMEOUT", "900")) * 1000)  # per wait; a loaded machine is slow

# The run a click started has ended: the app is idle after a change of its script state since the watcher was
# armed (``_SHOWN_WATCHER`` counts the changes).
_DONE = """() => {
  const app = document.querySelector("[data-testid='stApp'][data-test-script-state='notRunning']");
  return app !== null && window.__kanonStateChanges > 0;
}"""

_LOADED_SINCE = """([name, since]) => performance.getEntriesByType('resource').some(
  e => e.name.split('/').pop().startsWith(name) && e.responseEnd > since)"""
"""Whether the browser finished loading a file whose name starts so after a moment (its own clock: Playwright
reports its request events only between calls, late when the script sleeps)."""
_NOT_STALE = """() => document.querySelectorAll("[data-stale='true']").length === 0"""
"""Whether the browser shows no element of a run before the last (a page switch greys the old page's elements
until the new run replaces them)."""
_CHARTS_DRAWN = "() => window.__kanonChartsDrawn()"
"""Whether the page has charts and every one is drawn (the watcher's own test, :data:`_SHOWN_WATCHER`)."""

_SHOWN_WATCHER = r"""(() => {
  // Installed in every document of a benchmark's browser context (an init script). After __kanonWatch(spec),
  // it looks, once per animation frame in which the DOM changed, whether the awaited state is shown: the
  // app idle (after a script-state change when spec.rerun), the text (or selector) visible, and every chart
  // drawn when spec.charts. __kanonShown is the page clock (epoch ms) of the start of the frame after the one
  // where the state was first seen, in its current unbroken stretch (a state seen and then lost again does
  // not count): that frame starts once the state has been painted.
  const w = window;
  const norm = (x) => x.replace(/\s+/g, ' ').toLowerCase();
  const app = () => document.querySelector("[data-testid='stApp']");
  function textShown(spec) {
    const body = document.body;
    if (!body) return false;
    if (spec.text !== null) {
      const want = norm(spec.text);
      return norm(body.textContent).includes(want) && norm(body.innerText).includes(want);
    }
    if (spec.pattern !== null) return new RegExp(spec.pattern, spec.flags).test(body.innerText);
    if (spec.selector !== null) {
      const el = document.querySelector(spec.selector);
      return el !== null && el.getClientRects().length > 0;
    }
    return true;
  }
  function chartsDrawn() {
    const boxes = [...document.querySelectorAll("[data-testid='stPlotlyChart']")];
    return boxes.length > 0 && boxes.every(b => b.querySelector('.main-svg') !== null);
  }
  w.__kanonChartsDrawn = chartsDrawn;
  function holds(spec) {
    const a = app();
    if (a === null || a.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (spec.rerun && w.__kanonStateChanges === 0) return false;
    if (spec.charts && !chartsDrawn()) return false;
    return textShown(spec);
  }
  let scheduled = false;
  function check() {
    scheduled = false;
    const spec = w.__kanonSpec;
    if (!spec) return;
    if (!holds(spec)) { w.__kanonShown = null; w.__kanonSeen = false; return; }
    if (w.__kanonSeen) return;
    w.__kanonSeen = true;
    requestAnimationFrame(() => {
      if (w.__kanonSeen && w.__kanonSpec === spec && w.__kanonShown === null)
        w.__kanonShown = performance.timeOrigin + performance.now();
    });
  }
  function schedule() { if (!scheduled) { scheduled = true; requestAnimationFrame(check); } }
  w.__kanonWatch = (spec) => {
    w.__kanonSpec = spec; w.__kanonShown = null; w.__kanonSeen = false; w.__kanonStateChanges = 0;
    schedule();
  };
  w.__kanonStateChanges = 0;
  new MutationObserver((records) => {
    for (const r of records)
      if (r.type === 'attributes' && r.attributeName === 'data-test-script-state') w.__kanonStateChanges += 1;
    schedule();
  }).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  if (w.__kanonFirstSpec) w.__kanonWatch(w.__kanonFirstSpec);
})()"""
"""The exact moment an awaited state is shown, on the page's own clock. Playwright's waits look again after 0, 20,
50, 100, 100 and then every 500 ms, so a wait of more than a quarter of a second was read up to half a second
late; those waits still decide that the state is reached (and keep the benchmark from racing ahead), and the
time is read here (:func:`_timed`)."""
FIRST_PAGE_TEXT = "16,197 records"


def _shown_spec(expect: str | re.Pattern | None, selector: str | None = None, rerun: bool = False,
                charts: bool = False) -> dict:
    """What the watcher awaits (see :func:`_timed` for the arguments)."""
    pattern = expect if isinstance(expect, re.Pattern) else None
    return {"text": expect if isinstance(expect, str) else None, "selector": selector, "rerun": rerun,
            "charts": charts, "pattern": None if pattern is None else pattern.pattern,
            "flags": "i" if pattern is not None and pattern.flags & re.IGNORECASE else ""}


_FIRST_SPEC = f"window.__kanonFirstSpec = {json.dumps(_shown_spec(FIRST_PAGE_TEXT))};"


SHOWN_PATIENCE_MS = 10_000
"""How long :func:`_shown_since` waits for the watcher's reading once Playwright's waits are over."""


def new_page(browser):
    """A new browser context (a new session) and its page, with the watcher of shown states installed."""
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(_FIRST_SPEC + _SHOWN_WATCHER)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return context, page


CLOCK_SAMPLES = 3
"""Readings of the page's clock per offset: the one with the shortest round trip counts."""


def _page_clock_offset(page) -> float:
    """The page's clock (epoch, as the watcher reads it) minus this process's ``time.time()``, in seconds.

    From the reading with the shortest round trip of :data:`CLOCK_SAMPLES`: a reading made while the browser
    runs a long task (its first chart code takes 0.7 s on the main thread) returns when the task ends, and the
    midpoint of its round trip is then off by half the task."""
    best = (float("inf"), 0.0)
    for _ in range(CLOCK_SAMPLES):
        before = time.time()
        page_now = page.evaluate("performance.timeOrigin + performance.now()") / 1000.0
        after = time.time()
        best = min(best, (after - before, page_now - (before + after) / 2))
    return best[1]


def _shown_since(page, t0: float, waited: float) -> float:
    """Seconds from ``t0`` (this process's ``time.time()`` before the action) until the watcher saw the awaited
    state painted, in the stretch that still holds: later than Playwright's waits (``waited`` seconds from ``t0``)
    when the state they saw was lost again (a run ending, another starting), earlier by up to half a second
    otherwise. ``waited`` when the page has no reading (said on stderr).

    From ``t0``, not from the click event's own time: the click (:func:`press`) reaches the page late while the
    browser is still busy with the step before (0.8 s once, after the first page), and an officer clicking at
    once waits for that too."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # Playwright's waits may see the state before the watcher's next frames have run, or a passing one
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function("window.__kanonShown !== null", timeout=SHOWN_PATIENCE_MS, polling="raf")
    shown = page.evaluate("window.__kanonShown")
    if shown is None:
        print("  (the page did not record the moment: Playwright's reading kept)", file=sys.stderr)
        _SHOWN_AT[0] = None
        return waited
    _SHOWN_AT[0] = shown / 1000.0 - _page_clock_offset(page)
    return _SHOWN_AT[0] - t0


_SHOWN_AT: list[float | None] = [None]
"""When the last awaited state was shown, on this process's clock (None: not read): the start of a row clicked
at once after it (:func:`_timed`)."""
_SHOWN_NOW = "window.__kanonShown !== null"
_WATCH = "spec => { window.__kanonWatch(spec); return window.__kanonSpec === spec; }"
"""Give the watcher a spec; whether it took it (a page without a working watcher has no reading to wait for)."""


def _await_shown(page, watching: bool) -> None:
    """Wait until the watcher has seen the awaited state, read once a frame, when it watches (``watching``: it
    took the spec); a page without the watcher is left to Playwright's waits alone."""
    if watching:
        page.wait_for_function(_SHOWN_NOW, timeout=TIMEOUT_MS, polling="raf")


@dataclass(frozen=True)
class Row:
    """One timed dashboard action: what was done, seconds, the goal, a note (e.g. the core's own time), and the
    CPU the server and the browser spent meanwhile (see :mod:`benchmarks.cpu_meter`)."""

    work: str
    seconds: float
    goal: float | None
    note: str = ""
    cpu: CpuSplit | None = None

    @property
    def described(self) -> str:
        """The note, with the CPU spent meanwhile when it was measured."""
        return "; ".join(x for x in (self.note, None if self.cpu is None else self.cpu.text()) if x)


class _Meter:
    """The CPU meter of the server under test (set per server) and the split of the last timed wait."""

    meter: CpuMeter | None = None
    last: CpuSplit | None = None
    timeline: CpuTimeline | None = None  # --timeline: the meter read every 0.1 s


def _last_cpu() -> CpuSplit | None:
    """The CPU the server and the browser spent during the last :func:`_timed` wait."""
    return _Meter.last


def _cpu_start() -> tuple[float, float] | None:
    """The CPU the server and the browser have spent so far (None without a meter)."""
    meter = _Meter.meter
    return None if meter is None or not meter.available else meter.sample()


def _cpu_since(start: tuple[float, float] | None) -> CpuSplit | None:
    """The CPU spent since :func:`_cpu_start` gave ``start``."""
    return None if start is None or _Meter.meter is None else _Meter.meter.since(start)


PLOTLY_CHUNK = "PlotlyChart."
"""Name start of the code chunk of Streamlit's Plotly element, which the browser loads once per session (1.3-1.6 s
of browser work here): the launcher's page imports it once the browser is idle (kanon_app.page_head); it is
fetched before the first page is shown, and run (0.7 s of the browser's main thread) just after; otherwise the
session's first chart loads it."""


def _idle(page) -> None:
    page.wait_for_selector(IDLE, timeout=TIMEOUT_MS)


def _timed(page, action: Callable[[], None], expect: str | re.Pattern | None, rerun: bool = True,
           charts: bool = False, selector: str | None = None, after: float | None = None) -> float:
    """Seconds from ``action()`` until ``expect`` is visible and (when a rerun is expected) the run ended, and
    with ``charts`` until every chart on the page is drawn too (a page's run can end, and its text show,
    before the browser has drawn its charts: a session's first chart waits for Streamlit's Plotly code).

    Steps that only lead to a timed one (opening a page whose text no other page has) pass ``rerun=False``:
    a quick run's two state changes may reach the page's DOM as none (the browser batches them), and the
    wait for a change then never ends; the text and an idle app are enough there. ``selector``: an element
    awaited instead of a text (a table or a chart, whose contents are drawn, not written).

    ``after``: the officer clicks ``after`` seconds after the state the step before awaited was shown (0: at
    once), and the row runs from that moment (:data:`_SHOWN_AT` plus ``after``), not from the benchmark's click;
    the benchmark waits until then (when its calls have not already taken longer). The two differ when the
    browser starts a long task just after that state is shown: the benchmark's calls before its click then wait
    for the task (0.7 s after the first page, where the browser runs its chart code), and a row timed from the
    click left that wait out (as did a wait of ``after`` seconds counted from the benchmark's own return), while
    an officer's click waits for it. Each step ends as soon as the watcher has seen its state (a wait polled
    once per frame), so the benchmark's own delay before a click at once is a frame and a few calls to the
    browser; the CPU seconds still count from the click."""
    since = None if after is None or _SHOWN_AT[0] is None else _SHOWN_AT[0] + after
    if after is not None and since is None:
        raise RuntimeError("a row clicked after the step before needs the moment that step's state was shown")
    if since is not None and since > time.time():
        time.sleep(since - time.time())  # the officer reads the page before
    watching = page.evaluate(_WATCH, _shown_spec(expect, selector, rerun, charts))
    start = _cpu_start()
    t0 = time.time()
    action()
    _await_shown(page, watching)
    if selector is not None:
        page.wait_for_selector(selector, timeout=TIMEOUT_MS)
    else:
        page.get_by_text(expect).first.wait_for(state="visible", timeout=TIMEOUT_MS)
    if rerun:
        page.wait_for_function(_DONE, timeout=TIMEOUT_MS, polling=10)
    _idle(page)
    if charts:
        page.wait_for_function(_CHARTS_DRAWN, timeout=TIMEOUT_MS, polling=10)
    waited = time.time() - t0
    _Meter.last = _cpu_since(start)
    shown = _shown_since(page, t0, waited)
    if since is not None and _Meter.timeline is not None:
        print(f"timeline from the click to {expect!r} shown:\n"
              + timeline_text(_Meter.timeline.window(since, t0 + shown)), file=sys.stderr, flush=True)
    return shown if since is None else shown + (t0 - since)


def _open_first_page(page, url: str) -> None:
    """Open the app in a new session and wait until its first page (the bundled sample) is shown, idle."""
    page.goto(url)
    _await_shown(page, page.evaluate("window.__kanonSpec !== undefined"))  # the watcher's first spec
    page.get_by_text(FIRST_PAGE_TEXT).first.wait_for(state="visible", timeout=TIMEOUT_MS)
    _idle(page)


def press(target) -> None:
    """Click ``target`` (a locator) as an officer does, at once: the timed waits start just before this call.

    Playwright's own click first waits until the element is visible, enabled and stable (the same box over two
    animation frames) and would receive the click: 15-70 ms on an idle page here, none of it an officer's. Those
    checks are skipped (``force``); finding the element and its box still run after the start, so a browser
    busy with the step before (the first page's chart code, 0.8 s once) delays the click within the timed wait,
    as it delays an officer's click. The rows' elements are shown before they are clicked: each step waits for
    the state the next click needs. A click that only leads to a row keeps Playwright's own where something may
    still cover the element (a list just closed: without the check, the click went to the list)."""
    target.click(force=True)


def _button(page, name: str) -> Callable[[], None]:
    """A click on the button ``name``, to time."""
    return lambda: press(page.get_by_role("button", name=name))


def _nav(page, title: str) -> None:
    press(page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True))


def _section(page, name: str) -> Callable[[], None]:
    """A click on a page section: a tab, or a segmented-control / radio option of that name (which one it is
    is found now, before the timed wait starts)."""
    tab = page.get_by_role("tab", name=name, exact=True)
    if tab.count():
        target = tab.first
    else:
        btn = page.get_by_role("button", name=name, exact=True)
        target = btn.first if btn.count() else page.get_by_text(name, exact=True).first
    return lambda: press(target)


def _pick(page, opener, option, tries: int = 3) -> None:
    """Open a select box and click ``option``, opening it again when the list closed before the option showed:
    in a full run a list just opened was closed again (the server idle), and the click waited for an option
    that never came."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        opener.click()
        try:
            option.wait_for(state="visible", timeout=5000 if attempt < tries - 1 else TIMEOUT_MS)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            _idle(page)
            continue
        option.click()
        _idle(page)
        return


def _enter_number(page, field, value: str, tries: int = 3) -> None:
    """Type ``value`` into a number input and commit it (Enter), typed again when the input shows another value
    afterwards: in a full run the browser once kept the old value, with no run following, and the wait for the
    run's text timed out."""
    for _ in range(tries):
        field.fill(value)
        field.press("Enter")
        page.wait_for_timeout(100)
        if field.input_value() == value:
            return
    raise RuntimeError(f"the number input did not take {value}")


def _is_tab(page, name: str) -> bool:
    return page.get_by_role("tab", name=name, exact=True).count() > 0


def _metric(page, label: str) -> str:
    m = page.locator("[data-testid='stMetric']", has_text=label).first
    return m.locator("[data-testid='stMetricValue']").inner_text().strip()


def dashboard_rows(repeat: int = 1, skip: tuple[str, ...] = (), read: float = 0.0,
                   timeline: bool = False) -> list[Row]:
    """Time every dashboard row on a fresh server; the best of ``repeat`` sessions per row. ``read``:
    seconds the officer spends on the MINUCs page and on the Report tab before clicking "Find MINUCs" and
    "Build the report" on the first version. ``timeline``: print, for each row clicked after the state before it
    (at once or after a reading), what the server and the browser did over its wait, every 0.1 s."""
    best: dict[str, Row] = {}

    def keep(row: Row) -> None:
        if row.work not in best or row.seconds < best[row.work].seconds:
            best[row.work] = row

    sessions = [lambda page, url, i=i: _session(page, url, first=i == 0, skip=skip, read=read) for i in range(repeat)]
    if "minucs" not in skip and "first" not in skip:  # two new sessions: MINUCs first, or after Risk
        sessions += [_minucs_first, lambda page, url: _minucs_first(page, url, RISK_READ)]
    _on_a_fresh_server(sessions, keep, timeline)
    return list(best.values())


SPREAD_SKIP = ("fit", "minucs", "suppress", "recode", "leave")
"""What a session of :func:`spread_rows` leaves out: it opens the first page, Compare, Risk and the report."""


def spread_rows(sessions: int, timeline: bool = False) -> dict[str, list[float]]:
    """Every reading of the rows clicked at once, over ``sessions`` rounds on one fresh server: each round a new
    session that opens the first page, Compare (at once), the Risk page and the report (at once), and a new
    session that opens the MINUCs page first and clicks "Find MINUCs" at once.

    Why: those rows spread by 0.2-0.5 s from one session to the next (the search started ahead, the browser's
    chart code), so the best of a few sessions cannot tell a change of 0.1 s from chance; the medians of two such
    runs, one with and one without the change, can (servers alternated)."""
    readings: dict[str, list[float]] = {}

    def keep(row: Row) -> None:
        readings.setdefault(row.work, []).append(row.seconds)

    rounds = [(lambda page, url, i=i: _session(page, url, first=i == 0, skip=SPREAD_SKIP), _minucs_first)
              for i in range(sessions)]
    _on_a_fresh_server([run for pair in rounds for run in pair], keep, timeline)
    return readings


def _on_a_fresh_server(sessions: list[Callable], keep: Callable[[Row], None], timeline: bool) -> None:
    """Start the app on a fresh server and run each of ``sessions`` (``run(page, url)``, giving rows) in a new
    browser context, in turn; every row goes to ``keep``. A session that fails leaves a screenshot."""
    import tempfile

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        proc, url = _start_app(Path(tmp) / "server.log")
        _Meter.meter = CpuMeter(proc.pid)
        if timeline:
            _Meter.timeline = CpuTimeline(_Meter.meter)
            _Meter.timeline.start()
        try:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            for run in sessions:
                context, page = new_page(browser)
                try:
                    for row in run(page, url):
                        keep(row)
                except Exception:
                    page.screenshot(path=os.environ.get("KANON_BENCH_SHOT", "bench_failure.png"), full_page=True)
                    raise
                context.close()
            browser.close()
        finally:
            if _Meter.timeline is not None:
                _Meter.timeline.stop()
            _Meter.meter = _Meter.timeline = None
            _stop(proc)


class _Rows(list):
    """Rows, each also printed to stderr as soon as it is measured (a long run shows its progress)."""

    def append(self, row: Row) -> None:
        print(f"  {row.work}: {row.seconds:.2f} s {row.note}", file=sys.stderr, flush=True)
        super().append(row)


def _session(page, url: str, first: bool, skip: tuple[str, ...], read: float = 0.0) -> list[Row]:
    rows: list[Row] = _Rows()
    start = _cpu_start()
    t0 = time.time()
    _open_first_page(page, url)
    seconds = _shown_since(page, t0, time.time() - t0)  # the watcher's first spec: the first page's text, idle
    rows.append(Row("cold open (fresh server)" if first else "open (warm server, new session)", seconds, 2.0,
                    cpu=_cpu_since(start)))

    if "compare" not in skip:
        # the row's start (the first page shown, plus the reading) on the page's own clock
        clicked = ((_SHOWN_AT[0] or time.time()) + read + _page_clock_offset(page)) * 1000.0 - page.evaluate(
            "performance.timeOrigin")
        # the page's text is its own: a run quick enough to leave no state change in the DOM (the table
        # prefetched in a warm server) must not be waited for
        # the officer reads the first page for ``read`` seconds (the browser loads its chart code meanwhile)
        s = _timed(page, lambda: _nav(page, "Compare"), "CIs overlapping", rerun=False, charts=True, after=read)
        plotly = page.evaluate(_LOADED_SINCE, [PLOTLY_CHUNK, clicked])
        rows.append(Row("Compare first open" if read <= 0 else f"Compare first open, clicked after {read:g} s on the "
                        "first page", s, 1.0,
                        "until its charts are drawn; the browser loaded Streamlit's Plotly code on this click (the "
                        "session's first chart)" if plotly else "until its charts are drawn", cpu=_last_cpu()))
        if "fit" not in skip:
            _timed(page, _section(page, "Regression"), "Fit the three models", rerun=False)
            s = _timed(page, _button(page, "Fit the three models"), None,
                       selector=".st-key-chart_cmp_coef .main-svg")
            rows.append(Row("first fit of the three models (Compare, the page's default model)", s, 1.0,
                            "until the coefficients' chart is drawn", cpu=_last_cpu()))

    if "risk" not in skip:
        s = _timed(page, lambda: _nav(page, "Risk"), "Records violating", rerun=False, charts=True)
        rows.append(Row("Risk page first open", s, 1.0, "until its charts are drawn", cpu=_last_cpu()))
        if read > 0:  # the officer reads the risk figures (the MINUCs page's search starts 2 s after the page)
            time.sleep(read)

    if "report" not in skip:
        _timed(page, lambda: _nav(page, "Export"), "variables released", rerun=False)
        _timed(page, _section(page, "Report"), "Regression model(s) for the utility check",
               rerun=not _is_tab(page, "Report"))
        # the officer reads the tab for ``read`` seconds (its MINUC counts started when it opened)
        s = _timed(page, _button(page, "Build the report"), "Download the report (", after=read)
        ahead = "risk" not in skip  # the Risk page started the MINUCs page's search, which is the report's
        rows.append(Row("build the report (sample, v0)" if read <= 0 else
                        f"build the report (sample, v0), clicked after {read:g} s on the Risk page and the tab", s,
                        2.0, "the MINUCs page's search started ahead by the Risk page" if ahead else
                        "its MINUC counts start when the tab opens", cpu=_last_cpu()))

    if "minucs" not in skip:
        s = _timed(page, lambda: _nav(page, "MINUCs"), "Estimated from", rerun=False)
        rows.append(Row("MINUCs page open (19 QIs, estimate)", s, None, cpu=_last_cpu()))
        # the officer reads the estimate for ``read`` seconds (the search started when the page opened)
        s = _timed(page, _button(page, "Find MINUCs"), "Records with a MINUC", charts=True, after=read)
        core = _metric(page, "Seconds")
        k = page.locator("[data-testid='stNumberInput'] input").first.input_value()
        before = [name for name, done in (("Risk", "risk" not in skip), ("the report", "report" not in skip))
                  if done]
        rows.append(Row(f"Find MINUCs (19 QIs, k = {k})" + (f" after {' and '.join(before)}" if before else "")
                        + ("" if read <= 0 else f", clicked after {read:g} s on the page"), s, 2.0,
                        f"core search {core} s, from its start" + (
                            ", started ahead by the Risk page" if "risk" not in skip else
                            ", started when the page opened"), cpu=_last_cpu()))
        switches = []
        for name, expect in [("Records", "Record (row number) to inspect"), ("SUDA scores", re.compile("Records with a SUDA score|SUDA scores are defined")),
                             ("Violating QI sets", "minimal sets of quasi-identifiers"),
                             ("Values to recode", "Which values of which variables")]:
            tab = _is_tab(page, name)
            switches.append((name, _timed(page, _section(page, name), expect, rerun=not tab), _last_cpu()))
        worst = max(switches, key=lambda t: t[1])
        rows.append(Row("switching MINUC sections (slowest of 4)", worst[1], 0.2,
                        ", ".join(f"{n} {s:.2f}" for n, s, _ in switches), cpu=worst[2]))

    if "report" not in skip and "minucs" not in skip:  # the usual order: MINUCs first, the report reuses them
        _timed(page, lambda: _nav(page, "Export"), "variables released", rerun=False)
        _timed(page, _section(page, "Report"), "Regression model(s) for the utility check",
               rerun=not _is_tab(page, "Report"))
        s = _timed(page, _button(page, "Build the report"),
                   "Download the report (")
        rows.append(Row("build the report after Find MINUCs (v0)", s, 2.0, "the MINUCs page's search reused",
                        cpu=_last_cpu()))

    if "minucs" not in skip and "recode" not in skip:  # recode and recheck: the untouched records' MINUCs kept
        _recode_race(page)
        s = _timed(page, lambda: _nav(page, "MINUCs"), "Version v0's search is reused")
        rows.append(Row("MINUCs page open after a recode (estimate)", s, None, cpu=_last_cpu()))
        s = _timed(page, _button(page, "Find MINUCs"), "Records with a MINUC",
                   charts=True)
        rows.append(Row("Find MINUCs after a recode (race 1 and 2 merged)", s, 2.0,
                        f"core search {_metric(page, 'Seconds')} s, v0's search carried over", cpu=_last_cpu()))
        if "report" not in skip:
            _timed(page, lambda: _nav(page, "Export"), "variables released", rerun=False)
            _timed(page, _section(page, "Report"), "Regression model(s) for the utility check",
                   rerun=not _is_tab(page, "Report"))
            s = _timed(page, _button(page, "Build the report"),
                       "Download the report (")
            rows.append(Row("build the report after the recode (v1)", s, 2.0,
                            "the MINUCs page's searches of v0 and v1 reused", cpu=_last_cpu()))

    if "suppress" not in skip:
        _timed(page, lambda: _nav(page, "Suppress"), "Run suppression", rerun=False)
        work = "suppression, k = 3, 19 QIs (default model)"
        try:
            s = _timed(page, _button(page, "Run suppression"), "Cells suppressed")
        except Exception as exc:  # noqa: BLE001 - a row that did not finish says so, the others are kept
            rows.append(Row(work, float("nan"), 5.0, f"not finished: {type(exc).__name__}"))
        else:
            rows.append(Row(work, s, 5.0, f"core {_metric(page, 'Seconds')} s", cpu=_last_cpu()))

    if "minucs" not in skip and "leave" not in skip:  # last: it leaves a search running ahead
        _timed(page, lambda: _nav(page, "MINUCs"), "Missing values count as", rerun=False)
        k_input = page.locator("[data-testid='stNumberInput'] input").first
        _timed(page, lambda: _enter_number(page, k_input, "4"), "Estimated from")
        s = _timed(page, lambda: _nav(page, "Recode"), "Global recoding generalizes a variable", rerun=False)
        page.wait_for_function(_NOT_STALE, timeout=TIMEOUT_MS)
        rows.append(Row("a page opened during a search started ahead (Recode, right after MINUCs at k = 4)", s, 1.0,
                        "the MINUCs page's search for k = 4 under way, not asked for", cpu=_last_cpu()))
    return rows


RISK_READ = 5.0
"""Seconds a session reads the Risk page before opening the MINUCs page (:func:`_minucs_first`)."""


def _minucs_first(page, url: str, risk_read: float = 0.0) -> list[Row]:
    """A new session on the warm server that opens the MINUCs page (after ``risk_read`` seconds on the Risk
    page, when given) and clicks "Find MINUCs" at once: without the Risk page, the wait for the search itself
    with only the head start the page's own search ahead gives; with it, what the search the Risk page
    started ahead leaves to wait for."""
    rows: list[Row] = _Rows()
    _open_first_page(page, url)
    if risk_read > 0:
        _timed(page, lambda: _nav(page, "Risk"), "Records violating", rerun=False, charts=True)
        time.sleep(risk_read)
    _timed(page, lambda: _nav(page, "MINUCs"), "Estimated from", rerun=False)
    s = _timed(page, _button(page, "Find MINUCs"), "Records with a MINUC",
               charts=True, after=0)
    k = page.locator("[data-testid='stNumberInput'] input").first.input_value()
    how = (f"after {risk_read:g} s on the Risk page" if risk_read > 0 else "the MINUCs page opened first")
    rows.append(Row(f"Find MINUCs (19 QIs, k = {k}) clicked at once, {how}", s, 2.0,
                    f"core search {_metric(page, 'Seconds')} s from its start, started ahead by "
                    + ("the Risk page" if risk_read > 0 else "the MINUCs page as it opened") + " (a new session)",
                    cpu=_last_cpu()))
    return rows


def _recode_race(page) -> None:
    """On the Recode page's single recode: merge BYRACE's categories 1 and 2 (American Indian or Alaska Native,
    Asian or Pacific Islander: 141 and 839 records) and apply (a new version)."""
    _timed(page, lambda: _nav(page, "Recode"), "Single recode", rerun=False)
    _timed(page, _section(page, "Single recode"), "Merge these categories", rerun=False)
    panel = page.get_by_role("tabpanel", name="Single recode")
    _pick(page, panel.locator("[data-testid='stSelectbox']").filter(has_text="Variable").first,
          page.get_by_role("option", name="BYRACE", exact=True))
    merge = panel.locator("[data-testid='stMultiSelect']").filter(has_text="Merge these categories").first
    for label in ("Amer. Indian/Alaska Native, non-Hispanic (", "Asian, Hawaii/Pac. Islander, non-Hispanic ("):
        _pick(page, merge, page.get_by_role("option").filter(has_text=label).first)
    page.keyboard.press("Escape")
    # a step, not a row: Playwright's own click, which waits until the list just closed no longer covers the button
    _timed(page, lambda: page.get_by_role("button", name="Apply this recode").click(), "applied")


def table(rows: list[Row]) -> str:
    """The rows as a markdown table."""
    out = ["| dashboard (sample: 16,197 records, 19 QIs) | seconds | goal | note |", "|---|---:|---:|---|"]
    for r in rows:
        goal = f"≤ {r.goal:g} s" if r.goal is not None else "—"
        out.append(f"| {r.work} | {r.seconds:.2f} | {goal} | {r.described} |")
    return "\n".join(out)


def spread_table(readings: dict[str, list[float]]) -> str:
    """:func:`spread_rows`' readings as a markdown table: per row, the sessions, the median and every reading."""
    out = ["| dashboard (sample: 16,197 records, 19 QIs) | sessions | median s | readings (s, in order) |",
           "|---|---:|---:|---|"]
    for work, seconds in readings.items():
        out.append(f"| {work} | {len(seconds)} | {statistics.median(seconds):.2f} | "
                   f"{', '.join(f'{x:.2f}' for x in seconds)} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="sessions to run; the best time per row is kept")
    ap.add_argument("--servers", type=int, default=1,
                    help="fresh servers to run in turn; the best time per row over all of them is kept")
    ap.add_argument("--skip", default="",
                    help="comma-separated: compare, fit, risk, report, minucs, recode, suppress, leave, first "
                         "(the two sessions that open the MINUCs page first, or after reading the Risk page)")
    ap.add_argument("--read", type=float, default=0.0,
                    help="seconds on the MINUCs page and the Report tab before clicking 'Find MINUCs' and the first "
                         "'Build the report' (default 0: at once)")
    ap.add_argument("--timeline", action="store_true",
                    help="print, for each row clicked at once or after --read, the server's and the browser's CPU "
                         "over its wait every 0.1 s (to stderr; the readings cost a little CPU)")
    ap.add_argument("--spread", type=int, default=0, metavar="N",
                    help="instead of the table: N rounds of the rows clicked at once (Compare's first open, the "
                         "report, Find MINUCs with the MINUCs page opened first) on one fresh server, every reading "
                         "and the median")
    args = ap.parse_args()
    before = describe_machine()
    probe = describe_speed(speed())
    if args.spread > 0:
        readings = spread_rows(args.spread, args.timeline)
        print(f"machine: {before}; browser: Chromium (headless); one fresh server, {args.spread} round(s)")
        print(f"before the rows: {probe}")
        print(f"after the rows: {describe_speed(speed())}")
        print(spread_table(readings))
        return
    best: dict[str, Row] = {}
    for _ in range(max(1, args.servers)):
        for row in dashboard_rows(args.repeat, tuple(s for s in args.skip.split(",") if s), args.read,
                                  args.timeline):
            if row.work not in best or row.seconds < best[row.work].seconds:
                best[row.work] = row
    rows = list(best.values())
    print(f"machine: {before}; browser: Chromium (headless); best of {max(1, args.servers)} fresh server(s) "
          f"x {args.repeat} session(s)")
    print(f"before the rows: {probe}")
    print(f"after the rows: {describe_speed(speed())}")
    print("load average after the run: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    print(table(rows))


if __name__ == "__main__":
    main()
