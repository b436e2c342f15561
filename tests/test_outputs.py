"""Output paths are checked against inputs, and writes are atomic (kanon_core.outputs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kanon_core.errors import InputError
from kanon_core.outputs import (
    NamedPath,
    OutputBatch,
    atomic_path,
    atomic_write_bytes,
    check_outputs,
    data_inputs,
    release_outputs,
    sidecar_of,
    write_files,
)


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "data.csv"
    p.write_bytes(b"a,b\n1,2\n")
    sidecar_of(p).write_bytes(b"{}\n")
    return p


def test_sidecar_of_matches_the_reader():
    from kanon_core.io import sidecar_path

    for name in ("data.csv", "x.y.parquet", "d.sav", "noext"):
        assert sidecar_of(name) == sidecar_path(Path(name))


def test_output_equal_to_input_is_refused_in_every_spelling(data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    hard = tmp_path / "hard.csv"
    os.link(data, hard)
    for spelling in (data, "data.csv", "./data.csv", f"{tmp_path}/../{tmp_path.name}/data.csv", link, hard):
        with pytest.raises(InputError, match="would write over the input file"):
            check_outputs({"--output": spelling}, data_inputs(data))


def test_output_equal_to_the_input_sidecar_is_refused(data):
    with pytest.raises(InputError, match="labels file"):
        check_outputs({"--json": data.with_name("data.labels.json")}, data_inputs(data))
    # a release named like the input's stem: its sidecar would overwrite the input's labels
    with pytest.raises(InputError, match="the labels file of --output would write over the input's labels file"):
        check_outputs(release_outputs(data.with_name("data.parquet")), data_inputs(data))
    # without the sidecar (e.g. --no-labels) the Parquet release itself is fine
    assert check_outputs(release_outputs(data.with_name("data.parquet"), sidecar=False), data_inputs(data))


def test_two_outputs_naming_one_file_are_refused(data, tmp_path):
    out = tmp_path / "out.csv"
    with pytest.raises(InputError, match="--output and --report name the same file"):
        check_outputs({"--output": out, "--report": tmp_path / "." / "out.csv"}, data_inputs(data))
    with pytest.raises(InputError, match="name the same file"):
        check_outputs([*release_outputs(out), NamedPath("--json", tmp_path / "out.labels.json")], [])


def test_missing_folder_and_folder_outputs_are_refused(data, tmp_path):
    with pytest.raises(InputError, match="The folder of --output does not exist"):
        check_outputs({"--output": tmp_path / "nope" / "x.csv"}, data_inputs(data))
    with pytest.raises(InputError, match="names a folder"):
        check_outputs({"--output": tmp_path}, data_inputs(data))


def test_stdout_and_absent_options_are_not_files(data, tmp_path):
    ok = check_outputs({"--json": "-", "--report": None, "--output": tmp_path / "new.csv"}, data_inputs(data))
    assert ok == [tmp_path / "new.csv"]


def test_messages_name_roles_not_paths(data, tmp_path):
    secret = tmp_path / "secret_folder"
    with pytest.raises(InputError) as info:
        check_outputs({"--output": secret / "x.csv"}, data_inputs(data))
    assert "secret_folder" not in str(info.value) and "\n" not in str(info.value)


def test_an_input_read_through_a_symbolic_link_protects_the_real_files_labels(data, tmp_path):
    # reading link.csv -> data.csv, "-o data.parquet" wrote data.parquet's sidecar over data.labels.json
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    with pytest.raises(InputError, match="the labels file of --output would write over the input's labels file"):
        check_outputs(release_outputs(tmp_path / "data.parquet"), data_inputs(link))
    with pytest.raises(InputError, match="--json would write over the input's labels file"):
        check_outputs({"--json": tmp_path / "data.labels.json"}, data_inputs(link))
    # the labels file beside the link is the input's too
    with pytest.raises(InputError, match="would write over the input's labels file"):
        check_outputs(release_outputs(tmp_path / "link.parquet"), data_inputs(link))
    assert check_outputs(release_outputs(tmp_path / "other.parquet"), data_inputs(link))


def test_every_link_on_the_way_to_the_input_protects_its_labels(data, tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "middle.csv").symlink_to(Path("..") / data.name)  # a relative link
    first = tmp_path / "first.csv"
    first.symlink_to(Path("sub") / "middle.csv")
    for out in (sub / "middle.labels.json", tmp_path / "first.labels.json", data.with_name("data.labels.json")):
        with pytest.raises(InputError, match="would write over the input's labels file"):
            check_outputs({"--json": out}, data_inputs(first))


@pytest.mark.parametrize("labels_exist", [True, False])
def test_an_input_read_through_a_hard_link_protects_the_labels_of_its_other_names(data, tmp_path, labels_exist):
    hard = tmp_path / "hard.csv"
    os.link(data, hard)
    if not labels_exist:  # a new data.labels.json would change how data.csv reads: refused all the same
        data.with_name("data.labels.json").unlink()
    with pytest.raises(InputError, match="the labels file of --output would write over the input's labels file"):
        check_outputs(release_outputs(tmp_path / "data.parquet"), data_inputs(hard))
    with pytest.raises(InputError, match="--output would write over the input file"):
        check_outputs(release_outputs(tmp_path / "data.csv"), data_inputs(hard))
    # a symbolic link to the input in the output's folder names it as well
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "alias.csv").symlink_to(hard)
    with pytest.raises(InputError, match="would write over the input's labels file"):
        check_outputs({"--json": elsewhere / "alias.labels.json"}, data_inputs(hard))
    # names that are no other name of the input stay free
    (tmp_path / "copy.csv").write_bytes(data.read_bytes())
    assert check_outputs(release_outputs(tmp_path / "copy.parquet"), data_inputs(hard))
    assert check_outputs({"--json": tmp_path / "data.labels.json.bak"}, data_inputs(hard))


def test_dash_is_standard_output_only_for_a_json_summary(tmp_path):
    assert check_outputs({"-o/--json": "-", "--per-record": None}, []) == []
    assert check_outputs([NamedPath("--json", Path("-"))], []) == []
    for role in ("--per-record", "--list", "--output", "--step", "--report"):
        with pytest.raises(InputError, match=f"^{role} writes a file, not standard output"):
            check_outputs({"-o/--json": tmp_path / "s.json", role: "-"}, [])
    with pytest.raises(InputError, match="--report writes a file"):
        check_outputs([NamedPath("--report", Path("-"))], [])
    with pytest.raises(InputError, match="--output writes a file"):
        check_outputs(release_outputs("-"), [])
    with pytest.raises(InputError, match="-o/--json and --json both write to standard output"):
        check_outputs({"-o/--json": "-", "--json": "-"}, [])
    # "./-" is a file named "-", asked for on purpose
    assert check_outputs({"--per-record": "./-"}, []) == [Path("-")]


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


def test_batch_writes_all_or_nothing(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.json"
    a.write_bytes(b"old")
    with pytest.raises(RuntimeError), OutputBatch() as batch:
        batch.write_bytes(a, b"new")
        batch.write_bytes(b, b"{}")
        raise RuntimeError("fails after writing")
    assert a.read_bytes() == b"old" and not b.exists() and _leftovers(tmp_path) == []
    assert write_files([(a, b"new"), (b, b"{}")]) == [a, b]
    assert a.read_bytes() == b"new" and b.read_bytes() == b"{}" and _leftovers(tmp_path) == []


def test_a_failing_rename_leaves_no_temporary_files(tmp_path, monkeypatch):
    a = tmp_path / "a.csv"

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_bytes(a, b"x")
    assert not a.exists() and _leftovers(tmp_path) == []


def test_atomic_path_keeps_the_extension_and_permissions(tmp_path):
    target = tmp_path / "out.sav"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".sav" and tmp.parent == tmp_path and tmp != target
        tmp.write_bytes(b"new")
        assert target.read_bytes() == b"old"
    assert target.read_bytes() == b"new" and (target.stat().st_mode & 0o777) == 0o640
    fresh = tmp_path / "fresh.csv"
    atomic_write_bytes(fresh, b"x")
    mask = os.umask(0)
    os.umask(mask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_batch_cannot_be_committed_twice(tmp_path):
    batch = OutputBatch()
    batch.write_bytes(tmp_path / "x", b"1")
    batch.commit()
    with pytest.raises(RuntimeError):
        batch.commit()


def test_write_release_failing_in_the_writer_leaves_nothing(tmp_path, monkeypatch):
    import pandas as pd

    from kanon_core import export
    from kanon_core.dataset import Dataset

    ds = Dataset(frame=pd.DataFrame({"a": [1, 2, 3]}), name="d")
    out = tmp_path / "rel.csv"
    out.write_bytes(b"previous release")

    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(export, "labels_json", broken)
    from kanon_core.dataset import VariableMeta

    labelled = Dataset(frame=ds.frame, meta={"a": VariableMeta(label="A")}, name="d")
    with pytest.raises(OSError):
        export.write_release(labelled, out)
    assert out.read_bytes() == b"previous release" and _leftovers(tmp_path) == []


def test_write_release_failing_on_the_second_file_leaves_the_first_untouched(tmp_path, monkeypatch):
    import pandas as pd

    from kanon_core import export
    from kanon_core.dataset import Dataset, VariableMeta

    ds = Dataset(frame=pd.DataFrame({"a": [1, 2, 3]}), meta={"a": VariableMeta(label="A")}, name="d")
    out = tmp_path / "rel.csv"
    out.write_bytes(b"previous release")
    real = OutputBatch.write_bytes
    calls = []

    def second_fails(self, target, data):
        calls.append(target)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(self, target, data)

    monkeypatch.setattr(OutputBatch, "write_bytes", second_fails)
    with pytest.raises(OSError):
        export.write_release(ds, out)
    assert len(calls) == 2 and out.read_bytes() == b"previous release"
    assert not (tmp_path / "rel.labels.json").exists() and _leftovers(tmp_path) == []


def test_a_stale_sidecar_of_an_earlier_release_is_replaced(tmp_path):
    import pandas as pd

    from kanon_core import export
    from kanon_core.dataset import Dataset, VariableMeta
    from kanon_core.io import load_dataset

    out = tmp_path / "rel.csv"
    coded = Dataset(frame=pd.DataFrame({"a": [1, 2, 3]}), meta={"a": VariableMeta(missing_codes=(2,))}, name="d")
    assert export.write_release(coded, out) == [out, tmp_path / "rel.labels.json"]
    assert load_dataset(out).missing_mask("a").tolist() == [False, True, False]
    plain = Dataset(frame=pd.DataFrame({"a": [1, 2, 3]}), name="d")
    assert export.write_release(plain, out) == [out, tmp_path / "rel.labels.json"]
    assert (tmp_path / "rel.labels.json").read_text() == "{}\n"
    assert load_dataset(out).missing_mask("a").tolist() == [False, False, False]  # 2 is a value again
    fresh = tmp_path / "new.csv"
    assert export.write_release(plain, fresh) == [fresh]  # nothing to declare, no sidecar there: none written


def test_a_name_near_the_length_limit_can_be_written(tmp_path):
    target = tmp_path / ("x" * 240 + ".csv")
    atomic_write_bytes(target, b"1\n")
    assert target.read_bytes() == b"1\n" and _leftovers(tmp_path) == []


def test_a_symbolic_link_target_is_written_through(tmp_path):
    """``-o link`` writes the file the link points to and keeps the link (a rename would replace the link)."""
    real = tmp_path / "real.json"
    real.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert check_outputs({"--json": link}, []) == [link]
    atomic_write_bytes(link, b"new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_dangling_link_creates_its_target(tmp_path):
    (tmp_path / "sub").mkdir()
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "sub" / "made.csv")
    check_outputs({"--output": link}, [])
    atomic_write_bytes(link, b"x")
    assert link.is_symlink() and (tmp_path / "sub" / "made.csv").read_bytes() == b"x"


def test_a_link_into_a_missing_folder_is_refused(tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "nowhere" / "made.csv")
    with pytest.raises(InputError, match="folder of --output does not exist"):
        check_outputs({"--output": link}, [])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX feature")
def test_a_named_pipe_target_receives_the_bytes_and_stays_a_pipe(tmp_path):
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    with OutputBatch() as batch:
        batch.write_bytes(fifo, b"through the pipe")
        batch.write_bytes(tmp_path / "file.txt", b"beside it")
    reader.join(timeout=60)
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert (tmp_path / "file.txt").read_bytes() == b"beside it"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "out.fifo"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs a device that is always full")
def test_a_failed_write_into_a_device_is_an_error_and_touches_no_file(tmp_path):
    import stat

    before = os.stat("/dev/full")
    (tmp_path / "file.txt").write_bytes(b"old")
    with pytest.raises(OSError), OutputBatch() as batch:
        batch.write_bytes(tmp_path / "file.txt", b"new")
        batch.write_bytes("/dev/full", b"x" * 10_000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode) and os.stat("/dev/full").st_rdev == before.st_rdev
    assert (tmp_path / "file.txt").read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]
