"""The shared result cache: a byte bound with least-recently-used eviction, safe from several threads."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_app.cache import ByteLRU, SessionView, size_of


def test_evicts_least_recently_used_first_to_hold_the_byte_bound():
    c = ByteLRU(100, sizer=lambda v: v)
    c.put("a", 40)
    c.put("b", 40)
    assert c.get("a") == 40  # a is now the most recently used
    c.put("c", 40)  # 120 > 100: b goes, not a
    assert "b" not in c and "a" in c and "c" in c
    assert c.nbytes == 80


def test_a_value_larger_than_the_bound_is_not_kept_and_replacing_a_key_frees_its_bytes():
    c = ByteLRU(100, sizer=lambda v: v)
    assert c.put("a", 30)
    assert not c.put("big", 101)
    assert "big" not in c and c.nbytes == 30
    c.put("a", 70)
    assert c.nbytes == 70 and len(c) == 1
    assert c.pop("a") == 70 and c.nbytes == 0


def test_bad_bound_is_refused():
    with pytest.raises(ValueError):
        ByteLRU(0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 60), st.booleans()), max_size=60),
       st.integers(1, 150))
def test_matches_a_reference_lru(ops, bound):
    """Against a plain list model of LRU-by-bytes: same keys, same order, same byte total."""
    c = ByteLRU(bound, sizer=lambda v: v)
    model: list[tuple[str, int]] = []  # least recently used first
    for key, size, is_get in ops:
        if is_get:
            got = c.get(key)
            hit = [kv for kv in model if kv[0] == key]
            assert got == (hit[0][1] if hit else None)
            if hit:
                model.remove(hit[0])
                model.append(hit[0])
            continue
        c.put(key, size)
        model = [kv for kv in model if kv[0] != key]
        if size <= bound:
            model.append((key, size))
            while sum(s for _, s in model) > bound:
                model.pop(0)
    assert [k for k, _ in c.items()] == [k for k, _ in model]
    assert c.nbytes == sum(s for _, s in model) <= bound


def test_size_of_counts_array_and_frame_buffers():
    a = np.zeros(1000, dtype=np.int64)
    assert 8000 <= size_of(a) < 9000
    assert size_of((a, a)) < 9000 + 200  # the same array counted once
    f = pd.DataFrame({"x": np.zeros(1000), "s": pd.Series(["abc"] * 1000, dtype=object)})
    assert size_of(f) >= 8000 + 1000 * 40  # numbers plus the Python string objects behind the pointers
    g = pd.DataFrame({"s": pd.Series(["abc"] * 1000, dtype="string[pyarrow]")})
    assert size_of(g) >= 3000  # Arrow's own buffers


def test_sessions_do_not_see_each_others_entries():
    store = ByteLRU(10_000)
    one, two = SessionView(store), SessionView(store)
    one.put(("h", 0, "minucs", 2), "one's result")
    assert ("h", 0, "minucs", 2) in one and ("h", 0, "minucs", 2) not in two
    assert list(two) == [] and one.items() == [(("h", 0, "minucs", 2), "one's result")]
    with pytest.raises(KeyError):
        two[("h", 0, "minucs", 2)]


def test_concurrent_puts_and_gets_keep_the_bound_and_the_byte_count():
    c = ByteLRU(5_000, sizer=lambda v: v)
    errors = []

    def work(t: int) -> None:
        try:
            for i in range(3_000):
                c.put((t, i % 50), (i * 7 + t) % 300)
                c.get((1 - t, i % 50))
                c.discard_where(lambda k, i=i: k == (t, (i + 25) % 50))
        except Exception as exc:  # pragma: no cover - the test fails below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert c.nbytes == sum(v for _, v in c.items()) <= 5_000
