"""Date hierarchies read their values in one way whatever the records' order, and never read numbers as dates.

pandas read the integer 20190115 as nanoseconds after 1970 (every level became ``*``, silently), and took the
format of the first text for all texts: day-first dates were read when the file began with 13/01/2020, refused
when it began with 02/05/2020, and read month-first without a word when no day exceeded 12."""

from __future__ import annotations

import datetime
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_core.errors import InputError
from kanon_core.treat.hierarchy import date_hierarchy

LEVELS = ["month", "quarter", "year"]


def months(h) -> dict[str, str]:
    """Each row's month (the level labelled like 2020-03), read from the rows."""
    for lv in range(1, h.height):
        labels = h.labels_at(lv)
        if all(len(lab) == 7 and lab[4] == "-" for lab in labels):
            return dict(zip(h.originals, labels, strict=True))
    raise AssertionError("no month level")


@pytest.mark.parametrize("numbers", [[20190115, 20190420, 20200301, 20201231],
                                     [20190115.0, 20200301.0], np.array([20190115, 20200301]),
                                     pd.Series([20190115, 20200301], dtype="Int64")])
def test_numbers_are_refused_with_one_line_without_values(numbers):
    with pytest.raises(InputError) as exc:
        date_hierarchy(numbers, LEVELS, name="born")
    message = str(exc.value)
    assert "'born'" in message and "YYYY-MM-DD" in message and "\n" not in message
    assert "2019" not in message and "2020" not in message


def test_dates_as_text_timestamps_and_dates_keep_working():
    texts = date_hierarchy(["2019-01-15", "2019-04-20", "2020-03-01", "2020-12-31"], LEVELS)
    assert texts.labels_at(texts.max_level - 1) == ("2019", "2019", "2020", "2020")
    stamps = date_hierarchy([pd.Timestamp("2019-01-15"), datetime.date(2019, 4, 20),
                             datetime.datetime(2020, 3, 1), np.datetime64("2020-12-31")], LEVELS)
    assert stamps.rows == texts.rows
    compact = date_hierarchy(["20190115", "20190420", "20200301"], ["year"])  # ISO 8601's basic form, as text
    assert compact.labels_at(1) == ("2019", "2019", "2020")


DAY_FIRST = ["13/01/2020", "02/05/2020", "03/05/2020", "20/08/2020"]


@pytest.mark.parametrize("order", list(itertools.permutations(range(4))))
def test_day_first_texts_are_read_day_first_in_every_order(order):
    h = date_hierarchy([DAY_FIRST[i] for i in order], LEVELS)
    assert months(h) == {"13/01/2020": "2020-01", "02/05/2020": "2020-05", "03/05/2020": "2020-05",
                         "20/08/2020": "2020-08"}


def test_month_first_texts_are_read_month_first():
    h = date_hierarchy(["02/05/2020", "02/20/2020", "12/31/2020"], LEVELS)
    assert months(h) == {"02/05/2020": "2020-02", "02/20/2020": "2020-02", "12/31/2020": "2020-12"}


@pytest.mark.parametrize("texts", [["02/05/2020", "03/04/2020"], ["01.02.2020", "05.06.2020", "11.12.2020"],
                                   ["2020-01-15", "02/05/2020"]])
def test_texts_that_read_both_ways_as_different_dates_are_refused(texts):
    with pytest.raises(InputError) as exc:
        date_hierarchy(texts, LEVELS, name="visit")
    message = str(exc.value)
    assert "'visit'" in message and "YYYY-MM-DD" in message and "\n" not in message
    assert "2020" not in message


def test_texts_that_read_the_same_both_ways_are_accepted():
    h = date_hierarchy(["01/01/2020", "05/05/2020", "12/12/2021"], ["year"])
    assert {r[0]: r[1] for r in h.rows} == {"01/01/2020": "2020", "05/05/2020": "2020", "12/12/2021": "2021"}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.dates(datetime.date(1990, 1, 1), datetime.date(2030, 12, 31)), min_size=1, max_size=8,
                unique=True),
       st.sampled_from(["%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d", "%d.%m.%Y"]), st.randoms())
def test_a_reading_never_depends_on_the_order_and_is_right_when_it_is_accepted(dates, fmt, rnd):
    """The same texts in another order give the same hierarchy or the same refusal; an accepted column gives
    the hierarchy of the true dates; a column that only one order reads (a day above 12) is accepted."""
    texts = [d.strftime(fmt) for d in dates]
    shuffled = texts[:]
    rnd.shuffle(shuffled)
    results = []
    for order in (texts, shuffled):
        try:
            results.append(date_hierarchy(order, LEVELS).rows)
        except InputError:
            results.append("refused")
    assert results[0] == results[1]
    if results[0] == "refused":
        # refused only when both orders read every text, as different dates
        assert fmt != "%Y-%m-%d" and all(d.day <= 12 for d in dates) and any(d.day != d.month for d in dates)
    else:
        truth = date_hierarchy([pd.Timestamp(d) for d in dates], LEVELS)
        text_of = {d.isoformat(): t for d, t in zip(dates, texts, strict=True)}
        assert results[0] == tuple((text_of[r[0]], *r[1:]) for r in truth.rows)


@pytest.mark.parametrize("values", [["2020-01-01T10:00+01:00", "2020-01-01T10:00+02:00"],
                                    [pd.Timestamp("2020-01-01 00:30", tz="Europe/Paris"),
                                     pd.Timestamp("2020-06-01", tz="UTC")],
                                    [pd.Timestamp("2020-01-01", tz="UTC"), "2020-02-01"]])
def test_dates_in_several_time_zones_are_refused_in_one_line(values):
    """pandas raises a ValueError for them, even where told to coerce: a message, not a crash."""
    with pytest.raises(InputError, match="time zone") as exc:
        date_hierarchy(values, LEVELS, name="t")
    assert "\n" not in str(exc.value) and "2020" not in str(exc.value)
