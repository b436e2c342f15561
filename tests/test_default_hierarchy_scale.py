"""Grouping of unordered categories at scale: the same hierarchy as the plain re-sort-after-every-merge
algorithm (kept below as the specification), but without its quadratic cost on 100,000 categories; and
every group of a level under a label of its own, where that algorithm's names could clash."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kanon_core.treat.default_hierarchy import blank_name, frequency_grouping_hierarchy
from kanon_core.treat.hierarchy import TOP, Hierarchy, _complete


def _reference_group_name(named: Sequence[str], size: int) -> str:
    """A group of ``size`` categories named by the sorted labels ``named`` of its members of at least the
    smallest capacity in records (rarer members are counted, never named)."""
    if len(named) == size <= 3:
        return " / ".join(named)
    if not named:
        return f"{size} rare categories"
    return f"{named[0]} / … ({size} categories)" if len(named) == 1 else \
        f"{named[0]} / {named[1]} / … ({size} categories)"


def _reference_levels(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                      capacities: Sequence[float]) -> list[list[tuple[list[int], str]]]:
    """The original algorithm, word for word: sort all groups by (records, name) and, while the smallest
    is under the capacity, merge the two smallest and stable-sort the whole list again. Each level's groups
    (member indices) with their names as that algorithm gave them, clashes included."""
    groups: list[list[int]] = [[i] for i in range(len(texts))]

    def size(g: list[int]) -> int:
        return sum(int(counts[i]) for i in g)

    def title(g: list[int]) -> str:
        named = sorted(labels[i] for i in g if int(counts[i]) >= min(capacities))
        return texts[g[0]] if len(g) == 1 else _reference_group_name(named, len(g))

    levels = []
    for c in sorted(capacities):
        groups.sort(key=lambda g: (size(g), title(g)))
        while len(groups) > 1 and size(groups[0]) < c:
            merged = groups[0] + groups[1]
            groups = sorted([merged, *groups[2:]], key=lambda g: (size(g), title(g)))
        levels.append([(list(g), title(g)) for g in groups])
    return levels


def _reference_distinct_names(level: list[tuple[list[int], str]], blank: str) -> list[tuple[list[int], str]]:
    """The rule for clashing names, spelled out: single categories keep their text (one of empty text is
    named ``blank``, :func:`blank_name`); then, merged groups in
    order of their first category, a group keeps its name unless some label given before is that name,
    else takes "name (k)" for the smallest k from 2 that is no group's name and no label given before."""
    names = {title for _, title in level}
    given: set[str] = set()
    out = []
    singles = [(g, t) for g, t in level if len(g) == 1]
    merged = sorted(((g, t) for g, t in level if len(g) > 1), key=lambda gt: min(gt[0]))
    for g, title in singles + merged:
        if len(g) == 1 and not title.strip():
            title = blank
        if len(g) > 1 and title in given:
            k = 2
            while f"{title} ({k})" in names or f"{title} ({k})" in given:
                k += 1
            title = f"{title} ({k})"
        given.add(title)
        out.append((g, title))
    return out


def _labelled(n: int, levels: list[list[tuple[list[int], str]]]) -> list[list[str]]:
    """Each level's label of every category: the name of its group."""
    rows = []
    for level in levels:
        of = {i: title for g, title in level for i in g}
        rows.append([of[i] for i in range(n)])
    return rows


def former_frequency_grouping(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                              capacities: Sequence[float], name: str = "") -> Hierarchy:
    """The original algorithm with its names as they were (two groups could share one)."""
    levels = _reference_levels(texts, labels, counts, capacities)
    return _complete(list(texts), _labelled(len(texts), levels), name)


def reference_frequency_grouping(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                                 capacities: Sequence[float], name: str = "") -> Hierarchy:
    """The original algorithm, with every group of a level under a label of its own."""
    levels = [_reference_distinct_names(level, blank_name(texts))
              for level in _reference_levels(texts, labels, counts, capacities)]
    return _complete(list(texts), _labelled(len(texts), levels), name)


def _outcome(fn: Callable[..., Hierarchy], *args: object) -> tuple:
    """The rows built, or the kind and message of the refusal (both versions must refuse alike)."""
    try:
        h = fn(*args)
    except Exception as exc:  # every way of failing is compared, not only InputError
        return ("raised", type(exc).__name__, str(exc))
    return ("rows", h.rows, h.name)


# Texts that look like group names, so a category and a merged group can tie on (records, name), and codes
# that differ only as texts ("007" and "7"); few labels, so merged groups often share their names too.
_TEXTS = st.one_of(st.sampled_from(["7", "007", "07", "a", "b", "x", "a / b", "a / a", "x / x", "a / b / x",
                                    "x / x / … (4 categories)", "", " ", "NA"]), st.text(max_size=3))
_LABELS = st.one_of(st.sampled_from(["x", "x", "a", "b", "7", "007", ""]), st.text(max_size=2))
_TIED_TEXTS = st.sampled_from(["p", "q", "r", "s", "u", "v", "w", "z", "x / x", "x / x / y"])


@st.composite
def _grouping_inputs(draw: st.DrawFn) -> tuple[list[str], list[str], list[int], list[float]]:
    """Small inputs of any kind, or (half of the time) inputs made of ties: equal counts, equal labels."""
    if draw(st.booleans()):
        texts = draw(st.lists(_TIED_TEXTS, min_size=3, max_size=10, unique=True))
        labels = draw(st.lists(st.sampled_from(["x", "x", "y"]), min_size=len(texts), max_size=len(texts)))
        counts = draw(st.lists(st.integers(1, 3), min_size=len(texts), max_size=len(texts)))
        caps = draw(st.lists(st.integers(2, 8), min_size=1, max_size=2))
        return texts, labels, counts, caps
    texts = draw(st.lists(_TEXTS, max_size=12, unique=draw(st.booleans())))
    labels = draw(st.lists(_LABELS, min_size=len(texts), max_size=len(texts)))
    counts = draw(st.lists(st.integers(0, 4), min_size=len(texts), max_size=len(texts)))
    caps = draw(st.lists(st.one_of(st.integers(0, 8), st.floats(0, 30)), max_size=4))
    return texts, labels, counts, caps


@given(_grouping_inputs())
def test_grouping_equals_the_reference_algorithm(args):
    texts, labels, counts, caps = args
    assert _outcome(frequency_grouping_hierarchy, texts, labels, counts, caps, "q") == \
        _outcome(reference_frequency_grouping, texts, labels, counts, caps, "q")


def test_ties_in_records_and_name_keep_the_reference_order():
    """Groups of equal records and name: which of them merges next decides the next level, so their order
    is part of the result. Merged groups "x / x" tie with each other and with a category spelled alike."""
    cases = [  # (texts, labels, counts, capacities)
        # {r, s}, then {p, q}, then the category "x / x" (all 2 records, all named "x / x"): the two merged
        # groups pool, and "x / x" goes with "d"
        (["p", "q", "r", "s", "x / x", "d", "t"], ["x"] * 4 + ["y", "z", "w"], [1, 1, 1, 1, 2, 3, 20], [3]),
        # the newer {r, s} goes with "z"; the older {p, q} is left for "u"
        (["p", "q", "r", "s", "z", "u", "t"], ["x"] * 4 + ["z", "u", "t"], [2, 2, 2, 2, 3, 6, 20], [5]),
    ]
    for texts, labels, counts, caps in cases:
        got = frequency_grouping_hierarchy(texts, labels, counts, caps, "q")
        assert got.rows == reference_frequency_grouping(texts, labels, counts, caps, "q").rows, texts


def _partition(labels: Sequence[str]) -> set[frozenset[int]]:
    """The groups a labelling makes: the categories under each label."""
    by: dict[str, set[int]] = {}
    for i, lab in enumerate(labels):
        by.setdefault(lab, set()).add(i)
    return {frozenset(g) for g in by.values()}


def _reference_partitions(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                          capacities: Sequence[float]) -> list[set[frozenset[int]]]:
    """The groups of each level the original algorithm decided, as a hierarchy keeps them: a level that
    groups like the one below is left out, and so is a last level of a single group (that is ``*``)."""
    kept: list[set[frozenset[int]]] = []
    below = {frozenset([i]) for i in range(len(texts))}
    for level in _reference_levels(texts, labels, counts, capacities):
        groups = {frozenset(g) for g, _ in level}
        if groups != below:
            kept.append(groups)
            below = groups
    if kept and len(kept[-1]) == 1:
        kept.pop()
    return kept


def _assert_one_label_per_reference_group(texts: Sequence[str], labels: Sequence[str], counts: Sequence[int],
                                          capacities: Sequence[float]) -> None:
    """The hierarchy builds; at every level each group the algorithm decided has one label and no other
    group (nor category) shares it; and each level is a coarsening of the one below."""
    h = frequency_grouping_hierarchy(texts, labels, counts, capacities, "q")
    for level in range(1, h.height):
        below, here = h.labels_at(level - 1), h.labels_at(level)
        assert len(set(zip(below, here, strict=True))) == len(set(below)), level
    got = [_partition(h.labels_at(level)) for level in range(1, h.max_level)]
    assert got == _reference_partitions(texts, labels, counts, capacities)


_CLASHES = {  # (texts, labels, counts, capacities)
    # {p, q} and {r, s} are both "x / x", as is the category "x / x": at the next level the two pools merge
    # and the category goes with "d", which three groups under one label at level 1 did not allow
    "a category reads like a group, and codes share a label":
        (["p", "q", "r", "s", "x / x", "d", "t"], ["x"] * 4 + ["y", "z", "w"], [1, 1, 1, 1, 2, 3, 20], [2, 3]),
    # four codes labelled "Other" pool in two pairs, both "Other / Other"; then each pair goes elsewhere
    "codes share a value label":
        (["1", "2", "3", "4", "5", "6", "7"], ["Other"] * 4 + ["Fisher", "Farmer", "Clerk"],
         [1, 1, 1, 1, 2, 3, 50], [2, 3]),
    # {1, 3, 5, 8} (b, c, e, c) and {2, 4, 6, 7} (c, b, c, d): four categories each, the two smallest labels
    # b and c, so both are "b / c / … (4 categories)"
    "groups of four share their two smallest labels":
        ([str(i) for i in range(1, 9)], ["b", "c", "c", "b", "e", "c", "d", "c"], [3, 2, 3, 2, 3, 2, 2, 2], [5, 8]),
    # the category "a / b" and the pool of a and b
    "a category reads like a group":
        (["a", "b", "a / b", "c", "d"], ["a", "b", "a / b", "c", "d"], [1, 1, 2, 3, 50], [2, 3]),
}


@pytest.mark.parametrize("case", list(_CLASHES))
def test_groups_sharing_a_name_keep_labels_of_their_own(case):
    texts, labels, counts, caps = _CLASHES[case]
    _assert_one_label_per_reference_group(texts, labels, counts, caps)
    h = frequency_grouping_hierarchy(texts, labels, counts, caps, "q")
    assert h.rows == reference_frequency_grouping(texts, labels, counts, caps, "q").rows


def test_a_numbered_label_skips_names_already_taken():
    """The category written "x / x (2)" keeps its text, so of the other two groups named "x / x" (after the
    category "x / x") the second is "x / x (3)": no label stands for two groups. (The smallest capacity, 1,
    lets members of one record be named; the level of capacity 1 merges nothing and is not kept.)"""
    texts = ["p", "q", "r", "s", "x / x", "x / x (2)", "t"]
    labels = ["x"] * 4 + ["y", "y", "w"]
    counts = [1, 1, 1, 1, 2, 2, 20]
    h = frequency_grouping_hierarchy(texts, labels, counts, [1, 2], "q")
    level = h.labels_at(1)
    assert len(set(level)) == len(_partition(level)) == 5
    # numbered in the order of their first category: {p, q} before {r, s}
    assert (level[0], level[2], level[4], level[5]) == ("x / x (3)", "x / x (4)", "x / x", "x / x (2)")


@st.composite
def _valid_inputs(draw: st.DrawFn) -> tuple[list[str], list[str], list[int], list[float]]:
    """Inputs a hierarchy can be built from (categories distinct as written, spaces aside), with shared value
    labels, texts written like group names, and many ties."""
    if draw(st.booleans()):
        texts = draw(st.lists(_TIED_TEXTS, min_size=3, max_size=10, unique=True))
        labels = draw(st.lists(st.sampled_from(["x", "x", "y", "x / x"]), min_size=len(texts), max_size=len(texts)))
        counts = draw(st.lists(st.integers(1, 2), min_size=len(texts), max_size=len(texts)))
        return texts, labels, counts, draw(st.lists(st.integers(2, 8), min_size=1, max_size=3))
    texts = draw(st.lists(_TEXTS, min_size=1, max_size=12, unique_by=str.strip))
    labels = draw(st.lists(_LABELS, min_size=len(texts), max_size=len(texts)))
    counts = draw(st.lists(st.integers(0, 4), min_size=len(texts), max_size=len(texts)))
    return texts, labels, counts, draw(st.lists(st.one_of(st.integers(0, 8), st.floats(0, 30)), max_size=4))


@given(_valid_inputs())
def test_every_level_labels_its_groups_one_to_one(args):
    _assert_one_label_per_reference_group(*args)


@given(_grouping_inputs())
def test_names_that_do_not_clash_are_kept_as_they_were(args):
    """Numbers are added only where two groups of a level share a name: otherwise the hierarchy is the one
    the former names gave."""
    texts, labels, counts, caps = args
    levels = _reference_levels(texts, labels, counts, caps)
    # (a category of empty text is named since: the former names left it empty, which a release reads as missing)
    if "" not in texts and all(len({title for _, title in level}) == len(level) for level in levels):
        assert _outcome(frequency_grouping_hierarchy, texts, labels, counts, caps, "q") == \
            _outcome(former_frequency_grouping, texts, labels, counts, caps, "q")


class _CountingReads(list):
    """A list that counts how often an item is read (the old algorithm re-read every member on each sort)."""

    def __init__(self, items: Sequence[object]) -> None:
        super().__init__(items)
        self.reads = 0

    def __getitem__(self, i: int) -> object:
        self.reads += 1
        return super().__getitem__(i)


def test_each_count_and_label_is_read_a_bounded_number_of_times():
    """Linear reads of the inputs: the quadratic version read counts and labels again at every merge."""
    n = 1500
    rng = np.random.default_rng(5)
    texts = [f"{i:05d}" for i in range(n)]
    counts = _CountingReads([int(c) for c in rng.integers(1, 20, n)])
    labels = _CountingReads([f"label {i}" for i in range(n)])
    total = sum(counts)
    frequency_grouping_hierarchy(texts, labels, counts, [0.01 * total, 0.2 * total])
    assert counts.reads <= 2 * n and labels.reads <= 2 * n


def test_a_hundred_thousand_categories_are_grouped():
    """A text variable with 100,000 categories (codes "000007" and "7" both among them) gets its hierarchy:
    every value in one group per level, groups nested, the rarest pooled until each level's capacity."""
    n = 100_000
    rng = np.random.default_rng(7)
    counts = [int(c) for c in rng.zipf(1.6, n) % 500 + 1]
    texts = [f"{i:06d}" for i in range(n // 2)] + [str(i) for i in range(n // 2)]
    total = sum(counts)
    caps = [0.01 * total, 0.05 * total, 0.2 * total]
    h = frequency_grouping_hierarchy(texts, texts, counts, caps, "q")
    assert h.originals == tuple(texts) and h.height == len(caps) + 2
    assert set(h.labels_at(h.max_level)) == {TOP}
    groups = [len(set(h.labels_at(level))) for level in range(h.height)]
    assert groups == sorted(groups, reverse=True) and groups[0] == n and groups[1] < n
    for level, cap in enumerate(caps, start=1):
        index, _ = h.groups_at(level)
        assert np.bincount(index, weights=counts).min() >= cap
        below, _ = h.groups_at(level - 1)
        # nested: the values of one group below all sit in one group here
        assert len(set(zip(below.tolist(), index.tolist(), strict=True))) == len(set(below.tolist()))


def test_a_category_of_only_spaces_left_alone_is_named_blank():
    """Found by the property above: the category " " left alone at a level kept its text, a label a release
    writes as an empty cell (read as missing), and the hierarchy was refused."""
    texts = ["a", " ", "7", "007", "07", "x", "\x08", "b"]
    h = frequency_grouping_hierarchy(texts, ["x"] * 8, [0, 1, 0, 0, 0, 0, 1, 0], [1], "q")
    assert dict(zip(h.originals, h.labels_at(1), strict=True))[" "] == "(blank)"
    assert h.rows == reference_frequency_grouping(texts, ["x"] * 8, [0, 1, 0, 0, 0, 0, 1, 0], [1], "q").rows
