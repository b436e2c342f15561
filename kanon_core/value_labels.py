"""Value and variable labels as a recorded step, for files that cannot carry them (CSV, Excel, Parquet
written by others).

Labels live in the dataset's metadata (:class:`~kanon_core.dataset.VariableMeta`), which every table, chart,
export and the report read through :meth:`Dataset.value_label` and the QI encodings. Setting them as a
step puts the decision in the history, the recipe and the version fingerprints, and ``kanon apply`` replays
it on the next wave; the cells themselves never change.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from .dataset import Dataset
from .errors import InputError
from .io import typed_codes
from .progress import Progress
from .steps import Step, register_step

MAX_LABEL_LENGTH = 500


@register_step
@dataclasses.dataclass(frozen=True)
class SetValueLabels(Step):
    """Set the value labels of variables, ``labels = ((variable, ((code, text), ...)), ...)``, and optionally
    their variable labels, ``variable_labels = ((variable, text), ...)``.

    A variable's value labels are replaced by the ones given (the editor always sends the full set); an
    empty text removes a code's label. Codes are matched to the variable's type when applied ("1" is the
    number 1 in a numeric variable), as declared missing codes are. Labels of codes that do not occur are
    kept: a codebook lists every code. Variables not named keep their labels.
    """

    kind: ClassVar[str] = "set_value_labels"
    labels: tuple[tuple[str, tuple[tuple[Any, str], ...]], ...] = ()
    variable_labels: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for pair in self.labels:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                    and isinstance(pair[1], tuple)
                    and all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[1], str) for x in pair[1])):
                raise InputError("Value labels must be pairs of a variable and its (code, label) pairs.")
        for pair in self.variable_labels:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                raise InputError("Variable labels must be pairs of a variable and its label.")
        for _, pairs in self.labels:
            if any(len(text) > MAX_LABEL_LENGTH for _, text in pairs):
                raise InputError(f"A value label is longer than {MAX_LABEL_LENGTH} characters.")

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([v for v, _ in self.labels] + [v for v, _ in self.variable_labels]))

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], columns: list[str]) -> tuple[SetValueLabels, list[str]]:
        """The step setting the labels of a labels file (the ``.labels.json`` sidecar format:
        ``{var: {"label": ..., "value_labels": {code: text}, ...}}``) and the file's variables not in
        ``columns`` (ignored, listed so the caller can say so). Missing codes are not labels: see
        :class:`~kanon_core.declare_missing.DeclareMissingValues`.

        The file's shape is checked first as every reader of a labels file checks it
        (:func:`kanon_core.io.check_labels_spec`): its missing codes as a list, not a text read code by
        character ("-9" declaring "-" and "9" missing), whichever page imports it."""
        from .io import check_labels_spec

        check_labels_spec(spec, "The labels file")
        labels, var_labels, unknown = [], [], []
        for var, d in spec.items():
            if var not in columns:
                unknown.append(str(var))
                continue
            if not isinstance(d, Mapping):
                raise InputError(f"The labels of {var} must be an object with 'label' and 'value_labels'.")
            vl = d.get("value_labels") or {}
            if not isinstance(vl, Mapping):
                raise InputError(f"The value labels of {var} must be an object of code: label.")
            if vl:
                labels.append((str(var), tuple((str(k), str(v)) for k, v in vl.items())))
            if isinstance(d.get("label"), str) and d["label"]:
                var_labels.append((str(var), d["label"]))
        if not labels and not var_labels:
            raise InputError("The labels file has no labels for variables of this data.")
        return cls(tuple(labels), tuple(var_labels)), unknown

    def apply(self, ds: Dataset, progress: Progress | None = None) -> Dataset:
        if not self.labels and not self.variable_labels:
            raise InputError("No labels to set.")
        unknown = [c for c in self.columns if c not in ds.frame.columns]
        if unknown:
            raise InputError(f"Cannot label unknown variable(s): {', '.join(unknown)}.")
        meta = dict(ds.meta)
        for var, pairs in self.labels:
            series = ds.frame[var]
            mapping = {_code(series, code): text for code, text in pairs if text.strip()}
            meta[var] = dataclasses.replace(ds.meta_of(var), value_labels=mapping)
        for var, text in self.variable_labels:
            m = meta.get(var, ds.meta_of(var))
            meta[var] = dataclasses.replace(m, label=text.strip() or None)
        return ds.with_frame(ds.frame, meta)

    def describe(self) -> str:
        parts = [f"{var} ({len([t for _, t in pairs if t.strip()])} codes)" for var, pairs in self.labels]
        if self.variable_labels:
            parts.append(f"variable labels of {len(self.variable_labels)} variable(s)")
        return "Labels: " + "; ".join(parts)


def labels_file_beyond(data_path: str | os.PathLike, columns: Iterable[str]) -> tuple[str, tuple[str, ...]]:
    """The name of the labels file read with the data file ``data_path`` (:func:`kanon_core.io.input_sidecar`)
    and the variables it names that ``columns`` lacks, in its order; ``("", ())`` when there is no labels file
    or it names none beyond them.

    Deliberately not an error: a labels file may describe more variables than one file holds (a codebook
    kept for every wave of a survey, a release that left variables out), and their labels are ignored, as
    :meth:`SetValueLabels.from_spec` ignores them and lists them for its caller to say so. A misspelt name
    is ignored the same way, so callers should say which names were ignored (names, never codes or labels).
    Only the names are read here: a file of the wrong shape is the readers' to refuse."""
    import json

    from .io import input_sidecar

    side = input_sidecar(Path(data_path))
    try:
        spec = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return "", ()
    if not isinstance(spec, Mapping):
        return "", ()
    known = {str(c) for c in columns}
    beyond = tuple(str(v) for v in spec if str(v) not in known)
    return (side.name, beyond) if beyond else ("", ())


def _code(series: pd.Series, code: Any) -> Any:
    return typed_codes(series, [code])[0]


def value_table(ds: Dataset, column: str) -> pd.DataFrame:
    """The editor's rows for one variable: each observed value (as text), its count and its current label,
    then labelled codes that do not occur (count 0). Missing cells are not codes and are left out."""
    series = ds.frame[column]
    observed = series[~ds.missing_mask(column)]
    counts = observed.value_counts(sort=False)
    from .dataset import _sort_key

    values = sorted(counts.index.tolist(), key=_sort_key)
    labels = dict(ds.meta_of(column).value_labels)
    style = ds.meta_of(column).float_style  # codes written as the file writes them ("2" or "2.0")
    rows = [{"code": _text(v, style), "records": int(counts[v]), "label": labels.get(v, _float_label(labels, v)),
             "_value": _plain(v)} for v in values]
    seen = {r["_value"] for r in rows}
    for code, text in sorted(labels.items(), key=lambda kv: _sort_key(kv[0])):
        if _plain(code) not in seen:
            rows.append({"code": _text(code, style), "records": 0, "label": text, "_value": _plain(code)})
    return pd.DataFrame(rows, columns=["code", "records", "label", "_value"])


def _float_label(labels: Mapping[Any, str], v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and int(v) in labels:
        return labels[int(v)]
    return ""


def _plain(v: Any) -> Any:
    """numpy scalars as Python ones (JSON-friendly codes in the recipe)."""
    return v.item() if hasattr(v, "item") else v


def _text(v: Any, style: str) -> str:
    from .io import cell_text

    return cell_text(_plain(v), style)
