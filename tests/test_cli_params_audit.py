"""Careless or hostile parameters of ``kanon risk``, ``kanon minucs`` and ``kanon suppress``.

Each refusal is exit status 2, one line on stderr (engines' progress lines aside) and no file written; a
degenerate but valid request gives a result that independent code confirms.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kanon_core.cli import main
from kanon_core.errors import InputError
from kanon_core.io import load_dataset
from kanon_core.risk.intruder import findable_below_k, released_codes
from kanon_core.treat.suppress import suppress
from tests.stderr_lines import one_line_refusal

QIS = ["sex", "age", "region", "edu"]


@pytest.fixture
def small_csv(tmp_path):
    rng = np.random.default_rng(5)
    n = 40
    frame = pd.DataFrame({
        "sex": rng.choice(["m", "f"], n),
        "age": rng.integers(20, 26, n),
        "region": rng.choice(["N", "S", "E", "W"], n),
        "edu": rng.choice(["a", "b", "c"], n),
        "w": rng.uniform(1, 9, n).round(2),
    })
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False)
    return path


def refused(argv: list[str], capsys, *needles: str) -> str:
    """:func:`tests.stderr_lines.one_line_refusal`."""
    return one_line_refusal(argv, capsys, *needles)


def outputs(tmp_path) -> dict[str, str]:
    return {"release": str(tmp_path / "out.csv"), "json": str(tmp_path / "s.json")}


def nothing_written(tmp_path) -> bool:
    return not (tmp_path / "out.csv").exists() and not (tmp_path / "s.json").exists()


def suppress_argv(path, tmp_path, *extra: str) -> list[str]:
    out = outputs(tmp_path)
    return ["suppress", str(path), "--qi", ",".join(QIS), *extra, "-o", out["release"], "--json", out["json"]]


# -- faults found by the audit ------------------------------------------------------------------------


@pytest.mark.parametrize("target", [["--k", "3"], ["--max-risk", "0.2"]])
def test_an_importance_given_twice_is_refused_not_overwritten(small_csv, tmp_path, capsys, target):
    refused(suppress_argv(small_csv, tmp_path, *target, "--importance", "age=2,age=5"), capsys, "age", "twice")
    assert nothing_written(tmp_path)


@pytest.mark.parametrize("value", ["1e-12", "1e308"])
@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_an_importance_out_of_range_is_refused(small_csv, tmp_path, capsys, value, method):
    # 1e-12 each: the solvers' absolute tolerances called a 68-cell release "proven optimal" where 61 cells
    # suffice; 1e308: the cost overflowed to inf ("gap 0.00 %") with numpy warnings on stderr
    imp = ",".join(f"{q}={value}" for q in QIS)
    refused(suppress_argv(small_csv, tmp_path, "--k", "3", "--method", method, "--importance", imp), capsys,
            "importance", "0.001")
    assert nothing_written(tmp_path)


def test_the_library_refuses_the_same_importances():
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.int32)
    with pytest.raises(InputError, match="0.001"):
        suppress(codes, 2, qis=("a", "b"), importance={"a": 1e-12})
    with pytest.raises(InputError, match="twice"):
        suppress(codes, 2, qis=("a", "b"), importance=(("a", 2.0), ("a", 3.0)))


@pytest.mark.parametrize("limit", ["99999999999999999999", "2147483648"])
def test_a_node_limit_beyond_the_solvers_range_is_refused(small_csv, tmp_path, capsys, limit):
    # above 2**63 the record model failed with an unexpected TypingError; above 2**31 - 1 HiGHS ignored it
    refused(suppress_argv(small_csv, tmp_path, "--k", "3", "--model", "record", "--node-limit", limit), capsys,
            "--node-limit")
    assert nothing_written(tmp_path)
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.int32)
    with pytest.raises(InputError, match="node limit"):
        suppress(codes, 2, node_limit=int(limit))


def scale_argv(command: str, path, tmp_path, qis: str, *extra: str) -> list[str]:
    out = outputs(tmp_path)
    if command == "suppress":
        return ["suppress", str(path), "--qi", qis, "--k", "3", *extra, "--engine", "duckdb",
                "-o", out["release"], "--json", out["json"]]
    return [command, str(path), "--qi", qis, *extra, "--engine", "duckdb", "-o", out["json"]]


@pytest.mark.parametrize("command", ["risk", "minucs", "suppress"])
def test_a_quasi_identifier_listed_twice_is_refused_out_of_core(small_csv, tmp_path, capsys, command):
    # out of core, kanon suppress counted age twice and called a 15-cell release optimal (10 suffice)
    refused(scale_argv(command, small_csv, tmp_path, "sex,age,age"), capsys, "age", "twice")
    assert nothing_written(tmp_path)


@pytest.mark.parametrize("command", ["risk", "minucs", "suppress"])
def test_the_weight_as_quasi_identifier_is_refused_out_of_core(small_csv, tmp_path, capsys, command):
    # out of core, kanon suppress blanked the weight of every record in the release
    refused(scale_argv(command, small_csv, tmp_path, "sex,age,w", "--weight", "w"), capsys, "weight")
    assert nothing_written(tmp_path)


def test_a_linked_weight_is_refused(small_csv, tmp_path, capsys):
    # the weight was blanked (written as the suppressed code, -99) wherever region was suppressed
    refused(suppress_argv(small_csv, tmp_path, "--k", "3", "--weight", "w", "--link", "region=w"), capsys,
            "weight")
    assert nothing_written(tmp_path)


@pytest.mark.parametrize("extra", [["--k", "3"], ["--engine", "duckdb"]])
@pytest.mark.parametrize("fraction", ["nan", "5", "0"])
def test_a_bad_dis_fraction_is_refused_even_where_suda_is_not_computed(small_csv, tmp_path, capsys, extra,
                                                                        fraction):
    refused(["minucs", str(small_csv), "--qi", "sex,age", *extra, "--dis-fraction", fraction,
             "-o", str(tmp_path / "s.json")], capsys, "--dis-fraction")
    assert nothing_written(tmp_path)


@pytest.mark.parametrize("codes", ["age=21,age=22", "age=", "age=|"])
def test_missing_codes_given_twice_or_empty_are_refused(small_csv, tmp_path, capsys, codes):
    # "age=21,age=22" declared only 22 missing; "age=" declared nothing, silently
    refused(["risk", str(small_csv), "--qi", "sex,age", "--missing-codes", codes, "-o", str(tmp_path / "s.json")],
            capsys, "--missing-codes", "age")
    assert nothing_written(tmp_path)


# -- cases that already behaved well (the important ones) -------------------------------------------


def test_k_equal_to_the_number_of_records_blanks_everything_and_is_verified(small_csv, tmp_path):
    out = outputs(tmp_path)
    assert main(suppress_argv(small_csv, tmp_path, "--k", "40")) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    original = load_dataset(small_csv).qi_matrix(QIS).codes
    treated = load_dataset(out["release"])  # reads the declared code of suppressed cells
    mask = np.column_stack([treated.missing_mask(q) for q in QIS])
    assert mask.all() and summary["n_suppressed"] == mask.size
    assert findable_below_k(original, released_codes(original, mask), 40, "wildcard") == 0


@pytest.mark.parametrize("argv", [
    ["minucs", "--qi", "sex,age", "--k", "41"],
    ["suppress", "--qi", "sex,age", "--k", "41"],
    ["suppress", "--qi", "sex,age", "--k", "3", "--protect", "sex,age"],
])
def test_impossible_requests_are_refused_with_one_line(small_csv, tmp_path, capsys, argv):
    extra = ["-o", str(tmp_path / "out.csv"), "--json", str(tmp_path / "s.json")] if argv[0] == "suppress" \
        else ["-o", str(tmp_path / "s.json")]
    refused([argv[0], str(small_csv), *argv[1:], *extra], capsys)
    assert nothing_written(tmp_path)
