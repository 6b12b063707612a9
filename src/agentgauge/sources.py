"""Where trials come from: a JSONL file of trial records, ``DB:RUN_ID`` in a store,
or a Parquet export.

Every command that reads trials takes a SOURCE string and resolves it here
(`open_source`), so the same spelling works everywhere::

    PATH                    a trials JSONL file, or a store holding one run
    DB:RUN_ID               one run of a store
    DIR                     a Parquet export (``agentgauge export DB:RUN --parquet DIR``),
                            a trials ``.parquet`` file, or a glob of either
                            (``'exports/*'``), read column-wise (docs/parquet.md)
    ...#agent=A,model=M     only the trials of that (agent, model) configuration
    DB:RUN_ID#grade=N       the run as grade version N graded it (default: the active one)

The selector after ``#`` takes ``agent``, ``model`` and ``grade`` (docs/cli.md,
"SOURCE"). A path that exists as given always wins, so a file whose name holds
``:`` or ``#`` (or a Windows drive letter) is read as that file. Trial records
(docs/metrics.md, "The trial record") are read with errors a user can act on:
the first bad line stops the load with ``FILE:LINE: field: reason``, and
callers write nothing until the whole file has validated.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from os import PathLike, fspath
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import numpy as np
from pydantic import ValidationError

from agentgauge.display import shell_command
from agentgauge.errors import InputError, first_error, whole_number
from agentgauge.evidence import grades_problem
from agentgauge.facts import Facts
from agentgauge.model_calls import ModelCalls
from agentgauge.report.formats import counted
from agentgauge.schema import (
    MAX_TRIAL_INDEX,
    Grade,
    Run,
    Task,
    Trial,
    family_reason,
    infra_error,
    trial_cell_words,
)
from agentgauge.spelling import lookalike_key, quoted, spelling_difference
from agentgauge.store import GradeVersion, MissingRun, Store
from agentgauge.table import TrialTable, group_codes
from agentgauge.textio import decode_utf8, is_digits, loads_json, open_regular

__all__ = [
    "NOT_RECORDED",
    "RUN_ID_RESERVED",
    "SPELLED_ONCE",
    "Element",
    "Selector",
    "Spellings",
    "TrialSource",
    "asked_grade_version",
    "assign_trial_indices",
    "check_run_id",
    "configurations",
    "family_reason",
    "is_store",
    "load_trials",
    "open_source",
    "parse_source",
    "parse_trial",
    "picks",
    "read_jsonl",
    "read_trials_jsonl",
    "require_one_configuration",
    "resolve_run",
    "selected_rows",
    "spellings_reason",
    "split_selector",
    "too_large_trial",
    "trial_cell_words",
    "two_families",
]

_Place = TypeVar("_Place")


@dataclass(frozen=True)
class Selector:
    """What the ``#...`` part of a SOURCE picks: an agent and a model by name, or
    `NOT_RECORDED` for the trials that record none (``#agent=``), ``None`` for any."""

    agent: str | None = None
    model: str | None = None
    grade_version: int | None = None

    @property
    def empty(self) -> bool:
        return self.agent is None and self.model is None and self.grade_version is None

    def keeps(self, trial: Trial) -> bool:
        return picks(trial.agent, self.agent) and picks(trial.model, self.model)


#: A selector's value for the trials that record no agent (model): ``#agent=``, an empty
#: name, which no recorded name is; the viewer's ``a_no_agent=1``.
NOT_RECORDED = ""


def picks(value: object, wanted: str | None) -> bool:
    """Whether a trial whose agent (model) is ``value`` is one a selector's ``wanted``
    keeps: any (``None``), one that records none (`NOT_RECORDED`), or that name."""
    if wanted is None:
        return True
    return value is None if wanted == NOT_RECORDED else value == wanted


_SELECTOR_KEYS = ("agent", "model", "grade")
#: Characters that make a SOURCE a glob (of Parquet exports) when no such path exists.
_GLOB = frozenset("*?[")


#: Characters a ``DB:RUN_ID`` reference reads specially, so that a run id holding one
#: could be written but never named again: ``#`` starts a selector
#: (`agentgauge.sources.split_selector`: ``DB:RUN#agent=NAME``).
RUN_ID_RESERVED = "#"


def check_run_id(run_id: str | None) -> None:
    """Refuse a run id that ``DB:RUN_ID`` cannot name (`RUN_ID_RESERVED`, or none at
    all), or that begins or ends with whitespace (``'base '`` printed as ``base``),
    before anything is written (`run`, `import` and `collect` call it): ``v2#1`` was
    stored, and then ``show DB:v2#1`` read ``#1`` as a bad selector."""
    if run_id is None:
        return
    if not run_id:
        raise InputError(
            "a run id cannot be empty (leave --run-id out for a new one)", field="--run-id"
        )
    if run_id != run_id.strip():
        raise InputError(
            f"{run_id!r} begins or ends with whitespace, which no list of runs shows; "
            "choose a run id without it",
            field="--run-id",
        )
    bad = sorted({c for c in run_id if c in RUN_ID_RESERVED})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        raise InputError(
            f"{run_id!r} holds {shown}, which DB:RUN_ID reads as the start of a selector "
            "(DB:RUN#agent=NAME), so the run could not be named again; choose another run id",
            field="--run-id",
        )


def source_text(spec: str | PathLike[str], field: str = "SOURCE") -> str:
    """A SOURCE as the text every reader parses: a ``str`` as it is, a path
    (`pathlib.Path`) as its text. An empty text, or anything else (a list of trials
    given where only a SOURCE goes), is `InputError` naming ``field``, not a TypeError
    deep inside or the working folder."""
    if isinstance(spec, str):
        if not spec.strip():  # Path("") is ".", which named the working folder
            raise InputError(
                "is empty; give a file of trials, DB:RUN_ID or a Parquet export's folder",
                field=field,
            )
        return spec
    if isinstance(spec, PathLike):
        text = fspath(spec)
        if isinstance(text, str):
            return text
    raise InputError(
        "expected a SOURCE (a path or DB:RUN_ID, as a str or pathlib.Path), got "
        f"{type(spec).__name__}",
        field=field,
    )


def split_selector(spec: str | PathLike[str]) -> tuple[str, Selector]:
    """``SOURCE#agent=A,model=M,grade=N`` -> (``SOURCE``, the selector). A path that
    exists as given has no selector, whatever characters its name holds; nor has a
    store path in ``DB:RUN`` (``team #2/s.db:r``): the selector's ``#`` is looked for
    after the colon when what comes before it is a file (a run id holds no ``#``)."""
    spec = source_text(spec)
    if "#" not in spec or Path(spec).exists():
        return spec, Selector()
    start = next(
        (i + 1 for i in range(len(spec) - 1, -1, -1) if spec[i] == ":" and _is_file(spec[:i])),
        0,
    )
    at = spec.rfind("#")
    if at < start:
        return spec, Selector()
    base, fragment = spec[:at], spec[at + 1 :]
    found: dict[str, str] = {}
    for part in fragment.split(","):
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        # An empty name is the trials that record none (`NOT_RECORDED`); a grade, never.
        if not eq or key not in _SELECTOR_KEYS or (key == "grade" and not value) or key in found:
            raise InputError(
                f"bad selector {fragment!r}: write #agent=NAME, #model=NAME, #grade=N "
                "or several, comma-separated (e.g. #agent=careful,grade=2; #agent= for "
                "the trials that record no agent)",
                file=base,
                field="SOURCE",
            )
        found[key] = value
    grade = found.get("grade")
    if grade is not None and not (is_digits(grade) and int(grade) >= 1):
        raise InputError(
            f"grade version must be a positive integer, got {grade!r}", file=base, field="SOURCE"
        )
    return base, Selector(
        agent=found.get("agent"),
        model=found.get("model"),
        grade_version=None if grade is None else int(grade),
    )


def _is_file(text: str) -> bool:
    try:
        return "#" in text and Path(text).is_file()
    except OSError:  # a name too long for the system
        return False


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """One trial's key and outcome without the trial (no transcript, no model): what
    ``show``'s failures view reads of each trial (`TrialSource.outcomes`), with the
    trial's failed grades only."""

    task_id: str
    trial: int | None
    variant: str
    agent: str | None
    model: str | None
    success: bool | None
    status: str
    error_kind: str | None
    grades: tuple[Grade, ...]

    @property
    def passed(self) -> bool:
        """As `Trial.passed`: its success, unless it is an infra error."""
        return bool(self.success) and not infra_error(self.status, self.error_kind)


@dataclass(frozen=True)
class GradeSummary:
    """The graders of some trials' grades, those of the finished (``completed``)
    trials' grades, the judge models the grades name, and whether any of the trials
    finished: what a comparison's record says of each side's grading."""

    graders: frozenset[str]
    of_finished: frozenset[str]
    judges: frozenset[str]
    finished: bool

    @classmethod
    def of_trials(cls, trials: Iterable[Trial]) -> GradeSummary:
        graders: set[str] = set()
        of_finished: set[str] = set()
        judges: set[str] = set()
        finished = False
        for t in trials:
            done = t.status == "completed"
            finished = finished or done
            for g in t.grades:
                graders.add(g.grader)
                if done:
                    of_finished.add(g.grader)
                if g.judge_model:
                    judges.add(g.judge_model)
        return cls(frozenset(graders), frozenset(of_finished), frozenset(judges), finished)


class TrialSource:
    """Trials resolved from a SOURCE string, with their run header when stored.

    A store's trials, or a Parquet export's, are read as columns (`table`,
    `facts`), which is all the metrics need; the `Trial` objects (transcripts,
    grades) are built only when ``trials`` is first read (``show``, a re-grade), or,
    of a stored run or an export, only those asked for by their rows (`pick`: the few
    whose transcripts ``show --task`` or a report shows).
    """

    label: str
    """How the source was named by the user."""
    run: Run | None
    """The run header when the source is a store."""
    tasks: list[Task]
    """The suite's tasks when the store recorded them."""
    grading: GradeVersion | None
    """The grade version read, when the source is a store."""

    def __init__(
        self,
        label: str,
        trials: list[Trial] | None = None,
        run: Run | None = None,
        tasks: list[Task] | None = None,
        grading: GradeVersion | None = None,
        _table: TrialTable | None = None,
        _facts: Facts | None = None,
        _load: Callable[[], list[Trial]] | None = None,
        _calls: Callable[[], ModelCalls] | None = None,
        _outcomes: Callable[[], list[TrialOutcome]] | None = None,
        _grade_summary: Callable[[], GradeSummary] | None = None,
        _pick: Callable[[Sequence[int], bool], list[Trial]] | None = None,
    ) -> None:
        if trials is None and _load is None:
            raise ValueError("a TrialSource needs its trials or a way to load them")
        self.label, self._trials, self.run = label, trials, run
        self.tasks = [] if tasks is None else tasks
        self.grading, self._table, self._facts, self._load = grading, _table, _facts, _load
        self._calls, self._outcomes = _calls, _outcomes
        self._grade_summary = _grade_summary
        self._pick = _pick

    @property
    def summarize_grades(self) -> Callable[[], GradeSummary]:
        """What a comparison's record says of the trials' grading (`GradeSummary`): a
        stored run's in SQL, without building its trials; otherwise from the trials."""
        if self._grade_summary is not None and self._trials is None:
            return self._grade_summary
        return lambda: GradeSummary.of_trials(self.trials)

    @property
    def outcomes(self) -> Sequence[Trial | TrialOutcome]:
        """Each trial's key and outcome (`TrialOutcome`), in the trials' order: a stored
        run's straight from SQL, without building its trials (unless they are built
        already); otherwise the trials themselves."""
        if self._trials is None and self._outcomes is not None:
            return self._outcomes()
        return self.trials

    @property
    def count_model_calls(self) -> Callable[[], ModelCalls]:
        """Sums up the trials' model calls (served models, price sources): a stored
        run's in SQL, without building its transcripts; otherwise from the trials."""
        if self._calls is not None:
            return self._calls
        return lambda: ModelCalls.of_trials(self.trials)

    @property
    def trials(self) -> list[Trial]:
        """The trials, validated (built on first use for a stored run)."""
        if self._trials is None:
            assert self._load is not None
            self._trials = self._load()
        return self._trials

    @trials.setter
    def trials(self, value: list[Trial]) -> None:
        self._trials = value

    def pick(self, rows: Sequence[int], *, events: bool = True) -> list[Trial]:
        """The trials at these rows of `table`, in the order given, built: of a stored run
        or a Parquet export only these (``events=False``: without their transcripts),
        never the others; otherwise taken from `trials` (a JSONL file's are built
        already)."""
        if self._trials is None and self._pick is not None:
            return self._pick(rows, events)
        trials = self.trials
        return [trials[i] for i in rows]

    @property
    def lazy_trials(self) -> Sequence[Trial]:
        """The trials as a sequence that builds them on first use (`trials` at once)."""
        return self.trials if self._trials is not None else _LazyTrials(self)

    @property
    def table(self) -> TrialTable:
        if self._table is None:
            self._table = TrialTable.from_trials(self.trials)
        return self._table

    @property
    def facts(self) -> Facts:
        """What the behaviour metrics read of each trial (`agentgauge.facts`), row for
        row with `table`."""
        if self._facts is None:
            self._facts = Facts.from_trials(self.trials)
        return self._facts


class _LazyTrials(Sequence[Trial]):
    """A source's trials, built when first read: what only needs the table never builds them."""

    def __init__(self, source: TrialSource) -> None:
        self._source = source

    def __len__(self) -> int:
        return len(self._source.trials)

    @overload
    def __getitem__(self, index: int) -> Trial: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Trial]: ...
    def __getitem__(self, index: int | slice) -> Trial | Sequence[Trial]:
        return self._source.trials[index]

    def __iter__(self) -> Iterator[Trial]:
        return iter(self._source.trials)


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSONL file.

    Lines are read as bytes and decoded strictly, so a binary or UTF-16 file
    fails on its first bad byte with the line and offset (`agentgauge.textio`).
    """
    path = Path(path)
    with open_regular(path) as handle:
        offset = 0
        for lineno, raw in enumerate(handle, start=1):
            line = decode_utf8(raw, file=path, line=lineno, offset=offset)
            offset += len(raw)
            if not line.strip():
                continue
            obj = loads_json(line, file=path, line=lineno)
            if not isinstance(obj, dict):
                raise InputError(
                    f"expected a JSON object, got {type(obj).__name__}", file=path, line=lineno
                )
            yield lineno, obj


def parse_trial(obj: dict[str, Any], *, file: str | Path | None, line: int | None) -> Trial:
    """Validate one record, raising `InputError` with its location: its fields, and the
    grade evidence the metrics read (`agentgauge.evidence`)."""
    try:
        trial = Trial.model_validate(obj)
    except ValidationError as exc:
        field, reason = first_error(exc)
        raise InputError(reason, file=file, line=line, field=field) from None
    if trial.grades and (problem := grades_problem(trial.grades)) is not None:
        raise InputError(problem[1], file=file, line=line, field=problem[0])
    return trial


def too_large_trial(index: int) -> str:
    """Why a trial index past `MAX_TRIAL_INDEX` is refused."""
    return (
        f"{index} is past the largest trial index, {MAX_TRIAL_INDEX} (2^63 - 2): the "
        "index after it, which a trial given none would take, must fit the store too"
    )


@dataclass(frozen=True)
class Element:
    """Where a trial is in a JSON document (tau-bench results, a tau2 simulation, an
    Inspect sample), for `assign_trial_indices` to name: the file (an archive's member
    as its label, ``log.eval [samples/1_epoch_1.json]``), the element's path in it
    (``[2]``, ``simulations[3]``; empty for a document of its own), and the fields of
    the element that hold its task id and its trial index."""

    file: str | Path
    path: str
    task_key: str = "task_id"
    trial_key: str = "trial"

    def field(self, key: str) -> str:
        """The element path of ``key`` in this element: ``[2].trial``."""
        return f"{self.path}.{key}" if self.path else key

    def named_from(self, file: str | Path | None, key: str) -> str:
        """How an error about another trial names ``key`` of this one: its element
        path, with its file when that is not ``file``."""
        if file is not None and str(self.file) == str(file):
            return self.field(key)
        return f"{self.file}: {self.field(key)}"


#: Where a trial is: a line of a JSONL file, an element of a JSON document, or unknown.
Place = int | Element | None


def assign_trial_indices(
    trials: Iterable[tuple[Place, Trial]], *, file: str | Path | None = None
) -> list[Trial]:
    """Fill missing ``trial`` indices by order of appearance and reject duplicates.

    A (task, trial) pair must be unique within its group (agent, model, variant):
    two records claiming to be the same attempt mean a merge went wrong. Each trial
    comes with its place in ``file``, which an error names: a line number, or an
    `Element` of a JSON document (for which ``file`` is the default).
    """
    out: list[Trial] = []
    next_index: dict[tuple[Any, ...], int] = {}
    seen: dict[tuple[Any, ...], Place] = {}
    names: dict[str, Spellings[Place]] = {key: Spellings() for key in SPELLED_ONCE}
    families: dict[str, tuple[str | None, Place]] = {}

    def key_of(place: Element, what: str) -> str:
        if what == "task":
            return place.task_key
        return place.trial_key if what == "trial" else what

    def refuse(reason: str, place: Place, what: str) -> InputError:
        """The error about ``what`` (``task``: its id; ``trial``: its index; else the
        field of that name) at ``place``."""
        if isinstance(place, Element):
            return InputError(reason, file=place.file, field=place.field(key_of(place, what)))
        field = {"task": "task_id", "trial": "trial"}.get(what, what)
        return InputError(reason, file=file, line=place, field=field)

    def named(first: Place, at: Place, what: str) -> str | None:
        """Where a trial was first seen (``line 3``, ``[0].trial``), for an error at
        ``at``; ``None`` when that is not known."""
        if isinstance(first, Element):
            here = at.file if isinstance(at, Element) else file
            return first.named_from(here, key_of(first, what))
        return f"line {first}" if first is not None else None

    for place, trial in trials:
        if trial.task_id != trial.task_id.strip():
            raise refuse(
                f"{trial.task_id!r} begins or ends with whitespace, which no table shows; "
                "write the id without it",
                place,
                "task",
            )
        for field, spellings in names.items():
            name = getattr(trial, field)
            if name is None or (other := spellings.other_spelling(name, place)) is None:
                continue
            what = "task" if field == "task_id" else field
            first_at = named(other[1], place, what)
            raise refuse(
                spellings_reason(other[0], f" ({first_at})" if first_at else "", name, field),
                place,
                what,
            )
        # A trial that names no family says nothing of its task's (a span without the
        # attribute); two that name two do not agree.
        first_family = (
            (None, None)
            if trial.family is None
            else families.setdefault(trial.task_id, (trial.family, place))
        )
        if first_family[0] not in (None, trial.family):
            first_at = named(first_family[1], place, "family")
            raise refuse(
                family_reason(trial.task_id, first_family[0], first_at, trial.family),
                place,
                "family",
            )
        cell = (trial.agent, trial.model, trial.variant, trial.task_id)
        if trial.trial is None:
            trial.trial = next_index.get(cell, 0)
            if trial.trial > MAX_TRIAL_INDEX:  # after one at the largest index
                raise refuse(
                    f"no trial index is left for this trial of task {trial.task_id!r}: one "
                    f"before it has the largest, {MAX_TRIAL_INDEX}; give each its index",
                    place,
                    "trial",
                )
        elif trial.trial > MAX_TRIAL_INDEX:
            raise refuse(too_large_trial(trial.trial), place, "trial")
        next_index[cell] = max(next_index.get(cell, 0), trial.trial + 1)
        key = (*cell, trial.trial)
        if key in seen:
            first = seen[key]
            first_at = named(first, place, "trial")
            on = "on" if isinstance(first, int) else "at"
            where = f" (first seen {on} {first_at})" if first_at else ""
            raise refuse(
                f"duplicate trial {trial.trial} of task {trial.task_id!r} for "
                f"{trial_cell_words(trial.agent, trial.model, trial.variant)}{where}",
                place,
                "trial",
            )
        seen[key] = place
        out.append(trial)
    return out


def two_families(table: TrialTable) -> tuple[int, int] | None:
    """The first two rows of one task that name different families, or ``None``: what
    every reader refuses (`family_reason`); a row that names none says nothing of its
    task's. Counted over the distinct (task, family) pairs, not the rows."""
    if len(table) < 2:
        return None
    task = table.codes("task_id")[1]
    families, family = table.codes("family")
    named = np.flatnonzero(np.array([f is not None for f in families.tolist()])[family])
    pair = task[named].astype(np.int64) * len(families) + family[named]
    pairs, first_rows = np.unique(pair, return_index=True)
    first_rows = named[first_rows]
    task_of_pair = pairs // len(families)
    if task_of_pair.size == np.unique(task_of_pair).size:
        return None
    bad = task_of_pair[np.flatnonzero(task_of_pair[1:] == task_of_pair[:-1])[0]]
    a, b = np.sort(first_rows[task_of_pair == bad])[:2].tolist()
    return int(a), int(b)


class Spellings(Generic[_Place]):
    """Names (task ids, agents, models, variants) that print the same yet are two
    texts (`agentgauge.spelling`): é as one code point or as e and a combining accent, a
    zero-width space inside, a space at an end. They would count as two tasks (or two
    systems) that no table tells apart, so the second is refused, naming both spellings
    and where each was first seen, as a suite refuses them. Each distinct name is looked
    at once. Every reader of trials checks its names here: a JSONL file line by line
    (`assign_trial_indices`), Parquet by distinct value (`agentgauge.parquet.read`), each
    with its own kind of place (a line, a row)."""

    def __init__(self) -> None:
        self.known: set[str] = set()
        self.by_form: dict[str, tuple[str, _Place]] = {}

    def other_spelling(self, name: str, place: _Place) -> tuple[str, _Place] | None:
        """The spelling of ``name`` met before it (with where it was met) when the two
        print the same; ``None`` when there is none. ``place`` is where ``name`` is,
        kept if it is the first spelling met."""
        if name in self.known:
            return None
        self.known.add(name)
        first = self.by_form.setdefault(lookalike_key(name), (name, place))
        return first if first[0] != name else None


#: The trial fields whose values must each have one spelling (`Spellings`), with what
#: two spellings of one would count as.
SPELLED_ONCE = {
    "task_id": "tasks",
    "agent": "agents",
    "model": "models",
    "variant": "variants",
    "family": "families",
}


def spellings_reason(first: str, where: str, second: str, field: str = "task_id") -> str:
    """Why two spellings of one ``field`` value (`Spellings`) are refused; ``where``
    says where the first was seen (`` (line 3)``), or is empty."""
    a, b = quoted((first, second))
    what = "task ids" if field == "task_id" else f"{field} names"
    return (
        f"{what} {a}{where} and {b} differ only in {spelling_difference(first, second)}: "
        f"they print the same but would count as two {SPELLED_ONCE[field]}; write one spelling"
    )


def read_trials_jsonl(path: str | Path) -> list[Trial]:
    """Load and validate a trials JSONL file (one trial record per line).

    Raises `InputError` (``FILE:LINE: field: reason``) on the first bad line:
    bad JSON, unknown keys, wrong types, scores outside [0, 1], NaN, or a
    duplicate (task, trial) within a group.
    """
    parsed = ((line, parse_trial(obj, file=path, line=line)) for line, obj in read_jsonl(path))
    return assign_trial_indices(parsed, file=path)


def load_trials(source: str | Path) -> list[Trial]:
    """The trials of a SOURCE: a trials JSONL file, ``DB:RUN_ID`` (with transcripts
    and grades), a store holding one run, with an optional ``#agent=...``
    selector (see the module's docstring).

    A JSONL file is validated line by line: the first bad line raises
    `InputError` (``FILE:LINE: field: reason``): bad JSON, unknown keys, wrong
    types, scores outside [0, 1], NaN, or a duplicate (task, trial) within a group.
    """
    return open_source(source).trials


def parse_source(spec: str | PathLike[str]) -> tuple[Path, str | None]:
    """Split ``DB:RUN_ID`` into its parts; a plain path has no run id.

    A path that exists as given wins (so a file with a colon in its name still
    works); otherwise the first colon whose left side is an existing file splits.
    A ``#...`` selector is left out (`split_selector` reads it).
    """
    spec, _ = split_selector(spec)
    if Path(spec).exists() or (_GLOB & set(spec) and glob.glob(spec)):
        return Path(spec), None
    for i, ch in enumerate(spec):
        if ch == ":" and i > 0 and Path(spec[:i]).is_file():
            return Path(spec[:i]), spec[i + 1 :]
    raise InputError(
        "no such file; a SOURCE is a trials JSONL file, DB:RUN_ID or a Parquet export",
        file=spec,
        field="SOURCE",
    )


def is_store(path: Path) -> bool:
    """Whether ``path`` is a SQLite file (a store), by its header. A FIFO is none: it is
    not opened, since opening one for reading waits for a writer."""
    if not path.is_file():
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def resolve_run(spec: str | PathLike[str]) -> tuple[Path, str]:
    """The store and run a ``DB:RUN_ID`` (or a store holding one run) names.

    Raises `InputError` when the file is not a store or a store given without a
    run id holds other than one run (naming the most recent ones).
    """
    path, run_id = parse_source(spec)
    if not is_store(path):
        raise InputError("not an agentgauge store (a SQLite file)", file=path, field="SOURCE")
    if run_id is None:
        with Store(path, readonly=True) as store:
            runs = store.list_runs()
        if len(runs) != 1:
            names = ", ".join(quoted(r.run_id for r in runs[-5:])) or "none"
            raise InputError(
                f"this store holds {len(runs)} runs; name one as {path}:RUN_ID (recent: {names})",
                file=path,
                field="SOURCE",
            )
        run_id = runs[0].run_id
    return path, run_id


def open_source(
    spec: str | PathLike[str],
    *,
    events: bool = True,
    grades: bool | None = None,
    grade_version: int | None = None,
) -> TrialSource:
    """Resolve SOURCE to trials. A store given without a run id must hold exactly one run.

    ``events=False``: the trials, when built, come without their transcripts;
    ``grades`` (default as ``events``): with their grades. ``grade_version`` is the
    store's grade version to read when SOURCE names none itself (``#grade=N``);
    default, the run's active one. A ``#agent=`` or ``#model=`` selector keeps that
    configuration's trials and must match some.

    A source with no trial (an empty file or export, a stored run started but with no
    trial recorded yet) raises `InputError`: there is nothing to measure, and every
    command that reads trials stops with exit 2 rather than report over zero trials.
    """
    spec = source_text(spec)
    base, selector = split_selector(spec)
    if grade_version is not None:  # the store's check, before a file without versions
        whole_number(grade_version, "grade_version", least=1)
    grades = events if grades is None else grades
    # A Parquet export keeps grades beside the events: it reads both or neither.
    parquet = _parquet_source(
        spec, base, selector, events=events or grades, grade_version=grade_version
    )
    if parquet is not None:
        if not len(parquet.table):
            raise InputError("no trials in this export", file=base, field="SOURCE")
        return _selected(parquet, selector, base)
    path, run_id = parse_source(base)
    if run_id is None and not is_store(path):
        if selector.grade_version is not None:
            raise InputError(
                "a trials file has no grade versions (#grade= picks one of a stored run)",
                file=path,
                field="SOURCE",
            )
        trials = read_trials_jsonl(path)
        if not trials:
            # Nothing measured is not "every trial passed": every command refuses it,
            # as `import jsonl` does.
            raise InputError("no trials in this file", file=path, field="SOURCE")
        return _selected(TrialSource(label=spec, trials=trials), selector, base)
    path, run_id = resolve_run(base)
    version = asked_grade_version(selector, grade_version, path)
    with Store(path, readonly=True) as store:
        try:
            run = store.require_run(run_id)
        except MissingRun as exc:  # named by what was typed, not by the store's field
            raise MissingRun(exc.reason, file=base) from None
        try:
            version = store.resolve_grade_version(run_id, version)
        except InputError as exc:
            if selector.grade_version is None:
                raise
            # Asked for in SOURCE itself: the refusal names what was typed there.
            raise InputError(exc.reason, file=exc.file, field="#grade") from None
        tasks = store.get_tasks(run_id)
        table, facts = store.columns(run_id, grade_version=version)
        versions = store.grade_versions(run_id)
    if not len(table):
        raise InputError(
            f"run {run_id!r} has no trials yet (it was started, but no trial was recorded)",
            file=path,
            field="SOURCE",
        )
    if (clash := two_families(table)) is not None:  # a store written before it was refused
        a, b = clash
        raise InputError(
            f"run {run_id!r}: "
            + family_reason(
                str(table.task_id[a]),
                table.family[a],
                _trial_words(table, a),
                table.family[b],
                f" ({_trial_words(table, b)})",
            )
            # Stored before this was refused: the way out, as nothing in the store can
            # be edited in place.
            + f" (export it with agentgauge export {shell_command([f'{path}:{run_id}'])} "
            "--jsonl FILE, give the task's trials one family there, and import FILE again)",
            file=path,
            field="family",
        )
    grading = next((v for v in versions if v.version == version), None)

    def load() -> list[Trial]:
        # Only the selector's configuration is built (`_selected` keeps the rest out
        # of the table): a side of ``compare 'db:run#agent=A' 'db:run#agent=B'`` no
        # longer builds the other side's trials too.
        with Store(path, readonly=True) as again:
            return again.trials(
                run_id,
                events=events,
                grades=grades,
                grade_version=version,
                agent=selector.agent,
                model=selector.model,
            )

    def pick(rows: Sequence[int], with_events: bool) -> list[Trial]:
        # The rows of the selector's configuration, as `load` and `_selected` take them.
        with Store(path, readonly=True) as again, again.snapshot():
            every = again.trial_keys(run_id, agent=selector.agent, model=selector.model)
            keys = [every[i] for i in rows]
            built = again.trials(
                run_id,
                events=events and with_events,
                grades=grades,
                grade_version=version,
                keys=keys,
            )
        by_key = dict(zip(sorted(set(keys)), built, strict=True))
        return [by_key[k] for k in keys]

    def count_calls() -> ModelCalls:
        with Store(path, readonly=True) as again:
            return ModelCalls.of_run(again, run_id, agent=selector.agent, model=selector.model)

    def outcomes() -> list[TrialOutcome]:
        with Store(path, readonly=True) as again:
            rows, failed = again.outcome_rows(
                run_id, grade_version=version, agent=selector.agent, model=selector.model
            )
        return [
            TrialOutcome(
                task_id=task_id,
                trial=trial,
                variant="base" if variant is None else variant,
                agent=agent,
                model=model,
                success=success,
                status="completed" if status is None else status,
                error_kind=error_kind,
                grades=tuple(failed.get(pk, ())),
            )
            for pk, task_id, trial, variant, agent, model, success, status, error_kind in rows
        ]

    def summarize_grades() -> GradeSummary:
        with Store(path, readonly=True) as again:
            graders, of_finished, judges, finished = again.grade_summary(
                run_id, grade_version=version, agent=selector.agent, model=selector.model
            )
        return GradeSummary(frozenset(graders), frozenset(of_finished), frozenset(judges), finished)

    source = TrialSource(
        label=spec,
        run=run,
        tasks=tasks,
        grading=grading,
        _table=table,
        _facts=facts,
        _load=load,
        _calls=count_calls,
        _outcomes=outcomes,
        _grade_summary=summarize_grades,
        _pick=pick,
    )
    return _selected(source, selector, base)


def _trial_words(table: TrialTable, row: int) -> str:
    """``trial 1 of agent 'x'``: a stored trial, as a refusal names it."""
    agent = table.agent[row]
    return f"trial {table.trial[row]}" + ("" if agent is None else f" of agent {agent!r}")


def asked_grade_version(selector: Selector, grade_version: int | None, path: Path) -> int | None:
    """The grade version asked for, by SOURCE's ``#grade=`` or by ``--grade-version``;
    two that differ are refused rather than one silently winning."""
    if (
        selector.grade_version is not None
        and grade_version is not None
        and selector.grade_version != grade_version
    ):
        raise InputError(
            f"two grade versions asked for: #grade={selector.grade_version} in SOURCE and "
            f"--grade-version {grade_version}; give one",
            file=path,
            field="SOURCE",
        )
    return selector.grade_version if selector.grade_version is not None else grade_version


def _parquet_source(
    spec: str, base: str, selector: Selector, *, events: bool, grade_version: int | None
) -> TrialSource | None:
    """A Parquet export directory, a trials ``.parquet`` file or a glob of them, read
    column-wise (docs/parquet.md); ``None`` when ``base`` names no Parquet."""
    if not (Path(base).is_dir() or base.endswith(".parquet") or _GLOB & set(base)):
        return None  # no need to load pyarrow
    from agentgauge.parquet.read import (
        parquet_parts,
        pick_trials,
        read_facts,
        read_header,
        read_table,
        read_trials,
    )

    parts = parquet_parts(base)
    if parts is None:
        return None
    headers = [read_header(p) for p in parts]
    asked = asked_grade_version(selector, grade_version, Path(base))
    for path, header in zip(parts, headers, strict=True):
        held = header.grading.version if header.grading is not None else None
        if asked is not None and asked != held:
            raise InputError(
                f"this export holds grade version {held} only; export the run again "
                f"with --grade-version {asked}",
                file=path.parent,
                field="SOURCE",
            )
    one = headers[0] if len(headers) == 1 else None
    tasks: dict[str, Task] = {}
    for header in headers:
        for task in header.tasks:
            tasks.setdefault(task.id, task)
    table = read_table(parts)
    # The rows `_selected` keeps of a selector's configuration: `pick` is given rows of
    # the table it keeps. (One that keeps none is refused here as there.)
    kept: np.ndarray | None = None
    if len(table) and (selector.agent is not None or selector.model is not None):
        kept = np.flatnonzero(selected_rows(table, selector, base, spec))

    def pick(rows: Sequence[int], with_events: bool) -> list[Trial]:
        # Only the rows asked for are read and built, as of a stored run.
        asked = np.asarray(rows, dtype=np.intp) if kept is None else kept[list(rows)]
        return pick_trials(parts, asked.tolist(), events=events and with_events, grades=events)

    return TrialSource(
        label=spec,
        run=one.run if one else None,
        tasks=list(tasks.values()),
        grading=one.grading if one else None,
        _table=table,
        _facts=read_facts(parts),
        _load=lambda: read_trials(parts, events=events),
        _pick=pick,
    )


def configurations(table: TrialTable) -> list[tuple[str | None, str | None, int]]:
    """The (agent, model) configurations in ``table``, with their trial counts."""
    group, first = group_codes(table, ("agent", "model"))  # counted per code, not per row
    per_group = np.bincount(group, minlength=first.size)
    counts: dict[tuple[str | None, str | None], int] = {}
    for i, n in zip(first.tolist(), per_group.tolist(), strict=True):
        agent, model = table.agent[i], table.model[i]
        key = (None if agent is None else str(agent), None if model is None else str(model))
        counts[key] = counts.get(key, 0) + int(n)
    return [(a, m, n) for (a, m), n in sorted(counts.items(), key=lambda kv: str(kv[0]))]


def _selectors(configs: list[tuple[str | None, str | None, int]]) -> list[str]:
    """The shortest selector naming each configuration (``#agent=A``, else with the model)."""
    agents = [a for a, _, _ in configs]
    out = []
    for agent, model, _ in configs:
        # `NOT_RECORDED` (an empty name) for a label the trials do not record: `#` alone,
        # listed for trials with neither, picked nothing.
        parts = [f"agent={agent or NOT_RECORDED}"]
        if agents.count(agent) > 1:
            parts.append(f"model={model or NOT_RECORDED}")
        out.append("#" + ",".join(parts))
    return out


def _quoted_names(values: Iterable[str | None]) -> dict[str | None, str]:
    """Each distinct value quoted (`quoted`: two names that print alike read apart),
    and ``None`` as ``not recorded``, for a list to pick from."""
    names = sorted({v for v in values if v is not None})
    return {None: "not recorded", **dict(zip(names, quoted(names), strict=True))}


def require_one_configuration(
    table: TrialTable,
    label: str,
    *,
    side: str = "SOURCE",
    subject: str | None = None,
    read_as: str = "compared as one system",
) -> None:
    """Refuse a side that holds several (agent, model) configurations: a comparison
    (or a baseline, or a plan's pilot) treats a side as one system, and pooling two
    agents makes one that never existed. The message lists them and the selector to
    type: "``subject`` (default ``side``) holds 2 (agent, model) configurations and is
    ``read_as``; pick one: ..."."""
    configs = configurations(table)
    if len(configs) <= 1:
        return
    base = split_selector(label)[0]
    agents = _quoted_names(a for a, _, _ in configs)
    models = _quoted_names(m for _, m, _ in configs)
    listed = "; ".join(
        f"{base}{sel} (agent {agents[a]}, model {models[m]}, {counted(n, 'trial')})"
        for (a, m, n), sel in zip(configs, _selectors(configs), strict=True)
    )
    raise InputError(
        f"{subject or side} holds {len(configs)} (agent, model) configurations and is "
        f"{read_as}; pick one: {listed}",
        file=label,
        field=side,
    )


def selected_rows(table: TrialTable, selector: Selector, base: str, label: str) -> np.ndarray:
    """The rows of ``table`` that ``selector``'s ``#agent=``/``#model=`` keep (all of them
    without either). A selector that keeps none is refused, listing the selector of each
    configuration ``base`` holds: every command that reads a SOURCE, ``export`` too,
    says the same rather than go on over zero trials."""
    rows = np.ones(len(table), dtype=bool)
    for column, wanted in (("agent", selector.agent), ("model", selector.model)):
        if wanted is not None:  # `picks`, once per distinct value
            uniques, codes = table.codes(column)
            rows &= np.array([picks(u, wanted) for u in uniques.tolist()], dtype=bool)[codes]
    if (selector.agent is not None or selector.model is not None) and not rows.any():
        found = ", ".join(f"{base}{sel}" for sel in _selectors(configurations(table)))
        raise InputError(
            f"the selector matches no trials; this source holds: {found or 'no trials'}",
            file=label,
            field="SOURCE",
        )
    return rows


def _selected(source: TrialSource, selector: Selector, base: str) -> TrialSource:
    if selector.agent is None and selector.model is None:
        return source
    before = source.table
    rows = selected_rows(before, selector, base, source.label)
    if source._trials is not None:
        source._trials = [t for t in source._trials if selector.keeps(t)]
    else:
        load = source._load
        assert load is not None
        source._load = lambda: [t for t in load() if selector.keeps(t)]
    if source._facts is not None:
        source._facts = source._facts.take(rows)
    source._table = before.take(rows)
    return source
