"""Reading exactly what is written: only empty cells (and declared codes) are missing, text stays text,
numbers keep their text, one encoding per file, Excel sheets chosen explicitly."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kanon_core.cli import main
from kanon_core.dataset import Dataset, Roles
from kanon_core.declare_missing import DeclareMissingValues
from kanon_core.errors import InputError
from kanon_core.export import write_release
from kanon_core.io import (
    _cells,
    cell_text,
    csv_bytes,
    decode_text,
    excel_sheets,
    float_text,
    load_dataset,
    missing_like_counts,
    missing_like_notice,
    missing_like_values,
    read_table,
    type_column,
)
from kanon_core.recipe import Recipe
from kanon_core.risk.summary import risk_summary
from kanon_core.steps import step_from_dict


def _csv(tmp_path, text: str, name: str = "d.csv", encoding: str = "utf-8"):
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return p


# -- missing is only empty --------------------------------------------------------------------------------------
NAMIBIA = "country,sex\nNA,m\nZA,m\nZA,m\nBW,f\nBW,f\nnull,f\nNone,m\n"


def test_namibia_stays_a_country_and_its_unique_record_violates_k(tmp_path):
    ds = load_dataset(_csv(tmp_path, NAMIBIA), roles=Roles(qis=("country", "sex")))
    assert ds.frame["country"].tolist() == ["NA", "ZA", "ZA", "BW", "BW", "null", "None"]
    assert not ds.missing_mask("country").any()
    summary = risk_summary(ds.qi_matrix(), k=2, missing="wildcard")
    # NA/m, null/f and None/m are unique; read as missing they would match everyone and hide
    assert summary.n_violating == 3 and summary.n_sample_uniques == 3


def test_only_empty_cells_are_missing(tmp_path):
    ds = load_dataset(_csv(tmp_path, 'a,b\nx,1\n,2\n"",3\nNA,\n'))
    assert ds.missing_mask("a").tolist() == [False, True, True, False]
    assert ds.missing_mask("b").tolist() == [False, False, False, True]
    assert str(ds.frame["b"].dtype) == "Int64"


def test_missing_like_text_is_reported_per_column_with_counts(tmp_path):
    ds = load_dataset(_csv(tmp_path, "a,b,c,n\nNA,x,1,1\nn/a,NULL,2,2\nNA,y,3,3\nok,none,4,\n"))
    assert missing_like_values(ds) == {"a": {"NA": 2, "n/a": 1}, "b": {"NULL": 1, "none": 1}}
    assert missing_like_counts(ds) == {"a": 3, "b": 2}
    assert missing_like_notice({"a": 3, "b": 1}) == (
        "columns with text that often means missing (not treated as missing): a (3), b (1); "
        "declare with --missing-codes")


def test_declared_codes_are_no_longer_reported(tmp_path):
    ds = load_dataset(_csv(tmp_path, "a,b\nNA,?\nx,y\n"), missing_codes={"a": ("NA",)})
    assert ds.missing_mask("a").tolist() == [True, False]
    assert missing_like_counts(ds) == {"b": 1}


# -- numbers only when their text comes back -------------------------------------------------------------------
@pytest.mark.parametrize("cells,dtype,style", [
    (["02138", "10001"], "str", "repr"),  # leading zeros: a ZIP code, not a number
    (["1e3", "5"], "str", "repr"),  # an exponent would be written back as 1000.0
    ([" 7", "8"], "str", "repr"),  # spaces kept
    (["+3", "4"], "str", "repr"),
    (["-0", "1"], "str", "repr"),
    (["1.50", "2.5"], "str", "repr"),  # trailing zero would be lost
    (["2.0", "3"], "str", "repr"),  # two styles in one column
    (["99999999999999999999", "1"], "str", "repr"),  # beyond 64 bits
    (["12345678901234567", "-3"], "int64", "repr"),
    (["12345678901234567", ""], "Int64", "repr"),
    (["2.0", "1.5", ""], "float64", "repr"),  # as Python writes floats
    (["2", "1.5", ""], "float64", "plain"),  # as R, Stata and Excel write them
    (["72500000", "1.25"], "float64", "plain"),
    (["0.1", "0.0", "1e+16"], "float64", "repr"),
    (["-0.0", "1.5"], "str", "repr"),  # -0 would equal 0
    (["nan", "1.5"], "str", "repr"),
    (["inf", "1.5"], "str", "repr"),
    (["", ""], "float64", "repr"),
])
def test_type_column(cells, dtype, style):
    s, got_style = type_column(pd.Series(cells, dtype=object))
    assert (str(s.dtype), got_style) == (dtype, style)
    written = ["" if pd.isna(v) else cell_text(v, style) for v in s.tolist()]
    assert written == cells


def test_float_text_styles():
    assert [float_text(x) for x in (2.0, 0.1, 1e16, -0.0)] == ["2.0", "0.1", "1e+16", "-0.0"]
    assert [float_text(x, "plain") for x in (2.0, 0.1, 1e16, 1e15)] == ["2", "0.1", "1e+16", "1000000000000000"]


def test_seventeen_digit_integers_with_a_gap_keep_every_digit(tmp_path):
    p = _csv(tmp_path, "id,x\n12345678901234567,1\n,2\n98765432109876543,3\n")
    ds = load_dataset(p)
    assert ds.frame["id"].tolist()[0] == 12345678901234567 and ds.frame["id"].tolist()[2] == 98765432109876543
    assert csv_bytes(ds.frame) == p.read_bytes()


@pytest.mark.parametrize("text", [
    "zip,x\n02138,1\n10001,2\n",
    "v,x\n1e3,1\n2,2\n",
    "v,x\n 7,1\n8,2\n",
    "country,x\nNA,1\nZA,\n",
    "a,b\n1.5,2.0\n,3.25\n",
    "a,b\nMontréal,年齢\n,x\n",
    "y,w\n13.335,2\n12,1.5\n,3\n",  # floats as R writes them
])
def test_release_with_no_treatment_reproduces_the_file(tmp_path, text):
    p = _csv(tmp_path, text)
    out = tmp_path / "out.csv"
    write_release(load_dataset(p), out)
    assert out.read_bytes() == p.read_bytes()


def test_missing_codes_match_the_column_type(tmp_path):
    p = _csv(tmp_path, "zip,n,t\n02138,-9,-9\n2138,1,x\n")
    ds = load_dataset(p, missing_codes={"zip": ("02138",), "n": ("-9",), "t": ("-9",)})
    assert ds.missing_mask("zip").tolist() == [True, False]
    assert ds.missing_mask("n").tolist() == [True, False] and ds.meta_of("n").missing_codes == (-9,)
    assert ds.missing_mask("t").tolist() == [True, False] and ds.meta_of("t").missing_codes == ("-9",)


def test_short_records_have_empty_cells_and_long_ones_are_refused(tmp_path):
    t = read_table(_csv(tmp_path, "a,b,c\n1,x,2.5\n3\n4,y\n")).frame
    assert t["b"].isna().tolist() == [False, True, False]
    assert t["c"].isna().tolist() == [False, True, True] and t["c"].tolist()[0] == 2.5
    for text, record in (("a,b\n1,x,2\n3,y\n", 1), ("a,b\n1,x\n3,y,4\n5,z\n", 2)):
        with pytest.raises(InputError, match=f"Record {record} .* has 3 fields but the header names 2"):
            read_table(_csv(tmp_path, text))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["", "x", "7"]), min_size=1, max_size=4), min_size=1, max_size=5))
def test_fields_beyond_the_header_are_dropped_only_when_empty(tmp_path_factory, records):
    """Under a header of two, records of one to four fields (blank lines among them): the file is read when
    every field beyond the header is empty, each record as its first two fields; else it is refused, naming
    the first record with text beyond the header (blank lines are counted)."""
    assume(any(r != [""] for r in records))  # else a file of blank lines: no records
    path = _csv(tmp_path_factory.mktemp("long"), "a,b\n" + "".join(",".join(r) + "\n" for r in records))
    beyond = [n for n, r in enumerate(records, start=1) if any(r[2:])]
    try:
        frame = read_table(path).frame
    except InputError as exc:
        assert beyond and str(exc).startswith(f"Record {beyond[0]} ("), (records, str(exc))
        return
    assert not beyond
    kept = [(r + ["", ""])[:2] for r in records if r != [""]]
    assert [[_as_written(v) for v in row] for row in frame.itertuples(index=False)] == kept


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "7", " ", '"', '""', "\n", "\r\n", "\r", ",", "\t", "x y"]), max_size=16))
def test_a_file_read_with_names_for_extra_fields_reads_every_cell_alike(tokens):
    """The second read of a file with empty fields beyond the header gives those fields names: on any file
    the plain read takes (quotes, spaces, lone CRs, tabs), its cells equal the plain read's."""
    text = "c0,c1\n" + "".join(tokens) + "\n"
    try:
        plain = _cells(text, ",")
    except (pd.errors.ParserError, pd.errors.ParserWarning):
        return
    named = _cells(text, ",", ["c0", "c1", "\x00extra field 0"])[["c0", "c1"]]
    assert plain.fillna("<missing>").values.tolist() == named.fillna("<missing>").values.tolist()


def _as_written(value) -> str:
    """A read cell (of "", "x" or "7") back as the text it was written with: a missing cell was empty."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return ""
    return str(value)


def test_unclosed_quote_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="near line 3: a quoted cell is never closed") as exc:
        read_table(_csv(tmp_path, 'a,b\n1,x\n2,"SECRET\n3,z\n'))
    assert "SECRET" not in str(exc.value)


# -- encodings, line ends --------------------------------------------------------------------------------------
def test_utf16_with_bom(tmp_path):
    p = _csv(tmp_path, "city,x\r\nMontréal,1\r\nQuébec,2\r\n", encoding="utf-16")
    assert read_table(p).frame["city"].tolist() == ["Montréal", "Québec"]


def test_utf8_bom(tmp_path):
    p = tmp_path / "d.csv"
    p.write_bytes(b"\xef\xbb\xbfcity,x\nMontr\xc3\xa9al,1\n")
    assert list(read_table(p).frame.columns) == ["city", "x"]


def test_cr_only_line_ends(tmp_path):
    p = _csv(tmp_path, "a,b\r 7,x\rNA,\r")
    t = read_table(p).frame
    assert t["a"].tolist() == [" 7", "NA"] and t["b"].isna().tolist() == [False, True]


def test_whole_file_in_windows_1252_is_decoded_consistently(tmp_path):
    p = _csv(tmp_path, "city,x\nMontréal,1\nQuébec,2\n", encoding="cp1252")
    assert read_table(p).frame["city"].tolist() == ["Montréal", "Québec"]


def test_stray_latin1_byte_in_utf8_file_stops_naming_the_line(tmp_path):
    raw = "city,x\nMontréal,1\nMontréal,2\n".encode() + "Québec,3\n".encode("latin-1") + b"Montr\xc3\xa9al,4\n"
    p = tmp_path / "d.csv"
    p.write_bytes(raw)
    with pytest.raises(InputError, match="Line 4 ") as exc:
        read_table(p)
    assert "Qu" not in str(exc.value) and "Montr" not in str(exc.value)


def test_decode_text_line_number_with_cr_only():
    raw = "a\rMontréal\r".encode() + b"b\xe9\r"
    with pytest.raises(InputError, match="Line 3 "):
        decode_text(raw)


def test_broken_utf16_names_its_line(tmp_path):
    raw = "a,b\nx,1\ny,2\n".encode("utf-16") + b"\x00\xd8z\x00"  # a lone surrogate on line 4
    p = tmp_path / "d.csv"
    p.write_bytes(raw)
    with pytest.raises(InputError, match="Line 4 is not valid UTF-16"):
        read_table(p)


def test_stray_byte_cli_is_one_line_exit_2(tmp_path, capsys):
    p = tmp_path / "d.csv"
    p.write_bytes("a,b\nMontréal,1\n".encode() + b"Qu\xe9bec,2\n")
    assert main(["risk", str(p), "--qi", "a"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Line 3" in err


# -- Excel sheets ----------------------------------------------------------------------------------------------
@pytest.fixture
def workbook(tmp_path):
    p = tmp_path / "w.xlsx"
    with pd.ExcelWriter(p) as xw:
        pd.DataFrame({"country": ["NA", "ZA", "ZA"], "n": [1, 2, 3]}).to_excel(xw, sheet_name="people", index=False)
        pd.DataFrame({"y": ["a", "", "b"]}).to_excel(xw, sheet_name="other", index=False)
    return p


def test_workbook_with_several_sheets_needs_a_choice(workbook):
    assert excel_sheets(workbook) == ["people", "other"]
    with pytest.raises(InputError, match="2 sheets \\(people, other\\)"):
        read_table(workbook)
    with pytest.raises(InputError, match="no sheet 'nope'"):
        read_table(workbook, sheet="nope")
    people = read_table(workbook, sheet="people").frame
    assert people["country"].tolist() == ["NA", "ZA", "ZA"]
    other = read_table(workbook.read_bytes(), filename="w.xlsx", sheet="other").frame
    assert other["y"].isna().tolist() == [False, True, False]


def test_sheet_option_on_the_cli(workbook, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["risk", str(workbook), "--qi", "country", "--k", "2", "--json", str(out)]) == 2
    assert "--sheet" in capsys.readouterr().err
    assert main(["risk", str(workbook), "--sheet", "people", "--qi", "country", "--k", "2", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["n_violating"] == 1  # NA (Namibia) is unique


def test_sheet_on_a_csv_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="Excel"):
        read_table(_csv(tmp_path, "a\n1\n"), sheet="x")


# -- other readers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ext", [".parquet", ".dta", ".sav"])
def test_typed_formats_keep_missing_like_text(tmp_path, ext):
    frame = pd.DataFrame({"country": ["NA", "None", "ZA"], "n": [1.0, 2.0, 3.0]})
    ds = Dataset(frame=frame)
    out = tmp_path / f"d{ext}"
    write_release(ds, out)
    back = load_dataset(out)
    assert back.frame["country"].tolist() == ["NA", "None", "ZA"]
    assert not back.missing_mask("country").any()


@pytest.mark.parametrize("ext", [".parquet", ".dta", ".sav"])
def test_empty_text_cells_of_typed_formats_are_missing(tmp_path, ext):
    ds = Dataset(frame=pd.DataFrame({"city": ["Québec", None, "NA"], "n": [1.0, 2.0, 3.0]}))
    out = tmp_path / f"d{ext}"
    write_release(ds, out)
    back = load_dataset(out)
    assert back.missing_mask("city").tolist() == [False, True, False]
    assert back.frame["city"].tolist()[2] == "NA"


# -- the CLI notice and the declaring step ---------------------------------------------------------------------
def test_cli_notice_names_columns_and_counts_only(tmp_path, capsys):
    p = _csv(tmp_path, "country,sex\nNA,m\nZA,?\nZA,m\n")
    assert main(["risk", str(p), "--qi", "country,sex", "--k", "2", "--json", str(tmp_path / "r.json")]) == 0
    notices = [ln for ln in capsys.readouterr().err.splitlines() if "notice" in ln]
    assert notices == ["kanon: notice: columns with text that often means missing (not treated as missing): "
                       "country (1), sex (1); declare with --missing-codes"]
    assert main(["risk", str(p), "--qi", "country,sex", "--k", "2", "--missing-codes", "country=NA,sex=?",
                 "--json", str(tmp_path / "r.json")]) == 0
    assert "notice" not in capsys.readouterr().err


def test_declare_missing_values_step(tmp_path):
    ds = load_dataset(_csv(tmp_path, "a,b,n\nNA,x,-9\nn/a,NULL,1\nok,y,2\n"), missing_codes={"n": ("-9",)})
    step = DeclareMissingValues.missing_like(ds)
    assert step.values == (("a", ("NA", "n/a")), ("b", ("NULL",)))
    out = step.apply(ds)
    assert out.missing_mask("a").tolist() == [True, True, False]
    assert out.missing_mask("b").tolist() == [False, True, False]
    assert out.meta_of("n").missing_codes == (-9,)
    assert out.frame is ds.frame or out.frame.equals(ds.frame)  # the data are unchanged
    assert missing_like_counts(out) == {}
    assert step_from_dict(json.loads(json.dumps(step.to_dict()))) == step
    assert "a (NA, n/a)" in step.describe()
    # declaring again adds nothing twice
    assert step.apply(out).meta_of("a").missing_codes == ("NA", "n/a")


def test_declare_missing_values_errors(tmp_path):
    ds = load_dataset(_csv(tmp_path, "a\nNA\nx\n"))
    with pytest.raises(InputError, match="unknown variable"):
        DeclareMissingValues((("zz", ("NA",)),)).apply(ds)
    with pytest.raises(InputError, match="No values"):
        DeclareMissingValues(()).apply(ds)


def test_declared_step_is_replayed_by_kanon_apply(tmp_path):
    from kanon_core.history import History

    p = _csv(tmp_path, "country,sex\nNA,m\nZA,m\nZA,m\nBW,f\nBW,f\n")
    ds = load_dataset(p, roles=Roles(qis=("country", "sex")))
    history = History.start(ds)
    step = DeclareMissingValues.missing_like(ds)
    history.apply(step)
    recipe = tmp_path / "r.recipe.json"
    Recipe.from_history(history, input_path=p.name).save(recipe)
    out = tmp_path / "release.csv"
    assert main(["apply", str(recipe), "-o", str(out)]) == 0
    assert out.read_bytes() == p.read_bytes()  # declaring changes no cell
    side = json.loads((tmp_path / "release.labels.json").read_text())
    assert side["country"]["missing_codes"] == ["NA"]
    back = load_dataset(out)
    assert back.missing_mask("country").tolist() == [True, False, False, False, False]
    assert int(risk_summary(history.current.dataset.qi_matrix(), k=2).n_violating) == 0
    assert int(risk_summary(ds.qi_matrix(), k=2).n_violating) == 1


def test_suppression_keeps_untouched_numbers_text(tmp_path):
    rows = ["inc,grp,w"] + [f"72500000,{g},1.5" for g in "aabb"] + ["1.25,c,2.0"]
    p = _csv(tmp_path, "\n".join(rows) + "\n")
    out = tmp_path / "s.csv"
    # the record-wise model suppresses only the unique group (strict would also blank a partner class)
    assert main(["suppress", str(p), "--qi", "grp", "--k", "2", "--model", "record", "-o", str(out), "--json",
                 str(tmp_path / "s.json")]) == 0
    lines = out.read_text().splitlines()
    assert lines[1:5] == [f"72500000,{g},1.5" for g in "aabb"]
    assert str(load_dataset(p).frame["inc"].dtype) == "float64"  # a number, written as it was read
    inc, grp, w = lines[5].split(",")
    assert (inc, w) == ("1.25", "2.0") and grp != "c"  # only the unique group is suppressed


def test_suppressed_integer_column_keeps_the_other_integers(tmp_path):
    rows = ["inc,grp"] + [f"72500000,{g}" for g in "aabb"] + ["61000000,a"]
    p = _csv(tmp_path, "\n".join(rows) + "\n")
    out = tmp_path / "s.csv"
    assert main(["suppress", str(p), "--qi", "inc,grp", "--k", "2", "--importance", "grp=5", "--model", "record",
                 "-o", str(out), "--json", str(tmp_path / "s.json")]) == 0
    lines = out.read_text().splitlines()
    assert lines[1:5] == [f"72500000,{g}" for g in "aabb"]
    assert lines[5].endswith(",a") and not lines[5].startswith("61000000")


def test_samples_round_trip_byte_for_byte():
    from kanon_app.samples import SAMPLES

    els = SAMPLES["els"].path
    assert csv_bytes(load_dataset(els).frame) == els.read_bytes()


def test_numpy_values_are_written_like_python_values():
    assert cell_text(np.int64(5)) == "5" and cell_text(np.float64(0.1)) == "0.1" and cell_text(2.0) == "2.0"


def test_estimate_reads_a_chosen_sheet_and_keeps_namibia(workbook, tmp_path):
    out = tmp_path / "e.json"
    assert main(["estimate", str(workbook), "--sheet", "people", "--var", "country", "--weight", "n",
                 "-o", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [(r["level"], r["estimate"]) for r in rows] == [("NA", pytest.approx(1 / 6)), ("ZA", pytest.approx(5 / 6))]


def test_a_workbook_s_true_and_1_are_two_categories(tmp_path):
    """A column mixing TRUE/FALSE with numbers: Python counts True equal to 1, so the two were one category to
    every count (k = 2 where the file has k = 1) while every writer and reader sees two values. A true/false
    cell of a mixed column reads as the text the workbook shows; a column of true/false alone stays boolean."""
    from kanon_core.risk.classes import class_sizes

    path = tmp_path / "mix.xlsx"
    pd.DataFrame({"a": [1, True, 2, 2, False, 0], "b": ["p", "p", "q", "q", "r", "r"],
                  "flag": [True, False, True, True, False, False]}).to_excel(path, index=False)
    ds = load_dataset(path, roles=Roles(qis=("a", "b")))
    assert ds.frame["a"].tolist() == [1, "TRUE", 2, 2, "FALSE", 0]
    assert ds.frame["flag"].dtype == bool
    assert class_sizes(ds.qi_matrix(["a", "b"]).codes, "wildcard").tolist() == [1, 1, 2, 2, 1, 1]


def test_formula_cells_without_a_computed_value_are_refused_not_missing(tmp_path):
    """A workbook written by a script holds formulas without their values; the cells read as empty, i.e.
    missing (and wildcards that make others look safe). Refused naming the column and count, no formula;
    a truly empty cell in the same sheet is still missing."""
    import openpyxl

    from kanon_core.errors import InputError

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["id", "sex", "w"])
    for i in range(6):
        sheet.append([i, "=SECRET()" if i < 3 else "m", 1 if i else None])
    path = tmp_path / "f.xlsx"
    book.save(path)
    with pytest.raises(InputError) as err:
        load_dataset(path)
    assert str(err.value).startswith("Cells with a formula but no computed value in column(s) sex (3):")
    assert "SECRET" not in str(err.value)
    for row in sheet.iter_rows(min_row=2, max_row=4, min_col=2, max_col=2):
        row[0].value = "f"
    book.save(path)
    assert load_dataset(path).frame["w"].isna().tolist() == [True] + [False] * 5
