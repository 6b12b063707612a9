"""Columnar trials: the shape the metrics read.

`TrialTable` holds one numpy array per field, one row per trial. Missing
numbers are NaN; missing labels are ``None`` in object arrays. Metrics never
touch pydantic objects: build a table once, then compute.

Its columns are the `agentgauge.schema.TRIAL_FIELDS` marked ``column``, plus
``infra_error`` (derived from ``status`` and ``error_kind`` by
`agentgauge.schema.infra_error`). A column's array kind follows from its field:
text is a label (objects), a real or an optional integer is a float (NaN when
missing), a required integer is an int64, a bool a bool. The attributes are
written out below so that type checkers see them; loading this module checks
them against the declaration, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from agentgauge.schema import TRIAL_FIELDS, Trial, TrialField, infra_error

__all__ = [
    "COLUMNS",
    "GROUP_KEYS",
    "SOURCE_FIELDS",
    "TrialTable",
    "by_first_appearance",
    "check_annotations",
    "column_kinds",
    "compact",
    "factorize",
    "group_codes",
    "group_keys",
    "label_key",
    "label_ranks",
    "sorted_codes",
    "subset_codes",
    "trial_order",
]

#: Labels a table can be grouped by.
GROUP_KEYS = ("agent", "model", "variant", "capability", "split", "family")


def group_keys(by: str | Iterable[str] | None) -> tuple[str, ...]:
    """The labels ``by`` names, each once: a text is split at its commas, as the CLI's
    ``--by`` is (``"agent,model"``; ``"agent"`` is one label, ``""`` none: one group
    of all trials); ``None`` is none too. `ValueError` for a label not among
    `GROUP_KEYS`. The metrics functions took a text as one label: ``"agent,model"``
    was refused as a label of that name, and ``""`` by `horizon` as well."""
    if by is None:
        return ()
    keys = [p.strip() for p in by.split(",") if p.strip()] if isinstance(by, str) else list(by)
    for key in keys:
        if key not in GROUP_KEYS:
            raise ValueError(f"cannot group by {key!r}; choose from {', '.join(GROUP_KEYS)}")
    return tuple(dict.fromkeys(keys))


FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]
IntArray = npt.NDArray[np.int64]

ColumnKind = Literal["label", "float", "int", "bool"]

#: The annotation each kind of column carries in `TrialTable`.
_ANNOTATION: dict[ColumnKind, str] = {
    "label": "ObjArray",
    "float": "FloatArray",
    "int": "IntArray",
    "bool": "BoolArray",
}

#: Trial fields the table is built from that are not columns: the infra-error rule's inputs.
_INFRA_INPUTS = ("status", "error_kind")


def _kind(field: TrialField) -> ColumnKind:
    if field.type == "text":
        return "label"
    if field.type == "real" or (field.type == "int" and not field.required):
        return "float"
    if field.type == "int":
        return "int"
    if field.type == "bool" and field.required:
        return "bool"
    raise TypeError(f"trial field {field.name!r} ({field.type}) cannot be a table column")


def column_kinds(declared: Sequence[TrialField] = TRIAL_FIELDS) -> dict[str, ColumnKind]:
    """The table's columns and their kinds, derived from the trial fields."""
    kinds = {f.name: _kind(f) for f in declared if f.column}
    kinds["infra_error"] = "bool"
    return kinds


def _floats(values: Iterable[float | int | None]) -> FloatArray:
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _objects(values: Iterable[Any]) -> ObjArray:
    out = np.empty(0, dtype=object)
    values = list(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


IntpArray = npt.NDArray[np.intp]
_T = TypeVar("_T")

#: Below this many distinct labels in a sample, vectorised equality passes beat a dict pass.
_FEW_LABELS = 8


def _factorize_dict(values: ObjArray) -> tuple[ObjArray, IntpArray]:
    """Codes from one dict pass (faster than hashing into numpy and sorting, measured)."""
    seen: dict[Any, int] = {}
    codes = np.array([seen.setdefault(v, len(seen)) for v in values.tolist()], dtype=np.intp)
    return _objects(seen), codes


def factorize(values: ObjArray) -> tuple[ObjArray, IntpArray]:
    """Distinct values in order of first appearance, and each row's index into them.

    The integer codes let metrics count per task and per group with
    ``np.bincount`` instead of Python loops. Label columns with a handful of
    values (agent, model, variant) are coded by vectorised equality passes;
    many-valued ones (task ids) by one dict pass.
    ``None`` is a value like any other.
    """
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=object), np.empty(0, dtype=np.intp)
    # A strided sample: a column sorted by label (tasks in order) must not look few-valued.
    sample = values[:: max(1, n // 512)]
    if len(set(sample.tolist())) > _FEW_LABELS:
        return _factorize_dict(values)
    codes = np.full(n, -1, dtype=np.intp)
    uniques: list[Any] = []
    free = np.arange(n)
    while free.size and len(uniques) < 4 * _FEW_LABELS:
        # A 0-d object array, so numpy compares Python values: a bare str would become a
        # numpy string first, which drops trailing NULs ("\x00" would equal "").
        value = np.empty((), dtype=object)
        value[()] = values[free[0]]
        same = np.asarray(values[free] == value, dtype=bool)
        same[0] = True  # a value unequal to itself (NaN) still gets its own code
        codes[free[same]] = len(uniques)
        uniques.append(value[()])
        free = free[~same]
    if free.size:  # more labels than expected: a dict for the rest
        rest_uniques, rest_codes = _factorize_dict(values[free])
        codes[free] = rest_codes + len(uniques)
        uniques.extend(rest_uniques.tolist())
    return _objects(uniques), codes


def compact(codes: npt.NDArray[np.integer[Any]], size: int) -> tuple[IntpArray, IntpArray]:
    """The codes (below ``size``) that occur, ascending, and each row's index among them:
    ``np.unique(codes, return_inverse=True)`` by one counting pass instead of a sort."""
    held = np.bincount(codes, minlength=size) > 0
    present = np.flatnonzero(held)
    return present, (np.cumsum(held) - 1)[codes].astype(np.intp, copy=False)


def subset_codes(
    coded: tuple[ObjArray, IntpArray], rows: npt.NDArray[np.bool_] | IntpArray
) -> tuple[ObjArray, IntpArray]:
    """`factorize` of some rows of a column, from the whole column's `factorize`:
    the values those rows hold in order of their first appearance among them, and each
    row's index into those. Equal to factorizing the rows' values again, in passes over
    integers instead of a hash of each value."""
    uniques, codes = coded
    order, renumbered, _ = by_first_appearance(codes[rows], len(uniques))
    return uniques[order], renumbered


def by_first_appearance(
    codes: npt.NDArray[np.integer[Any]], size: int
) -> tuple[IntpArray, IntpArray, IntpArray]:
    """Codes (below ``size``) numbered again by their first row: the codes that occur,
    in order of first appearance, each row's position among them, and their first rows."""
    m = codes.size
    first = np.full(size, m, dtype=np.intp)
    np.minimum.at(first, codes, np.arange(m, dtype=np.intp))
    present = np.flatnonzero(first < m)
    order = present[np.argsort(first[present], kind="stable")]
    renumber = np.empty(size, dtype=np.intp)
    renumber[order] = np.arange(order.size, dtype=np.intp)
    return order, renumber[codes], first[order]


def label_key(name: str, value: Any) -> tuple[bool, bool, str]:
    """Where a value of the label column ``name`` goes among the others, wherever
    groups or trials are listed: the base variant first, then by text; ``None`` (no
    label) last. A function of the value alone, so that the same trials stored in
    another order (a Ray run stores them as they finish) are listed alike."""
    return (
        not (name == "variant" and value == "base"),
        value is None,
        "" if value is None else str(value),
    )


def label_ranks(name: str, uniques: ObjArray) -> IntpArray:
    """Each distinct value's place in `label_key` order (values equal as text, 1 and
    "1", keep the order they are given in)."""
    values = uniques.tolist()
    if all(type(v) is str for v in values):  # the usual labels: plain text, sorted as it is
        order = sorted(range(len(values)), key=values.__getitem__)
        if name == "variant" and "base" in values:
            base = values.index("base")
            order.remove(base)
            order.insert(0, base)
    else:
        keys = [label_key(name, v) for v in values]
        order = sorted(range(len(keys)), key=keys.__getitem__)
    rank = np.empty(len(values), dtype=np.intp)
    rank[order] = np.arange(len(values), dtype=np.intp)
    return rank


def group_codes(table: TrialTable, by: Sequence[str]) -> tuple[IntpArray, IntpArray]:
    """Each row's group of the label columns ``by`` and each group's first row, groups
    numbered in label order (`label_key` of the first key, then the next...): the same
    trials give the same groups in the same order, whatever order they are stored in."""
    n = len(table)
    if not by or n == 0:
        return np.zeros(n, dtype=np.intp), np.zeros(min(n, 1), dtype=np.intp)
    coded = [table.codes(key) for key in by]
    if all(len(uniques) == 1 for uniques, _ in coded):  # the usual case: one run, one group
        return np.zeros(n, dtype=np.intp), np.zeros(1, dtype=np.intp)
    combined = np.zeros(n, dtype=np.int64)
    size = 1
    for key, (uniques, codes) in zip(by, coded, strict=True):
        # Each column's codes in label order: the combined code's order is the groups'.
        combined = combined * len(uniques) + table.ranks(key)[codes]
        size *= len(uniques)
    if size <= 4 * n + (1 << 20):  # the combinations counted densely: no sort
        present, group = compact(combined, size)
        first_rows = np.full(present.size, n, dtype=np.intp)
        np.minimum.at(first_rows, group, np.arange(n, dtype=np.intp))
        return group, first_rows
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.intp), first.astype(np.intp)


#: The columns that tell one trial from another, the most significant first.
_TRIAL_KEY = ("task_id", "trial", "variant", "agent", "model")


def trial_order(table: TrialTable, rows: IntpArray) -> IntpArray:
    """``rows`` in trial order: by task id (as text), trial index, variant (base
    first), agent and model (`label_key`); rows equal in all of these keep their order.
    Figures summed over rows are summed in this order, so that the same trials stored
    in another order give the same last digits. ``rows`` itself when already in order."""
    key = np.zeros(rows.size, dtype=np.int64)
    span = 1  # the key's values are below this
    keys: list[npt.NDArray[np.int64]] = []
    for name in _TRIAL_KEY:
        if name == "trial":
            values = table.trial[rows]
            low = int(values.min(initial=0))
            part, size = values - low, int(values.max(initial=0)) - low + 1
        else:
            uniques, codes = table.codes(name)
            if len(uniques) == 1:
                continue
            part, size = table.ranks(name)[codes[rows]].astype(np.int64), len(uniques)
        if span * size >= 1 << 62:  # too wide for one integer: sorted as separate keys
            keys.append(key)
            key, span = np.zeros(rows.size, dtype=np.int64), 1
        key = key * size + part
        span *= size
    keys.append(key)
    if len(keys) == 1:
        if rows.size < 2 or bool(np.all(key[1:] >= key[:-1])):
            return rows
        return rows[np.argsort(key, kind="stable")]
    order = np.lexsort(keys[::-1])
    return rows if bool(np.all(order == np.arange(rows.size))) else rows[order]


def sorted_codes(
    values: ObjArray, coded: tuple[ObjArray, IntpArray] | None = None
) -> tuple[ObjArray, IntpArray]:
    """Distinct values as text, sorted, and each row's index into them: what
    ``np.unique(values.astype(str), return_inverse=True)`` gives, without turning a
    million values into a string array and sorting it (each distinct value is turned
    and sorted once). ``coded``: the `factorize` of a column these rows are taken from
    (its distinct values, and these rows' codes into them), when already at hand."""
    if coded is None:
        uniques, codes = factorize(values)
    else:  # a coding of a larger column: keep the values these rows hold
        present, codes = compact(coded[1], len(coded[0]))
        uniques = coded[0][present]
    texts = [str(u) for u in uniques.tolist()]
    order = sorted(range(len(texts)), key=texts.__getitem__)
    distinct: list[str] = []
    first = np.empty(len(texts), dtype=np.intp)
    for i in order:  # 1 and "1" are one task: equal texts share a code
        if not distinct or distinct[-1] != texts[i]:
            distinct.append(texts[i])
        first[i] = len(distinct) - 1
    out = np.empty(len(distinct), dtype=object)
    out[:] = distinct
    return out, first[codes] if len(codes) else np.empty(0, dtype=np.intp)


@dataclass(frozen=True, eq=False)
class TrialTable:  # the attributes' kinds are checked against TRIAL_FIELDS below
    """One row per trial, one array per field (all of equal length)."""

    task_id: ObjArray
    """Task identifier of each trial."""
    trial: IntArray
    """Trial index within its task."""
    success: BoolArray
    """Outcome."""
    score: FloatArray
    """Score in [0, 1]."""
    agent: ObjArray
    model: ObjArray
    variant: ObjArray
    family: ObjArray
    """Cluster label or ``None``."""
    split: ObjArray
    capability: ObjArray
    human_minutes: FloatArray
    cost_usd: FloatArray
    """Agent spend; NaN when the price is unknown."""
    judge_cost_usd: FloatArray
    input_tokens: FloatArray
    output_tokens: FloatArray
    latency_s: FloatArray
    tool_calls: FloatArray
    model_calls: FloatArray
    confidence: FloatArray
    infra_error: BoolArray
    """Trial ended in an error or timeout not caused by the agent."""
    expected_control: ObjArray
    control: ObjArray

    def __post_init__(self) -> None:
        n = len(self.task_id)
        for f in fields(self):
            if len(getattr(self, f.name)) != n:
                raise ValueError(
                    f"column {f.name!r} has length {len(getattr(self, f.name))} != {n}"
                )

    def __len__(self) -> int:
        return len(self.task_id)

    # ------------------------------------------------------------------ build

    @classmethod
    def from_trials(cls, trials: Sequence[Trial]) -> TrialTable:
        """Build a table from validated trials."""
        return cls.from_fields({name: [getattr(t, name) for t in trials] for name in SOURCE_FIELDS})

    @classmethod
    def from_fields(cls, values: Mapping[str, Sequence[Any]]) -> TrialTable:
        """Build a table from each of `SOURCE_FIELDS`' values, one per trial (``None``
        where missing), as `Trial` holds them or the store's columns return them."""
        columns: dict[str, Any] = {}
        for name, kind in COLUMNS.items():
            if name == "infra_error":
                pairs = zip(values["status"], values["error_kind"], strict=True)
                columns[name] = np.array([infra_error(s, k) for s, k in pairs], dtype=bool)
            elif kind == "label":
                columns[name] = _objects(values[name])
            elif kind == "float":
                columns[name] = _floats(values[name])
            elif kind == "int":
                columns[name] = np.array([v or 0 for v in values[name]], dtype=np.int64)
            else:
                columns[name] = np.array([bool(v) for v in values[name]], dtype=bool)
        return cls(**columns)

    @classmethod
    def from_columns(cls, n: int, **columns: Any) -> TrialTable:
        """Build a table from arrays, filling omitted columns with missing values.

        ``task_id`` and ``success`` are required; ``score`` defaults to success.
        Used by importers, the store and benchmarks that already hold arrays.
        """
        if "task_id" not in columns or "success" not in columns:
            raise ValueError("task_id and success are required columns")
        success = np.asarray(columns.pop("success"), dtype=bool)
        full: dict[str, Any] = {"success": success}
        if "score" not in columns:
            full["score"] = success.astype(np.float64)
        for name, kind in COLUMNS.items():
            if name in full:
                continue
            if name in columns:
                value = columns.pop(name)
                if kind == "label":
                    full[name] = value if isinstance(value, np.ndarray) else _objects(value)
                else:
                    full[name] = np.asarray(value)
            elif kind == "label":  # the field's default: None, or "base" for the variant
                full[name] = _objects([Trial.model_fields[name].default] * n)
            elif kind == "float":
                full[name] = np.full(n, np.nan)
            else:
                full[name] = np.zeros(n, dtype=np.int64 if kind == "int" else bool)
        if columns:
            raise ValueError(f"unknown columns: {sorted(columns)}")
        return cls(**full)

    # ------------------------------------------------------------------ select

    def take(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> TrialTable:
        """The rows selected by a boolean mask or an index array.

        The codes this table holds pass on: a column's `codes` in the selection are
        derived from them (`subset_codes`) when first asked for, not hashed again."""
        out = TrialTable(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})
        out.__dict__["_taken_from"] = (self, rows)
        return out

    def groups(self, by: Sequence[str]) -> Iterator[tuple[dict[str, Any], TrialTable]]:
        """Split by label columns, in label order (`label_key`, as `group_codes`).

        Yields ``({label: value}, subtable)``; with ``by`` empty, the whole table.
        """
        for key in by:
            if key not in GROUP_KEYS:
                raise ValueError(f"cannot group by {key!r}; choose from {', '.join(GROUP_KEYS)}")
        if not by:
            yield {}, self
            return
        labels = list(zip(*(getattr(self, key) for key in by), strict=True))
        order: dict[tuple[Any, ...], list[int]] = {}
        for i, label in enumerate(labels):
            order.setdefault(label, []).append(i)
        for label in sorted(
            order, key=lambda t: [label_key(*kv) for kv in zip(by, t, strict=True)]
        ):
            rows = np.array(order[label], dtype=np.intp)
            yield dict(zip(by, label, strict=True)), self.take(rows)

    def codes(self, name: str) -> tuple[ObjArray, IntpArray]:
        """`factorize` of a label column (``task_id``, ``agent``, ``family``...), cached.

        Computed once per table; metrics, reliability and horizon share it.
        """
        coded = self.cached_codes(name)
        if coded is None:
            column = getattr(self, name)
            if column.dtype.kind == "U":  # text given to `from_columns` as a numpy string array
                column = column.astype(object)
            elif column.dtype != object:
                raise ValueError(f"{name!r} is not a label column")
            coded = self.__dict__.setdefault("_codes", {})[name] = factorize(column)
        return coded

    def ranks(self, name: str) -> IntpArray:
        """`label_ranks` of the distinct values of `codes` (``name``), cached: each
        value's place in label order, which groups and trials are listed in."""
        uniques, _ = self.codes(name)
        cache: dict[str, tuple[ObjArray, IntpArray]] = self.__dict__.setdefault("_ranks", {})
        held = cache.get(name)
        if held is None or held[0] is not uniques:  # computed for these very codes
            held = cache[name] = (uniques, label_ranks(name, uniques))
        return held[1]

    def cached_codes(self, name: str) -> tuple[ObjArray, IntpArray] | None:
        """The coding of a column if already computed or seeded (or held by the table
        these rows were taken from, and derived from its coding), else ``None``."""
        cache: dict[str, tuple[ObjArray, IntpArray]] = self.__dict__.setdefault("_codes", {})
        if name not in cache and "_taken_from" in self.__dict__:
            parent, rows = self.__dict__["_taken_from"]
            held = parent.cached_codes(name)
            if held is not None:
                cache[name] = subset_codes(held, rows)
        return cache.get(name)

    def memo(self, key: str, basis: tuple[object, ...], make: Callable[[], _T]) -> _T:
        """``make()``, computed once and kept under ``key`` while ``basis`` (the codings it
        is derived from, as `codes` returns them) holds the same objects: what every query
        of the table derives alike (the metrics' tasks in label order, their clusters and
        counts). Computed again when a column is coded anew (`seed_codes`). What it keeps
        is shared by every caller, not to be changed; like `codes`, it takes the columns
        not to change in place either."""
        cache: dict[str, tuple[tuple[object, ...], Any]] = self.__dict__.setdefault("_memo", {})
        held = cache.get(key)
        if held is not None and all(
            a is b for a, b in zip(held[0], basis, strict=True)
        ):  # derived from these very codings
            value: _T = held[1]
            return value
        value = make()
        cache[key] = (basis, value)
        return value

    def seed_codes(
        self, name: str, uniques: ObjArray, codes: IntpArray, *, check: bool = True
    ) -> None:
        """Record an encoding the caller already holds (a generator's or the store's keys).

        Checked once (``uniques[codes]`` must reproduce the column, and the
        uniques must be distinct), so later `codes` calls are free. ``check=False``
        is for a caller that built the column as ``uniques[codes]`` from distinct
        values in order of first appearance (a reader's own encoding).
        """
        column = getattr(self, name)
        codes = np.asarray(codes, dtype=np.intp)
        uniques = uniques if uniques.dtype == object else _objects(uniques.tolist())
        if not check:
            self.__dict__.setdefault("_codes", {})[name] = (uniques, codes)
            return
        if codes.shape != column.shape or not bool(np.all(uniques[codes] == column)):
            raise ValueError(f"codes do not reproduce column {name!r}")
        if len(set(uniques.tolist())) != len(uniques):
            raise ValueError(f"uniques of {name!r} are not distinct")
        self.__dict__.setdefault("_codes", {})[name] = (uniques, codes)

    def task_codes(self) -> IntpArray:
        """Each row's task as an integer, ids equal as text (1 and "1") sharing one: what
        a per-task figure that needs no ids groups by (`task_index` without sorting)."""
        uniques, codes = self.codes("task_id")
        if all(type(u) is str for u in uniques.tolist()):
            return codes
        return self.task_index()[1]

    def text_in(self, name: str, texts: Iterable[str]) -> BoolArray:
        """The rows whose label ``name``, as text, is one of ``texts``: what
        ``np.isin(getattr(self, name).astype(str), texts)`` gives for labels that are
        text or ``None`` (as a trial's are), with one string per distinct label instead
        of one per row (the column's `codes`, kept)."""
        uniques, codes = self.codes(name)
        hit: BoolArray = np.isin(uniques.astype(str), list(texts))
        return hit[codes] if len(codes) else np.zeros(0, dtype=bool)

    def text_equals(self, name: str, text: str) -> BoolArray:
        """`text_in` of one text."""
        return self.text_in(name, (text,))

    def task_index(self) -> tuple[ObjArray, npt.NDArray[np.intp]]:
        """Unique task ids (sorted, as text) and each trial's index into them."""
        return sorted_codes(self.task_id, self.cached_codes("task_id"))


#: The table's columns and their kinds (`column_kinds` of the trial fields).
COLUMNS = column_kinds()
#: The trial fields a table is built from: its columns, and the infra-error rule's inputs.
SOURCE_FIELDS = tuple(name for name in COLUMNS if name != "infra_error") + _INFRA_INPUTS


def check_annotations(kinds: Mapping[str, ColumnKind] = COLUMNS) -> None:
    """Raise `TypeError` unless `TrialTable`'s attributes are exactly ``kinds``' columns,
    each annotated as its kind (run when this module loads)."""
    want = {name: _ANNOTATION[kind] for name, kind in kinds.items()}
    have = {f.name: str(f.type) for f in fields(TrialTable)}
    if have != want:
        wrong = sorted(set(have.items()) ^ set(want.items()))
        raise TypeError(f"TrialTable's attributes do not match schema.TRIAL_FIELDS: {wrong}")


check_annotations()
