"""The launcher's warm-up (``python -m kanon_app.serve``) loads what the pages need: after it, a fresh
session's first run of the app imports no module of kanon or of the heavy libraries, nor does the first
visit to any other page or the first fit of the regression models, so the first officer on a fresh server
does not wait for them (the lists cannot silently fall behind the pages)."""

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


OTHER_PAGES_PROBE = """
import json, sys
from kanon_app.serve import warm_up
warm_up()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file("app.py", default_timeout=120).run()
new = {}
for page in ("risk", "minucs", "recode", "suppress", "compare", "export"):
    before = set(sys.modules)
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, (page, [e.message for e in at.exception])
    new[page] = sorted(set(sys.modules) - before)
before = set(sys.modules)
at.switch_page("pages/compare.py")
at.session_state["w_cmp_tab"] = "Regression"
at.run()
at.button(key="btn_cmp_fit").click().run()
assert not at.exception, [e.message for e in at.exception]
assert any("significant covariates" in df.value.columns for df in at.dataframe)
new["the first fit of the three models"] = sorted(set(sys.modules) - before)
print(json.dumps(new))
"""

LOADED_AT_START = ("kanon_core", "kanon_app", "numba", "llvmlite", "scipy", "statsmodels", "patsy", "pulp",
                   "highspy", "pyarrow", "plotly.express")
"""What no page's first run loads after the warm-up (Plotly's figure classes still load a few small modules
as a chart first uses them)."""


def test_no_page_and_no_first_model_fit_load_a_library_after_warm_up():
    out = subprocess.run([sys.executable, "-c", OTHER_PAGES_PROBE], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, check=True)
    new = json.loads(out.stdout.strip().splitlines()[-1])
    late = {page: [m for m in mods if m.split(".")[0] in LOADED_AT_START or m.startswith(LOADED_AT_START)]
            for page, mods in new.items()}
    assert not any(late.values()), f"loaded by a page's first run, not by the warm-up: {late}"


FIRST_RUN_PROBE = """
import json, sys
from kanon_app.serve import warm_up
warm_up()
import kanon_core.describe, kanon_core.guidance, kanon_core.io
import kanon_core.risk.summary, kanon_core.risk.timeline
calls = []
for module, name in ((kanon_core.guidance, "suggest_roles"), (kanon_core.describe, "variable_summary"),
                     (kanon_core.io, "missing_like_counts"), (kanon_core.risk.timeline, "version_risk"),
                     (kanon_core.risk.summary, "risk_summary")):
    real = getattr(module, name)
    setattr(module, name, lambda *a, _real=real, _name=name, **kw: calls.append(_name) or _real(*a, **kw))
from streamlit.testing.v1 import AppTest
for session in range(2):
    at = AppTest.from_file("app.py", default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("Records violating k=3" in m.label for m in at.metric)
    at.switch_page("pages/risk.py").run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(m.label == "Sample uniques" for m in at.metric)
print(json.dumps(calls))
"""


def test_a_fresh_session_computes_nothing_of_the_default_samples_first_page_after_warm_up():
    """Every session opens on the one default sample object: its role suggestions, variable summary, "NA"-like
    counts, risk count and Risk page summary were computed by the warm-up, and neither the first session nor
    the next computes them again (its pages still show them)."""
    out = subprocess.run([sys.executable, "-c", FIRST_RUN_PROBE], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_launcher_hands_the_options_to_streamlit_run(monkeypatch, capsys, tmp_path):
    """The launcher says what it waits for (one line on stderr, before the warm-up), warms up, then hands the
    options given to ``streamlit run app.py``, with Streamlit serving the page with the chart code's script
    (kanon_app.page_head)."""
    import streamlit.web.cli as cli
    from streamlit import file_util

    import kanon_app.serve as serve
    from kanon_app.page_head import MARK

    seen = {}
    monkeypatch.setattr(serve, "warm_up", lambda: seen.setdefault("warm", True))
    monkeypatch.setattr(file_util, "get_static_dir", file_util.get_static_dir)  # restored after the test
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the mirror in the test's folder, not the user's cache
    own = file_util.get_static_dir()

    def fake_main():
        seen["argv"] = list(sys.argv)
        seen["static"] = file_util.get_static_dir()
        return 0

    monkeypatch.setattr(cli, "main", fake_main)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert serve.main(["--server.port", "8599"]) == 0
    assert seen["warm"] is True
    assert seen["argv"][:2] == ["streamlit", "run"]
    assert Path(seen["argv"][2]).name == "app.py"
    assert seen["argv"][3:] == ["--server.port", "8599"]
    assert capsys.readouterr().err.splitlines() == [serve.LOADING_MESSAGE]
    assert seen["static"] != own and MARK in (Path(seen["static"]) / "index.html").read_text(encoding="utf-8")
    assert Path(seen["static"]).is_relative_to(tmp_path)


def test_warm_up_loads_the_pattern_join_kernels():
    """A large file's wildcard sizes take the packed pattern joins, which the sample's count never runs."""
    probe = ("from kanon_app.serve import warm_up\nwarm_up()\n"
             "from kanon_core.risk import _wildcard_kernel as k\n"
             "print(*(len(f.signatures) for f in (k.pattern_pairs_packed, k.gappy_columns, k.group_keys_by_pattern, "
             "k.totals_in_row_order)))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         check=True)
    assert [int(v) for v in out.stdout.split()[-4:]] == [1, 1, 1, 1]


def test_warm_up_spares_the_first_page_streamlits_direct_run_check():
    """The first element any session draws makes Streamlit walk the call stack once per process (to tell a
    user who ran ``python app.py`` how to start an app); the launcher always runs ``streamlit run``, so its
    warm-up marks that check done and the first page does not pay for it."""
    probe = ("from kanon_app.serve import warm_up\nwarm_up()\n"
             "import streamlit.env_util as env_util\ncalls = []\n"
             "env_util.is_repl = lambda: calls.append(1) or False\n"
             "from streamlit.testing.v1 import AppTest\n"
             "at = AppTest.from_file('app.py', default_timeout=120).run()\n"
             "assert not at.exception\nprint('stack walks', len(calls))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         check=True)
    assert out.stdout.split()[-1] == "0"


def test_each_sample_load_is_a_dataset_of_its_own_read_once(monkeypatch):
    """Every new session starts on the default sample: the file is read once per process, and each session
    gets its own frame and caches, equal to a fresh read."""
    import kanon_app.samples as samples
    from kanon_core.io import load_dataset

    reads = []
    real = samples.load_dataset
    monkeypatch.setattr(samples, "load_dataset", lambda *a, **k: reads.append(1) or real(*a, **k))
    monkeypatch.setattr(samples, "_PARSED", {})
    a, b = samples.load_sample(), samples.load_sample()
    assert len(reads) == 1
    fresh = load_dataset(samples.SAMPLES["els"].path, roles=samples.SAMPLES["els"].roles)
    assert a.frame.equals(fresh.frame) and a.roles == fresh.roles and a.meta == fresh.meta
    assert a.fingerprint == fresh.fingerprint
    assert a.frame is not b.frame and a._cache is not b._cache
    a.frame.iloc[0, 0] = a.frame.iloc[0, 0] + 1  # (never done by kanon: a dataset's frame is not modified in place)
    assert b.frame.equals(fresh.frame) and samples.load_sample().frame.equals(fresh.frame)
