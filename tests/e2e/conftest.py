"""Start the real app (``streamlit run app.py``) on a free localhost port and drive Debian's Chromium."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("KANON_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
VIEWPORT = {"width": 1400, "height": 1000}
"""The browser window of every test and benchmark session: wide enough for the pages' columns side by side."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_app(log: Path):
    """The app as scripts/demo.sh starts it (``python -m kanon_app.serve``: libraries loaded, then
    ``streamlit run app.py``) on a free localhost port; returns the process and its URL once healthy."""
    port = _free_port()
    env = dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kanon_app.serve", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true"],
            cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env,
        )
    url = f"http://127.0.0.1:{port}"
    # a fresh checkout's first server compiles the kernels before it answers (about half a minute on 2 cores,
    # longer while other test processes compile them too)
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)
    _stop(proc)
    pytest.fail("the app did not start:\n" + log.read_text()[-2000:])


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


SERVER_LOGS: dict[str, Path] = {}  # app URL -> its server's log, printed when a test on it fails


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    proc, url = _start_app(log)
    SERVER_LOGS[url] = log
    yield url
    _stop(proc)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report carries what the browser showed and the server's last lines."""
    outcome = yield
    report = outcome.get_result()
    pg, url = item.funcargs.get("page"), item.funcargs.get("app_url")
    if report.when == "call" and report.failed and pg is not None and url is not None:
        try:
            text = _diagnose(pg, url)
        except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the failure itself
            text = f"unavailable: {exc!r}"
        report.sections.append(("what the browser and server showed", text))


def _diagnose(pg, url: str) -> str:
    """What the browser showed and the server's last lines, for a failure that does not reproduce at will."""
    app = pg.locator("[data-testid='stApp']")
    shown = app.inner_text(timeout=5_000)
    state = app.get_attribute("data-test-script-state", timeout=5_000)
    log = SERVER_LOGS.get(url)
    tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else "(no server log)"
    return f"script state: {state}\n--- page text ---\n{shown[:3000]}\n--- server log (tail) ---\n{tail}"


@pytest.fixture
def fresh_app_url(tmp_path):
    """A server of its own, so the test controls the very first request it sees."""
    proc, url = _start_app(tmp_path / "server.log")
    yield url
    _stop(proc)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run the README's test command, which installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, app_url):
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()


def wait_idle(page) -> None:
    """Wait until Streamlit has finished the current script run."""
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=60_000)


def choose_data_file(page, path) -> None:
    """Choose ``path`` in the Data page's "Microdata file" uploader, once the "Load data" block shows it. Not
    the page's first file input: while that block's content is not drawn yet (a loaded machine), the first is
    the value-labels import below it, and the file would go there."""
    uploader = page.locator("[data-testid='stFileUploader']").filter(has_text="Microdata file").first
    uploader.wait_for(state="visible")
    uploader.locator("input[type='file']").set_input_files(str(path))
