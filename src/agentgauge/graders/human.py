"""Human labels: import them, use them as grades, or calibrate a judge with them (docs/judge.md,
"Human labels").

A label file is JSONL (one object a line) or CSV (a header row), one label a
record:

=============  =========  =====================================================
field          required   meaning
=============  =========  =====================================================
``task_id``    yes        the task
``trial``      yes        the trial index (integer ≥ 0)
``criterion``  one of     a rubric criterion id (the grader ``rubric:<id>``)
``grader``     these two  any grader name (``state``, ``rubric:politeness``...)
``label``      yes        ``pass``/``yes``/``1``/``true``, ``fail``/``no``/``0``/
                          ``false``, or ``unknown`` (case-insensitive; JSON
                          booleans and 0/1 too). Pairwise records: ``A``, ``B``,
                          ``tie`` or ``unknown`` (the transcript preferred)
``rater``      yes        who labelled (a person, or ``judge`` for the model)
``variant``    no         the variant of the trial labelled (none: ``base``;
                          trial 0 of a paraphrase is another transcript)
``agent``      no         restricts the label to trials of that agent (none:
                          any agent's trial)
``kind``       no         ``grade`` (default) or ``pairwise``
``order``      pairwise   ``AB`` (A shown first) or ``BA``
``note``       no         free text
=============  =========  =====================================================

A JSONL record may also carry ``metadata`` (an object); any other key or
column is an error, as is a second label by the same rater for the same item.
Errors name ``FILE:LINE: field: reason`` and nothing is loaded.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentgauge.errors import InputError
from agentgauge.graders.base import register
from agentgauge.report.formats import counted
from agentgauge.schema import Grade, Task, Trial
from agentgauge.sources import read_jsonl
from agentgauge.textio import decode_utf8, open_regular, read_bytes

__all__ = [
    "HumanGrader",
    "Label",
    "judge_label_records",
    "load_labels",
    "majority",
    "parse_label",
]

FIELDS = (
    "task_id",
    "trial",
    "criterion",
    "grader",
    "label",
    "rater",
    "variant",
    "agent",
    "kind",
    "order",
    "note",
)
_GRADE_VALUES = {
    "pass": "pass",
    "yes": "pass",
    "1": "pass",
    "true": "pass",
    "fail": "fail",
    "no": "fail",
    "0": "fail",
    "false": "fail",
    "unknown": "unknown",
}
_PAIR_VALUES = {"a": "A", "b": "B", "tie": "tie", "unknown": "unknown"}

ItemKey = tuple[str, int, str, str | None, str]


@dataclass(frozen=True)
class Label:
    """One label by one rater on one item."""

    task_id: str
    trial: int
    grader: str
    """The grader labelled: ``rubric:<criterion>`` or the ``grader`` field."""
    label: str
    """``pass``/``fail``/``unknown``; pairwise: ``A``/``B``/``tie``/``unknown``."""
    rater: str
    variant: str | None = None
    agent: str | None = None
    kind: Literal["grade", "pairwise"] = "grade"
    order: Literal["AB", "BA"] | None = None
    note: str | None = None
    file: str | None = None
    line: int | None = None

    @property
    def item(self) -> ItemKey:
        """What was labelled: (task, trial, variant, agent, grader); no variant is ``base``."""
        return (self.task_id, self.trial, self.variant or "base", self.agent, self.grader)

    @property
    def decided(self) -> bool:
        return self.label != "unknown"

    def matches(self, trial: Trial) -> bool:
        """Whether this label is about ``trial``."""
        return (
            self.task_id == trial.task_id
            and self.trial == trial.trial
            # No variant is the base one, as in calibration: trial 0 of a paraphrase is
            # another transcript than trial 0 of the instruction the rater read.
            and (self.variant or "base") == trial.variant
            and (self.agent is None or self.agent == trial.agent)
        )


def _text(
    obj: dict[str, Any], key: str, where: dict[str, Any], required: bool = False
) -> str | None:
    value = obj.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InputError("required field is missing", field=key, **where)
        return None
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {json.dumps(value)}", field=key, **where)
    return value.strip()


def parse_label(
    obj: dict[str, Any],
    *,
    file: str | Path | None = None,
    line: int | None = None,
    rater: str | None = None,
) -> Label:
    """Validate one record (a JSONL object or a CSV row as strings).

    ``rater`` is every record's rater (and makes the field optional): used for a file
    that holds one rater's labels, such as the judge's; a record naming another rater
    is refused (`InputError` at its line).
    """
    where: dict[str, Any] = {"file": file, "line": line}
    for key in obj:
        if key not in FIELDS and key != "metadata":
            raise InputError(f"unknown field (known: {', '.join(FIELDS)})", field=str(key), **where)
    task_id = _text(obj, "task_id", where, required=True)
    assert task_id is not None
    raw_trial = obj.get("trial")
    if raw_trial is None or (isinstance(raw_trial, str) and not raw_trial.strip()):
        raise InputError("required field is missing", field="trial", **where)
    if isinstance(raw_trial, bool) or not isinstance(raw_trial, int | str):
        raise InputError(
            f"expected an integer, got {json.dumps(raw_trial)}", field="trial", **where
        )
    try:
        trial = int(raw_trial)
    except ValueError:
        raise InputError(
            f"expected an integer, got {raw_trial!r}", field="trial", **where
        ) from None
    if trial < 0:
        raise InputError(f"must be >= 0, got {trial}", field="trial", **where)
    criterion = _text(obj, "criterion", where)
    grader = _text(obj, "grader", where)
    if criterion and grader:
        raise InputError("give one of 'criterion' or 'grader', not both", field="grader", **where)
    if not criterion and not grader:
        raise InputError("one of 'criterion' or 'grader' is required", field="criterion", **where)
    target = f"rubric:{criterion}" if criterion else grader
    assert target is not None
    kind = (_text(obj, "kind", where) or "grade").lower()
    if kind not in ("grade", "pairwise"):
        raise InputError(f"expected 'grade' or 'pairwise', got {kind!r}", field="kind", **where)
    raw_label = obj.get("label")
    if raw_label is None or (isinstance(raw_label, str) and not raw_label.strip()):
        raise InputError("required field is missing", field="label", **where)
    if isinstance(raw_label, bool):
        key = "true" if raw_label else "false"
    elif isinstance(raw_label, int | str):
        key = str(raw_label).strip().lower()
    else:
        key = json.dumps(raw_label)
    values = _PAIR_VALUES if kind == "pairwise" else _GRADE_VALUES
    if key not in values or (kind == "pairwise" and isinstance(raw_label, bool | int)):
        allowed = (
            "A, B, tie, unknown" if kind == "pairwise" else "pass, fail, yes, no, 1, 0, unknown"
        )
        raise InputError(f"expected one of {allowed}, got {raw_label!r}", field="label", **where)
    order = _text(obj, "order", where)
    if kind == "pairwise":
        if order is None or order.upper() not in ("AB", "BA"):
            raise InputError(
                f"pairwise records need 'AB' or 'BA', got {order!r}", field="order", **where
            )
        order = order.upper()
    elif order is not None:
        raise InputError("only pairwise records have an order", field="order", **where)
    named = _text(obj, "rater", where, required=rater is None)
    if rater is not None and named is not None and named != rater:
        # A file of one rater's labels (`calibrate --judge`) whose records name another:
        # the humans' file given by mistake was read as the judge's, which then agreed
        # with them on every item.
        raise InputError(
            f"the --judge file holds the judge's labels (rater {rater!r}), but this record "
            f"names rater {named!r}: give the judge's own labels (a rater column, if any, "
            "naming the judge), or name the judge with --judge-rater",
            field="rater",
            **where,
        )
    rater = rater or named
    assert rater is not None
    if "metadata" in obj and not isinstance(obj["metadata"], dict):
        raise InputError("expected an object", field="metadata", **where)
    return Label(
        task_id=task_id,
        trial=trial,
        grader=target,
        label=values[key],
        rater=rater,
        variant=_text(obj, "variant", where),
        agent=_text(obj, "agent", where),
        kind=kind,  # type: ignore[arg-type]
        order=order,  # type: ignore[arg-type]
        note=_text(obj, "note", where),
        file=str(file) if file is not None else None,
        line=line,
    )


def _csv_rows(path: Path, *, rater_required: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    # Decoded whole as every text input is, so a file that is not UTF-8 (a store given
    # by mistake) is one line naming its byte, not a traceback. A spreadsheet's
    # byte-order mark is allowed here, as it always was for label CSVs.
    raw = read_bytes(path)
    text = decode_utf8(raw.removeprefix(b"\xef\xbb\xbf"), file=path)
    with io.StringIO(text, newline="") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames:  # not even a header: as empty as a header alone
            return
        header = reader.fieldnames
        for i, name in enumerate(header):
            if name not in FIELDS:
                raise InputError(
                    f"unknown column (known: {', '.join(FIELDS)})", file=path, line=1, field=name
                )
            if name in header[:i]:
                # A reader keeps the last of two such cells: which one the rater meant is
                # not known (a JSON label with a key written twice is refused too).
                raise InputError("column appears twice", file=path, line=1, field=name)
        for required in ("task_id", "trial", "label", *(("rater",) if rater_required else ())):
            if required not in header:
                raise InputError("required column is missing", file=path, line=1, field=required)
        for row in reader:
            if None in row:  # more cells than header columns
                raise InputError(
                    f"{len(header) + len(row[None])} cells for {counted(len(header), 'column')}",
                    file=path,
                    line=reader.line_num,
                )
            yield reader.line_num, {k: v for k, v in row.items() if v is not None}


def _is_csv(path: Path) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return True
    if suffix in (".jsonl", ".json", ".ndjson"):
        return False
    with open_regular(path) as handle:
        try:
            head = handle.read(4096)
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", file=path) from None
    # Bytes, not text: 4,096 bytes of a binary file (a store) raised UnicodeDecodeError
    # here, before the reader that says "not a UTF-8 text file" with its line.
    return not head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{")


def load_labels(path: str | Path, *, rater: str | None = None) -> list[Label]:
    """Read a label file (CSV by ``.csv`` suffix or content, else JSONL) and validate it.

    Raises `InputError` (``FILE:LINE: field: reason``) on the first bad record or
    on a second label by the same rater for the same item (and order).
    ``rater``: every record is that rater's (the column becomes optional).
    """
    path = Path(path)
    rows: Iterable[tuple[int, dict[str, Any]]] = (
        _csv_rows(path, rater_required=rater is None) if _is_csv(path) else read_jsonl(path)
    )
    labels: list[Label] = []
    seen: dict[tuple[Any, ...], int] = {}
    for line, obj in rows:
        label = parse_label(obj, file=path, line=line, rater=rater)
        key = (*label.item, label.rater, label.kind, label.order)
        if key in seen:
            raise InputError(
                f"rater {label.rater!r} already labelled this item on line {seen[key]}",
                file=path,
                line=line,
                field="rater",
            )
        seen[key] = line
        labels.append(label)
    if not labels:
        raise InputError("no labels in file", file=path)
    return labels


def majority(values: Sequence[str]) -> str:
    """The most common decided label; ``unknown`` on a tie or when none is decided."""
    counts = Counter(v for v in values if v != "unknown").most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return "unknown"
    return counts[0][0]


@register("human")
class HumanGrader:
    """Human labels as a grader: ``grade(task, trial) -> Grade``.

    For each labelled grader of the trial (or only ``target``), the raters'
    majority decides (a tie is unknown); the trial passes when every labelled
    grader passes, fails when any fails, and is unknown otherwise or when it
    has no labels. ``raters`` restricts which raters count; by default every
    rater but ``judge`` counts. ``labels`` may be a path to a label file.
    """

    kind: Literal["human"] = "human"

    def __init__(
        self,
        labels: Sequence[Label] | str | Path,
        *,
        target: str | None = None,
        raters: Sequence[str] | None = None,
        exclude_raters: Sequence[str] = ("judge",),
    ) -> None:
        if isinstance(labels, str | Path):
            labels = load_labels(labels)
        self.name = f"human:{target}" if target else "human"
        self.target = target
        self._labels = [
            lb
            for lb in labels
            if lb.kind == "grade"
            and (target is None or lb.grader == target)
            and (lb.rater in raters if raters is not None else lb.rater not in exclude_raters)
        ]

    def enabled(self, task: Task) -> bool:
        return any(lb.task_id == task.id for lb in self._labels)

    def grade(self, task: Task, trial: Trial) -> Grade:
        mine = [lb for lb in self._labels if lb.matches(trial)]
        if not mine:
            return Grade(grader=self.name, passed=None, status="unknown:no_labels")
        by_target: dict[str, dict[str, str]] = {}
        for lb in mine:
            by_target.setdefault(lb.grader, {})[lb.rater] = lb.label
        verdicts = {t: majority(list(r.values())) for t, r in by_target.items()}
        evidence = {t: {"verdict": verdicts[t], "labels": by_target[t]} for t in sorted(by_target)}
        if any(v == "fail" for v in verdicts.values()):
            failed = sorted(t for t, v in verdicts.items() if v == "fail")
            return Grade(
                grader=self.name,
                score=0.0,
                passed=False,
                status="human:failed:" + ",".join(failed),
                evidence=evidence,
            )
        if all(v == "pass" for v in verdicts.values()):
            return Grade(
                grader=self.name, score=1.0, passed=True, status="passed", evidence=evidence
            )
        return Grade(grader=self.name, passed=None, status="unknown:undecided", evidence=evidence)


def judge_label_records(
    trial: Trial, grades: Iterable[Grade], *, rater: str = "judge"
) -> list[dict[str, Any]]:
    """Label records (for a label file) from a trial's grades, e.g. rubric criteria.

    Writing the judge's verdicts next to the humans' in one file is the input
    ``agentgauge calibrate`` expects.
    """
    if trial.trial is None:
        raise ValueError(f"trial of task {trial.task_id!r} has no index; assign one first")
    out: list[dict[str, Any]] = []
    for g in grades:
        label = "unknown" if g.passed is None else ("pass" if g.passed else "fail")
        record: dict[str, Any] = {
            "task_id": trial.task_id,
            "trial": trial.trial,
            "grader": g.grader,
            "label": label,
            "rater": rater,
        }
        # Only what a human label sheet would carry too. The agent is written whenever
        # the trial has one; a sheet's label without it takes it (`calibration.resolve_agents`).
        if trial.variant != "base":
            record["variant"] = trial.variant
        if trial.agent is not None:
            record["agent"] = trial.agent
        out.append(record)
    return out
