"""The data model: events, grades, trials, tasks and runs.

These pydantic models are the one shape every adapter converts into and every
later stage reads. They validate at the edge (loading, importing, the harness)
and are then turned into columnar numpy arrays (`agentgauge.table`) for the
metrics, which never see a pydantic object.

`TRIAL_FIELDS`, next to `Trial`, is the one list of a trial's fields: the
store's ``trials`` table, its insert and select, and `TrialTable`'s columns
are derived from it, so adding a field is one edit here (and one annotation
in `TrialTable`, checked against this list when the module loads).

Unknown keys are rejected everywhere (``extra="forbid"``): a typo such as
``sucess`` must fail loudly rather than silently drop a field. Free-form data
belongs under ``metadata``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from agentgauge.spelling import quoted

__all__ = [
    "CONTROL_DECISIONS",
    "INT64_MAX",
    "MAX_TRIAL_INDEX",
    "SUCCESS_TOLERANCE",
    "TRIAL_FIELDS",
    "AnswerSpec",
    "Checkpoint",
    "ControlDecision",
    "ControlEvent",
    "Criterion",
    "Event",
    "ExecutableSpec",
    "Expectations",
    "Grade",
    "MessageEvent",
    "Milestone",
    "Minefield",
    "ModelCallEvent",
    "ResponseMatchSpec",
    "Run",
    "StateAssertion",
    "Task",
    "ToolCallEvent",
    "ToolCallSpec",
    "ToolResultEvent",
    "TrajectorySpec",
    "Trial",
    "TrialField",
    "TrialStatus",
    "family_reason",
    "infra_error",
    "json_int",
    "json_number",
    "runs_entry",
    "trial_cell_words",
]

#: A score counts as success when it is within this of 1 (tau-bench's rule:
#: ``reward >= 1 - 1e-6``).
SUCCESS_TOLERANCE = 1e-6

TrialStatus = Literal["completed", "error", "timeout"]
ControlDecision = Literal["act", "ask", "refuse", "stop", "confirm", "recover", "transfer"]
#: The decisions of `ControlDecision`, in its order (graders and metrics iterate this).
CONTROL_DECISIONS: tuple[ControlDecision, ...] = get_args(ControlDecision)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=False)


# The interchange format is strict JSON: pydantic's lax mode would read "0.5" as 0.5,
# "yes" as true and true as 1, so a mistyped record would pass with a value its
# author never wrote. These run before pydantic's own checks on the typed fields.


def json_number(value: Any) -> Any:
    """A number must be a JSON number: not a string, not a boolean, finite."""
    kind = type(value)
    if (kind is float and value - value == 0.0) or kind is int:  # the usual: one test
        return value
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    if isinstance(value, str):
        raise ValueError(f"not a valid number: got the string {value!r} (write it unquoted)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


#: Integers the store can hold: SQLite's INTEGER is a signed 64-bit number.
INT64_MAX = 2**63 - 1
#: The largest trial index read from input: a trial without one takes the next index
#: after the largest of its cell, which must fit the store too.
MAX_TRIAL_INDEX = INT64_MAX - 1


def json_int(value: Any) -> Any:
    """An integer field: a JSON number (as `json_number`) that fits in the store."""
    if type(value) is int and -INT64_MAX - 1 <= value <= INT64_MAX:  # the usual: one test
        return value
    value = json_number(value)
    # A float such as 1e19 would pass pydantic's int check and overflow SQLite.
    if isinstance(value, int | float) and not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise ValueError("out of range: an integer must lie within ±2^63 (what the store holds)")
    return value


def _json_bool(value: Any) -> Any:
    """A boolean must be JSON ``true`` or ``false``, not ``"yes"``, ``1`` or ``"true"``."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        raise ValueError(f"not a valid boolean: got {value!r} (write true or false)")
    return value


# --------------------------------------------------------------------------- events


class _EventBase(_Strict):
    t: float | None = Field(default=None, ge=0)
    """Seconds from the start of the trial, when known."""

    _number_t = field_validator("t", mode="before")(json_number)


class MessageEvent(_EventBase):
    """A message in the conversation (system, user, assistant or tool text)."""

    type: Literal["message"] = "message"
    role: str
    """Who spoke: ``system``, ``user``, ``assistant`` or ``tool``."""
    content: str | None = None
    """The text. ``None`` for an assistant turn that only made tool calls."""


class ModelCallEvent(_EventBase):
    """One call to a model, with what it used."""

    type: Literal["model_call"] = "model_call"
    model: str | None = None
    """The model's name as the provider reported it."""
    input_tokens: int | None = Field(default=None, ge=0)
    """Prompt tokens billed for the call."""
    output_tokens: int | None = Field(default=None, ge=0)
    """Completion tokens billed for the call."""
    cache_read_tokens: int | None = Field(default=None, ge=0)
    """Of ``input_tokens``, those read from the provider's prompt cache (billed lower)."""
    cache_write_tokens: int | None = Field(default=None, ge=0)
    """Of ``input_tokens``, those written to the provider's prompt cache."""
    reasoning_tokens: int | None = Field(default=None, ge=0)
    """Of ``output_tokens``, the model's reasoning (thinking) tokens."""
    cost_usd: float | None = Field(default=None, ge=0)
    """Price of the call in US dollars; ``None`` when the price is unknown."""
    price_source: str | None = None
    """Where ``cost_usd`` came from when agentgauge priced the call: ``user prices
    FILE: MODEL`` or ``genai-prices VERSION (bundled snapshot): PROVIDER/MODEL at
    DATE`` (or why it is unknown); ``None`` when the source reported the cost."""
    latency_s: float | None = Field(default=None, ge=0)
    """Wall-clock seconds the call took, retries included."""
    attempts: int | None = Field(default=None, ge=1)
    """How many HTTP attempts the call needed (retries + 1)."""

    _numbers = field_validator("cost_usd", "latency_s", mode="before")(json_number)
    _ints = field_validator(
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "attempts",
        mode="before",
    )(json_int)

    @model_serializer(mode="wrap")
    def _drop_unset_later_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Fields added after stores and exports existed are left out when unset, so a
        # record written before them dumps (and hashes) exactly as it did.
        data = handler(self)
        if isinstance(data, dict):
            for key in _LATER_MODEL_CALL_FIELDS:
                if data.get(key, 0) is None:
                    del data[key]
        return data


#: `ModelCallEvent` fields omitted from its dump when ``None`` (see its serializer).
_LATER_MODEL_CALL_FIELDS = (
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "price_source",
)


class ToolCallEvent(_EventBase):
    """The agent asked for a tool to be run."""

    type: Literal["tool_call"] = "tool_call"
    name: str
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments as a JSON object (already parsed, never evaluated as code)."""
    call_id: str | None = None
    """Identifier linking the call to its result."""


class ToolResultEvent(_EventBase):
    """What a tool returned."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str | None = None
    """The call this result answers."""
    name: str | None = None
    """The tool's name, when the source records it."""
    content: Any = None
    """The result as the agent saw it (text or JSON)."""
    is_error: bool = False
    """Whether the tool reported an error (including injected faults)."""
    irreversible: bool = False
    """The call changed the world irreversibly (policy requires prior confirmation)."""

    _bools = field_validator("is_error", "irreversible", mode="before")(_json_bool)


class ControlEvent(_EventBase):
    """A control decision: hand off, ask, refuse, stop, confirm or recover."""

    type: Literal["control"] = "control"
    decision: ControlDecision
    """The decision taken."""
    reason: str | None = None
    """Why, in the agent's or the harness's words."""


Event = Annotated[
    MessageEvent | ModelCallEvent | ToolCallEvent | ToolResultEvent | ControlEvent,
    Field(discriminator="type"),
]
"""One transcript event, discriminated by ``type``."""


# --------------------------------------------------------------------------- grades


class Grade(_Strict):
    """The verdict of one grader on one trial (docs/graders.md)."""

    grader: str
    """Which grader produced it, e.g. ``state``, ``tool_calls``, ``rubric:politeness``."""
    score: float | None = Field(default=None, ge=0, le=1)
    """Score in [0, 1]; ``None`` when unknown."""
    passed: bool | None = None
    """``True``/``False``, or ``None`` for *unknown* — never silently counted."""
    status: str | None = None
    """Namespaced status or error type, e.g. ``value_error:string``."""
    evidence: Any = None
    """What the grader saw: differing keys, quoted transcript, judge output."""
    judge_model: str | None = None
    """For model-graded criteria, the judge model that produced the grade."""

    _number_score = field_validator("score", mode="before")(json_number)
    _bool_passed = field_validator("passed", mode="before")(_json_bool)


# --------------------------------------------------------------------------- trials


class Trial(_Strict):
    """One attempt at one task by one agent configuration (a line of a JSONL import).

    Exactly the JSONL interchange record: one of ``success`` or ``score`` is
    required; when only ``score`` is given, success is ``score >= 1 - 1e-6``;
    when only ``success`` is given, score is 1.0 or 0.0.
    """

    task_id: str = Field(min_length=1)
    """The task this trial attempted."""
    success: bool | None = None
    """Whether the trial succeeded (derived from ``score`` when absent)."""
    score: float | None = Field(default=None, ge=0, le=1)
    """Score in [0, 1], partial credit allowed (derived from ``success`` when absent)."""
    trial: int | None = Field(default=None, ge=0)
    """Index of the trial within its task and group; order of appearance when absent."""
    agent: str | None = None
    """The agent (configuration) that ran the trial."""
    model: str | None = None
    """The model behind the agent."""
    variant: str = "base"
    """What was changed: ``base``, ``paraphrase:N``, ``fault:KIND``, ``env:KIND``."""
    family: str | None = None
    """Cluster of related tasks, used for clustered errors and the bootstrap."""
    split: Literal["dev", "heldout"] | None = None
    """``dev`` or ``heldout``."""
    capability: str | None = None
    """Capability label for per-capability reporting."""
    human_minutes: float | None = Field(default=None, gt=0)
    """Minutes a professional needs for the task (for the time horizon)."""
    cost_usd: float | None = Field(default=None, ge=0)
    """The agent's spend on this trial in US dollars; ``None`` when unknown."""
    judge_cost_usd: float | None = Field(default=None, ge=0)
    """Spend on model judges grading this trial, kept apart from the agent's."""
    input_tokens: int | None = Field(default=None, ge=0)
    """Prompt tokens over the trial."""
    output_tokens: int | None = Field(default=None, ge=0)
    """Completion tokens over the trial."""
    latency_s: float | None = Field(default=None, ge=0)
    """Wall-clock seconds for the trial; ``None`` when unknown (from the harness: a trial
    another trial's stall of the event loop held up while it waited, whose own time
    the loop cannot tell apart, ``metadata["loop_held_by_others_s"]``)."""
    tool_calls: int | None = Field(default=None, ge=0)
    """Number of tool calls the agent made."""
    model_calls: int | None = Field(default=None, ge=0)
    """Number of model calls the agent made."""
    confidence: float | None = Field(default=None, ge=0, le=1)
    """The agent's own confidence that it succeeded, in [0, 1]."""
    expected_control: ControlDecision | None = None
    """The control decision the task expects."""
    control: ControlDecision | None = None
    """The control decision the agent took."""
    status: TrialStatus = "completed"
    """``completed``, or ``error``/``timeout`` when the trial did not finish."""
    error: str | None = None
    """Error class and message when the trial did not finish cleanly."""
    error_kind: Literal["infra", "agent"] | None = None
    """Who caused an error: ``infra`` (harness, provider: excluded only on request)
    or ``agent`` (the agent raised, hung or sent malformed calls: always a failure).
    Defaults to ``infra`` for trials with status ``error`` or ``timeout``."""
    seed: int | None = None
    """Seed used for the trial's randomness, when any."""
    events: list[Event] = Field(default_factory=list)
    """The transcript: messages, model calls, tool calls and results, control decisions."""
    answer: str | None = None
    """The agent's final answer text, when it gave one."""
    final_state: dict[str, Any] | None = None
    """The environment's final state (canonical JSON), kept so trials can be re-graded."""
    grades: list[Grade] = Field(default_factory=list)
    """Grades already given to the trial."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else; the only place unknown keys may go."""
    turns: list[dict[str, Any]] | None = None
    """Where each user turn of a multi-turn conversation was handed back and the state
    then, ``[{"end": E, "state": S}, ...]`` (`agentgauge.turns`); ``None`` when not
    recorded."""

    _numbers = field_validator(
        "score",
        "human_minutes",
        "cost_usd",
        "judge_cost_usd",
        "latency_s",
        "confidence",
        mode="before",
    )(json_number)
    _ints = field_validator(
        "trial", "input_tokens", "output_tokens", "tool_calls", "model_calls", "seed", mode="before"
    )(json_int)
    _bool_success = field_validator("success", mode="before")(_json_bool)

    @field_validator("agent", "model", mode="before")
    @classmethod
    def _empty_name_is_none(cls, value: Any) -> Any:
        """An empty agent (model) name is none recorded: ``#agent=`` picks such trials,
        and they are shown and grouped with those that record none (docs/cli.md,
        "SOURCE"), not as a second configuration that nothing could pick."""
        return None if value == "" else value

    @model_validator(mode="after")
    def _outcome(self) -> Trial:
        if self.success is None and self.score is None:
            raise ValueError("one of 'success' or 'score' is required")
        if self.success is None:
            assert self.score is not None
            self.success = self.score >= 1 - SUCCESS_TOLERANCE
        if self.score is None:
            self.score = 1.0 if self.success else 0.0
        if self.status != "completed" and self.error_kind is None:
            self.error_kind = "infra"  # the rule of `infra_error`, made explicit in the record
        return self

    @property
    def is_infra_error(self) -> bool:
        """True when the trial failed for a reason outside the agent (`infra_error`)."""
        return infra_error(self.status, self.error_kind)

    @property
    def passed(self) -> bool:
        """Whether the trial counts as a pass: its ``success``, unless it is an infra
        error, which counts as a failure whatever its record says (docs/metrics.md,
        "Infrastructure errors"; ``table.success & ~table.infra_error`` in the metrics).
        Callers that honour ``exclude_infra_errors`` drop those trials first."""
        return bool(self.success) and not self.is_infra_error


def trial_cell_words(agent: Any, model: Any, variant: Any = None) -> str:
    """The configuration a trial belongs to, for a message: ``agent 'a', model not
    recorded`` (as ``show`` words a missing agent or model; never Python's ``None``),
    with ``variant 'v'`` when one is given."""
    parts = [
        f"{what} {value!r}" if value is not None else f"{what} not recorded"
        for what, value in (("agent", agent), ("model", model))
    ]
    if variant is not None:
        parts.append(f"variant {variant!r}")
    return ", ".join(parts)


def family_reason(
    task_id: str, first: object, first_at: str | None, family: object, here: str = " here"
) -> str:
    """Why a task under a second family is refused, after the family it was first seen
    in (``first_at``: ``line 3``): a task belongs to one family, its cluster in every
    interval, as the trial record says (docs/metrics.md, "The trial record")."""

    def named(f: object) -> str:
        return "no family" if f is None else f"family {quoted((str(f),))[0]}"

    where = f" ({first_at})" if first_at else ""
    return (
        f"task {task_id!r} is in {named(family)}{here} and in {named(first)}{where}; a task "
        "belongs to one family, the cluster its intervals resample: give all its trials one"
    )


def infra_error(status: str, error_kind: str | None) -> bool:
    """Whether a trial with this status and error kind is an infra error: it did not
    finish (``error``, ``timeout``) and the agent is not to blame (``error_kind`` is
    ``infra`` or unrecorded). Infra errors count as failures unless the user
    excludes them (docs/metrics.md, "Infrastructure errors")."""
    return status != "completed" and error_kind != "agent"


# --------------------------------------------------------------------------- trial fields

TrialFieldType = Literal["text", "int", "real", "bool", "json", "document"]


@dataclass(frozen=True)
class TrialField:
    """How one `Trial` field is kept in the store and read by the metrics."""

    name: str
    """The `Trial` attribute."""
    type: TrialFieldType
    """``text``, ``int``, ``real``, ``bool``; ``json`` (a JSON value kept as canonical
    text); ``document`` (a JSON value that many trials share, such as a final
    state: the store keeps each distinct one once)."""
    required: bool = False
    """Never missing once the trial is validated (a ``NOT NULL`` column)."""
    column: bool = True
    """A column of `agentgauge.table.TrialTable`, the arrays the metrics read."""


#: Every field of `Trial` except its lists (``events`` and ``grades``, which the
#: store keeps in tables of their own), in the order of the store's columns.
TRIAL_FIELDS: tuple[TrialField, ...] = (
    TrialField("task_id", "text", required=True),
    TrialField("trial", "int", required=True),
    TrialField("variant", "text", required=True),
    TrialField("agent", "text"),
    TrialField("model", "text"),
    TrialField("success", "bool", required=True),
    TrialField("score", "real", required=True),
    TrialField("status", "text", required=True, column=False),
    TrialField("error", "text", column=False),
    TrialField("error_kind", "text", column=False),
    TrialField("family", "text"),
    TrialField("split", "text"),
    TrialField("capability", "text"),
    TrialField("human_minutes", "real"),
    TrialField("cost_usd", "real"),
    TrialField("judge_cost_usd", "real"),
    TrialField("input_tokens", "int"),
    TrialField("output_tokens", "int"),
    TrialField("latency_s", "real"),
    TrialField("tool_calls", "int"),
    TrialField("model_calls", "int"),
    TrialField("confidence", "real"),
    TrialField("expected_control", "text"),
    TrialField("control", "text"),
    TrialField("seed", "int", column=False),
    TrialField("answer", "text", column=False),
    TrialField("final_state", "document", column=False),
    TrialField("metadata", "json", required=True, column=False),
    # A document: the trials of a task that take the same route hand back the same
    # states, and a turn's state is as large as a final state.
    TrialField("turns", "document", column=False),
)

#: `Trial` fields that are lists of records, kept apart from `TRIAL_FIELDS`.
TRIAL_LISTS = ("events", "grades")


def _check_trial_fields() -> None:
    declared = [f.name for f in TRIAL_FIELDS] + list(TRIAL_LISTS)
    if sorted(declared) != sorted(Trial.model_fields):
        missing = sorted(set(Trial.model_fields) - set(declared))
        extra = sorted(set(declared) - set(Trial.model_fields))
        raise TypeError(
            f"TRIAL_FIELDS does not match Trial: missing {missing}, unknown or repeated {extra}"
        )


_check_trial_fields()


# --------------------------------------------------------------------------- runs

#: The key of a run's config that holds its baseline role (`agentgauge.metrics.baselines`).
ROLE_KEY = "baseline_role"


class Run(_Strict):
    """A set of trials by one agent configuration over a suite, with provenance."""

    run_id: str
    """Unique identifier of the run within its store."""
    agent: str | None = None
    """The agent, or ``None`` when the run holds several."""
    model: str | None = None
    """The model, or ``None`` when unknown or several."""
    suite: str | None = None
    """Suite name (``builtin:retail``, a path, or the source file for imports)."""
    suite_version: str | None = None
    """Hash of the suite's normalised content."""
    n_trials: int = 0
    """Trials stored in the run."""
    created_at: str
    """ISO-8601 UTC time the run was created."""
    source: str | None = None
    """Where the trials came from: ``harness``, or ``import:FORMAT:PATH``."""
    source_sha256: str | None = None
    """SHA-256 of the imported file, for provenance."""
    agentgauge_version: str | None = None
    """The agentgauge version that wrote the run."""
    config: dict[str, Any] = Field(default_factory=dict)
    """Run settings (trials, variants, seed, concurrency, grader versions...)."""


def runs_entry(run: Run) -> dict[str, Any]:
    """The run as ``agentgauge runs --json`` lists it (``agentgauge.runs/1``). The
    viewer's list of runs and its run headers are built on it, so they carry the same
    fields (docs/viewer.md, "JSON"); ``baseline_role`` is ``null`` for a run not marked."""
    return {
        "run_id": run.run_id,
        "agent": run.agent,
        "model": run.model,
        "suite": run.suite,
        "suite_version": run.suite_version,
        "n_trials": run.n_trials,
        "created_at": run.created_at,
        "baseline_role": run.config.get(ROLE_KEY),
    }


# --------------------------------------------------------------------------- tasks


class ToolCallSpec(_Strict):
    """A reference tool call: a name and its arguments."""

    name: str
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Expected arguments (for ``ast`` argument mode, lists of acceptable values)."""


class TrajectorySpec(_Strict):
    """How the transcript's tool calls are compared with ``reference_calls``."""

    mode: Literal["exact", "in_order", "any_order", "subset", "superset"] = "in_order"
    """Sequence mode (docs/graders.md, `trajectory`)."""
    arguments: Literal["exact", "ignore", "subset", "ast"] = "subset"
    """Argument mode (docs/graders.md, `trajectory`)."""
    allow_empty: bool = False
    """Whether an empty reference passes in ``in_order``/``any_order`` modes."""

    _bool = field_validator("allow_empty", mode="before")(_json_bool)


class Milestone(_Strict):
    """A required event (ToolSandbox); ``after`` lists milestones that must come first."""

    id: str
    """Identifier used by ``after``."""
    tool: str | None = None
    """Tool call that satisfies the milestone."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments the call should carry (similarity is the share that match)."""
    answer_contains: str | None = None
    """Alternatively, text the agent's messages should contain."""
    after: list[str] = Field(default_factory=list)
    """Milestones that must be satisfied earlier (the DAG's edges)."""


class Minefield(_Strict):
    """An event that must never happen; a hit zeroes the trial (ToolSandbox)."""

    tool: str
    """Tool call that triggers the minefield."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments that must all match for a hit (empty: any call to ``tool``)."""
    severity: float = Field(default=1.0, ge=0, le=1)
    """Harm severity in [0, 1] for the safety metrics."""
    reason: str | None = None
    """Why this is unsafe, shown in reports."""

    _number = field_validator("severity", mode="before")(json_number)


class AnswerSpec(_Strict):
    """Checks on the agent's final answer text."""

    contains: list[str] = Field(default_factory=list)
    """Case-insensitive substrings that must all appear."""
    regex: str | None = None
    """A regular expression that must match somewhere."""
    exact: str | None = None
    """The whole answer, compared after stripping whitespace."""
    number: int | float | Decimal | None = None
    """A number that must appear, within ``tolerance``; kept as written (an integer
    stays exact: ``12345678901234567`` as a float was ``12345678901234568``)."""
    tolerance: int | float | Decimal = Field(default=0.0, ge=0)
    """Absolute tolerance for ``number``, inclusive, on the decimals as written (not
    negative: no number could be within one)."""


class StateAssertion(_Strict):
    """One assertion on the final state: the value at ``path`` compared with ``equals``."""

    path: str
    """Dotted path into the canonical state, e.g. ``orders.W100.status``."""
    equals: Any = None
    """Expected value; ``None`` asserts null only when given (a suite whose assertion
    sets neither ``equals`` nor ``exists`` does not load)."""
    exists: bool | None = None
    """Assert only that the path exists (``True``) or not (``False``)."""

    _bool = field_validator("exists", mode="before")(_json_bool)


class Checkpoint(_Strict):
    """What must hold when the agent hands one user turn back (BFCL V3 multi-turn,
    Mao et al. 2024): the state then, and the calls the turn must contain."""

    state: dict[str, Any] | None = None
    """Expected tables of the state after the turn: each table named here must equal
    the trial's (compared as the ``state`` grader compares); tables not named are not
    compared."""
    state_assertions: list[StateAssertion] = Field(default_factory=list)
    """Assertions on the state after the turn, as ``state_assertions`` on the final
    state."""
    calls: list[ToolCallSpec] = Field(default_factory=list)
    """The calls the turn must contain: its minimal viable path. A read-only call
    (a lookup) belongs here, since it leaves no mark on the state."""
    mode: Literal["in_order", "any_order"] = "in_order"
    """``in_order``: ``calls`` are a subsequence of the turn's calls; ``any_order``:
    they are contained in them as a multiset. Extra calls are allowed in both."""
    arguments: Literal["exact", "ignore", "subset", "ast"] = "ast"
    """Argument mode, as the ``trajectory`` grader's (``ast``: lists of acceptable
    values)."""

    @model_validator(mode="after")
    def _checks_something(self) -> Checkpoint:
        if self.state is None and not self.state_assertions and not self.calls:
            raise ValueError("a checkpoint needs state, state_assertions or calls")
        return self


class Criterion(_Strict):
    """One rubric criterion for the model judge."""

    id: str
    """Stable identifier."""
    text: str
    """What the judge checks, phrased as a yes/no question or statement."""
    weight: float = Field(default=1.0, ge=0)
    """Weight in the cumulative score."""
    blocking: bool = False
    """A failed blocking criterion sets the case's score to 0."""

    _number = field_validator("weight", mode="before")(json_number)
    _bool = field_validator("blocking", mode="before")(_json_bool)


# Executable checks and response similarity (issue 15, part 2 and part 3's ROUGE half).

#: ``package.module:function``, as environments and agents are named.
_CALLABLE_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def _callable_refs(value: Any) -> Any:
    if isinstance(value, dict):
        for name, ref in value.items():
            if not isinstance(ref, str) or not _CALLABLE_REF.fullmatch(ref):
                raise ValueError(
                    f"{name}: expected a callable as package.module:function, got {ref!r}"
                )
    return value


class ExecutableSpec(_Strict):
    """Run the agent's calls and compare their results (BFCL's executable categories)."""

    functions: dict[str, str] = Field(default_factory=dict)
    """Function name -> the Python callable that implements it, as
    ``package.module:function``. With any, every call the agent makes must name one
    of these (or of ``tools``)."""
    tools: list[str] = Field(default_factory=list)
    """Environment tools whose recorded results are compared instead of run again."""
    expected: list[Any] = Field(default_factory=list)
    """The expected result of each call; several are parallel calls, matched as a set.
    Empty: the agent must make no checked call."""
    match: Literal["exact", "structural", "numeric"] = "structural"
    """``exact`` (same JSON value and types: 1 is not 1.0), ``structural`` (JSON-equal
    after normalising key order, tuples and int/float), ``numeric`` (as structural,
    with every number within ``tolerance``)."""
    tolerance: float = Field(default=0.2, ge=0)
    """Relative tolerance of ``numeric``: ``|result - expected| <= tolerance * |expected|``
    (BFCL's real-time check accepts 20%)."""
    timeout_s: float = Field(default=5.0, gt=0, le=600)
    """Seconds one call may run before it is stopped and failed."""

    _numbers = field_validator("tolerance", "timeout_s", mode="before")(json_number)
    _refs = field_validator("functions", mode="before")(_callable_refs)


class ResponseMatchSpec(_Strict):
    """How ``response_match`` scores the answer against ``reference_answer`` (Google ADK)."""

    threshold: float = Field(default=0.8, ge=0, le=1)
    """Pass when ROUGE-1 F >= threshold (ADK's default for ``response_match_score``)."""
    stem: bool = False
    """Stem words longer than three letters with NLTK's Porter stemmer before counting, as
    ADK does (``use_stemmer=True``); needs the ``nltk`` package."""

    _number = field_validator("threshold", mode="before")(json_number)
    _bool = field_validator("stem", mode="before")(_json_bool)


class Expectations(_Strict):
    """What a task expects (docs/graders.md). Each present field enables a grader."""

    final_state: dict[str, Any] | None = None
    """Expected canonical final state (compared by hash, as tau2-bench does)."""
    state_assertions: list[StateAssertion] = Field(default_factory=list)
    """Assertions on the final state, as an alternative to the whole state."""
    answer: AnswerSpec | None = None
    """Checks on the final answer."""
    reference_calls: list[ToolCallSpec] = Field(default_factory=list)
    """The reference plan's tool calls."""
    trajectory: TrajectorySpec | None = None
    """How to compare tool calls with the reference."""
    functions: list[dict[str, Any]] = Field(default_factory=list)
    """JSON-schema function docs (function-calling tasks)."""
    answer_key: list[dict[str, Any]] | None = None
    """BFCL-style ground truth ``[{name: {arg: [acceptable values]}}]``."""
    call_category: (
        Literal["simple", "multiple", "parallel", "parallel_multiple", "irrelevance"] | None
    ) = None
    """BFCL category for AST matching."""
    milestones: list[Milestone] = Field(default_factory=list)
    """Required events with their partial order."""
    minefields: list[Minefield] = Field(default_factory=list)
    """Events that must never happen."""
    control: ControlDecision | None = None
    """The control decision the task expects."""
    rubric: list[Criterion] = Field(default_factory=list)
    """Criteria for the model judge."""
    required: list[str] | None = None
    """Graders whose pass makes up success (all must pass). Default: every
    enabled code grader (state, answer, tool_calls, control, minefields, checkpoints,
    executable)."""
    partial_credit: list[str] = Field(default_factory=list)
    """Graders whose scores are averaged into the trial's score."""
    checkpoints: list[Checkpoint] = Field(default_factory=list)
    """One per user turn, in order: what must hold when the agent hands that turn
    back (docs/graders.md, "`checkpoints`")."""
    executable: ExecutableSpec | None = None
    """Run the agent's calls and compare their results (the ``executable`` grader)."""
    reference_answer: str | None = None
    """The answer a correct trial gives, for ``response_match`` (and judges that
    compare with a reference)."""
    response_match: ResponseMatchSpec | None = None
    """Options of ``response_match``; its defaults apply when absent."""

    @model_serializer(mode="wrap")
    def _drop_unset_later_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        # As `ModelCallEvent`'s: a field added after suites existed is left out while
        # unset, so a task written before it dumps, and versions, exactly as it did.
        data = handler(self)
        if isinstance(data, dict):
            for key in _LATER_EXPECTATION_FIELDS:
                if key in data and (data[key] is None or data[key] == []):
                    del data[key]
        return data


#: `Expectations` fields omitted from its dump when unset (see its serializer).
_LATER_EXPECTATION_FIELDS = ("checkpoints", "executable", "reference_answer", "response_match")


class Task(_Strict):
    """One test with defined inputs and success criteria (docs/writing-tasks.md)."""

    id: str = Field(min_length=1)
    """Unique within the suite."""
    family: str | None = None
    """Cluster of related tasks."""
    split: Literal["dev", "heldout"] = "dev"
    """``heldout`` tasks are excluded unless asked for."""
    capability: str | None = None
    """Capability label."""
    human_minutes: float | None = Field(default=None, gt=0)
    """Minutes a professional needs."""
    environment: str | None = None
    """Environment the task runs in, e.g. ``retail`` or ``functions``."""
    instruction: str
    """What the user asks."""
    paraphrases: list[str] = Field(default_factory=list)
    """Rewordings of the instruction, for the ``paraphrase`` variant."""
    user_scenario: dict[str, Any] = Field(default_factory=dict)
    """What the simulated user knows and how it answers."""
    initial_state: dict[str, Any] = Field(default_factory=dict)
    """Changes to the environment's default initial state."""
    expectations: Expectations = Field(default_factory=Expectations)
    """Success criteria."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else."""

    # A task file is read as strictly as a trial file: "5" is no number of minutes.
    _number = field_validator("human_minutes", mode="before")(json_number)
