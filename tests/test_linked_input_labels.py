"""An input given through a symbolic link reads its labels file as the file itself does: the one beside the
name given when there is one, else the one beside the file the link resolves to (so a declared missing code is
missing through the link too, and the figures do not depend on how the file was named)."""

from __future__ import annotations

import json
import os

import pytest

from kanon_core.cli import main
from kanon_core.io import input_sidecar, load_dataset


@pytest.fixture
def linked(tmp_path):
    real = tmp_path / "data"
    real.mkdir()
    (real / "d.csv").write_text("a,b\n-9,1\n-9,1\n5,1\n5,1\n7,2\n")
    (real / "d.labels.json").write_text(json.dumps({"a": {"missing_codes": ["-9"]}}))
    link = tmp_path / "link.csv"
    os.symlink(real / "d.csv", link)
    return real / "d.csv", link


def test_a_link_reads_the_labels_file_beside_its_file(linked):
    real, link = linked
    assert input_sidecar(link) == real.with_name("d.labels.json")
    assert load_dataset(link).missing_mask("a").sum() == load_dataset(real).missing_mask("a").sum() == 2


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_the_figures_do_not_depend_on_the_name_given(linked, tmp_path, engine):
    real, link = linked
    out = []
    for path in (real, link):
        dest = tmp_path / f"{path.stem}-{engine}.json"
        assert main(["risk", str(path), "--qi", "a,b", "--k", "2", "--engine", engine, "--json", str(dest)]) == 0
        res = json.loads(dest.read_text())
        out.append((res["n_violating"], res["n_records"]))
    assert out[0] == out[1]


def test_a_labels_file_beside_the_link_wins(linked):
    real, link = linked
    (link.parent / "link.labels.json").write_text(json.dumps({"a": {"missing_codes": ["5"]}}))
    assert input_sidecar(link) == link.with_name("link.labels.json")
    assert load_dataset(link).missing_mask("a").sum() == 2  # the two 5s
