"""Every page test leaves the server as it found it: no job of its own still queued or running.

Jobs run in daemon threads of the test process and hold the server's heavy slots, so a job one test left
running would make the next tests' work wait (or, holding every slot, wait for ever). Each test's unfinished
jobs are cancelled when it ends; those not stopped within a minute fail the test that left them.
"""

from __future__ import annotations

import pytest

from kanon_app import background

STOP_SECONDS = 60.0


@pytest.fixture(autouse=True)
def no_job_outlives_its_test():
    before = {id(job) for job in background.unfinished()}
    yield
    left = [job for job in background.unfinished() if id(job) not in before]
    stuck = [job.label for job in background.drain(left, STOP_SECONDS)]
    if stuck:
        pytest.fail(f"jobs still running {STOP_SECONDS:.0f} s after their test was cancelled: {stuck}")
