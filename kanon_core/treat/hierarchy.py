"""Generalization hierarchies: for every original value, its generalized value at each level.

A hierarchy is Sweeney's value generalization hierarchy (Sweeney 2002, "DGH/VGH"): level 0 is the original
value, each next level is coarser, the last level is ``*`` (nothing released). It is stored the way ARX
stores it on disk: one row per original value, one column per level, so ARX hierarchy files
(semicolon-separated, no header) import and export without loss.

Values in a data file and in a hierarchy file rarely have the same type (an age read as the integer 39,
the hierarchy cell the text ``"39"``; a ZIP code 2138 against ``"02138"``), so numbers are matched through
:func:`value_key`, a normalised text form in which numbers compare by value. Text is matched as text first:
the codes ``"012"`` and ``"12"`` of a text column are two values and may have two rows (see
:meth:`Hierarchy.match`).

The builders (intervals, quantiles, the greedy capacity binning of Angiuli & Waldo, top/bottom coding and
clipping of Near & Abuah, category grouping, character masking of Sweeney 2002, dates) all return a
:class:`Hierarchy`; validation is in one place, the constructor.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import heapq
import io
import math
import operator
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..exact_numbers import MAX_EXACT_WHOLE, count_beyond_double

TOP = "*"
"""The label of the last level: the value is not released."""


# -- matching values -------------------------------------------------------------------------------------------
_WHOLE_TEXT = re.compile(r"[+-]?[0-9]+")


def value_key(value: Any) -> str | None:
    """A normalised text form of a value, so that ``39``, ``39.0``, ``"39"`` and ``" 39 "`` match.

    Numbers (and texts that read as finite numbers) compare by value: integral numbers become their
    integer digits (``"02138"`` and ``2138`` give ``"2138"``), others their shortest float repr. Any
    other text is stripped. Missing values (None, NaN, NA) give None.
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if math.isnan(f):
            return None
        return _number_key(f)
    if isinstance(value, (pd.Timestamp, datetime.datetime, datetime.date, np.datetime64)):
        return _date_key(value)
    text = str(value).strip()
    if _WHOLE_TEXT.fullmatch(text):  # whole-number digits read exactly: through a float, 17 digits would round
        return str(int(text))
    if text and text[0] in "+-.0123456789":
        try:
            f = float(text)
        except ValueError:
            return text
        if math.isfinite(f):
            return _number_key(f)
    return text


def _date_key(value: Any) -> str | None:
    """A date at midnight is its ISO date (``2020-01-15``), as written in a file; other times keep theirs.

    A date column read as datetimes must match a hierarchy written (or built) with the dates as text.
    """
    ts = pd.Timestamp(value)
    if ts is pd.NaT:
        return None
    if ts.tzinfo is None and ts == ts.normalize():
        return ts.date().isoformat()
    return ts.isoformat()


def _number_key(f: float) -> str:
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f.is_integer() and abs(f) < 2**63:
        return str(int(f))
    return repr(f)


def format_number(x: float) -> str:
    """Shortest readable text of a bound: integers without a decimal point."""
    x = float(x)
    if x.is_integer() and abs(x) < 2**63:
        return str(int(x))
    return f"{x:.10g}"


def value_text(x: float) -> str:
    """Exact text of an original value (a hierarchy row): integers without a decimal point, other numbers
    in their shortest round-trip form, so that the row matches the value it was built from
    (:func:`format_number` rounds to 10 digits, which is right for labels, wrong for originals). A whole
    number given as an integer keeps its digits (through a float, 2**53 + 1 would become 2**53's row)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return str(int(x))
    x = float(x)
    if x.is_integer() and abs(x) < 2**63:
        return str(int(x))
    return repr(x)


# -- the hierarchy ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hierarchy:
    """One row per original value: ``rows[i] = (original, level 1, ..., TOP)``, all texts.

    Invariants (checked on construction; messages name rows and levels, never values):

    * at least two levels, every row with the same number of levels;
    * original values distinct as texts (``"012"`` and ``"12"`` may both be rows: a text column holds both;
      for a numeric column they are one number, which :meth:`tables` refuses when the data holds it);
    * each level is a coarsening of the one before: two values sharing a label at level l share one
      at level l + 1 (otherwise a more general level would re-separate records);
    * the last level has a single label (it is the hierarchy's root, usually ``*``).
    """

    rows: tuple[tuple[str, ...], ...]
    name: str = ""

    def __post_init__(self) -> None:
        rows, columns = _str_rows(self.rows)
        object.__setattr__(self, "rows", rows)
        _validate_rows(rows, self.name, columns)

    # -- shape -----------------------------------------------------------------------------------------------
    @property
    def height(self) -> int:
        """Number of levels, 0 (original) to ``height - 1`` (root)."""
        return len(self.rows[0])

    @property
    def max_level(self) -> int:
        return self.height - 1

    @property
    def n_values(self) -> int:
        return len(self.rows)

    @property
    def originals(self) -> tuple[str, ...]:
        return tuple(r[0] for r in self.rows)

    def labels_at(self, level: int) -> tuple[str, ...]:
        """The label of every row at ``level``."""
        self._check_level(level)
        return tuple(r[level] for r in self.rows)

    def groups_at(self, level: int) -> tuple[np.ndarray, tuple[str, ...]]:
        """Group index per row at ``level`` (groups numbered in order of first row) and group labels."""
        self._check_level(level)
        labels: dict[str, int] = {}
        idx = np.empty(self.n_values, dtype=np.int32)
        for i, r in enumerate(self.rows):
            idx[i] = labels.setdefault(r[level], len(labels))
        return idx, tuple(labels)

    def n_groups(self) -> tuple[int, ...]:
        """Number of distinct labels per level (non-increasing)."""
        return tuple(len({r[lv] for r in self.rows}) for lv in range(self.height))

    def _check_level(self, level: int) -> None:
        if not 0 <= level < self.height:
            raise InputError(
                f"Hierarchy{_of(self.name)} has levels 0 to {self.max_level}; level {level} does not exist."
            )

    # -- matching data values ------------------------------------------------------------------------------
    def match(self, values: Sequence[Any], labels: Sequence[str] | None = None) -> np.ndarray:
        """Row index of each value (-1 where the hierarchy has no row for it, or no single row).

        A text value (a cell of a text column) is matched to the row with its text, so the codes ``"012"``
        and ``"12"`` keep their own rows. Without such a row it is matched by :func:`value_key` (the
        hierarchy of a text column built from its numbers), but only to a row no other text of the data
        takes: two distinct texts never share a row by this route. Other values (numbers, dates) are matched
        by :func:`value_key`, so the number 39 finds the row ``"39"``; a number that several rows stand for
        (``"012"`` and ``"12"``) matches none of them. A value still without a row is then tried by its
        display label (an SPSS code 1 labelled "Male" matches a hierarchy written with "Male").
        """
        return self._lookup(values, labels)[0]

    @cached_property
    def _indexes(self) -> tuple[dict[str, int], dict[str | None, list[int]]]:
        """The rows by original text and by :func:`value_key`, made once per hierarchy (pages match the same
        hierarchy many times: 100,000 rows take a quarter of a second to index)."""
        by_text = {o.strip(): i for i, o in enumerate(self.originals)}
        by_key: dict[str | None, list[int]] = {}
        for i, o in enumerate(self.originals):
            by_key.setdefault(value_key(o), []).append(i)
        return by_text, by_key

    def _lookup(self, values: Sequence[Any], labels: Sequence[str] | None) -> tuple[np.ndarray, tuple[int, int] | None]:
        """:meth:`match`'s rows and the first two rows a number could not choose between (or None)."""
        by_text, by_key = self._indexes
        out = np.full(len(values), -1, dtype=np.int64)
        clash: tuple[int, int] | None = None
        loose: list[tuple[int, int]] = []  # (value index, row) of texts matched by value_key
        taken: dict[int, set[str]] = {}  # row -> the distinct texts of the data matched to it
        for i, v in enumerate(values):
            if isinstance(v, str):
                pos, exact = _text_row(v, by_text, by_key)
                if pos >= 0:
                    taken.setdefault(pos, set()).add(v.strip())
                    if not exact:
                        loose.append((i, pos))
            else:
                key = value_key(v)
                rows = by_key.get(key, []) if key is not None else []
                pos = rows[0] if len(rows) == 1 else -1
                if len(rows) > 1 and clash is None:
                    clash = (rows[0], rows[1])
            if pos < 0 and labels is not None:
                pos = _text_row(str(labels[i]), by_text, by_key)[0]
            out[i] = pos
        for i, pos in loose:
            if len(taken[pos]) > 1:  # another text of the data has this row: not this one's
                out[i] = -1
        return out, clash

    def tables(self, values: Sequence[Any], labels: Sequence[str] | None = None) -> LevelTables:
        """Lookup tables from the codes of one QI (``values[c]`` behind code c) to generalized codes.

        Level 0 is the variable as the data holds it, one group per distinct value, whatever rows the values
        matched: a release at level 0 keeps the values, so two values the hierarchy reads as one row (``"a"``
        and ``" a"``, rows being matched stripped; two codes sharing a value label) are still two categories
        there, and a class count that merged them would claim protection the release does not have. From
        level 1 on, values of one row share its label, as the release writes it.

        Raises :class:`InputError` when some value has no row (the message gives only the count), or when
        a number (or date) of the data has several rows.
        """
        rows, clash = self._lookup(values, labels)
        if clash is not None:
            raise InputError(
                f"Rows {clash[0] + 1} and {clash[1] + 1} of hierarchy{_of(self.name)} have the same original value "
                "for this variable (one written in two ways, e.g. with a leading zero, while the variable holds "
                "numbers). Keep one of them."
            )
        unknown = int((rows < 0).sum())
        if unknown:
            raise InputError(
                f"{unknown} value(s) of variable{_of(self.name)} are not in its hierarchy. Add rows for them "
                "(or rebuild the hierarchy from the data)."
            )
        tabs, level_labels = [], []
        level0 = _level0_table(rows, self.originals, values)
        for level in range(self.height):
            if level == 0:
                tabs.append(level0[0])
                level_labels.append(level0[1])
                continue
            grp, glabels = self.groups_at(level)
            used = grp[rows]
            # Renumber the groups actually present, in hierarchy order, so codes stay dense and ordered.
            present = np.unique(used)
            remap = np.full(len(glabels), -1, dtype=np.int32)
            remap[present] = np.arange(len(present), dtype=np.int32)
            tabs.append(remap[used].astype(np.int32))
            level_labels.append(tuple(glabels[g] for g in present))
        table = np.vstack(tabs) if tabs else np.empty((0, len(values)), np.int32)
        return LevelTables(table=table, labels=tuple(level_labels))

    # -- conversions ---------------------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """One column per level (``level 0`` ... ), for display and for an editable table."""
        cols = [f"level {i}" for i in range(self.height)]
        return pd.DataFrame(list(self.rows), columns=cols, dtype=object)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, name: str = "") -> Hierarchy:
        """Rebuild from an (edited) table: one row per value, one column per level, in column order.

        An empty first cell is the row of a value made of spaces only (as :func:`read_arx_hierarchy` reads it);
        any other empty cell is refused."""
        if frame.shape[1] < 2:
            raise InputError("A hierarchy needs at least two columns (the value and its generalization).")
        rows = []
        for i, r in enumerate(frame.itertuples(index=False)):
            cells = ["" if (c is None or (isinstance(c, float) and math.isnan(c))) else str(c) for c in r]
            if any(c.strip() == "" for c in cells[1:]):
                raise InputError(f"Row {i + 1} of hierarchy{_of(name)} has an empty cell.")
            rows.append(tuple(c.strip() for c in cells))
        return cls(tuple(rows), name)

    def to_arx_csv(self) -> str:
        """ARX's hierarchy file: one row per value, one column per level, no header, cells separated by ``;``.

        Always ``;``: the reader takes the first of ``;``, tab and comma that splits the first row, so a file
        written with another delimiter, whose labels hold an unquoted ``;``, would be read with other levels.

        :func:`read_arx_hierarchy` reads it back exactly (non-blank labels without NUL). Cells are quoted
        where the csv module quotes them (a delimiter, a quote, a line feed) and also where the reader would
        otherwise not give them back as written (:func:`_arx_cell`): surrounding whitespace, which the reader
        strips from unquoted cells because hand-written files are padded; a carriage return, which Python
        3.11's writer leaves bare and the reader takes for a row's end; a leading U+FEFF, which in the first
        cell the reader takes for the file's byte-order mark. Files without such cells (ARX's own) are
        written as the csv module writes them, byte for byte."""
        buf = io.StringIO()
        writer = csv.writer(buf, delimiter=ARX_DELIMITERS[0], lineterminator="\n")
        cells = tuple(chain.from_iterable(self.rows))
        joined = "".join(cells)
        if "\r" in joined or "\ufeff" in joined or cells != tuple(map(str.strip, cells)):
            buf.writelines(ARX_DELIMITERS[0].join([_arx_cell(c) for c in r]) + "\n" for r in self.rows)
        else:  # the usual case, in C
            writer.writerows(self.rows)
        return buf.getvalue()

    def to_json(self) -> list[list[str]]:
        return [list(r) for r in self.rows]

    def with_name(self, name: str) -> Hierarchy:
        return Hierarchy(self.rows, name)


def _level0_table(rows: np.ndarray, originals: Sequence[str], values: Sequence[Any]
                  ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Level 0's lookup table and labels (see :meth:`Hierarchy.tables`): each value its own group, groups in
    the order of their rows (values of one row in code order), labelled by the row's text where the row is
    the value's alone, else by the value's own text."""
    order = np.lexsort((np.arange(len(rows)), rows))
    table = np.empty(len(rows), dtype=np.int32)
    table[order] = np.arange(len(rows), dtype=np.int32)
    shared = np.bincount(rows, minlength=len(originals)) > 1 if len(rows) else np.zeros(0, bool)
    labels = tuple((values[i] if isinstance(values[i], str) else _row_text(values[i])) if shared[rows[i]]
                   else originals[rows[i]] for i in order.tolist())
    return table, labels


@dataclass(frozen=True)
class LevelTables:
    """``table[l, c]``: generalized code at level l of data code c; ``labels[l][g]``: label of code g.

    Generalized codes are dense (only groups present in the data) and follow hierarchy order.
    """

    table: np.ndarray
    labels: tuple[tuple[str, ...], ...]

    @property
    def n_groups(self) -> tuple[int, ...]:
        return tuple(len(lab) for lab in self.labels)


def _of(name: str) -> str:
    return f" '{name}'" if name else ""


def _text_row(text: str, by_text: Mapping[str, int], by_key: Mapping[str | None, list[int]]) -> tuple[int, bool]:
    """The row of a text: the row written the same (exact), else the single row of its :func:`value_key`."""
    pos = by_text.get(text.strip())
    if pos is not None:
        return pos, True
    rows = by_key.get(value_key(text), [])
    return (rows[0], False) if len(rows) == 1 else (-1, False)


def _arx_cell(cell: str) -> str:
    """A cell of :meth:`Hierarchy.to_arx_csv`: quoted (quotes doubled) where the csv module's minimal quoting
    quotes it, or where :func:`read_arx_hierarchy` would not read it back unquoted (surrounding whitespace, a
    carriage return, a leading U+FEFF); as it is otherwise."""
    if (cell != cell.strip() or cell.startswith("\ufeff")
            or any(ch in cell for ch in (ARX_DELIMITERS[0], '"', "\n", "\r"))):
        return '"' + cell.replace('"', '""') + '"'
    return cell


def _str_rows(rows: Any) -> tuple[tuple[tuple[str, ...], ...], list[tuple[str, ...]] | None]:
    """The rows as a tuple of tuples of texts (``str`` of each cell), and their columns when made on the way.

    Rows given as builders give them (a tuple of tuples of ``str``, all of one length) are kept as they are:
    looking at the types of 100,000 rows' cells, column by column, takes a third of the time of making the
    rows again, and the columns are what :func:`_validate_rows` needs. Exact types only: ``str`` of a
    ``numpy.str_`` (or of any subclass) is a new plain ``str``. Other rows are made again, as always."""
    if type(rows) is tuple and rows and _all_of_type(rows, tuple):
        height = len(rows[0])
        if all(map(operator.eq, map(len, rows), repeat(height))):
            columns = _columns(rows, height)
            if all(_all_of_type(c, str) for c in columns):
                return rows, columns
    return tuple(tuple(str(c) for c in r) for r in rows), None


def _all_of_type(items: Iterable[Any], kind: type) -> bool:
    """True when the type of every item is ``kind`` itself (compared by identity, in C)."""
    return all(map(operator.is_, map(type, items), repeat(kind)))


def _columns(rows: tuple[tuple[str, ...], ...], height: int) -> list[tuple[str, ...]]:
    """The columns of rows of ``height`` levels each. Not ``zip(*rows)``: it makes an iterator per row, objects
    the garbage collector tracks, and 100,000 of them set off a full collection of the whole process."""
    return [tuple(map(operator.itemgetter(level), rows)) for level in range(height)]


def _validate_rows(rows: tuple[tuple[str, ...], ...], name: str, columns: list[tuple[str, ...]] | None = None
                   ) -> None:
    """The invariants of :class:`Hierarchy`, checked in this order, the first broken one reported; ``columns``
    are :func:`_columns` of the rows when the caller has them.

    Each check runs on whole columns in C (sets and dicts of the labels); a hierarchy of 100,000 values was
    checked row by row in Python, a third of the time of building it. Only when a check fails is its row
    loop run (:func:`_first_ragged_row`, :func:`_first_repeated_original`, :func:`_first_split_group`), to
    name the rows exactly as before."""
    if not rows:
        raise InputError(f"Hierarchy{_of(name)} has no rows.")
    height = len(rows[0])
    if height < 2:
        raise InputError(f"Hierarchy{_of(name)} needs at least two levels (the value and '{TOP}').")
    if not all(map(operator.eq, map(len, rows), repeat(height))):
        _first_ragged_row(rows, height, name)
    if columns is None:
        columns = _columns(rows, height)
    # as text: "012" and "12" are two codes of a text column
    if len(set(map(str.strip, columns[0]))) != len(rows):
        _first_repeated_original(rows, name)
    # Level 1 is then a coarsening of level 0 already: the originals are distinct, so each level-0 label is on
    # one row and has one level-1 label (distinct once stripped means distinct as written).
    for level in range(2, height):
        prev, cur = columns[level - 1], columns[level]
        last = dict(zip(prev, cur))  # each level-(l-1) label's level-l label on its last row
        if tuple(map(last.__getitem__, prev)) != cur:  # some row has another one: the label is split
            _first_split_group(rows, level, name)
    if len(set(columns[-1])) != 1:
        raise InputError(f"The last level of hierarchy{_of(name)} must have a single label (e.g. '{TOP}').")
    for level in range(1, height):
        blank = [label for label in set(columns[level]) if not label.strip()]
        if blank:  # (an empty label is written as an empty cell; one of only spaces most readers also trim to it)
            row = min(columns[level].index(label) for label in blank) + 1
            raise InputError(f"Level {level} of hierarchy{_of(name)} has an empty label (row {row}): a release "
                             "writes it as an empty cell, which reads as missing; give every group a name.")


def _first_ragged_row(rows: tuple[tuple[str, ...], ...], height: int, name: str) -> None:
    """Raises for the first row whose number of levels is not row 1's."""
    for i, r in enumerate(rows):
        if len(r) != height:
            raise InputError(f"Row {i + 1} of hierarchy{_of(name)} has {len(r)} levels; row 1 has {height}.")


def _first_repeated_original(rows: tuple[tuple[str, ...], ...], name: str) -> None:
    """Raises for the first row whose original value (stripped) an earlier row has, naming both rows."""
    seen: dict[str, int] = {}
    for i, r in enumerate(rows):
        key = r[0].strip()
        if key in seen:
            raise InputError(f"Rows {seen[key] + 1} and {i + 1} of hierarchy{_of(name)} have the same original value.")
        seen[key] = i


def _first_split_group(rows: tuple[tuple[str, ...], ...], level: int, name: str) -> None:
    """Raises for the first row whose level-``level`` label differs from that of the first row sharing its
    level-``level - 1`` label."""
    parent: dict[str, str] = {}
    for i, r in enumerate(rows):
        prev, cur = r[level - 1], r[level]
        if parent.setdefault(prev, cur) != cur:
            raise InputError(
                f"Level {level} of hierarchy{_of(name)} is not a coarsening of level {level - 1}: "
                f"row {i + 1} shares its level-{level - 1} label with another row but not its level-{level} label."
            )


def _complete(originals: Sequence[str], levels: Sequence[Sequence[str]], name: str) -> Hierarchy:
    """Assemble rows from level label lists, dropping repeated levels and appending the root ``*``."""
    cols: list[list[str]] = [list(originals)]
    for lab in levels:
        lab = [str(x) for x in lab]
        if _same_partition(lab, cols[-1]):
            continue
        cols.append(lab)
    if len(set(cols[-1])) > 1 or len(cols) == 1:
        cols.append([TOP] * len(originals))
    else:
        cols[-1] = [TOP] * len(originals)
    return Hierarchy(tuple(zip(*cols, strict=True)), name)


def _same_partition(a: Sequence[str], b: Sequence[str]) -> bool:
    """True when two labelings group the rows identically (a level that adds nothing is dropped)."""
    return len(set(a)) == len(set(b)) == len(set(zip(a, b, strict=True)))


# -- numeric helpers -------------------------------------------------------------------------------------------
def _numeric_distinct(values: Iterable[Any], name: str, counts: Sequence[int] | np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Sorted distinct numeric values, their record counts and their texts (row originals).

    With ``counts``, each value stands for that many records (a class table's distinct values), so a census
    variable is never expanded to one number per record."""
    s = pd.Series(list(values) if not isinstance(values, pd.Series) else values)
    weight = None if counts is None else np.asarray(counts, dtype=np.int64)
    if weight is not None:
        if len(weight) != len(s) or (weight < 0).any():
            raise InputError(f"Variable{_of(name)}: give one record count (at least 0) per value.")
        weight = weight[s.notna().to_numpy()]
    s = s[s.notna()]
    num = pd.to_numeric(s, errors="coerce")
    bad = int(num.isna().sum())
    if bad:
        raise InputError(f"Variable{_of(name)} has {bad} non-numeric value(s); numeric hierarchies need numbers.")
    if len(num) == 0:
        raise InputError(f"Variable{_of(name)} has no observed values.")
    _refuse_beyond_double(num, name)
    arr = num.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise InputError(f"Variable{_of(name)} has infinite values.")
    if weight is None:
        uniq, n = np.unique(arr, return_counts=True)
    else:
        uniq, inverse = np.unique(arr, return_inverse=True)
        n = np.bincount(inverse.reshape(-1), weights=weight, minlength=len(uniq)).astype(np.int64)
        uniq, n = uniq[n > 0], n[n > 0]
        if len(uniq) == 0:
            raise InputError(f"Variable{_of(name)} has no observed values.")
    return uniq, n, [value_text(u) for u in uniq]


def _refuse_beyond_double(num: pd.Series, name: str) -> None:
    """Interval, quantile and binning builders compute in doubles: whole numbers beyond 2^53 would share rows."""
    beyond = count_beyond_double(num)
    if beyond:
        raise InputError(f"Variable{_of(name)} has {beyond} whole number(s) beyond 2^53, which interval and "
                         "binning hierarchies cannot tell apart (they compute in floating point); use a "
                         "masking or grouping hierarchy for such codes.")


def _all_integral(x: np.ndarray) -> bool:
    return bool(np.all(x == np.round(x)))


def _finite_parameters(numbers: Iterable[Any], what: str) -> list[float]:
    """The builder parameters ``numbers`` as floats; NaN or an infinity is refused, naming the parameter.

    Why: every comparison with NaN is False, so a NaN width, cut or capacity passed the range checks and
    gave labels such as ``[20, nan)``, a silent ``*``, or a ValueError outside the one-line messages; an
    infinite width or bound makes no interval."""
    out = [float(x) for x in numbers]
    if not all(map(math.isfinite, out)):
        raise InputError(f"The {what} must be finite (not NaN or infinity).")
    return out


_LABEL_DIGITS = range(10, 17)
"""Significant digits a label's bounds are tried with, fewest first; past them the bounds are written exactly."""

_EXACT = decimal.Context(prec=1000, Emax=999_999, Emin=-999_999)
"""Decimal arithmetic on doubles without rounding: a double has at most 17 significant digits between
1e-324 and 1e308, so sums, differences, products and integer quotients of two of them fit in 1000 digits."""


def _dec(x: float) -> decimal.Decimal:
    """A number as the decimal its shortest text reads (0.1 is 0.1): the value the officer sees in a row."""
    return decimal.Decimal(repr(float(x)))


def _bound_text(d: decimal.Decimal, digits: int | None) -> str:
    """A bound written with ``digits`` significant digits (None: exactly); whole numbers always exactly."""
    if d == d.to_integral_value() and abs(d) < 2**63:
        return str(int(d))
    if digits is None:
        shortest = repr(float(d))
        return shortest if decimal.Decimal(shortest) == d else format(d.normalize(_EXACT), "g")
    return f"{float(d):.{digits}g}"


Bin = tuple["decimal.Decimal | None", "decimal.Decimal | None", "decimal.Decimal", "decimal.Decimal"]
"""A bin of a level: its bounds [lo, hi) (None: open on that side) and the lowest and highest value it holds."""


def _bin_label_texts(bins: Sequence[Bin], integral: bool) -> list[str]:
    """The label of each bin of one level (``"20-24"``, ``"<30"``, ``">=40"``, ``"[0.1, 0.2)"``): its bounds
    written with the fewest significant digits, 10 to 16, else exactly, with which the labels state the
    bins' true ranges: distinct bounds read distinct, and every value of the data lies inside its label's
    range as printed (on the same side of every printed bound as of the real one).

    Why not always 10 digits (``format_number``): amounts near 1.2e8 in cents cut at .11, .12 and .13 gave
    three bins one label ``[123456789.1, 123456789.1)`` (merged silently, and a coarser level then "not a
    coarsening"), and 123456789.01 was labelled ``<123456789``. Why not always exact: a cut computed in doubles
    (``0.1 * 3`` is 0.30000000000000004) reads ``0.3`` in 10 digits, the label people expect, wherever that is
    true of the data."""
    finite = sorted({b for lo, hi, _, _ in bins for b in (lo, hi) if b is not None})
    text: dict[decimal.Decimal, str] = {}
    for digits in (*_LABEL_DIGITS, None):
        text = {b: _bound_text(b, digits) for b in finite}
        if digits is None or _labels_state_ranges(bins, text):
            break
    return [_interval_label(lo, hi, text, integral) for lo, hi, _, _ in bins]


def _labels_state_ranges(bins: Sequence[Bin], text: Mapping[decimal.Decimal, str]) -> bool:
    """True when the printed bounds are distinct and every bin's values lie in its printed range: the
    printed bounds are monotone in the real ones, so checking each bin's lowest and highest value suffices."""
    if len(set(text.values())) < len(text):
        return False
    read = {b: decimal.Decimal(t) for b, t in text.items()}
    return all((lo is None or read[lo] <= low) and (hi is None or high < read[hi]) for lo, hi, low, high in bins)


def _interval_label(lo: decimal.Decimal | None, hi: decimal.Decimal | None, text: Mapping[decimal.Decimal, str],
                    integral: bool) -> str:
    """Label of [lo, hi) (None: open): ``"20-24"`` for integer data (ARX's style), ``"[20, 25)"`` otherwise."""
    if lo is None and hi is None:
        return TOP
    if lo is None:
        return f"<{text[hi]}"
    if hi is None:
        return f">={text[lo]}"
    if integral and lo == lo.to_integral_value() and hi == hi.to_integral_value():
        last = _EXACT.subtract(hi, 1)
        return text[lo] if last <= lo else f"{text[lo]}-{_bound_text(last, None)}"
    return f"[{text[lo]}, {text[hi]})"


def _labels_of_bins(uniq: np.ndarray, keys: Sequence[Any], bounds: Callable[[Any], tuple[Any, Any]],
                    integral: bool) -> list[str]:
    """The label of each sorted distinct value given its bin's key ``keys[i]`` (bins contiguous in the values'
    order) and the bounds [lo, hi) of a bin's key (Decimals, None where open), made once per bin."""
    starts = [i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]]
    ends = [*(i - 1 for i in starts[1:]), len(keys) - 1]
    bins: list[Bin] = [(*bounds(keys[i]), _dec(uniq[i]), _dec(uniq[j])) for i, j in zip(starts, ends, strict=True)]
    labels = _bin_label_texts(bins, integral)
    return list(chain.from_iterable(repeat(lab, j - i + 1) for lab, i, j in zip(labels, starts, ends, strict=True)))


def _labels_from_cuts(uniq: np.ndarray, cuts: Sequence[float], integral: bool) -> list[str]:
    """Bin every sorted distinct value into (-inf, c1), [c1, c2), ..., [cm, inf) and label the bins.

    Placed by comparing doubles, which is the same as comparing the values and cuts as their shortest texts
    (distinct doubles have distinct shortest texts, in the same order)."""
    edges = np.unique(np.asarray(cuts, dtype=np.float64))
    pos = np.searchsorted(edges, uniq, side="right")  # bin p is [edges[p - 1], edges[p])
    edge = [_dec(e) for e in edges.tolist()]
    m = len(edge)
    return _labels_of_bins(uniq, pos.tolist(), lambda p: (edge[p - 1] if p > 0 else None, edge[p] if p < m else None),
                           integral)


# -- builders: intervals --------------------------------------------------------------------------------------
def cut_hierarchy(values: Iterable[Any], levels: Sequence[Sequence[float]], name: str = "") -> Hierarchy:
    """Intervals from custom cut points, one list per level (each list a subset of the one before).

    A cut point c starts the interval ``[c, next cut)``; values below the first cut form ``<c1``.
    """
    levels = [_finite_parameters(cuts, "cut points") for cuts in levels]
    uniq, _, texts = _numeric_distinct(values, name)
    integral = _all_integral(uniq)
    for i in range(1, len(levels)):
        if not set(levels[i]) <= set(levels[i - 1]):
            raise InputError(
                f"Cut points of level {i + 1} must be a subset of those of level {i}, so that each level "
                "coarsens the one before."
            )
    return _complete(texts, [_labels_from_cuts(uniq, cuts, integral) for cuts in levels], name)


def interval_hierarchy(
    values: Iterable[Any],
    widths: Sequence[float],
    origin: float | None = None,
    bottom: float | None = None,
    top: float | None = None,
    name: str = "",
) -> Hierarchy:
    """Fixed-width intervals, one width per level (each a whole multiple of the one before).

    Intervals start at ``origin`` (default: the lowest value rounded down to the first width). With
    ``bottom``/``top`` the tails are coded into ``<bottom`` and ``>=top`` at every level (Near & Abuah's
    clipping of outliers, which lets narrow intervals reach k where the tails alone would not).

    Bounds and values are compared as the decimals their texts read (:func:`_dec`: the width 0.1 is 0.1, the
    value 0.3 is 0.3), exactly, so every value lies in the interval its label prints: in doubles 0.3 / 0.1 is
    2.9999999999999996, and the tolerance that once corrected it also put 0.9999999999995 in ``[1, 2)``.
    """
    if not widths:
        raise InputError("Give at least one interval width.")
    ws = _finite_parameters(widths, "interval widths")
    origin, bottom, top = (None if x is None else _finite_parameters([x], what)[0]
                           for x, what in ((origin, "interval origin"), (bottom, "bottom code"), (top, "top code")))
    uniq, _, _ = _numeric_distinct(values, name)
    if any(w <= 0 for w in ws):
        raise InputError("Interval widths must be positive.")
    with decimal.localcontext(_EXACT):
        wd = [_dec(w) for w in ws]
        if any(b < a or b % a != 0 for a, b in zip(wd, wd[1:], strict=False)):
            raise InputError("Each interval width must be a whole multiple of the previous one (e.g. 5, 10, 20).")
        if bottom is not None and top is not None and bottom >= top:
            raise InputError("The bottom code must be below the top code.")
        low = None if bottom is None else _dec(bottom)
        high = None if top is None else _dec(top)
        if origin is not None:
            o = _dec(origin)
        elif low is not None:
            o = low
        else:
            o = _floor_div(_dec(uniq[0]), wd[0]) * wd[0]
        integral = _all_integral(uniq) and all(x == x.to_integral_value() for x in (o, *wd))
        texts = [value_text(u) for u in uniq]
        levels = []
        for w in wd:
            keys = _interval_numbers(uniq, o, w)
            if top is not None:  # (doubles compare as their shortest texts do)
                keys[np.searchsorted(uniq, top, side="left"):] = ["top"] * int((uniq >= top).sum())
            if bottom is not None:
                keys[:np.searchsorted(uniq, bottom, side="left")] = ["bottom"] * int((uniq < bottom).sum())

            def bounds(key: Any, w: decimal.Decimal = w) -> tuple[Any, Any]:
                if key == "top":
                    return high, None
                if key == "bottom":
                    return None, low
                lo, hi = o + key * w, o + (key + 1) * w
                return (lo if low is None else max(lo, low)), (hi if high is None else min(hi, high))

            levels.append(_labels_of_bins(uniq, keys, bounds, integral))
    return _complete(texts, levels, name)


def _interval_numbers(uniq: np.ndarray, o: decimal.Decimal, w: decimal.Decimal) -> list[Any]:
    """floor((u - o) / w) of each value, exactly in the decimals of the texts (:func:`_dec`): in doubles where
    the quotient is far enough from a whole number for no rounding of doubles to cross it, in decimal
    arithmetic (in the caller's exact context) for the others."""
    of, wf = float(o), float(w)
    with np.errstate(all="ignore"):
        q = (uniq - of) / wf
        b = np.floor(q)
        frac = q - b
        margin = 1e-12 * (np.maximum(np.abs(uniq), abs(of)) / wf + np.abs(q) + 1.0)
        sure = np.isfinite(q) & (frac > margin) & (1.0 - frac > margin) & (np.abs(b) < 2.0**52)
    keys: list[Any] = np.where(sure, b, 0).astype(np.int64).tolist()
    for i in np.flatnonzero(~sure).tolist():
        keys[i] = int(_floor_div(_dec(uniq[i]) - o, w))
    return keys


def _floor_div(a: decimal.Decimal, b: decimal.Decimal) -> decimal.Decimal:
    """The whole number floor(a / b), exact (Decimal's ``//`` truncates towards zero)."""
    q, r = divmod(a, b)
    return q - 1 if r and (r < 0) != (b < 0) else q


def quantile_hierarchy(values: Iterable[Any], n_bins: Sequence[int] = (10, 5, 2), name: str = "") -> Hierarchy:
    """Intervals holding about equal numbers of records: quantile cuts, finest level first.

    Coarser levels snap their quantile cuts to the nearest cut of the level below, so the levels nest. A
    cut falls where a value of the data starts a bin; it is then moved to the roundest number between the
    value before it and itself (:func:`round_cut`), the same bins, so a label shows a value of the data only
    where no rounder number fits (the top bin of incomes starting at 61,873 is ``>=60000`` when the next
    income down is below 60,000).
    """
    s = pd.Series(list(values) if not isinstance(values, pd.Series) else values)
    num = pd.to_numeric(s[s.notna()], errors="coerce")
    if num.isna().any():
        raise InputError(f"Variable{_of(name)} has non-numeric values; quantile bins need numbers.")
    _refuse_beyond_double(num, name)
    data = np.sort(num.to_numpy(dtype=np.float64))
    if len(data) == 0:
        raise InputError(f"Variable{_of(name)} has no observed values.")
    bins = sorted({int(b) for b in _finite_parameters(n_bins, "numbers of bins") if int(b) >= 2}, reverse=True)
    if not bins:
        raise InputError("Quantile bins: give numbers of bins of at least 2.")
    levels: list[list[float]] = []
    for b in bins:
        qs = np.quantile(data, np.arange(1, b) / b, method="lower")
        cuts = sorted({float(_next_above(data, q)) for q in qs} - {float(data[0])})
        cuts = [c for c in cuts if c > data[0]]
        if levels:
            prev = np.asarray(levels[-1])
            cuts = sorted({float(prev[np.argmin(np.abs(prev - c))]) for c in cuts}) if len(prev) else []
        levels.append(cuts)
    below = {c: float(data[np.searchsorted(data, c, side="left") - 1]) for lv in levels for c in lv}
    return cut_hierarchy(data, [[round_cut(below[c], c) for c in lv] for lv in levels], name)


def _next_above(sorted_data: np.ndarray, q: float) -> float:
    """The smallest observed value above ``q`` (a cut is where a new interval starts)."""
    i = np.searchsorted(sorted_data, q, side="right")
    return float(sorted_data[min(i, len(sorted_data) - 1)])


# -- builder: greedy capacity binning (Angiuli & Waldo) --------------------------------------------------------------
def greedy_bins(uniq: np.ndarray, counts: np.ndarray, capacity: float, start: np.ndarray | None = None) -> np.ndarray:
    """Bin index per distinct value after Angiuli & Waldo's greedy merging (section IV.B); a heuristic, not
    guaranteed minimum-width (see :func:`greedy_binning_hierarchy`).

    Start from ``start`` (bin per value by default). While some bin holds fewer than ``capacity``
    records, perform the cheapest merge of such a bin with its left or right neighbour. The cost is the
    change of the bins' means, the placeholder values the records are released with, summed in squares
    over the records whose placeholder moves: ``n_a n_b / (n_a + n_b) * (mean_a - mean_b)^2``. Merging
    towards the closer mass keeps bins narrow and the means close to the pre-discretized values. Ties go
    to the leftmost pair, so the result is deterministic.
    """
    n_vals = len(uniq)
    bin_of = np.arange(n_vals) if start is None else np.asarray(start).copy()
    nb = int(bin_of.max()) + 1 if n_vals else 0
    cnt = np.bincount(bin_of, weights=counts, minlength=nb).astype(np.float64)
    tot = np.bincount(bin_of, weights=counts * uniq, minlength=nb).astype(np.float64)
    right = [b + 1 if b + 1 < nb else -1 for b in range(nb)]
    left = [b - 1 for b in range(nb)]
    parent = list(range(nb))
    version = [0] * nb
    heap: list[tuple[float, int, int, int, int]] = []

    def push(a: int) -> None:
        b = right[a]
        if a < 0 or b < 0 or (cnt[a] >= capacity and cnt[b] >= capacity):
            return
        na, nbb = cnt[a], cnt[b]
        ma = tot[a] / na if na > 0 else 0.0
        mb = tot[b] / nbb if nbb > 0 else 0.0
        cost = na * nbb / (na + nbb) * (ma - mb) ** 2 if na + nbb > 0 else 0.0
        heapq.heappush(heap, (cost, a, b, version[a], version[b]))

    for a in range(nb - 1):
        push(a)
    while heap:
        _, a, b, va, vb = heapq.heappop(heap)
        if version[a] != va or version[b] != vb or right[a] != b or parent[a] != a or parent[b] != b:
            continue
        cnt[a] += cnt[b]  # merge bin b (the right one) into a
        tot[a] += tot[b]
        parent[b] = a
        right[a] = right[b]
        if right[b] >= 0:
            left[right[b]] = a
        version[a] += 1
        if left[a] >= 0:
            push(left[a])
        push(a)
    root = np.array(parent, dtype=np.int64)
    while True:  # resolve chains of merges (each bin points to a bin on its left)
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    _, dense = np.unique(root[bin_of], return_inverse=True)
    return dense.reshape(-1)


def greedy_binning_hierarchy(
    values: Iterable[Any], capacities: Sequence[float] = (5,), name: str = "",
    counts: Sequence[int] | np.ndarray | None = None,
) -> Hierarchy:
    """Angiuli & Waldo's greedy binning with bin capacity c, one level per capacity (increasing).

    The binning is the paper's greedy merge (:func:`greedy_bins`: a bin holding fewer than c records is merged
    with its left or right neighbour, the merge that least changes the bins' means first, until every bin holds
    at least c records); not guaranteed minimum-width: the paper proposes it to narrow the bins of a left-to-
    right scan, but a greedy merge can end wider than the narrowest binning meeting the capacity (ages 19, 21,
    22 and 39 with 5, 5, 2 and 5 records and c = 6 end as one bin ``*``, where {19, 21} and {22, 39} hold 10 and
    7).

    Each level merges the bins of the one below, so the levels nest. A bin is labelled by the interval it
    covers up to the next bin's start (:func:`_bin_labels`: ``<30``, ``30-39``, ``>=40``), never by the lowest
    and highest values it holds: those would release the file's extremes (the ages 40, 50 and 103 would
    give ``40-103`` and tell that someone aged 103 is in the file), the disclosure top- and bottom-coding
    exist to avoid. ``values`` are the records' values, or distinct values standing for ``counts`` records
    each (the same hierarchy, without the records).
    """
    caps = sorted(_finite_parameters(capacities, "bin capacities"))
    uniq, counts, texts = _numeric_distinct(values, name, counts)
    if not caps or caps[0] < 1:
        raise InputError("Bin capacities must be at least 1.")
    integral = _all_integral(uniq)
    levels, current = [], None
    for c in caps:
        current = greedy_bins(uniq, counts.astype(np.float64), c, current)
        levels.append(_bin_labels(uniq, current, integral))
    return _complete(texts, levels, name)


def _bin_labels(uniq: np.ndarray, bins: np.ndarray, integral: bool) -> list[str]:
    """Labels of contiguous bins of the sorted distinct values ``uniq`` (``bins[i]`` is the bin of ``uniq[i]``,
    non-decreasing): the first bin is open below, the last open above, and two neighbouring bins meet at the
    roundest number of the gap between them (:func:`round_cut`): ``<30``, ``30-39``, ``>=40``; one bin is ``*``.

    Why: a label then shows a value of the data only where no rounder number fits between two neighbours
    (ages 39 and 40 meet at 40; incomes 37,250 and 41,900 at 40,000). The file's minimum and maximum, the
    values most likely held by one person, never show (the ages 40, 50 and 103 binned together were
    labelled ``40-103``), as top- and bottom-coding intend; and a value of a later wave still falls in some
    label.
    """
    starts = np.flatnonzero(np.diff(bins)) + 1  # positions where a new bin begins
    return _labels_from_cuts(uniq, [round_cut(uniq[i - 1], uniq[i]) for i in starts.tolist()], integral)


def round_cut(below: float, above: float) -> float:
    """The roundest number c with ``below < c <= above``: a multiple of the largest power of ten that has one
    there (0 before all), the multiple nearest the middle of the gap (the lower on a tie), so the cut tells
    little of either neighbour. Computed in decimal, so that 2.7 stays 2.7.

    The decimal is then read as a double, which rounds it to the nearest: between two neighbouring doubles
    (1.0 and 1.0000000000000002) that is ``below`` itself, and a cut at ``below`` would move it to the bin
    above (a bin of a capacity binning then holding fewer records than the capacity). ``above`` is then the
    cut: the only double of the gap."""
    cut = _round_decimal_cut(below, above)
    return cut if float(below) < cut <= float(above) else float(above) + 0.0


def _round_decimal_cut(below: float, above: float) -> float:
    """:func:`round_cut`'s decimal, read as the nearest double (which may be ``below``)."""
    a, b = decimal.Decimal(repr(float(below))), decimal.Decimal(repr(float(above)))
    middle = (a + b) / 2
    exponent = max(abs(a), abs(b)).adjusted() + 1
    while True:
        step = decimal.Decimal(1).scaleb(exponent)
        low = (a / step).to_integral_value(decimal.ROUND_FLOOR) + 1
        high = (b / step).to_integral_value(decimal.ROUND_FLOOR)
        if low <= high:
            nearest = (middle / step - decimal.Decimal("0.5")).to_integral_value(decimal.ROUND_CEILING)
            return float(min(max(nearest, low), high) * step) + 0.0  # (+ 0.0: never -0)
        exponent -= 1


# -- builder: top/bottom coding and clipping (Near & Abuah) -------------------------------------------------------
def top_bottom_hierarchy(
    values: Iterable[Any], bottom: float | None = None, top: float | None = None, clip: bool = False, name: str = ""
) -> Hierarchy:
    """Level 1 merges the tails: values >= ``top`` into one category, values <= ``bottom`` into another.

    The labels are ``>=top`` / ``<=bottom``; with ``clip=True`` they are the bounds themselves, as with
    Near & Abuah's ``clip`` (an age of 87 released as 60). Values in between stay as they are.
    """
    if bottom is None and top is None:
        raise InputError("Give a bottom code, a top code or both.")
    bottom, top = (None if x is None else _finite_parameters([x], what)[0]
                   for x, what in ((bottom, "bottom code"), (top, "top code")))
    if bottom is not None and top is not None and bottom >= top:
        raise InputError("The bottom code must be below the top code.")
    uniq, _, texts = _numeric_distinct(values, name)
    top_text = None if top is None else _code_text(top)
    bottom_text = None if bottom is None else _code_text(bottom)
    lab = []
    for u, t in zip(uniq, texts, strict=True):
        if top is not None and u >= top:
            lab.append(top_text if clip else f">={top_text}")
        elif bottom is not None and u <= bottom:
            lab.append(bottom_text if clip else f"<={bottom_text}")
        else:
            lab.append(t)
    return _complete(texts, [lab], name)


def _code_text(x: float) -> str:
    """A top or bottom code as a label: :func:`format_number` where its 10 digits read back as the code, else
    the code's shortest text (the top code 123456789.01 is not ``>=123456789``; clipped, it is the value
    released)."""
    text = format_number(x)
    return text if decimal.Decimal(text) == _dec(x) else _bound_text(_dec(x), None)


# -- builder: categories -----------------------------------------------------------------------------------------
def grouping_hierarchy(
    values: Iterable[Any], levels: Sequence[Mapping[Any, str]], name: str = ""
) -> Hierarchy:
    """Categories grouped through editable mappings, one per level.

    Level l maps the labels of level l - 1 (the original values for level 1) to group names; labels
    not mentioned stay as they are. A key written as text matches the label with that text (the codes
    ``"012"`` and ``"12"`` are two keys); a key given as a number matches by :func:`value_key`.
    """
    texts = _distinct_texts(values, name)
    current = list(texts)
    cols = []
    for mapping in levels:
        by_text = {_row_text(k): str(v) for k, v in mapping.items()}
        by_key = {value_key(k): str(v) for k, v in mapping.items() if not isinstance(k, str)}
        current = [by_text[c] if c in by_text else by_key.get(value_key(c), c) for c in current]
        cols.append(list(current))
    return _complete(texts, cols, name)


def _row_text(v: Any) -> str:
    """The text a value has as a hierarchy row: numbers as :func:`value_text`, anything else stripped."""
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
        return value_text(v)
    return str(v).strip()


def _distinct_texts(values: Iterable[Any], name: str) -> list[str]:
    """Distinct observed values as row texts (numbers in numeric order first, then texts alphabetically).

    Distinctness is by the row's text: the row keeps the value's own text (a ZIP "02138" keeps its leading
    zero, and a text column's "012" and "12" are two rows), so masking sees what the officer sees; the
    numbers 7 and 7.0 are one row "7".
    """
    seen: set[str] = set()
    for v in values:
        if value_key(v) is not None:
            seen.add(_row_text(v))
    if not seen:
        raise InputError(f"Variable{_of(name)} has no observed values.")
    # sorted as text first: a text read as NaN ("nan") compares as neither before nor after a number, so the
    # order the sort is given decides where it goes, and a set's order varies from run to run
    return sorted(sorted(seen), key=_row_order)


# -- builder: masking (Sweeney's ZIP codes) -----------------------------------------------------------------
def masking_hierarchy(
    values: Iterable[Any], mask_char: str = "*", width: int | None = None, name: str = ""
) -> Hierarchy:
    """Level l replaces the last l characters by ``mask_char`` (02138, 0213*, 021**, ...), then ``*``.

    Numbers lose leading zeros when read, so ``width`` left-pads them with zeros (ZIP codes: 5). The rows are
    :func:`_distinct_texts` of the values. A postcode's 100,000 values (or its records) take a fraction of a
    second: each distinct value is read once (:func:`_masking_texts`) and a level masks one more character
    of every value at once, in an array (the labels are the same as masking each value in Python).

    A label that would be empty (a value of only spaces, whose row text is empty, or with an empty
    ``mask_char`` a value truncated away) is ``*``: an empty cell in a release reads as missing.
    """
    texts = _masking_texts(values, name)
    shown = [t.zfill(width) if width and t.lstrip("-").isdigit() else t for t in texts]
    longest = max(len(t) for t in shown)
    if len(mask_char) != 1 or mask_char == "\x00" or longest > _WIDEST_MASKED:
        cols = [[t[: max(0, len(t) - lv)] + mask_char * min(lv, len(t)) or TOP for t in shown]
                for lv in range(1, longest)]
        return _complete(texts, cols, name)
    levels: list[tuple[int, list[str]]] = []
    for labels in _masked_levels(shown, mask_char, longest):
        labels = [label or TOP for label in labels]  # (see the docstring: a blank value, or one truncated away)
        groups = len(set(labels))
        if groups < (levels[-1][0] if levels else len(texts)):  # else the level adds nothing
            levels.append((groups, labels))
    return _nested_hierarchy(texts, levels, name)


_WIDEST_MASKED = 64
"""Texts up to this long are masked in an array of that width (one 4-byte cell per character and value)."""


def _masked_levels(shown: Sequence[str], mask_char: str, longest: int) -> Iterable[list[str]]:
    """The labels of levels 1 to ``longest`` - 1: ``t[:len(t) - l] + mask_char * min(l, len(t))``, each level
    masking one more character of the array. A label read from the array ends with the mask (or is empty),
    so no character is lost where numpy drops trailing NULs."""
    if longest < 2:
        return
    array = np.array(shown, dtype=f"<U{longest}")
    cells = array.view(np.uint32).reshape(len(shown), longest)
    length = np.fromiter(map(len, shown), dtype=np.int64, count=len(shown))
    for lv in range(1, longest):
        at = length - lv
        rows = np.flatnonzero(at >= 0)
        cells[rows, at[rows]] = ord(mask_char)
        yield array.tolist()


def _nested_hierarchy(originals: Sequence[str], levels: Sequence[tuple[int, list[str]]], name: str) -> Hierarchy:
    """The rows :func:`_complete` makes of nested levels (each a coarsening of the one before) that all add
    something: each level given with its number of groups, fewer than the level before. The root ``*`` is
    appended, or replaces a last level of one group."""
    cols = [list(originals)] + [labels for _, labels in levels]
    if levels and levels[-1][0] == 1:
        cols[-1] = [TOP] * len(originals)
    else:
        cols.append([TOP] * len(originals))
    return Hierarchy(tuple(zip(*cols, strict=True)), name)


_NUMBER_START = frozenset("+-.0123456789")
_FLOAT_WORDS = frozenset(("inf", "infinity", "nan"))
"""Texts that ``float()`` reads though they do not start like a number."""


def _masking_texts(values: Iterable[Any], name: str) -> list[str]:
    """:func:`_distinct_texts` (the same rows in the same order), reading each distinct value once and sorting
    codes of digits, and codes that are words, with no Python work per comparison."""
    texts = _row_texts(values)
    if not texts:
        raise InputError(f"Variable{_of(name)} has no observed values.")
    joined = "".join(texts)
    if joined.isascii() and joined.isdigit() and min(map(len, texts)) >= 1 and max(map(len, texts)) <= 15:
        # digits only: ordered by number (exact in a float up to 15 digits), then as text ("007" before "7")
        number = np.fromiter(map(int, texts), dtype=np.int64, count=len(texts))
        order = np.argsort(number, kind="stable")
        if (np.diff(number[order]) == 0).any():
            order = np.lexsort((np.array(texts), number))
        return [texts[i] for i in order.tolist()]
    if joined.isascii() and not any(t[:1] in _NUMBER_START or t.lower() in _FLOAT_WORDS for t in texts):
        return sorted(texts)  # no text reads as a number: ordered as text
    return sorted(sorted(texts), key=_row_order)  # as _distinct_texts sorts (why sorted twice: there)


def _row_order(text: str) -> tuple[int, float, str, str]:
    """The order of :func:`_distinct_texts`: numbers by value, then the other texts."""
    k = value_key(text) or ""
    try:
        return (0, float(k), k, text)
    except ValueError:
        return (1, 0.0, k, text)


_SAME_TEXT_WHEN_EQUAL = ("string", "integer", "floating", "mixed-integer-float")
"""Kinds of object arrays (pandas' inference) whose equal values have one row text: texts, and numbers (1 and
1.0 are both "1"). Not booleans, which equal 1 and 0 but read "True" and "False"."""


def _same_text_when_equal(values: pd.Series | np.ndarray) -> bool:
    """True when equal values of the column have one row text: a text column, or numbers of one array
    (:data:`_SAME_TEXT_WHEN_EQUAL`). Its values may then be made distinct by pandas, without Python work
    per value, and :meth:`tolist` gives them as Python values, as iterating a Series does."""
    if values.ndim != 1:
        return False
    if isinstance(values.dtype, pd.StringDtype):
        return True
    if not isinstance(values.dtype, np.dtype):
        return False
    kind = values.dtype.kind
    return kind in "biuf" or (kind == "O" and pd.api.types.infer_dtype(values, skipna=False) in _SAME_TEXT_WHEN_EQUAL)


def _row_texts(values: Iterable[Any]) -> list[str]:
    """The distinct row texts (:func:`_row_text`) of the observed values, each distinct value read once.

    A column's values are first made distinct with pandas where equal values are sure to have one text (numbers
    of one array, texts); otherwise values of one type that are equal are converted once, and values of other
    types one by one."""
    if isinstance(values, (pd.Series, np.ndarray)) and _same_text_when_equal(values):
        values = pd.unique(values.reshape(-1) if isinstance(values, np.ndarray) else values).tolist()
    strs: set[str] = set()
    plain: dict[tuple[type, Any], Any] = {}
    rest: list[Any] = []
    for v in values:
        kind = type(v)
        if kind is str:
            strs.add(v)
        elif kind is int or kind is float or kind is bool:
            plain[(kind, v)] = v
        else:
            rest.append(v)
    out = {s.strip() for s in strs}
    for v in [*plain.values(), *rest]:
        if type(v) is int and abs(v) <= MAX_EXACT_WHOLE:
            out.add(str(v))  # value_text(v): exact in a float
        elif value_key(v) is not None:
            out.add(_row_text(v))
    return list(out)


# -- builder: dates ----------------------------------------------------------------------------------------------
DATE_LEVELS = ("month", "quarter", "year", "decade")


def date_hierarchy(
    values: Iterable[Any], levels: Sequence[str] = ("month", "quarter", "year"), name: str = ""
) -> Hierarchy:
    """Dates to month (``2020-03``), quarter (``2020-Q1``), year (``2020``) and decade (``2020s``).

    Values are dates (timestamps, ``datetime.date``) or texts, read by :func:`_parse_date_texts` in one
    reading whatever their order. Numbers are refused: pandas reads 20190115 as nanoseconds after 1970, which
    put every date in January 1970 and made every level ``*``, silently.
    """
    unknown = [lv for lv in levels if lv not in DATE_LEVELS]
    if unknown:
        raise InputError(f"Date levels must be among {', '.join(DATE_LEVELS)}.")
    order = sorted(levels, key=DATE_LEVELS.index)
    seen: dict[str, Any] = {}
    for v in values:
        key = value_key(v)
        if key is not None and key not in seen:
            seen[key] = v
    if not seen:
        raise InputError(f"Variable{_of(name)} has no observed values.")
    if any(isinstance(v, (int, float, np.integer, np.floating, bool, np.bool_)) for v in seen.values()):
        raise InputError(f"Variable{_of(name)} holds numbers, which a date hierarchy does not read as dates (pandas "
                         "would take them for nanoseconds after 1970); store the dates as text YYYY-MM-DD or as "
                         "dates.")
    texts = list(seen)
    stamps = pd.Series(pd.NaT, index=range(len(texts)), dtype="object")
    is_text = [not isinstance(seen[t], (pd.Timestamp, datetime.datetime, datetime.date, np.datetime64)) for t in texts]
    for i, t in enumerate(texts):
        if not is_text[i]:
            stamps[i] = pd.Timestamp(seen[t])
    written = [i for i, text in enumerate(is_text) if text]
    if written:
        read = _parse_date_texts([str(seen[texts[i]]).strip() for i in written], name)
        for i, stamp in zip(written, read, strict=True):
            stamps[i] = stamp
    parsed = _to_datetime(stamps, name)
    idx = np.argsort(parsed.to_numpy(), kind="stable")
    texts = [texts[i] for i in idx]
    parsed = parsed.iloc[idx].reset_index(drop=True)
    fmt = {
        "month": lambda d: f"{d.year:04d}-{d.month:02d}",
        "quarter": lambda d: f"{d.year:04d}-Q{(d.month - 1) // 3 + 1}",
        "year": lambda d: f"{d.year:04d}",
        "decade": lambda d: f"{d.year // 10 * 10:04d}s",
    }
    cols = [[fmt[lv](d) for d in parsed] for lv in order]
    return _complete(texts, cols, name)


_DAY_FIRST = ("%d/%m/%Y", "%d-%m-%Y", "%d.%m.%Y", "%d/%m/%y", "%d-%m-%y", "%d.%m.%y")
_MONTH_FIRST = ("%m/%d/%Y", "%m-%d-%Y", "%m.%d.%Y", "%m/%d/%y", "%m-%d-%y", "%m.%d.%y")
"""The numeric day-month orders a date text may be written in; a reading is strict (13/01/2020 is no
month-first date)."""


def _parse_date_texts(texts: Sequence[str], name: str) -> list[pd.Timestamp]:
    """The dates of distinct texts, one reading for all, whatever their order: ISO 8601 when every text is
    one; else day-first or month-first (``_DAY_FIRST``, ``_MONTH_FIRST``, strict), the one that reads every
    text, and if both do and disagree the texts are refused as ambiguous; else each text by pandas' own
    parser, refused where reading it day-first or month-first would give another date.

    Why: pandas takes the format of the first text for all, so a file of day-first dates was read whole when
    it began with 13/01/2020, refused when it began with 02/05/2020, and read month-first, silently, when no
    day exceeded 12."""
    s = pd.Series(list(texts), dtype=object)
    iso = _to_datetime(s, name, format="ISO8601", errors="coerce")
    if not iso.isna().any():
        return list(iso)
    readings = [_strict_reading(s, formats) for formats in (_DAY_FIRST, _MONTH_FIRST)]
    whole = [r for r in readings if not r.isna().any()]
    if len(whole) == 2 and not whole[0].equals(whole[1]):
        raise _ambiguous_dates(name)
    if whole:
        return list(whole[0])
    loose = [_to_datetime(s, name, format="mixed", dayfirst=first, errors="coerce") for first in (True, False)]
    bad = int((loose[0].isna() | loose[1].isna()).sum())
    if bad:
        raise InputError(f"{bad} value(s) of variable{_of(name)} are not dates.")
    if not loose[0].equals(loose[1]):
        raise _ambiguous_dates(name)
    return list(loose[0])


def _to_datetime(s: pd.Series, name: str, **how: Any) -> pd.Series:
    """``pandas.to_datetime``, which takes dates of one time zone only (or of none): others are refused in one
    line (pandas raises a ValueError even where it is told to coerce)."""
    try:
        return pd.to_datetime(s, **how)
    except (ValueError, TypeError):
        raise InputError(f"The dates of variable{_of(name)} are in several time zones (or some have one and others "
                         "none); give them in one.") from None


def _strict_reading(s: pd.Series, formats: Sequence[str]) -> pd.Series:
    """Each text read with the first of ``formats`` that reads it exactly (NaT where none does)."""
    out = pd.Series(pd.NaT, index=s.index, dtype=object)
    for f in formats:
        todo = out.isna()
        if not todo.any():
            break
        read = pd.to_datetime(s[todo], format=f, errors="coerce")
        read = read[read.notna()]
        out[read.index] = list(read)
    return out


def _ambiguous_dates(name: str) -> InputError:
    return InputError(f"The dates of variable{_of(name)} read both day-first and month-first, as different dates; "
                      "write them as YYYY-MM-DD.")


# -- ARX files -------------------------------------------------------------------------------------------------
ARX_DELIMITERS = (";", "\t", ",")
"""Delimiters of hierarchy files, in order of preference: ARX's own first, the comma last (it is the one most
often found inside values: "Married, spouse present", "1,000-2,000")."""

_CSV_PROBLEMS = (
    ("end of data", "a quote that is never closed"),
    ("expected after", "a quote closed before the end of its cell"),
    ("field larger", "a cell longer than the CSV reader accepts"),
)


def read_arx_hierarchy(source: str | os.PathLike | bytes, name: str = "") -> Hierarchy:
    """Read an ARX hierarchy CSV (one row per original value, one column per level, no header) exactly.

    * text: decoded as data files are (:func:`kanon_core.io.decode_text`: byte-order marks, UTF-8, else a
      single-byte Windows-1252 file; a file mixing encodings is refused), so labels are released as written;
    * delimiter: semicolon (ARX), tab or comma, the first that splits the first row, quotes respected (a
      quoted ``;`` in a comma file is a character of its cell); every row must then have as many levels;
    * unquoted cells are stripped of surrounding whitespace (people and spreadsheets pad them:
      ``a ; ab ; *``); quoted cells keep what they hold, spaces and line breaks included, which is how
      :meth:`Hierarchy.to_arx_csv` writes a label with surrounding spaces, so its files read back exactly; a
      quote left open is refused;
    * blank lines and rows of only delimiters are skipped, trailing empty cells ignored (spreadsheets pad
      rows); an empty cell inside a row is refused (an empty label would release the value as missing); a
      cell of only whitespace is empty, quoted or not; the first cell, the original value, may be empty: it
      is the row of a value made of spaces only (a text category, stripped as every original is), which
      :meth:`Hierarchy.to_arx_csv` writes so;
    * the root: when no row ends with ``*`` and the last level has several labels, ``*`` is appended; when
      some rows end with ``*`` and others do not (a header line, a cut row), the file is refused.

    Messages count rows as the hierarchy does (blank lines not counted) and never show a cell.
    """
    rows = _arx_rows(_arx_text(_arx_bytes(source), name), name)
    for i, r in enumerate(rows):
        if "" in r[1:]:
            raise InputError(f"Row {i + 1} of hierarchy file{_of(name)} has an empty cell "
                             f"(level {r.index('', 1)}); give every level a label.")
    return Hierarchy(tuple(_with_root(rows, name)), name)


def _arx_bytes(source: str | os.PathLike | bytes) -> bytes:
    """The bytes of a file or upload; an unreadable path is an :class:`InputError` naming the file."""
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    path = Path(source)
    if not path.exists():
        raise InputError(f"Hierarchy file not found: {path.name}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read hierarchy file {path.name}: {exc.strerror or type(exc).__name__}.") from None


def _arx_text(raw: bytes, name: str) -> str:
    """The text of a hierarchy file, with the data reader's rules (one encoding for the whole file)."""
    from ..io import decode_text  # kanon_core.io is heavy; hierarchies built in memory do not need it

    try:
        text = decode_text(raw)
    except InputError as exc:
        raise InputError(f"Hierarchy file{_of(name)}: {exc}") from None
    if "\x00" in text:
        raise InputError(f"Hierarchy file{_of(name)} is not a CSV text file (it holds NUL characters; UTF-16 needs "
                         "a byte-order mark).")
    return text


def _arx_rows(text: str, name: str) -> list[tuple[str, ...]]:
    """The rows under the first delimiter of :data:`ARX_DELIMITERS` that reads the file without a quoting
    error and splits its first row into levels; every row must then have as many. A file no delimiter
    splits has one level (the root is added). Never a guess among delimiters that disagree: a row out of
    line is refused, not read again with another delimiter."""
    problem: tuple[str, csv.Error] | None = None
    first = _delimiter_outside_quotes(text)
    for delim in ([first] if first else []) + [d for d in ARX_DELIMITERS if d != first]:
        try:
            rows = _csv_rows(text, delim)
        except csv.Error as exc:
            problem = problem or (delim, exc)
            continue
        if rows and len(rows[0]) >= 2:
            break
    else:
        if problem is not None:
            delim, exc = problem
            reason = next((r for key, r in _CSV_PROBLEMS if key in str(exc)), "text that is not valid CSV")
            raise InputError(f"Hierarchy file{_of(name)} has {reason} (line {_csv_error_line(text, delim)}).")
        rows = _split_rows(text)
    if not rows:
        raise InputError(f"The hierarchy file{_of(name)} is empty.")
    for i, r in enumerate(rows):
        if len(r) != len(rows[0]):
            raise InputError(f"The rows of hierarchy file{_of(name)} have different numbers of levels: row {i + 1} "
                             f"has {len(r)} level{'s' if len(r) != 1 else ''}, row 1 has {len(rows[0])}.")
    return rows


def _delimiter_outside_quotes(text: str) -> str | None:
    """The first of :data:`ARX_DELIMITERS` (in their order) that occurs in the first row outside quoted text, or
    None: in ``1,"Married; spouse present",*`` the ";" is a character of a quoted cell and the row is split by
    commas (a reader trying ";" first sees no quoting error there, the quote being inside its cell, and
    misreads it), while ``Married, spouse present;Married;*`` is still split by ";"."""
    found: set[str] = set()
    quoted = False
    for ch in text.lstrip("\ufeff"):
        if ch == '"':
            quoted = not quoted  # a doubled quote inside a quoted cell toggles twice
        elif not quoted and ch in "\r\n":
            break
        elif not quoted and ch in ARX_DELIMITERS:
            found.add(ch)
    return next((d for d in ARX_DELIMITERS if d in found), None)


def _split_rows(text: str) -> list[tuple[str, ...]]:
    """A file whose first row has one level: under the first delimiter that splits some later row (so that
    row is refused as out of line, not read as one value holding delimiters), else as one column."""
    for delim in ARX_DELIMITERS:
        rows = _csv_rows(text, delim)
        if any(len(r) >= 2 for r in rows):
            return rows
    return _csv_rows(text, ARX_DELIMITERS[0])


def _csv_rows(text: str, delim: str) -> list[tuple[str, ...]]:
    """Every non-empty record, trailing empty cells dropped (raises :class:`csv.Error`): unquoted cells
    stripped (hand-written files pad them: ``a ; ab ; *``), quoted cells as they are between their quotes
    (how :meth:`Hierarchy.to_arx_csv` writes a label with surrounding spaces), a blank cell empty either way.

    The csv module does not say which cells were quoted, so the record's own lines are read again
    (:func:`_record_cells`), only where they hold a quote."""
    lines = io.StringIO(text, newline="").readlines()  # the lines the reader reads: ends at CR, LF or CRLF
    reader = csv.reader(lines, delimiter=delim, strict=True)
    quotes = '"' in text
    rows, start = [], 0
    for record in reader:
        raw = "".join(lines[start:reader.line_num]) if quotes else ""
        start = reader.line_num
        cells = _record_cells(record, raw, delim) if '"' in raw else [c.strip() for c in record]
        while cells and cells[-1] == "":
            cells.pop()
        if cells:
            rows.append(tuple(cells))
    return rows


def _record_cells(record: list[str], raw: str, delim: str) -> list[str]:
    """The cells of a record read from ``raw``, its lines: a quoted cell as read (blank: empty), an unquoted
    one stripped. A cell is quoted when its text starts with a quote (the csv module reads a quote anywhere
    else as a character); a strict reader then ends it right after the closing quote, so it spans its value,
    the value's quotes once more, and the two quotes around it."""
    cells, pos = [], 0
    for value in record:
        if raw.startswith('"', pos):
            cells.append(value if value.strip() else "")
            pos += len(value) + value.count('"') + 2
        else:
            cells.append(value.strip())
            pos += len(value)
        pos += len(delim)
    return cells


def _csv_error_line(text: str, delim: str) -> int:
    """The line where the record the CSV reader cannot read begins (where a quote left open was opened)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, strict=True)
    line = 1
    try:
        for _ in reader:
            line = reader.line_num + 1
    except csv.Error:
        pass
    return line


def _with_root(rows: list[tuple[str, ...]], name: str) -> list[tuple[str, ...]]:
    """The rows ending at one root: as written, or with ``*`` appended when the file has no root column."""
    ends = [r[-1] == TOP for r in rows]
    if len(rows[0]) >= 2 and any(ends) and not all(ends):
        raise InputError(
            f"Row {ends.index(False) + 1} of hierarchy file{_of(name)} does not end with '{TOP}' while row "
            f"{ends.index(True) + 1} does: every row must end at the same root (a header line? ARX hierarchy "
            "files have none)."
        )
    if len(rows[0]) == 1 or len({r[-1] for r in rows}) > 1:
        return [r + (TOP,) for r in rows]
    return rows


def write_arx_hierarchy(hierarchy: Hierarchy, path: str | os.PathLike) -> Path:
    path = Path(path)
    path.write_text(hierarchy.to_arx_csv(), encoding="utf-8")
    return path


def find_hierarchy_file(directory: str | os.PathLike, variable: str) -> Path | None:
    """The one file of ``directory`` named ``<var>.csv`` or ``*hierarchy_<var>.csv`` (ARX's naming, e.g.
    ``adult_hierarchy_age.csv``), or None.

    Names are compared as text among the folder's own entries, never as patterns or paths: a variable named
    ``g*`` or ``g[1]`` does not take another variable's file, and one named ``../g`` does not reach beside
    the folder (where ``--output`` could then overwrite what was read). Two matching files are refused
    (which was meant cannot be guessed), and so is a matching entry that is not a readable file (a folder,
    a broken link, a link loop).
    """
    d = Path(directory)
    if not d.is_dir():
        return None
    exact, arx = f"{variable}.csv", f"hierarchy_{variable}.csv"
    try:
        found = sorted(p for p in d.iterdir() if p.name == exact or p.name.endswith(arx))
    except OSError as exc:
        raise InputError(f"Cannot read hierarchy folder {d.name}: {exc.strerror or type(exc).__name__}.") from None
    if len(found) > 1:
        raise InputError(f"{len(found)} hierarchy files for {variable}: {', '.join(p.name for p in found)}. "
                         "Keep one.")
    if found and not found[0].is_file():
        raise InputError(f"The hierarchy file {found[0].name} for {variable} is not a readable file (a folder, a "
                         "broken link or a link loop).")
    return found[0] if found else None


def load_hierarchies(directory: str | os.PathLike, variables: Sequence[str]) -> dict[str, Hierarchy]:
    """The hierarchy of each variable from a folder of ARX files; a missing file is an error."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"Hierarchy folder not found: {d.name}")
    out, missing = {}, []
    for v in variables:
        p = find_hierarchy_file(d, v)
        if p is None:
            missing.append(v)
        else:
            out[v] = read_arx_hierarchy(p, v)
    if missing:
        raise InputError(
            f"No hierarchy file for {', '.join(missing)} (looked for '*hierarchy_<var>.csv' and '<var>.csv')."
        )
    return out


def hierarchy_from_json(rows: Sequence[Sequence[Any]], name: str = "") -> Hierarchy:
    return Hierarchy(tuple(tuple(str(c) for c in r) for r in rows), name)
