"""The launcher's warm-up (``python -m kanon_app.serve``) loads what the first page run needs: after it,
a fresh session's first run of the app imports no module of kanon or of the heavy libraries, so the
first officer on a fresh server does not wait for them (the list cannot silently fall behind the pages)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from kanon_app.serve import warm_up
warm_up()
before = set(sys.modules)
from streamlit.testing.v1 import AppTest
after_streamlit = set(sys.modules)
at = AppTest.from_file("app.py", default_timeout=120).run()
assert not at.exception, [e.message for e in at.exception]
new = sorted(set(sys.modules) - after_streamlit)
print(json.dumps(new))
"""

HEAVY = ("kanon_core", "kanon_app", "pandas", "numba", "llvmlite", "scipy", "pyarrow", "plotly", "statsmodels")


def test_first_page_run_imports_nothing_heavy_after_warm_up():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         check=True)
    new = json.loads(out.stdout.strip().splitlines()[-1])
    heavy = [m for m in new if m.split(".")[0] in HEAVY]
    assert not heavy, f"imported by the first page run, not by the warm-up: {heavy}"


def test_launcher_hands_the_options_to_streamlit_run(monkeypatch):
    import kanon_app.serve as serve

    seen = {}
    monkeypatch.setattr(serve, "warm_up", lambda: seen.setdefault("warm", True))

    def fake_main():
        seen["argv"] = list(sys.argv)
        return 0

    import streamlit.web.cli as cli

    monkeypatch.setattr(cli, "main", fake_main)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert serve.main(["--server.port", "8599"]) == 0
    assert seen["warm"] is True
    assert seen["argv"][:2] == ["streamlit", "run"]
    assert Path(seen["argv"][2]).name == "app.py"
    assert seen["argv"][3:] == ["--server.port", "8599"]


def test_warm_up_loads_the_pattern_join_kernels():
    """A large file's wildcard sizes take the packed pattern joins, which the sample's count never runs."""
    probe = ("from kanon_app.serve import warm_up\nwarm_up()\n"
             "from kanon_core.risk import _wildcard_kernel as k\n"
             "print(*(len(f.signatures) for f in (k.pattern_pairs_packed, k.gappy_columns, k.group_keys_by_pattern, "
             "k.totals_in_row_order)))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         check=True)
    assert [int(v) for v in out.stdout.split()[-4:]] == [1, 1, 1, 1]
