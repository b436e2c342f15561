"""Results the officer is likely to ask for next, computed off the script thread once a page has been sent.

After each complete run the app starts (at most) one light computation for the current version: the Compare
page's default table — weighted percentages of every quasi-identifier, the original (with this version's
roles) against this version, Wald intervals (:func:`kanon_core.utility.compare_distributions`, the same call
the page makes). It runs while the officer reads the page, is stored under the page's own memo key, and is
reused by the report. A page that needs it while it is still running waits for it instead of computing it a
second time. A failure is not shown here: the page computes the table itself and says what is wrong.

The MINUCs page starts its search for the parameters shown when the page opens (once per parameters, and
only when estimated at most ``AHEAD_SECONDS`` and ``AHEAD_BYTES``): the officer who clicks "Find MINUCs"
finds it done or under way. Its results stay hidden until that click, so the page reads as before, and
a search the officer cancelled is never started again by itself. The Risk page, once drawn, starts the
MINUCs page's default search (the roles' QIs, the session's k, all sizes) the same way
(:func:`start_default_minucs`): the MINUCs page, the Recode page's suggestions and a first report all
need it, and it goes on while the officer reads the risk figures.

The report tab starts the report's MINUC counts (:func:`kanon_core.report.report_minuc_searches`, the call
the report makes) when it opens, unless the MINUCs page has searched both files already: the search is the
longest part of the report, and it runs while the officer reads the tab and fills in the models. When that
page has searched the original only, its MINUCs are the report's side before, not searched again, and the
release's search carries over those of the records the treatment did not touch.

Both searches are speculative heavy jobs (kanon_app.background): they run only in a slot free at once and
give it up to any work an officer asks for, so they never make anyone wait.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from . import background, state

COMPARE = "compare_pct"
"""The memo name of the Compare page's weighted percentages (also the job's name in the session)."""

MINUCS = "minucs"
"""The memo name of the MINUCs page's search (also the job's name in the session)."""
AHEAD = "minucs_ahead"
"""Session key: the job keys of MINUC searches started ahead and not asked for yet."""
TRIED = "minucs_ahead_tried"
"""Session key: the job keys a search was ever started ahead for (never started ahead twice)."""
AHEAD_SECONDS = 10.0
AHEAD_BYTES = 512 * 2**20

REPORT_MINUCS = "report_minucs"
"""The memo name of the report's MINUC counts, before and after (also the job's name in the session)."""


def compare_params(version_id: int, qis: tuple[str, ...], ci: str = "wald") -> Hashable:
    """The Compare page's memo parameters for its default Before (the original with the After version's
    roles) against version ``version_id``, on ``qis`` with ``ci`` intervals."""
    return (state.BASELINE, version_id, (tuple(qis), ci))


def start_default_comparison() -> None:
    """Start computing the current version's default comparison unless it is memoised or under way."""
    from kanon_core.utility.baseline import original_with_roles

    hist = state.history()
    version = state.current()
    qis = tuple(version.dataset.roles.qis)
    if not qis or version.dataset.n_records != hist.original.dataset.n_records:
        return
    params = compare_params(version.id, qis)
    if state.memo_peek(COMPARE, params) is not None or state.job_running(COMPARE, params):
        return
    key = (hist.uid, version.id, COMPARE, params)
    view = state.session_view()

    def work(progress) -> object:
        from kanon_core.utility import compare_distributions

        return compare_distributions(original_with_roles(hist, version.id), version.dataset, list(qis), ci="wald")

    job = background.start(key, "Weighted percentages", work, store=lambda value: view.put(key, value), heavy=False)
    background.register(COMPARE, job)


def wait_for(name: str, params: Hashable, version_id: int, timeout: float = 120.0) -> None:
    """Wait for this session's prefetch ``name`` of these parameters, when one is running (its result is then
    in the memo); return at once otherwise."""
    job = background.running(name, (state.history().uid, version_id, name, params))
    if job is not None:
        job.wait(timeout)


def report_minuc_params(qis: tuple[str, ...], k: int, missing: str) -> Hashable:
    """The memo parameters of the report's MINUC counts for the current version."""
    return (tuple(qis), int(k), missing)


def start_report_minucs(qis: tuple[str, ...], options: Any) -> None:
    """Start the report's MINUC counts for the current version (``options``: the report's
    :class:`~kanon_core.report.ReportOptions`) unless memoised or under way."""
    from kanon_core.report import report_minuc_k, report_minuc_searches
    from kanon_core.utility.baseline import original_with_roles

    from .export_ui import original_minucs_of_minucs_page

    hist = state.history()
    version = state.current()
    params = report_minuc_params(qis, report_minuc_k(options), version.dataset.missing)
    if state.memo_peek(REPORT_MINUCS, params) is not None or state.job_running(REPORT_MINUCS, params):
        return
    key = (hist.uid, version.id, REPORT_MINUCS, params)
    view = state.session_view()
    # the original's MINUCs found on the MINUCs page: not searched again, and carried over to the release's
    found = (original_minucs_of_minucs_page(hist, version, tuple(qis), report_minuc_k(options))
             if getattr(options, "minuc_max_size", None) is None else None)

    def work(progress) -> object:
        return report_minuc_searches(original_with_roles(hist, version.id), version.dataset, tuple(qis), options,
                                     original_found=found)

    job = background.start(key, "MINUC counts for the report", work, store=lambda value: view.put(key, value),
                           speculative=True)
    background.register(REPORT_MINUCS, job)


def report_minucs_ready(qis: tuple[str, ...], options: Any) -> Callable[[], tuple[Any, Any] | None]:
    """What the report's build (in a worker thread) calls for the MINUC counts computed ahead: it waits for
    the job when it is still running (the report's own, or the MINUCs page's search that covers the report,
    :func:`minucs_page_search_for_report`), and gives the pair, or None when there is none or the job is still
    queued for a heavy slot (the report then searches, or says why it did not: the build holds a slot itself,
    and waiting for a job that waits for one could wait for ever)."""
    from kanon_core.report import report_minuc_k

    version = state.current()
    params = report_minuc_params(qis, report_minuc_k(options), version.dataset.missing)
    job = background.running(REPORT_MINUCS, (state.history().uid, version.id, REPORT_MINUCS, params))
    found = state.memo_peek(REPORT_MINUCS, params)
    page_job = minucs_page_search_for_report(qis, options) if job is None and found is None else None

    def ready() -> tuple[Any, Any] | None:
        value = found
        if job is not None:
            value = job.result if background.finish_unless_queued(job) else None
        elif page_job is not None and background.finish_unless_queued(page_job):
            # the version shows the original's codes on these QIs: one search is both sides
            value = (page_job.result, page_job.result) if _gave_a_search(page_job) else None
        return value if isinstance(value, tuple) else None

    return ready


def minucs_page_search_for_report(qis: tuple[str, ...], options: Any) -> background.Job | None:
    """The MINUCs page's search under way (started ahead or clicked), or finished with its result, that gives
    the report's MINUC counts for the current version, or None (a finished one is taken too: it may finish
    between the page's look at the memo and this call). It does when it is on the report's QIs, k and semantics with the
    report's maximum size, and the version shows the original's codes on those QIs (the first version, or
    one that only set roles): the report's before and after are then that one search. The report waits for
    it instead of searching the same data a second time on the same cores."""
    from kanon_core.report import report_minuc_k

    from .export_ui import shows_original_codes

    version = state.current()
    max_size = getattr(options, "minuc_max_size", None)
    params = (tuple(qis), report_minuc_k(options), max_size or None, version.dataset.missing)
    job = background.registered(MINUCS, _minuc_key(params))
    if job is None or (job.done and not _gave_a_search(job)):
        return None
    if not shows_original_codes(state.history(), version, tuple(qis)):
        return None
    job.shown_here()  # the report will take its result: the tab being drawn does not hold it back
    return job


def _gave_a_search(job: background.Job) -> bool:
    """Whether a finished MINUCs page's job gave a search: not when it failed, was cancelled, or was started
    ahead by another page and estimated too long to make (:func:`start_default_minucs`: no result)."""
    return job.state == "done" and job.result is not None


def _minuc_key(params: Hashable) -> tuple:
    return state.memo_key(MINUCS, params)


def minuc_rows_params(qis: tuple[str, ...], missing: str) -> Hashable:
    """The memo parameters of a version's distinct records and class sizes on ``qis`` (``minuc_rows``: made
    once for the MINUCs page's estimate and search, whatever k and the size limit)."""
    return (tuple(qis), missing)


def minuc_estimate_params(params: Hashable, carried_from: int | None) -> Hashable:
    """The memo parameters of the MINUCs page's estimate for its search ``params`` (``carried_from``: the
    version whose MINUCs that search carries over, if any)."""
    return (params, carried_from)


def default_minuc_params() -> Hashable:
    """The MINUCs page's search parameters as it opens on the current version: the roles' QIs, the session's
    k, all sizes, the version's missing-value semantics."""
    ds = state.current().dataset
    return (tuple(ds.roles.qis), state.session_k(), None, ds.missing)


def start_default_minucs() -> None:
    """Start the MINUCs page's default search ahead of that page (the Risk page calls it once drawn).

    Not when it was started ahead before, is memoised, or would carry over an earlier version's search (the
    MINUCs page does that in a fraction of the time), nor while a search the officer asked for runs (one
    started ahead for other parameters is cancelled). The distinct records and the estimate are made in the
    job, stored where the MINUCs page's memo finds them, and a search estimated above ``AHEAD_SECONDS`` or
    ``AHEAD_BYTES`` is not made (the job ends without a result). The job waits while the page that starts it
    is drawn, and for every page drawn after, until the page it is for shows it or someone asks for it.
    """
    from kanon_core import threads
    from kanon_core.risk.minucs import RESPONSIVE_ESTIMATE_SECONDS, estimate_cost, find_minucs, minuc_rows

    ds = state.current().dataset
    params = default_minuc_params()
    qis, k, _, missing = params  # type: ignore[misc]
    key = _minuc_key(params)
    tried, ahead = _session_set(TRIED), _session_set(AHEAD)
    if not qis or key in tried or state.memo_peek(MINUCS, params) is not None or earlier_minuc_search(params):
        return
    if not _room_for_a_search_ahead():
        return
    view = state.session_view()
    rows_key = state.memo_key("minuc_rows", minuc_rows_params(qis, missing))
    estimate_key = state.memo_key("minuc_estimate", minuc_estimate_params(params, None))

    def work(progress) -> object:
        threads.wait_for_a_gap()  # its first steps take no compute slot: they wait for the page here
        progress.update(0.0, "distinct records")  # a search cancelled meanwhile stops here
        qm = ds.qi_matrix(list(qis))
        rows = view.get_or_compute(rows_key, lambda: minuc_rows(qm, missing))  # the page's memo, this version's
        # the page's own estimate (the same memo key, the same budget): one that stops at its budget reads as
        # too long (its seconds are infinite), so a search of unknown cost is never started unasked
        est = view.get_or_compute(estimate_key, lambda: estimate_cost(qm, k=k, missing=missing, rows=rows,
                                                                      budget_seconds=RESPONSIVE_ESTIMATE_SECONDS))
        if est.seconds > AHEAD_SECONDS or est.memory_bytes > AHEAD_BYTES:
            return None  # too long to make unasked: the page offers it with its estimate, as it would
        return find_minucs(qm, k=k, missing=missing, progress=progress, rows=rows)

    tried.add(key)
    ahead.add(key)
    job = background.start(key, "MINUC search", work, store=lambda value: value is not None and view.put(key, value),
                           speculative=True, held_by_this_run=True)
    background.register(MINUCS, job)


def earlier_minuc_search(params: Hashable) -> tuple[Any, Any] | None:
    """The nearest earlier version on the current one's line that has the MINUCs page's search ``params``,
    and that search (whose MINUCs a search of the current version carries over), or None."""
    hist = state.history()
    version = state.current()
    while version.parent is not None:
        version = hist.versions[version.parent]
        prior = state.memo_peek(MINUCS, params, version=version)
        if prior is not None:
            return version, prior
    return None


def _session_set(name: str) -> set:
    import streamlit as st

    return st.session_state.setdefault(name, set())


def minucs_ahead(params: Hashable, shown_here: bool = False) -> bool:
    """Whether the MINUCs page's search for ``params`` was started ahead and not asked for yet (its result,
    even when ready, is not shown before the click). ``shown_here``: the page asking is the MINUCs page, the
    one it was started for: a search started on another page (:func:`start_default_minucs`) is no longer held
    back by this page's drawing (the Recode page, which does not wait for it until asked, leaves it held)."""
    key = _minuc_key(params)
    if key not in _session_set(AHEAD):
        return False
    job = background.registered(MINUCS, key)
    if job is not None and shown_here:
        job.shown_here()
    return True


def minucs_held_back(params: Hashable, version: Any) -> bool:
    """Whether version ``version``'s MINUCs page search for ``params`` was started ahead and not asked for yet
    (the sidebar does not show it, as the MINUCs page does not before its click)."""
    return state.memo_key(MINUCS, params, version) in _session_set(AHEAD)


def ask_minucs(params: Hashable) -> None:
    """The officer clicked "Find MINUCs" for ``params``: a search started ahead is theirs now (it no longer
    waits for pages being drawn)."""
    key = _minuc_key(params)
    _session_set(AHEAD).discard(key)
    job = background.registered(MINUCS, key)
    if job is not None:
        job.ask()


def _room_for_a_search_ahead() -> bool:
    """Whether a MINUC search may start ahead now: not while one the officer asked for runs (left to finish);
    one started ahead (for other parameters, or an earlier version) is cancelled."""
    import streamlit as st

    ahead = _session_set(AHEAD)
    old = st.session_state.setdefault("jobs", {}).get(MINUCS)
    if old is not None and not old.done:
        if old.key not in ahead:
            return False
        old.cancel()
        ahead.discard(old.key)
    return True


def start_minucs_ahead(params: Hashable, estimate: Any, work: Callable[[Any], Any]) -> None:
    """Start the MINUCs page's search for ``params`` ahead of the click, when it is cheap enough (``estimate``:
    :class:`~kanon_core.risk.minucs.CostEstimate`), not memoised, never started ahead before, and no search
    the officer asked for is running. A search started ahead for other parameters is cancelled."""

    if estimate.seconds > AHEAD_SECONDS or estimate.memory_bytes > AHEAD_BYTES:
        return
    key = _minuc_key(params)
    tried, ahead = _session_set(TRIED), _session_set(AHEAD)
    if key in tried or state.memo_peek(MINUCS, params) is not None:
        return
    if not _room_for_a_search_ahead():
        return
    view = state.session_view()
    tried.add(key)
    ahead.add(key)
    job = background.start(key, "MINUC search", work, store=lambda value: view.put(key, value), speculative=True)
    background.register(MINUCS, job)
