"""What the behaviour metrics read of a trial, derived once from its transcript and grades.

The outcome metrics read a trial's columns (`agentgauge.table.TrialTable`). Tool
use, control, recovery, per-turn pass rates and reliability (docs/metrics.md)
need more: the names of the tools it called in order, its tool errors, and a few
fields of its grades' evidence. Reading those from the events and the grades'
JSON every time a metric is computed costs about a millisecond a trial (a
quarter of an hour for a million trials); deriving them once, when a trial is
written or graded, and keeping them as columns makes it array arithmetic.

`trial_facts` derives the facts of one trial; `Facts` holds them as columns,
one row per trial, beside a `TrialTable` of the same rows. The store keeps them
with every trial and grade version (`agentgauge.store`); a Parquet export
writes them as columns of ``trials.parquet`` (docs/parquet.md). The behaviour
metrics (`agentgauge.metrics.behaviour`) read nothing else, so a run gives the
same figures whether it is read from a list of `Trial` objects, a store or
Parquet.

Two kinds of facts:

- **event facts** (`EVENT_FACTS`), from the transcript alone: whether it has one,
  its assistant turns, its action-name sequence, its tool results and errors,
  whether it recovered from every error, its errors by type, and the control
  decisions its ``control`` events record;
- **grade facts** (`GRADE_FACTS`), from the grades of one grade version: per
  grader that the metrics read (``tool_calls``, ``trajectory``, ``milestones``,
  ``minefields``, ``control``, ``checkpoints``) its verdict state and the
  evidence fields the metrics use; and whether any grade came from a model judge
  (``judged``: a grade naming its ``judge_model``), which tells a run no judge
  graded from one whose judge's price is unknown (`agentgauge.metrics.cost`).

Variable-length facts (an action sequence, errors by type, per-turn verdicts) are
*labels*: one canonical JSON text per distinct value, like a task id, decoded
once per distinct value (`decode`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from agentgauge.canonical import canonical_json
from agentgauge.schema import (
    ControlEvent,
    Event,
    Grade,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)

__all__ = [
    "ABSENT",
    "ERROR_TYPES",
    "EVENT_FACTS",
    "FACTS",
    "FAILED",
    "GRADE_FACTS",
    "PASSED",
    "RULES",
    "UNKNOWN",
    "WRONG_CALL",
    "Coded",
    "Facts",
    "TrialRecovery",
    "decode",
    "decoded",
    "error_type",
    "event_facts",
    "grade_facts",
    "graded_judge_cost",
    "is_judged",
    "recorded_control",
    "taxonomy",
    "trial_facts",
    "trial_recovery",
]

FactKind = Literal["label", "float", "int", "bool", "state"]

#: Verdict states of a grader on a trial (a ``state`` fact).
ABSENT, PASSED, FAILED, UNKNOWN = 0, 1, 2, 3

#: Graders whose grades the behaviour metrics read, and the prefix of their facts.
_GRADERS = {
    "tool_calls": "tc",
    "trajectory": "traj",
    "milestones": "ms",
    "minefields": "mine",
    "control": "ctl",
    "checkpoints": "ckpt",
}

EVENT_FACTS: dict[str, FactKind] = {
    "has_events": "bool",
    "assistant_turns": "float",
    "actions": "label",
    "tool_results": "int",
    "tool_errors": "int",
    "recovered": "bool",
    "error_types": "label",
    "control_decisions": "label",
}

GRADE_FACTS: dict[str, FactKind] = {
    **{f"{prefix}_state": "state" for prefix in _GRADERS.values()},
    "tc_status": "label",
    "tc_class": "label",
    "tc_irrelevance": "bool",
    "traj_mode": "label",
    "traj_precision": "float",
    "traj_recall": "float",
    "ms_score": "float",
    "mine_max_severity": "float",
    "mine_hit_severity": "float",
    "ctl_irreversible": "float",
    "ctl_unconfirmed": "float",
    "ckpt_turns": "label",
    "judged": "bool",
}

#: Every fact and its kind, event facts first.
FACTS: dict[str, FactKind] = {**EVENT_FACTS, **GRADE_FACTS}

#: The version of the rules the facts are derived by, raised when a rule changes what a
#: fact holds for the same trial: facts derived by other rules (a store's records, an
#: export's fact columns) are derived again from the trials rather than read as they
#: are. 2: a tool error's status code counts only where its text calls it one ("HTTP
#: 503", "status 429"), not as a bare number ("order 512 not found" was ``transient``).
RULES = 2


def _text(value: Any) -> str:
    return canonical_json(value)  # its encoder built once, not per call as json.dumps's


@lru_cache(maxsize=65536)
def decode(label: str | None) -> Any:
    """The value of a label fact (a tuple for sequences, a dict, a list), ``None`` for none."""
    if label is None:
        return None
    value = json.loads(label)
    return (
        tuple(value)
        if isinstance(value, list) and all(isinstance(v, str) for v in value)
        else value
    )


# --------------------------------------------------------------------------- tool calls

#: AST-match failure statuses that tau-bench (Yao et al. 2024) calls a wrong call.
WRONG_CALL = frozenset(
    {"wrong_func_name", "malformed_call", "irrelevance:called", "relevance:no_call"}
)


def _get(grade: Any, key: str) -> Any:
    if isinstance(grade, Mapping):
        return grade.get(key)
    return getattr(grade, key, None)


def taxonomy(status: str, evidence: Any = None) -> str:
    """tau-bench's error class for an AST-match failure status."""
    if status in WRONG_CALL:
        return "wrong_call"
    if status == "wrong_count":
        n_calls = _number(_get(evidence, "n_calls")) if isinstance(evidence, Mapping) else None
        n_expected = (
            _number(_get(evidence, "n_expected")) if isinstance(evidence, Mapping) else None
        )
        if n_calls is not None and n_expected is not None and 0 < n_calls < n_expected:
            return "partial_resolution"
        return "wrong_call"
    return "wrong_arguments"


# --------------------------------------------------------------------------- recovery


def _http_status(codes: str) -> str:
    """A pattern for an HTTP status among ``codes`` (a regex of three digits) where the
    text says it is one: after ``HTTP``, ``HTTP/1.1``, ``HTTPError``, ``status``,
    ``status code`` or ``response code`` (``HTTP 503``, ``status: 429``,
    ``'status_code': 503``). A bare number is not one: "order 512 not found" names an
    order. The reason phrases (``503 Service Unavailable``) are matched on their own."""
    before = (
        r"\b(?:https?(?:/[\d.]+)?(?:\s*error)?|status(?:[\s_-]*code)?|response[\s_-]*code)"
        r"[\"']?\s*[:=#]?\s*"
    )
    return rf"{before}(?:{codes})\b"


#: Error types, tried in order on a tool error's text; the first that matches names it.
#: A status code counts only where the text calls it one (`_http_status`).
ERROR_TYPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("rate_limit", re.compile(_http_status("429") + r"|rate.?limit|too many requests", re.I)),
    ("timeout", re.compile(r"time(?:d)?\s*out|deadline", re.I)),
    (
        "transient",
        re.compile(
            _http_status(r"5\d\d")
            + r"|transient|internal (?:server )?error|bad gateway|unavailable|try again",
            re.I,
        ),
    ),
    ("unknown_tool", re.compile(r"unknown (?:tool|function)|no such (?:tool|function)", re.I)),
    ("not_found", re.compile(r"not found|no such|does not exist", re.I)),
    # The world's state forbids the call: "W1010 is shipped, not pending", "already paid".
    (
        "precondition",
        re.compile(r"already|, not \w+|cannot|can't|no longer|not allowed|not eligible", re.I),
    ),
    (
        "invalid_arguments",
        re.compile(r"argument|parameter|must be|invalid|required|missing", re.I),
    ),
)


def error_type(content: Any) -> str:
    """The type of one tool error: the ``type``/``code``/``error_type`` a structured
    error names, else the first of `ERROR_TYPES` whose pattern its text matches,
    else ``other`` (a type that cannot be read is not guessed)."""
    if isinstance(content, Mapping):
        for key in ("error_type", "type", "code"):
            value = content.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    text = content if isinstance(content, str) else repr(content)
    for name, pattern in ERROR_TYPES:
        if pattern.search(text):
            return name
    return "other"


@dataclass(frozen=True)
class TrialRecovery:
    """What one trial's transcript says about its tool errors."""

    n_results: int
    """Tool results in the transcript."""
    n_errors: int
    """Tool results flagged as errors."""
    recovered: bool
    """Every error was followed by a successful call of the same tool or a ``recover``
    decision (``False`` for a trial without errors)."""
    error_types: dict[str, int] = field(default_factory=dict)
    """Errors by type (`error_type`)."""


def trial_recovery(events: Sequence[Event]) -> TrialRecovery:
    """The recovery facts of one transcript.

    A result names its tool by its ``name`` or, failing that, through the call
    it answers (``call_id``). An error is recovered when a later result of the
    same tool is not an error, or a later control decision is ``recover``.
    """
    # The calls by id, made when a result names no tool (most name theirs).
    tool_of_call: dict[str, str] | None = None
    # Walk backwards so "is there a later success of this tool / a later recover" is a set lookup.
    later_ok: set[str] = set()
    later_recover = False
    n_results = 0
    n_errors = 0
    unrecovered = 0
    types: dict[str, int] = {}
    for event in reversed(events):
        if isinstance(event, ControlEvent) and event.decision == "recover":
            later_recover = True
        elif isinstance(event, ToolResultEvent):
            n_results += 1
            tool = event.name
            if not tool:
                if event.call_id:
                    if tool_of_call is None:
                        tool_of_call = {
                            e.call_id: e.name
                            for e in events
                            if isinstance(e, ToolCallEvent) and e.call_id
                        }
                    tool = tool_of_call.get(event.call_id)
                else:
                    tool = None
            if event.is_error:
                n_errors += 1
                kind = error_type(event.content)
                types[kind] = types.get(kind, 0) + 1
                if not later_recover and (tool is None or tool not in later_ok):
                    unrecovered += 1
            elif tool is not None:
                later_ok.add(tool)
    return TrialRecovery(
        n_results, n_errors, n_errors > 0 and unrecovered == 0, dict(sorted(types.items()))
    )


# --------------------------------------------------------------------------- control


_Decision = TypeVar("_Decision", bound=str)


def recorded_control(
    field: _Decision | None, decisions: Sequence[_Decision], expected: str | None
) -> _Decision | None:
    """The control decision a trial records (docs/graders.md, "`control`", rule 1): its
    ``control`` field, else its first ``control`` event other than ``recover``; a
    ``recover`` event is the decision only when ``expected`` is ``recover`` (recovering
    from a failed tool call is incidental to the task's decision). ``None`` when it
    records none: the control grader then reads the transcript's calls and cues, and
    the control metrics count the decision as unknown.

    ``decisions`` are the trial's control events' decisions in order (the
    ``control_decisions`` fact holds each once, in order of first appearance, which
    gives the same answer). The grader (`agentgauge.graders.control.detect_control`)
    and the metrics both read a trial's decision through this function."""
    if field is not None:
        return field
    if expected == "recover" and "recover" in decisions:
        return next(d for d in decisions if d == "recover")
    return next((d for d in decisions if d != "recover"), None)


# --------------------------------------------------------------------------- one trial


def event_facts(events: Sequence[Event]) -> dict[str, Any]:
    """The event facts of one transcript (an empty one: a trial recorded without)."""
    if not events:
        return {
            "has_events": False,
            "assistant_turns": None,
            "actions": None,
            "tool_results": 0,
            "tool_errors": 0,
            "recovered": False,
            "error_types": None,
            "control_decisions": None,
        }
    rec = trial_recovery(events)
    turns = 0
    actions: list[str] = []
    decisions: dict[str, None] = {}  # each once, in order of first appearance
    for e in events:  # one pass: an import derives these for every trial it stores
        if isinstance(e, MessageEvent):
            if e.role == "assistant":
                turns += 1
        elif isinstance(e, ToolCallEvent):
            actions.append(e.name)
        elif isinstance(e, ControlEvent):
            decisions.setdefault(e.decision)
    return {
        "has_events": True,
        "assistant_turns": turns,
        "actions": _text(actions),
        "tool_results": rec.n_results,
        "tool_errors": rec.n_errors,
        "recovered": rec.recovered,
        "error_types": _text(rec.error_types) if rec.error_types else None,
        "control_decisions": _text(list(decisions)) if decisions else None,
    }


def _state(grade: Any) -> int:
    passed = _get(grade, "passed")
    return UNKNOWN if passed is None else PASSED if passed else FAILED


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def is_judged(grade: Grade | Mapping[str, Any]) -> bool:
    """Whether a model judge gave this grade: it names its ``judge_model``. The one rule
    for "judged" (the ``judged`` fact, `graded_judge_cost`): a judge grader names the
    model only when it asked one (a rubric grade of a task without a rubric names none)."""
    return bool(_get(grade, "judge_model"))


def graded_judge_cost(grades: Sequence[Grade | Mapping[str, Any]]) -> float | None:
    """The judges' spend on a trial as its grades record it: the sum of the
    ``judge_cost_usd`` in the evidence of every judged grade (`is_judged`); ``None``
    when no grade is judged, or when one records no finite cost (its price unknown).

    A grade ``NAME:PART`` beside a grade ``NAME`` (a rubric criterion beside its
    ``rubric`` grade) is counted in it and not again. This is what a re-grade's judges
    spent (the store reads a re-graded trial's ``judge_cost_usd`` from it); a trial as
    recorded keeps the cost its run recorded (`agentgauge.graders.rubric.JudgeSpend`),
    which these grades sum to.
    """
    judged = [g for g in grades if is_judged(g)]
    if not judged:
        return None
    names = {_get(g, "grader") for g in judged}
    total = 0.0
    for g in judged:
        head, colon, _ = str(_get(g, "grader")).partition(":")
        if colon and head in names:
            continue
        evidence = _get(g, "evidence")
        cost = _number(evidence.get("judge_cost_usd")) if isinstance(evidence, Mapping) else None
        if cost is None or not 0 <= cost < float("inf"):
            return None
        total += cost
    return total if total < float("inf") else None


#: The grade facts of a trial without grades (each call starts from a copy).
_NO_GRADE_FACTS: dict[str, Any] = {
    **{name: None for name, kind in GRADE_FACTS.items() if kind != "state"},
    **{f"{p}_state": ABSENT for p in _GRADERS.values()},
    "tc_irrelevance": False,
    "judged": False,
}


def grade_facts(grades: Sequence[Grade | Mapping[str, Any]]) -> dict[str, Any]:
    """The grade facts of one trial's grades (`Grade` objects or dicts with their keys).

    A grader graded twice in the list (it cannot be, in a store) is read as its last grade.
    """
    out: dict[str, Any] = dict(_NO_GRADE_FACTS)
    by_name: dict[str, Any] = {}
    for g in grades:
        name = _get(g, "grader")
        if name in _GRADERS:
            by_name[name] = g
        if is_judged(g):  # rubric, groundedness, semantic_match: a model judged
            out["judged"] = True
    for name, g in by_name.items():
        prefix = _GRADERS[name]
        state = _state(g)
        out[f"{prefix}_state"] = state
        evidence = _get(g, "evidence")
        ev: Mapping[str, Any] = evidence if isinstance(evidence, Mapping) else {}
        if name == "tool_calls":
            out["tc_irrelevance"] = ev.get("category") == "irrelevance"
            if state == FAILED:
                status = str(_get(g, "status"))
                out["tc_status"] = status
                out["tc_class"] = taxonomy(status, ev)
        elif name == "trajectory":
            out["traj_mode"] = str(ev.get("mode", "unknown"))
            out["traj_precision"] = _number(ev.get("precision"))
            out["traj_recall"] = _number(ev.get("recall"))
        elif name == "milestones":
            out["ms_score"] = _number(_get(g, "score"))
        elif name == "minefields":
            out["mine_max_severity"] = _number(ev.get("max_severity"))
            # A severity that is no number (a stored grade from before evidence was
            # checked, `agentgauge.evidence`) is unknown: the worst, 1.0, if no hit has one.
            found = ev.get("hits")
            hits = [
                s
                for h in (found if isinstance(found, list) else ())
                if isinstance(h, dict) and (s := _number(h.get("severity", 1.0))) is not None
            ]
            out["mine_hit_severity"] = max(hits) if hits else None
        elif name == "control":
            out["ctl_irreversible"] = _number(ev.get("irreversible_calls"))
            out["ctl_unconfirmed"] = _number(ev.get("unconfirmed_irreversible"))
        else:  # checkpoints: the decided and undecided turns
            results = ev.get("checkpoints")
            if isinstance(results, list):
                turns = [
                    [r["turn"], r.get("verdict") if r.get("verdict") in ("pass", "fail") else None]
                    for r in results
                    if isinstance(r, dict) and type(r.get("turn")) is int
                ]
                out["ckpt_turns"] = _text(turns)
    return out


def trial_facts(trial: Trial) -> dict[str, Any]:
    """Every fact of one trial: its transcript's and its grades'."""
    return {**event_facts(trial.events), **grade_facts(trial.grades)}


# --------------------------------------------------------------------------- columns

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
ObjArray = npt.NDArray[np.object_]
IntArray = npt.NDArray[np.int64]
StateArray = npt.NDArray[np.int8]

_DTYPE: dict[FactKind, Any] = {
    "label": object,
    "float": np.float64,
    "int": np.int64,
    "bool": np.bool_,
    "state": np.int8,
}


def _column(kind: FactKind, values: Sequence[Any]) -> np.ndarray[Any, Any]:
    if kind == "float":
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    if kind == "label":
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    return np.array(values, dtype=_DTYPE[kind])


@dataclass(frozen=True, eq=False)
class Coded:
    """A label column as each row's index into its distinct values, decoded (`decode`):
    what a metric that reads a label per trial loops over, once per distinct value."""

    codes: npt.NDArray[np.intp]
    values: list[Any]

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i: int) -> Any:
        return self.values[int(self.codes[i])]

    def take(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> Coded:
        return Coded(self.codes[rows], self.values)


@dataclass(frozen=True, eq=False)
class Facts:
    """The facts of a set of trials as columns (one array per fact in `FACTS`, one row
    per trial, in the rows' order of the `TrialTable` beside it).

    A label column is an object array of its texts, or, read from a store, the ids of
    its texts and the store's id-to-text table (``ids``), turned into texts only when
    a metric asks for them (`coded` decodes each distinct value once instead).
    """

    columns: dict[str, np.ndarray[Any, Any]]
    ids: dict[str, tuple[npt.NDArray[np.int32], ObjArray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = sorted(set(FACTS) - set(self.columns) - set(self.ids))
        if missing:
            raise ValueError(f"facts lack the columns {missing}")
        lengths = {len(v) for v in self.columns.values()} | {len(i) for i, _ in self.ids.values()}
        if len(lengths) > 1:
            raise ValueError(f"fact columns have different lengths {sorted(lengths)}")

    def __len__(self) -> int:
        return len(self.columns["has_events"])

    def __getitem__(self, name: str) -> np.ndarray[Any, Any]:
        column = self.columns.get(name)
        if column is None:
            ids, texts = self.ids[name]
            column = self.columns[name] = texts[ids]
        return column

    def coded(self, name: str) -> Coded:
        """A label column as `Coded`: each distinct value decoded once."""
        if name in self.ids and name not in self.columns:
            from agentgauge.table import compact

            ids, texts = self.ids[name]
            if ids.size and ids.min() < 0:  # -1 reads the last text, as numpy indexes
                ids = np.where(ids < 0, ids + len(texts), ids)
            held, codes = compact(ids, len(texts))
            return Coded(codes, [decode(texts[u]) for u in held.tolist()])
        from agentgauge.table import factorize

        uniques, codes = factorize(self[name])
        return Coded(codes, [decode(u) for u in uniques.tolist()])

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]]) -> Facts:
        """Columns from one `trial_facts` dict per trial."""
        return cls({name: _column(kind, [r[name] for r in rows]) for name, kind in FACTS.items()})

    @classmethod
    def from_trials(cls, trials: Sequence[Trial]) -> Facts:
        """The facts of validated trials (what a list of `Trial` objects is measured by)."""
        return cls.from_rows([trial_facts(t) for t in trials])

    @classmethod
    def from_columns(
        cls,
        columns: Mapping[str, Any],
        ids: Mapping[str, tuple[npt.NDArray[np.int32], ObjArray]] | None = None,
    ) -> Facts:
        """Facts from arrays of each fact (a store's or a Parquet file's columns); a
        label column may come as ``ids`` instead (its texts' ids and the id-to-text
        table)."""
        ids = dict(ids or {})
        return cls(
            {
                name: np.asarray(columns[name], dtype=_DTYPE[kind])
                if kind != "label"
                else _labels(columns[name])
                for name, kind in FACTS.items()
                if name not in ids
            },
            ids,
        )

    def take(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.intp]) -> Facts:
        """The rows selected by a boolean mask or an index array."""
        return Facts(
            {name: column[rows] for name, column in self.columns.items()},
            {name: (i[rows], texts) for name, (i, texts) in self.ids.items()},
        )


def _labels(values: Any) -> ObjArray:
    if isinstance(values, np.ndarray) and values.dtype == object:
        return values
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def decoded(column: ObjArray) -> list[Any]:
    """Each row's decoded label (`decode`), decoding each distinct label once."""
    values = column.tolist()
    cache: dict[Any, Any] = {}
    out = []
    for v in values:
        if v not in cache:
            cache[v] = decode(v)
        out.append(cache[v])
    return out
