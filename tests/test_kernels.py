"""kanon_core.kernels: every kernel module has a family, and a family's warm-up leaves nothing for the real
calls on the bundled sample to compile (checked in a fresh process, where no other test compiled anything)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kanon_core import kernels
from kanon_core.cli import main

ROOT = Path(__file__).resolve().parent.parent

# The dashboard's and the command line's own calls, on the bundled sample (16,197 records, 19 QIs, missing
# values read as wildcards), per family: what a first click runs.
REAL_CALLS = {
    "minucs": """
        from kanon_core.risk.minucs import estimate_cost, find_minucs, minuc_rows, summarize_minucs
        from kanon_core.risk.qid import minimal_qids_from_minucs
        from kanon_core.risk.suda import suda_scores, value_suda_contributions
        qm = ds.qi_matrix(list(ELS_QIS))
        rows = minuc_rows(qm, ds.missing)
        estimate_cost(qm, k=3, missing=ds.missing, rows=rows)
        r = find_minucs(qm, k=3, missing=ds.missing, rows=rows)
        r.totals_by_size(), r.records_with_minucs(), r.variable_contributions(), r.value_contributions(qm)
        r.record_ranking(), r.count_containing(list(ELS_QIS[:2])), minimal_qids_from_minucs(r)
        summarize_minucs(qm, k=3, missing=ds.missing)
        small = ds.qi_matrix(list(ELS_QIS[:8]))
        r2 = find_minucs(small, k=2, missing=ds.missing)
        value_suda_contributions(r2, suda_scores(r2, small), small)
    """,
    "classes": """
        from kanon_core.risk.classes import compute_class_sizes
        codes = ds.qi_matrix(list(ELS_QIS)).codes
        compute_class_sizes(codes, ds.missing, ds.weights())
        compute_class_sizes(codes, ds.missing, ds.weights(), alpha=0.5)
        compute_class_sizes(codes, ds.missing, None, method="pairs", wildcard_split=True)
    """,
    "suppression": """
        from kanon_core.treat.suppress import SuppressStep
        SuppressStep(qis=ELS_QIS, k=3).run(ds)
        SuppressStep(qis=ELS_QIS[:8], k=2, model="release", method="greedy").run(ds)
        SuppressStep(qis=ELS_QIS[:8], k=2, model="record").run(ds)
    """,
    "lattice": """
        from kanon_core.treat.default_hierarchy import default_hierarchies
        from kanon_core.treat.lattice import build_problem, search_optimal
        qis = list(ELS_QIS[:8])
        problem = build_problem(ds, default_hierarchies(ds, qis), qis)
        for metric in ("prec", "dm", "aecs"):
            for limit in (0.0, 0.01):
                search_optimal(problem, 3, limit, metric)
    """,
}


def test_every_kernel_module_has_one_family():
    claimed = [m for fam in kernels.FAMILIES.values() for m in fam.modules]
    assert len(claimed) == len(set(claimed)), "a module claimed by two families"
    assert sorted(claimed) == kernels.kernel_modules()
    assert "risk._minuc_kernel" in kernels.kernel_modules()  # the finder reads the sources
    assert "kernels" not in kernels.kernel_modules()  # ...and only decorated kernels count


def test_family_registered_once():
    with pytest.raises(ValueError, match="twice"):
        kernels.family("minucs", (), "again")(lambda: None)


def test_start_families_are_registered():
    assert set(kernels.START_FAMILIES) <= set(kernels.FAMILIES)


def test_made_up_file_is_deterministic_and_has_missing_cells():
    a, b = kernels.made_up(seed=3), kernels.made_up(seed=3)
    assert a.frame.equals(b.frame)
    codes = a.qi_matrix().codes
    assert (codes < 0).any() and not (kernels.made_up(missing=False).qi_matrix().codes < 0).any()
    assert a.roles.weight == "weight" and len(a.roles.qis) == 5


@pytest.mark.parametrize("name", sorted(REAL_CALLS))
def test_warm_up_leaves_nothing_to_compile(name):
    """In a fresh process: the family's warm-up, then the real calls; no kernel signature is added by them."""
    script = textwrap.dedent("""
        import json, sys
        from kanon_core import kernels
        from kanon_app.samples import ELS_QIS, load_sample
        kernels.warm([sys.argv[1]])
        ds = load_sample("els")
        before = kernels.compiled_signatures()
    """) + textwrap.dedent(REAL_CALLS[name]) + textwrap.dedent("""
        after = kernels.compiled_signatures()
        print(json.dumps({k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}))
    """)
    out = subprocess.run([sys.executable, "-c", script, name], cwd=ROOT, capture_output=True, text=True,
                         timeout=900, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}


def test_real_calls_compile_without_the_warm_up():
    """The check above can fail: without a warm-up the same calls add signatures."""
    script = textwrap.dedent("""
        import json
        from kanon_core import kernels
        from kanon_app.samples import ELS_QIS, load_sample
        ds = load_sample("els")
        before = kernels.compiled_signatures()
    """) + textwrap.dedent(REAL_CALLS["classes"]) + textwrap.dedent("""
        after = kernels.compiled_signatures()
        print(json.dumps(sum(after.values()) - sum(before.values())))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=900,
                         check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) > 0


def test_command_lists_and_warms(capsys):
    assert main(["kernels", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(f"{name}: " in listed for name in kernels.FAMILIES)
    assert main(["kernels", "--family", "classes,l-diversity"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["classes", "l-diversity"]


def test_command_writes_json(capsys, tmp_path):
    out = tmp_path / "kernels.json"
    assert main(["kernels", "--family", "classes", "-o", str(out)]) == 0
    written = json.loads(out.read_text())
    assert [t["family"] for t in written] == ["classes"] and written[0]["seconds"] >= 0
    assert written[0]["compiled"] >= 0


def test_command_rejects_an_unknown_family(capsys):
    assert main(["kernels", "--family", "classes,nothing"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nothing" not in err
