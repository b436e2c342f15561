"""Spark in local mode (local[2]) gives what the embedded engine gives: class tables, risk, releases.

One Spark session serves the whole module (starting the JVM takes seconds) and is stopped at the end.
Skipped when PySpark or Java is absent (``scripts/system_deps.sh`` installs Java 17, the lock PySpark).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java (openjdk-17-jre-headless)", allow_module_level=True)

from kanon_core.cli import main  # noqa: E402
from kanon_core.engines import get_engine  # noqa: E402
from kanon_core.engines.base import EngineSettings  # noqa: E402
from kanon_core.io import load_dataset  # noqa: E402
from tests.test_engines import assert_same_table  # noqa: E402


@pytest.fixture(scope="module")
def settings():
    from kanon_core.engines import spark_engine

    s = EngineSettings(memory_limit=1 << 30, spark_master="local[2]")
    yield s
    spark_engine.stop_sessions()
    s.close()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(12)
    n = 4000
    df = pd.DataFrame({
        "region": rng.choice(["NA", "north", "02138", " south", ""], n, p=[0.1, 0.4, 0.2, 0.25, 0.05]),
        "age": rng.choice(["17", "25", "33", "48", "61", "80", ""], n),
        "score": rng.choice(["1.5", "2.0", "3.25", ""], n),
        "w": np.round(rng.uniform(1, 9, n), 3).astype(str),
        "s": rng.choice(["a", "b", "c", ""], n),
    })
    folder = tmp_path_factory.mktemp("spark")
    csv = folder / "d.csv"
    df.to_csv(csv, index=False)
    parquet = folder / "d.parquet"
    pq.write_table(load_dataset(csv).frame.pipe(__import__("pyarrow").Table.from_pandas, preserve_index=False),
                   parquet)
    return csv, parquet


QIS = ["region", "age", "score"]


@pytest.mark.parametrize("which", [0, 1], ids=["csv", "parquet"])
def test_class_table_and_sizes_equal_embedded(settings, files, which):
    path = files[which]
    embedded = get_engine("duckdb").class_table(path, QIS, "w", ["s"])
    spark = get_engine("spark").class_table(path, QIS, "w", ["s"], settings=settings)
    assert_same_table(embedded, spark)
    for missing in ("wildcard", "category"):
        a, b = embedded.class_sizes(missing), spark.class_sizes(missing)
        order_a, order_b = np.lexsort(embedded.codes.T[::-1]), np.lexsort(spark.codes.T[::-1])
        np.testing.assert_array_equal(a.fk[order_a], b.fk[order_b])
        np.testing.assert_allclose(a.Fk[order_a], b.Fk[order_b], rtol=1e-12)


def test_risk_json_equals_embedded(settings, files, tmp_path):
    outs = {}
    for engine in ("duckdb", "spark"):
        out = tmp_path / f"{engine}.json"
        assert main(["risk", str(files[0]), "--qi", ",".join(QIS), "--weight", "w", "--k", "3", "--engine", engine,
                     "--spark-master", "local[2]", "-o", str(out)]) == 0
        outs[engine] = json.loads(out.read_text())
    ref = outs["duckdb"]
    assert {k: v for k, v in outs["spark"].items() if k not in ("seconds", "engine")} == \
        {k: v for k, v in ref.items() if k not in ("seconds", "engine")}


def test_minucs_json_and_per_record_equal_embedded(settings, files, tmp_path):
    """``kanon minucs --engine spark``: the class table's MINUC counts and the per-record counts joined back by
    Spark equal DuckDB's (both by counting every subset: the weight as a QI makes nearly every class
    unique)."""
    outs = {}
    for engine in ("duckdb", "spark"):
        out, per = tmp_path / f"m_{engine}.json", tmp_path / f"m_{engine}.csv"
        assert main(["minucs", str(files[0]), "--qi", ",".join([*QIS, "w"]), "--k", "3", "--engine", engine,
                     "--method", "subsets", "-o", str(out), "--per-record", str(per)]) == 0
        parts = sorted(per.glob("part-*.csv")) if per.is_dir() else [per]  # Spark: part files in input order
        outs[engine] = (json.loads(out.read_text()),
                        pd.concat([pd.read_csv(p) for p in parts if p.stat().st_size], ignore_index=True))
    ref, got = outs["duckdb"], outs["spark"]
    assert ref[0]["total"] > 0
    assert {k: v for k, v in got[0].items() if k not in ("seconds", "engine")} == \
        {k: v for k, v in ref[0].items() if k not in ("seconds", "engine")}
    pd.testing.assert_frame_equal(got[1], ref[1])


def test_generalized_release_equals_embedded(settings, files, tmp_path):
    """Ages recoded to decades and one class's region suppressed: the same records as DuckDB writes."""
    ds = load_dataset(files[0])
    recode = {v: f"{v // 10 * 10}-{v // 10 * 10 + 9}" for v in ds.qi_matrix(["age"]).values[0]}
    sup = pd.DataFrame({"region": ["north"], "age": ["20-29"], "suppress_region": [True], "suppress_age": [False]})
    frames = {}
    for engine in ("duckdb", "spark"):
        out = tmp_path / f"{engine}.parquet"
        get_engine(engine).release(files[0], out, qis=["region", "age"], recodes={"age": recode}, suppress=sup,
                                   settings=settings)
        frames[engine] = pd.read_parquet(out).astype(object).where(lambda f: f.notna(), None)
    cols = list(frames["duckdb"].columns)
    key = lambda f: f.sort_values(cols, na_position="first", key=lambda s: s.astype(str)).reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(key(frames["spark"]), key(frames["duckdb"]))
    assert frames["duckdb"]["age"].dropna().str.endswith("9").all()
    assert ((frames["duckdb"]["age"] == "20-29") & frames["duckdb"]["region"].isna()).sum() > 0


def test_suppression_at_scale_writes_what_duckdb_writes(settings, files, tmp_path):
    """The strict model on Spark's class table; the same ranked plan written by Spark and by DuckDB gives
    the same records in the same order, and the released classes recounted on Spark's file reach k."""
    from kanon_core.engines.local_suppression import ranked_plan
    from kanon_core.engines.source import open_source
    from kanon_core.engines.table import aggregate_table
    from kanon_core.treat.strict.classes import suppress_classes

    spark = get_engine("spark")
    table, keys, class_of_row, _ = aggregate_table(spark, open_source(files[0]), QIS, None, None, settings)
    res = suppress_classes(table.codes, table.count, 5, np.ones(3), np.zeros(3, bool), "category")
    assert res.n_suppressed > 0 and res.check.violations == 0
    plan = ranked_plan(keys, class_of_row, table.n_classes, res.assignment, len(QIS))
    frames = {}
    for engine in ("duckdb", "spark"):
        out = tmp_path / f"{engine}.parquet"
        get_engine(engine).release(files[0], out, qis=QIS, ranked=plan, settings=settings, sidecar=False)
        frames[engine] = pd.read_parquet(out).astype(object).where(lambda f: f.notna(), None).reset_index(drop=True)
    pd.testing.assert_frame_equal(frames["spark"], frames["duckdb"])
    before = pd.read_csv(files[0], dtype=str, keep_default_na=False).replace("", None)[QIS]
    after = frames["spark"][QIS]
    blank = after.isna() & before.notna()
    assert int(blank.to_numpy().sum()) == res.n_suppressed
    released = before.astype(object).where(~blank, "<suppressed>").fillna("<missing>")
    assert released.value_counts().min() >= 5


def test_risk_suppression_at_scale_writes_what_duckdb_writes(settings, files, tmp_path):
    """Suppression to a limit on individual risk on Spark's class table (with the weight's sums): the cells
    DuckDB's run blanks, in the same records, and the same counts."""
    from kanon_core.engines.local_suppression import solve_risk_at_scale, write_suppressed_release

    found = {}
    frames = {}
    for engine in ("duckdb", "spark"):
        eng = get_engine(engine)
        found[engine] = solve_risk_at_scale(eng, files[1], QIS, 0.05, "w", "category", settings=settings)
        out = tmp_path / f"risk_{engine}.parquet"
        write_suppressed_release(eng, files[1], found[engine], out, settings=settings)
        frames[engine] = pd.read_parquet(out).astype(object).where(lambda f: f.notna(), None).reset_index(drop=True)
    assert found["spark"].result.summary()["n_suppressed"] > 0
    for key in ("n_suppressed", "records_touched", "records_above_before", "records_above_after"):
        assert found["spark"].result.summary()[key] == found["duckdb"].result.summary()[key], key
    pd.testing.assert_frame_equal(frames["spark"], frames["duckdb"])


def test_apply_at_scale_writes_what_duckdb_writes(settings, files, tmp_path):
    """``kanon apply --engine spark``: a recipe's recode and generalization with blanking give the records
    DuckDB writes (Spark writes a folder of parts, in no set order) and the same summary."""
    from kanon_core.dataset import Roles
    from kanon_core.recipe import Recipe
    from kanon_core.treat.hierarchy import Hierarchy
    from kanon_core.treat.recode import GeneralizeStep, RecodeStep

    ages = ("17", "25", "33", "48", "61", "80")
    h = Hierarchy(tuple((a, "young" if int(a) < 40 else "old", "*") for a in ages), "age")
    recipe = tmp_path / "r.json"
    Recipe(steps=(RecodeStep("score", merge=(2.0, 3.25)), GeneralizeStep.build({"age": 1}, {"age": h}, suppress_k=40)),
           roles=Roles(qis=tuple(QIS)), missing="category", extra={"k": 40}).save(recipe)
    frames, summaries = {}, {}
    for engine in ("duckdb", "spark"):
        out, js = tmp_path / f"{engine}.parquet", tmp_path / f"{engine}.json"
        assert main(["apply", str(recipe), str(files[0]), "-o", str(out), "--engine", engine, "--json", str(js),
                     "--spark-master", "local[2]"]) == 0
        frames[engine] = pd.read_parquet(out).astype(object).where(lambda f: f.notna(), None)
        summaries[engine] = {k: v for k, v in json.loads(js.read_text()).items() if k not in ("engine", "written")}
    cols = list(frames["duckdb"].columns)
    key = lambda f: f.sort_values(cols, na_position="first", key=lambda s: s.astype(str)).reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(key(frames["spark"]), key(frames["duckdb"]))
    assert summaries["spark"] == summaries["duckdb"]
    assert summaries["duckdb"]["suppressed_cells"] > 0


def test_apply_with_local_suppression_at_scale_blanks_what_duckdb_blanks(settings, files, tmp_path):
    """``kanon apply --engine spark`` with a recode and then the strict local suppression: the same solution
    on the same class rows, so the released QI rows (as a multiset: copies of a class are alike on the QIs)
    and the summary equal DuckDB's."""
    from kanon_core.dataset import Roles
    from kanon_core.recipe import Recipe
    from kanon_core.treat.recode import RecodeStep
    from kanon_core.treat.suppress import SuppressStep

    recipe = tmp_path / "r.json"
    Recipe(steps=(RecodeStep("score", merge=(2.0, 3.25)), SuppressStep(qis=tuple(QIS), k=150)),
           roles=Roles(qis=tuple(QIS)), extra={"k": 150}).save(recipe)
    rows, summaries = {}, {}
    for engine in ("duckdb", "spark"):
        out, js = tmp_path / f"{engine}.parquet", tmp_path / f"{engine}.json"
        assert main(["apply", str(recipe), str(files[0]), "-o", str(out), "--engine", engine, "--json", str(js),
                     "--spark-master", "local[2]"]) == 0
        frame = pd.read_parquet(out)[QIS].astype(str)
        rows[engine] = frame.value_counts().sort_index()
        summaries[engine] = {k: v for k, v in json.loads(js.read_text()).items() if k not in ("engine", "written")}
    pd.testing.assert_series_equal(rows["spark"], rows["duckdb"])
    assert summaries["spark"] == summaries["duckdb"]
    assert summaries["duckdb"]["local_suppression"]["cells"] > 0


def test_weighted_percentages_from_spark_equal_duckdb(settings, files):
    """The design aggregate (weight sums and sums of squared weights per value) from a Spark job gives the
    estimates and intervals DuckDB's gives."""
    from kanon_core.engines.design import design_aggregate
    from kanon_core.engines.source import open_source
    from kanon_core.utility.survey_aggregate import proportions_of_aggregate

    got = {}
    for engine in ("duckdb", "spark"):
        agg = design_aggregate(get_engine(engine), open_source(files[0]), "region", weight="w",
                               settings=settings if engine == "spark" else None)
        got[engine] = proportions_of_aggregate(agg, "region").table
    pd.testing.assert_frame_equal(got["spark"], got["duckdb"], check_exact=False, rtol=1e-9)


def test_a_session_outlives_the_spill_folder_of_the_command_that_started_it(files):
    """The session is kept for the process, the command's settings (and their spill folder) are not: a second
    command's shuffle failed on the first command's removed folder. The session has its own folder, private,
    removed when the sessions stop."""
    import os
    import stat

    from kanon_core.engines import spark_engine

    spark_engine.stop_sessions()  # a session of its own, started by the first command below
    engine = get_engine("spark")
    try:
        first = EngineSettings(memory_limit=1 << 30, spark_master="local[2]")
        expected = engine.class_table(files[0], QIS, "w", ["s"], settings=first)
        first.close()
        [spill] = spark_engine._SPILL
        assert os.path.isdir(spill) and stat.S_IMODE(os.stat(spill).st_mode) == 0o700
        for _ in range(2):  # shuffles of later commands, each with settings of its own
            later = EngineSettings(memory_limit=1 << 30, spark_master="local[2]")
            assert_same_table(expected, engine.class_table(files[1], QIS, "w", ["s"], settings=later))
            later.close()
    finally:
        spark_engine.stop_sessions()
    assert not os.path.exists(spill) and spark_engine._SPILL == []


def test_weighted_risk_per_record_equals_embedded(settings, files, tmp_path):
    """``kanon risk --weight --per-record --engine spark``: the per-record fk and Fk equal DuckDB's (Spark's
    default case folding had called the two columns one and failed), and a file's names are kept as written."""
    outs = {}
    for engine in ("duckdb", "spark"):
        per = tmp_path / f"r_{engine}.csv"
        assert main(["risk", str(files[0]), *[a for q in QIS for a in ("--qi", q)], "--weight", "w",
                     "--engine", engine, "--per-record", str(per)]) == 0
        parts = sorted(per.glob("part-*.csv")) if per.is_dir() else [per]
        outs[engine] = pd.concat([pd.read_csv(p) for p in parts if p.stat().st_size], ignore_index=True)
    assert {"fk", "Fk"} <= set(outs["spark"].columns)
    pd.testing.assert_frame_equal(outs["spark"], outs["duckdb"], check_dtype=False)


def test_a_failed_query_logs_nothing_of_the_data(settings, files, capfd):
    """A query that fails quotes its text in Spark's logs (literals included: a recode's values are literals);
    kanon turns Spark's logs off, so only its own one-line message, without the query, is seen."""
    from kanon_core.engines.source import open_source
    from kanon_core.errors import InputError

    engine = get_engine("spark")
    source = open_source(files[0])
    capfd.readouterr()
    with pytest.raises(InputError) as err:
        engine._run(settings, source, lambda view: f"SELECT 'CONFIDENTIAL_CELL' || no_such_column FROM {view}",
                    "testing")
    out, errors = capfd.readouterr()
    assert "CONFIDENTIAL_CELL" not in out + errors and "CONFIDENTIAL_CELL" not in str(err.value)
    assert "no_such_column" not in out + errors


@pytest.mark.parametrize("text", ['region,age\nnorth,30\nsouth,"40\nnorth,22\n', 'region,age\nnorth,30\nsouth,"40'])
def test_a_quote_never_closed_is_refused_as_the_reader_refuses_it(settings, tmp_path, capsys, text):
    """Spark's reader takes a quote that is never closed for a cell running to the end of the file, and reads on
    without a word (here 2 records instead of refusing the file); kanon refuses it first, in the in-memory
    reader's words, naming the line and no cell, and before any query (the release is not written)."""
    path = tmp_path / "open.csv"
    path.write_text(text, encoding="utf-8")
    assert main(["risk", str(path), "--qi", "region", "--engine", "pandas"]) == 2
    reader = capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["risk", str(path), "--qi", "region", "--engine", "spark"]) == 2
    spark = capsys.readouterr().err.strip().splitlines()[-1]
    assert spark == reader and "near line 3: a quoted cell is never closed" in spark and "40" not in spark
    from kanon_core.errors import InputError

    with pytest.raises(InputError, match="never closed"):
        get_engine("spark").release(path, tmp_path / "release.csv", settings=settings)
    assert not (tmp_path / "release.csv").exists()


def test_spaces_after_a_closing_quote_are_refused_and_before_an_opening_one_read_as_the_reader(settings, tmp_path):
    """Spark drops the spaces between a closing quote and the delimiter (``"40" `` read as 40), which the reader
    keeps (``40 ``): refused, naming the line. Spaces before an opening quote it keeps as the reader does."""
    from kanon_core.errors import InputError
    from tests.test_engines import reference

    after = tmp_path / "after.csv"
    after.write_text('region,age\nnorth,30\nsouth,"40" \n', encoding="utf-8")
    with pytest.raises(InputError, match=r"^Line 3 has a quoted cell with spaces or text outside its quotes, "
                                         r"which Spark reads otherwise"):
        get_engine("spark").class_table(after, ["region", "age"], settings=settings)
    before = tmp_path / "before.csv"
    before.write_text('region,age\nnorth,30\nsouth, "40"\n', encoding="utf-8")
    assert_same_table(reference(before, ["region", "age"]),
                      get_engine("spark").class_table(before, ["region", "age"], settings=settings))


def test_mixed_line_ends_and_a_file_of_blank_lines_are_refused(settings, tmp_path):
    """Spark takes the first record's line end for every record's: in a CR LF file a bare LF joined two records
    into one cell, where the reader reads two. And a header followed by blank lines has no records, as the
    reader says, where Spark gave an empty class table."""
    from kanon_core.errors import InputError
    from tests.test_engines import reference

    mixed = tmp_path / "mixed.csv"
    mixed.write_bytes(b"region,age\r\nnorth,30\r\nsouth,40\nnorth,22\r\n")
    with pytest.raises(InputError, match=r"^Line 3 ends otherwise than the first line \(CR LF and LF are mixed\)"):
        get_engine("spark").class_table(mixed, ["region", "age"], settings=settings)
    quoted = tmp_path / "quoted.csv"  # a line feed inside a quoted cell of a CR LF file (Excel's) is no line end
    quoted.write_bytes(b'region,age\r\n"no\nrth",30\r\nsouth,40\r\n')
    assert_same_table(reference(quoted, ["region", "age"]),
                      get_engine("spark").class_table(quoted, ["region", "age"], settings=settings))
    blank = tmp_path / "blank.csv"
    blank.write_bytes(b"region,age\n\n\n")
    with pytest.raises(InputError, match=r"no records"):
        get_engine("spark").class_table(blank, ["region"], settings=settings)


def test_a_line_of_spaces_alone_is_refused(settings, tmp_path):
    """The in-memory reader skips a line of spaces or tabs alone, as a blank line; Spark read it as a record of
    those spaces (one more class, one more record): refused, naming the line. A quoted cell of spaces is a
    value to every reader."""
    from kanon_core.errors import InputError
    from tests.test_engines import reference

    spaces = tmp_path / "spaces.csv"
    spaces.write_bytes(b"region,age\nnorth,30\n\n \t \nsouth,40\n")
    with pytest.raises(InputError, match=r"^Line 4 holds only spaces or tabs, which the in-memory reader skips"):
        get_engine("spark").class_table(spaces, ["region"], settings=settings)
    quoted = tmp_path / "quoted.csv"
    quoted.write_bytes(b'region,age\nnorth,30\n"   ",\nsouth,40\n')
    assert_same_table(reference(quoted, ["region", "age"]),
                      get_engine("spark").class_table(quoted, ["region", "age"], settings=settings))


def test_a_refusal_on_the_command_line_is_one_line_with_spark(tmp_path):
    """Run as an officer runs it, in a process of its own: standard error holds the refusal alone. Spark's JVM
    inherits the console and printed its start-up messages there (the JVM's module warning, log4j's profile,
    the machine's host name and address, 9 to 12 lines) before any log level could be set; PySpark added a
    warning about pandas. A successful run prints nothing on standard error either."""
    import subprocess
    import sys

    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"region,age\nnorth,30\nsouth,40,x,y\n")
    good = tmp_path / "good.csv"
    good.write_bytes(b"\n\nregion,age\nnorth,30\nsouth,40\nnorth,30\n")
    command = [sys.executable, "-m", "kanon_core", "risk", "--qi", "region,age", "--k", "2", "--engine", "spark"]
    refused = subprocess.run(command + [str(bad)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("kanon risk: error: "), refused.stderr
    done = subprocess.run(command + [str(good)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["n_records"] == 3
