"""The page the launcher serves: Streamlit's own, whose head also loads Streamlit's chart code when the browser
is first idle.

The browser draws Plotly charts with a module of Streamlit's (its Plotly element, 4.7 MB) that it loads for a
session's first chart: fetched, compiled and run, the run alone about 0.7 s of the browser's main thread on 2
cores. The first page ends with an empty chart (:mod:`kanon_app.chart_code`) so that this happens while the
officer reads it. Streamlit offers no way to add to its page's head, so the launcher (:mod:`kanon_app.serve`)
serves a mirror of Streamlit's static files: every file a symbolic link to Streamlit's own except
``index.html``, a copy with one script more. That script imports the module once the page's own code has
loaded and the browser is idle (``requestIdleCallback``): the module is fetched while Streamlit waits for the
server's first page, earlier than the empty chart asks for it.

What it gains, measured in headless Chromium on 2 cores (``benchmarks/bench_dashboard.py``, the officer's click
timed from the moment the first page is shown plus the reading; servers with and without the script
alternated, six sessions each): clicked 1 s after the first page is shown, Compare opened in 0.57-0.84 s
against 0.69-1.00 s; after 0.5 s, in 0.63-1.24 s against 1.26-1.36 s; clicked at once, no difference (1.65-2.62
s against 1.59-2.47 s, four sessions each in two rounds), and none in the first page (1.25-1.79 s against
1.26-1.88 s). The module's files it needs besides its own (small ones, shared with Streamlit's elements) arrive
among the first page's, so the module runs just after that page is shown, whoever asked for it; a click at once
waits for that run either way. Preloading those files from the head (``<link rel="modulepreload">``), with
the import at DOMContentLoaded, let the module run before the first page in some sessions: Compare at once in
0.91-1.53 s, but the first page in 2.13-3.05 s, above its goal. An earlier round read 0.61 s for Compare at
once with this script: its benchmark timed rows from its own click, which waited for that run.

Nothing changes when anything is not as expected (no single chart module, no ``</head>``, no way to make
links, a Streamlit whose static folder is found otherwise): Streamlit's own page is served, and the chart
code loads as before. The mirror is kept in the user's cache folder and found again by later starts
(:func:`serve_with_chart_code` says why not in the temporary folder); a start removes there the mirrors of a
Streamlit since removed or updated (:func:`prune`).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

CHART_MODULE_PATTERN = "PlotlyChart.*.js"
"""File name of the module of Streamlit's Plotly element among its scripts (``static/js``); the part after the
dot is a content hash, new with each Streamlit release."""
MIRROR_PREFIX = "page-"
"""Name start of the mirrors in the cache folder (a private folder being made into one: the same with a leading dot)."""
LEFTOVER_SECONDS = 24 * 3600
"""A private folder older than this was left by a server that stopped while making a mirror (making one takes
milliseconds): :func:`prune` removes it."""
MARK = "data-kanon-chart-code"
"""Attribute of the added script, by which tests and a reader of the page find it."""


def chart_module(static_dir: Path) -> str | None:
    """The file name of Streamlit's Plotly element module under ``static_dir``, or None unless exactly one."""
    found = sorted((static_dir / "static" / "js").glob(CHART_MODULE_PATTERN))
    return found[0].name if len(found) == 1 else None


def head_script(module: str) -> str:
    """The script that imports ``module`` (a file name under ``static/js``, relative to the page, as Streamlit's
    page names its own scripts, so a server under a base path finds it too) once the page's code has loaded and
    the browser is idle. A failed import is silent: the chart element loads the module itself when drawn."""
    load = f"import('./static/js/{module}').catch(() => {{}})"
    return (f"<script {MARK}>addEventListener('DOMContentLoaded', () => "
            f"(window.requestIdleCallback || setTimeout)(() => {load}));</script>")


def with_script(index_html: str, script: str) -> str | None:
    """``index_html`` with ``script`` as the last element of its head, or None without a ``</head>``."""
    at = index_html.find("</head>")
    return None if at < 0 else index_html[:at] + script + index_html[at:]


def mirror(static_dir: Path, into: Path) -> bool:
    """Fill the empty folder ``into`` with links to every entry of ``static_dir`` but ``index.html``, which is
    written there as :func:`expected_page`. False when ``static_dir`` is not as expected or a link cannot be
    made (then ``into`` is left to the caller to remove)."""
    page = expected_page(static_dir)
    if page is None:
        return False
    try:
        for entry in static_dir.iterdir():
            if entry.name != "index.html":
                (into / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
        (into / "index.html").write_text(page, encoding="utf-8")
    except OSError:
        return False
    return True


def _fresh_mirror(static_dir: Path, parent: Path | None) -> Path | None:
    """A new private folder in ``parent`` (None: the temporary folder) made the mirror of ``static_dir``; None,
    and nothing left behind, when it cannot be."""
    try:
        folder = Path(tempfile.mkdtemp(prefix="." + MIRROR_PREFIX if parent else "kanon-page-", dir=parent))
    except OSError:
        return None
    if mirror(static_dir, folder):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    return None


def cache_root() -> Path | None:
    """Where the mirror is kept between starts: ``$XDG_CACHE_HOME/kanon``, else ``~/.cache/kanon``; None for an
    account without a home folder (a service's)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):
            return None
    return Path(base) / "kanon"


def expected_page(static_dir: Path) -> str | None:
    """The mirror's ``index.html`` for ``static_dir``, or None when ``static_dir`` is not as expected."""
    module = chart_module(static_dir)
    try:
        return None if module is None else with_script(
            (static_dir / "index.html").read_text(encoding="utf-8"), head_script(module))
    except (OSError, UnicodeDecodeError):
        return None


def matches(folder: Path, static_dir: Path, page: str | None = None) -> bool:
    """Whether ``folder`` is the mirror of ``static_dir``: its page is the expected one (``page``, when the caller
    has it already) and every other entry of ``static_dir`` is there as a link to it, nothing else."""
    page = expected_page(static_dir) if page is None else page
    try:
        if page is None or (folder / "index.html").read_text(encoding="utf-8") != page:
            return False
        wanted = {e.name: e for e in static_dir.iterdir() if e.name != "index.html"}
        present = {e.name: e for e in folder.iterdir() if e.name != "index.html"}
        return present.keys() == wanted.keys() and all(
            e.is_symlink() and Path(os.readlink(e)) == wanted[name] for name, e in present.items())
    except (OSError, UnicodeDecodeError):
        return False


def cached_mirror(static_dir: Path, root: Path) -> Path | None:
    """The mirror of ``static_dir`` under ``root``, made there once and found again by later starts (named by a
    digest of the folder and of its expected page), or None when ``root`` cannot hold it. It is made in a
    private folder beside it and renamed into place, so two servers starting at once both end with one whole
    mirror, and neither removes the other's; one that does not match (changed by hand, or half removed) is made
    again."""
    page = expected_page(static_dir)
    if page is None:
        return None
    digest = hashlib.sha256(f"{static_dir.resolve()}\n{page}".encode()).hexdigest()[:16]
    folder = root / f"{MIRROR_PREFIX}{digest}"
    if matches(folder, static_dir, page):
        prune(root, keep=folder)
        return folder
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    fresh = _fresh_mirror(static_dir, root)
    if fresh is None:
        return None
    try:
        os.replace(fresh, folder)  # fails when a folder is there: a spoilt one, or one another server just made
    except OSError:
        if not matches(folder, static_dir, page):  # only a spoilt one is removed, never one in use
            shutil.rmtree(folder, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.replace(fresh, folder)
    shutil.rmtree(fresh, ignore_errors=True)  # still there when another server's mirror was kept
    if not matches(folder, static_dir, page):
        return None
    prune(root, keep=folder)
    return folder


def _mirrored(folder: Path) -> Path | None:
    """The folder whose mirror ``folder`` is: where its links lead (None when it holds no link)."""
    for entry in folder.iterdir():
        if entry.is_symlink():
            return Path(os.readlink(entry)).parent
    return None


def prune(root: Path, keep: Path) -> list[Path]:
    """Remove from ``root`` the mirrors no Streamlit can use any more, and return them: a mirror (but ``keep``)
    whose Streamlit was removed or changed (its links lead nowhere, or its page is not the one that Streamlit's
    files give now), and a private folder a server that stopped while making a mirror left behind (older than
    ``LEFTOVER_SECONDS``). Without this, every Streamlit an account ever ran would leave its mirror here.

    A mirror of another Streamlit still installed (another environment's) matches it and is kept, and so is one
    being made now (younger): only what no server can serve is removed. Nothing but this module's own folders
    (named ``MIRROR_PREFIX``..., or the same with a leading dot) is touched; a folder that cannot be read or
    removed is left as it is."""
    removed = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        try:
            if entry == keep or entry.is_symlink() or not entry.is_dir():
                continue
            if entry.name.startswith(MIRROR_PREFIX):
                source = _mirrored(entry)
                stale = source is None or not matches(entry, source)
            elif entry.name.startswith("." + MIRROR_PREFIX):
                stale = now - entry.stat().st_mtime > LEFTOVER_SECONDS
            else:
                continue
        except OSError:
            continue
        if stale:
            shutil.rmtree(entry, ignore_errors=True)
            if not entry.exists():
                removed.append(entry)
    return removed


def serve_with_chart_code() -> Path | None:
    """Make Streamlit serve the mirror (the folder returned); None when Streamlit's own page stays (nothing
    changed). The mirror is kept in the user's cache folder (:func:`cache_root`), not in the system's temporary
    folder, whose cleaners remove entries unused for some days (systemd's, by default, after 10 days; a link
    is not refreshed by being followed), which would break a server that runs longer. When the cache folder
    cannot be written, a private temporary folder serves, removed when the server exits."""
    from streamlit import file_util

    original = getattr(file_util, "get_static_dir", None)
    if original is None:
        return None
    static_dir = Path(original())
    root = cache_root()
    folder = None if root is None else cached_mirror(static_dir, root)
    if folder is None:
        folder = _fresh_mirror(static_dir, None)
        if folder is None:
            return None
        atexit.register(shutil.rmtree, folder, True)
    file_util.get_static_dir = lambda: str(folder)
    return folder
