"""The dashboard benchmark's reading of when a state is shown (benchmarks.bench_dashboard's watcher), on a static
page whose state is reached a known time after a click: read within two frames of it, where Playwright's own
waits (which look again only every half second after the first quarter) read it up to half a second late."""

from __future__ import annotations

import re
import time
import urllib.parse

import pytest

from benchmarks import bench_dashboard as bench

PAGE = """<div data-testid="stApp" data-test-script-state="notRunning">
<button id="go">Go</button><div id="out"></div><div style="display:none">Hidden result</div></div>
<script>
document.getElementById('go').addEventListener('click', () => {
  const app = document.querySelector("[data-testid='stApp']");
  const delay = Number(window.__delay);
  app.setAttribute('data-test-script-state', 'running');
  setTimeout(() => { document.getElementById('out').textContent = 'Partial'; }, delay / 2);  // other text first
  setTimeout(() => {
    document.getElementById('out').textContent = 'Result   shown';
    app.setAttribute('data-test-script-state', 'notRunning');
    window.__changedAt = performance.timeOrigin + performance.now();
  }, delay);
});
</script>"""


def _open(page, html: str = PAGE) -> None:
    """The page as a new document (its init scripts run: ``set_content`` rewrites the document, which drops its
    listeners)."""
    page.goto("data:text/html," + urllib.parse.quote(html))


@pytest.fixture
def watched(browser):
    context, page = bench.new_page(browser)
    _open(page)
    yield page
    context.close()


@pytest.mark.parametrize("delay", [150, 700, 1300, 2100])
def test_the_watcher_reads_the_moment_the_state_is_shown(watched, delay):
    """Within 0.15 s of the moment the page changed (one or two frames, and the click's own checks), where
    Playwright's next look could be half a second later."""
    watched.evaluate(f"window.__delay = {delay}")
    called = time.time()
    seconds = bench._timed(watched, lambda: bench.press(watched.locator("#go")), "result shown")  # as get_by_text
    changed = watched.evaluate("window.__changedAt") / 1000.0 - bench._page_clock_offset(watched) - called
    assert delay / 1000 <= seconds <= changed + 0.15


def test_a_state_lost_again_is_read_from_its_return_and_hidden_text_does_not_count(watched):
    def set_state(state: str) -> None:
        watched.evaluate(f"document.querySelector(\"[data-testid='stApp']\").setAttribute('data-test-script-state', "
                         f"'{state}')")

    watched.evaluate("document.getElementById('out').textContent = 'Result shown'")
    watched.evaluate("spec => window.__kanonWatch(spec)", bench._shown_spec("Result shown", rerun=True))
    watched.wait_for_timeout(100)
    assert watched.evaluate("window.__kanonShown") is None  # the text, idle, but no run has ended since
    set_state("running")
    watched.wait_for_timeout(50)
    set_state("notRunning")
    watched.wait_for_timeout(100)
    first = watched.evaluate("window.__kanonShown")
    assert first is not None
    set_state("running")  # lost again: another run
    watched.wait_for_timeout(100)
    assert watched.evaluate("window.__kanonShown") is None
    set_state("notRunning")
    watched.wait_for_timeout(100)
    assert watched.evaluate("window.__kanonShown") >= first + 150  # read from its return, 200 ms later
    watched.evaluate("spec => window.__kanonWatch(spec)", bench._shown_spec("Hidden result"))
    watched.wait_for_timeout(200)
    assert watched.evaluate("window.__kanonShown") is None


def test_without_a_reading_playwrights_is_kept(watched, monkeypatch):
    monkeypatch.setattr(bench, "SHOWN_PATIENCE_MS", 300)
    watched.evaluate("window.__delay = 100")
    watched.evaluate("window.__kanonWatch = () => {}")  # a page where the watcher does not run
    seconds = bench._timed(watched, lambda: watched.click("#go"), "Result shown")
    assert seconds >= 0.1


def test_a_pattern_is_awaited_as_playwright_reads_it(watched):
    watched.evaluate("window.__delay = 400")
    called = time.time()
    seconds = bench._timed(watched, lambda: bench.press(watched.locator("#go")),
                           re.compile(r"Other text|result\s+shown", re.IGNORECASE))
    changed = watched.evaluate("window.__changedAt") / 1000.0 - bench._page_clock_offset(watched) - called
    assert 0.4 <= seconds <= changed + 0.15  # as the first test: from the page's own record, whatever the load


MOVING = """<button id="moving" style="position:absolute; left:40px; top:40px; width:120px">Moving</button>
<script>
let frame = 0;
const button = document.getElementById('moving');
button.addEventListener('click', () => { window.__clicked = true; });
(function move() { frame += 1; button.style.left = (40 + frame % 4) + 'px'; requestAnimationFrame(move); })();
</script>"""


def test_the_benchmarks_click_waits_for_no_check_of_the_element(browser):
    """An officer's click does not wait for the element to hold still over two frames, as Playwright's own click
    does (here it never does: that click times out)."""
    context, page = bench.new_page(browser)
    try:
        _open(page, MOVING)
        page.set_default_timeout(3000)
        bench.press(page.locator("#moving"))
        page.wait_for_function("window.__clicked === true")
    finally:
        context.close()


def test_a_busy_browser_delays_the_click_within_the_timed_wait(watched):
    """The browser busy when the officer clicks (as with a session's first chart code) delays the click's effect,
    and that time is the officer's wait: the row is timed from the click's start, not from the event."""
    watched.evaluate("window.__delay = 150")
    watched.evaluate("window.__busy = (ms) => setTimeout(() => { const t = performance.now(); "
                     "while (performance.now() - t < ms) {} }, 0)")

    def busy_then_click() -> None:
        watched.evaluate("window.__busy(400)")
        bench.press(watched.locator("#go"))

    seconds = bench._timed(watched, busy_then_click, "result shown")
    assert seconds >= 0.4 + 0.15 - 0.02


BUSY_AFTER = """<div data-testid="stApp" data-test-script-state="notRunning">
<button id="first">First</button><button id="second">Second</button><div id="out"></div></div>
<script>
const app = document.querySelector("[data-testid='stApp']");
window.__changedAt = {};
function run(text, then) {
  app.setAttribute('data-test-script-state', 'running');
  setTimeout(() => {
    document.getElementById('out').textContent = text;
    app.setAttribute('data-test-script-state', 'notRunning');
    window.__changedAt[text] = performance.timeOrigin + performance.now();
    if (then) then();
  }, 100);
}
// once the first state is shown (the watcher has read it), the browser is busy for 600 ms (as with a session's
// first chart code): before the benchmark, which reads it a frame later at the earliest, can call the page again
const busy = () => { const t = performance.now(); while (performance.now() - t < 600) {} };
const afterShown = () => window.__kanonShown ? setTimeout(busy, 0) : requestAnimationFrame(afterShown);
document.getElementById('first').addEventListener('click', () => run('First done', afterShown));
document.getElementById('second').addEventListener('click', () => run('Second done'));
</script>"""


@pytest.mark.parametrize("after", [0.0, 0.3, None])
def test_a_row_clicked_after_the_state_before_waits_for_the_browsers_task(browser, after):
    """The browser starts a 600 ms task as the first state is shown. A click at once, the instant that state
    shows, waits for the task: the row timed from that instant holds it; a click 0.3 s later holds the rest of
    it. The benchmark's own calls before its click wait for the task too, so the row timed from the benchmark's
    click leaves it out (``after`` None, the reading the rows had before ``after``)."""
    context, page = bench.new_page(browser)
    try:
        _open(page, BUSY_AFTER)
        bench._timed(page, lambda: bench.press(page.locator("#first")), "First done")
        first_shown = bench._SHOWN_AT[0]
        seconds = bench._timed(page, lambda: bench.press(page.locator("#second")), "Second done", after=after)
        changed = page.evaluate("window.__changedAt['Second done']") / 1000.0 - bench._page_clock_offset(page)
        if after is None:
            assert seconds < 0.45
        else:
            assert 0.6 - after + 0.1 <= seconds <= changed - (first_shown + after) + 0.15
    finally:
        context.close()


def test_a_row_clicked_at_once_needs_the_moment_before(watched, monkeypatch):
    monkeypatch.setattr(bench, "_SHOWN_AT", [None])
    with pytest.raises(RuntimeError, match="needs the moment"):
        bench._timed(watched, lambda: None, "Result shown", after=0)
