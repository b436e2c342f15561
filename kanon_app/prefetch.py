"""Results the officer is likely to ask for next, computed off the script thread once a page has been sent.

After each complete run the app starts (at most) one light computation for the current version: the Compare
page's default table — weighted percentages of every quasi-identifier, the original (with this version's
roles) against this version, Wald intervals (:func:`kanon_core.utility.compare_distributions`, the same call
the page makes). It runs while the officer reads the page, is stored under the page's own memo key, and is
reused by the report. A page that needs it while it is still running waits for it instead of computing it a
second time. A failure is not shown here: the page computes the table itself and says what is wrong.
"""

from __future__ import annotations

from collections.abc import Hashable

from . import background, state

COMPARE = "compare_pct"
"""The memo name of the Compare page's weighted percentages (also the job's name in the session)."""


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
