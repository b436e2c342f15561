"""Edge cases of reading files: Excel text cells and headers, very long CSV headers, line numbers of
encoding errors after a byte-order mark, unnamed columns, and Parquet columns of lists or records.

Each case once changed a value or a name silently, or failed with an unexpected error."""

from __future__ import annotations

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kanon_core.cli import main
from kanon_core.engines.source import open_source
from kanon_core.errors import InputError
from kanon_core.io import load_dataset, read_table


def _workbook(path, rows):
    """An .xlsx file whose cells hold exactly the Python values given (str cells are stored as text)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    for row in rows:
        ws.append(row)
    wb.save(path)
    return path


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err
    return err


# -- 1. Excel text cells stay text ---------------------------------------------------------------------------
def test_excel_text_cells_that_look_like_numbers_stay_text(tmp_path):
    path = _workbook(tmp_path / "zeros.xlsx", [["code", "sex", "n", "mixed"],
                                              ["007", "M", 1, "7"],
                                              ["012", "F", 2, 7],
                                              ["007", "M", 3, " 7"]])
    frame = read_table(path).frame
    assert frame["code"].tolist() == ["007", "012", "007"]
    assert frame["mixed"].tolist() == ["7", 7, " 7"]  # the text "7" and the number 7 are two values
    assert frame["n"].tolist() == [1, 2, 3] and frame["n"].dtype.kind == "i"


def test_excel_codes_are_released_as_written(tmp_path, capsys):
    path = _workbook(tmp_path / "zeros.xlsx", [["code", "sex"], ["007", "M"], ["012", "F"],
                                               ["007", "M"], ["012", "F"]])
    out = tmp_path / "x.csv"
    assert main(["suppress", str(path), "--qi", "code,sex", "--k", "2", "-o", str(out)]) == 0
    assert out.read_text().splitlines() == ["code,sex", "007,M", "012,F", "007,M", "012,F"]


# -- 2. and 5. Excel headers are checked like CSV headers ------------------------------------------------------
def test_excel_duplicated_names_are_refused_as_in_csv(tmp_path, capsys):
    xlsx = _workbook(tmp_path / "dup.xlsx", [["sex", "age", "sex"], ["M", 1, "F"], ["F", 2, "M"]])
    csv_file = tmp_path / "dup.csv"
    csv_file.write_text("sex,age,sex\nM,1,F\nF,2,M\n")
    with pytest.raises(InputError) as from_csv:
        read_table(csv_file)
    with pytest.raises(InputError) as from_excel:
        read_table(xlsx)
    assert str(from_excel.value) == str(from_csv.value)
    assert str(from_excel.value).startswith("Duplicated column names: sex.")
    assert main(["roles", str(xlsx)]) == 2
    assert "Duplicated column names: sex." in _one_line_error(capsys)


def test_excel_column_without_a_name_is_refused(tmp_path, capsys):
    path = _workbook(tmp_path / "unnamed.xlsx", [["sex", None, "w"], ["M", "SECRET", 1], ["F", "b", 2]])
    with pytest.raises(InputError, match="^Column 2 has no name in the header: name every column.$"):
        load_dataset(path)
    assert main(["roles", str(path)]) == 2
    err = _one_line_error(capsys)
    assert "Column 2 has no name" in err and "SECRET" not in err


# -- 5. CSV columns without a name -----------------------------------------------------------------------------
@pytest.mark.parametrize("text, position", [
    ("sex,,w\nM,a,1\nF,b,2\n", 2),
    ("sex, ,w\nM,a,1\nF,b,2\n", 2),
    ("sex,w,\nM,1,a\nF,2,b\n", 3),
])
def test_csv_column_without_a_name_is_refused(tmp_path, capsys, text, position):
    path = tmp_path / "unnamed.csv"
    path.write_text(text)
    message = f"Column {position} has no name in the header: name every column."
    with pytest.raises(InputError) as exc:
        read_table(path)
    assert str(exc.value) == message
    with pytest.raises(InputError) as engines:
        open_source(path)
    assert str(engines.value) == message
    assert main(["roles", str(path)]) == 2
    assert message in _one_line_error(capsys)


# -- 3. headers longer than any sample -------------------------------------------------------------------------
WIDE = [f"v{i}_{'x' * 30}" for i in range(2500)]  # about 90 KiB of header, more than the 64 KiB sample


def _wide_csv(path, names):
    path.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n" + ",".join("2" for _ in names) + "\n")
    return path


def test_a_header_longer_than_the_sample_is_read_in_full(tmp_path, capsys):
    path = _wide_csv(tmp_path / "wide.csv", WIDE)
    assert list(read_table(path).frame.columns) == WIDE
    assert list(open_source(path).columns) == WIDE
    assert main(["roles", str(path)]) == 0


def test_a_duplicate_beyond_the_sample_is_refused(tmp_path, capsys):
    path = _wide_csv(tmp_path / "wide.csv", [*WIDE, "sex", "sex"])
    for read in (read_table, open_source):
        with pytest.raises(InputError) as exc:
            read(path)
        assert str(exc.value).startswith("Duplicated column names: sex.")
    assert main(["suppress", str(path), "--qi", "sex", "--k", "2", "-o", str(tmp_path / "o.csv")]) == 2
    assert "Duplicated column names: sex." in _one_line_error(capsys)
    assert not (tmp_path / "o.csv").exists()


def test_quoted_names_with_delimiters_and_line_breaks(tmp_path):
    ok = tmp_path / "ok.csv"
    ok.write_text('"a,b","c\nd",e\n1,2,3\n')
    assert list(read_table(ok).frame.columns) == ["a,b", "c\nd", "e"]
    assert list(open_source(ok).columns) == ["a,b", "c\nd", "e"]
    dup = tmp_path / "dup.csv"
    dup.write_text('"x\ny",v,"x\ny"\n1,2,3\n')
    for read in (read_table, open_source):
        with pytest.raises(InputError, match="^Duplicated column names: x\ny."):
            read(dup)
    wide = tmp_path / "wide.csv"  # a quoted duplicate with a delimiter, beyond the sample
    wide.write_text(",".join(WIDE) + ',"p,q",z,"p,q"\n' + ",".join("1" for _ in range(len(WIDE) + 3)) + "\n")
    for read in (read_table, open_source):
        with pytest.raises(InputError, match="^Duplicated column names: p,q."):
            read(wide)


# -- 4. line numbers of encoding errors after a byte-order mark ------------------------------------------------
@pytest.mark.parametrize("before", [b"", b"z", b"zz", b"zzzzz"])
def test_utf8_bom_file_names_the_line_of_the_bad_byte(tmp_path, before):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\nx,y\n" + before + b"\xff,w\n")
    with pytest.raises(InputError, match="^Line 3 is not valid UTF-8 although the file starts with its byte-order mark"):
        read_table(path)


def test_utf16_bom_file_names_the_line_of_the_bad_unit(tmp_path):
    path = tmp_path / "bom16.csv"
    path.write_bytes("a,b\nx,y\n".encode("utf-16") + b"\x00\xd8" + "z,w\n".encode("utf-16-le"))
    with pytest.raises(InputError, match="^Line 3 is not valid UTF-16"):
        read_table(path)


# -- 6. Parquet columns of lists or records --------------------------------------------------------------------
@pytest.fixture
def nested_parquet(tmp_path):
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"sex": ["M", "F", "M"], "tags": [[11, 12], [13], []],
                             "age": [30, 40, 50]}), path)
    return path


def test_parquet_list_column_is_refused_by_name(nested_parquet, capsys):
    with pytest.raises(InputError, match="^Column 'tags' holds lists or records .*single values "
                                         r"\(numbers, text, dates, true/false\)"):
        read_table(nested_parquet)
    for args in (["risk", str(nested_parquet), "--qi", "tags,sex"],
                 ["suppress", str(nested_parquet), "--qi", "sex", "--k", "2", "-o", str(nested_parquet.with_suffix(".sav"))]):
        assert main(args) == 2
        err = _one_line_error(capsys)
        assert "'tags'" in err and "unexpected" not in err and "11" not in err


def test_parquet_record_and_map_columns_are_all_named(tmp_path):
    path = tmp_path / "records.parquet"
    links = pa.array([[("k", 1)], [("k", 2)]], type=pa.map_(pa.string(), pa.int64()))
    pq.write_table(pa.table({"home": [{"x": 1}, {"x": 2}], "sex": ["M", "F"], "links": links}), path)
    with pytest.raises(InputError, match="^Columns 'home', 'links' hold lists or records"):
        read_table(path.read_bytes(), filename="records.parquet")
