"""The rubric judge: a model grades a transcript one criterion at a time (docs/judge.md).

A rubric is a list of `Criterion` ``{id, text, weight, blocking}``, each phrased
so that "yes" is good. `RubricJudge` asks an OpenAI-compatible endpoint about
ONE criterion per call (so one criterion's answer cannot leak into another's),
reads the answer strictly (`judge_prompt.parse_answer`) and checks the quoted
evidence against the transcript. Each criterion gets a `Grade` named
``rubric:<id>``: passed ``True`` (yes), ``False`` (no) or ``None`` (unknown,
with the cause in ``status`` and the raw answer in ``evidence``).

**Evidence check.** A decisive verdict whose quotes do not occur in the
transcript is downgraded to unknown (``unknown:evidence_not_found``), keeping
the judge's verdict in the evidence: a verdict argued from text that is not
there is not a reading of this transcript. ``on_bad_evidence="flag"`` keeps the
verdict instead and only lists the unverified quotes.

**Case score** (`rubric_score`). Over the *decided* criteria D (yes or no),
score = Σ_{i∈D} w_i·[yes_i] / Σ_{i∈D} w_i; unknown criteria leave the
denominator and are reported by id. A blocking criterion answered "no" sets the
score to 0. ``passed`` asks whether the case clears ``pass_threshold`` however
the unknowns would resolve: with all weights W, yes-weight Y and unknown weight
U, the score lies in [Y/W, (Y+U)/W] (the lower end 0 when a blocking criterion
is unknown); passed is ``True`` when the lower end clears the threshold,
``False`` when the upper end does not, and ``None`` (unknown) otherwise. A
criterion of weight 0 counts in no score (a blocking one still fails the case on a
"no"); a rubric whose every weight is 0 has no score and no outcome (0/0:
``unknown:zero_weight``, with the reason), never a pass.

**Self-judging.** Models favour their own output (Panickssery et al. 2024, *LLM
evaluators recognize and favor their own generations*). When the judge model
is the evaluated model, ``self_judge="warn"`` (default) emits a
`SelfJudgeWarning` and records it in the result; ``"allow"`` records it
silently; ``"error"`` refuses with `SelfJudgeError`.

**Cost.** Every grade carries the judge model, tokens and cost; the total goes
to ``Trial.judge_cost_usd`` (unknown price → ``None``), never to ``cost_usd``. A call
that failed adds nothing when nothing was billed (refused, an HTTP error status) and
makes the total unknown when its request was sent and its reply not read (a timeout):
`JudgeUnavailable` carries which.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentgauge.errors import AgentgaugeError, InputError, Note, whole_number
from agentgauge.graders.base import register
from agentgauge.graders.judge_client import JudgeClient, JudgeConfig, JudgeReply, JudgeUnavailable
from agentgauge.graders.judge_prompt import (
    PARSE_STATUSES,
    ParsedAnswer,
    missing_quotes,
    parse_answer,
    render_transcript,
    rubric_messages,
)
from agentgauge.schema import Criterion, Grade, ModelCallEvent, Task, Trial

__all__ = [
    "JUDGE_STATUSES",
    "ZERO_WEIGHT_REASON",
    "JudgeSpend",
    "RubricGrader",
    "RubricJudge",
    "RubricResult",
    "RubricScore",
    "SelfJudgeError",
    "SelfJudgeWarning",
    "answered",
    "build_judge",
    "check_judges",
    "declared_judges",
    "failure_spend",
    "judge_spend",
    "judges_needed",
    "rubric_score",
    "same_model",
]

SelfJudgePolicy = Literal["warn", "allow", "error"]
EvidencePolicy = Literal["unknown", "flag"]
_TOL = 1e-9

#: Every status a criterion's grade can have when the judge's answer gives no verdict:
#: what the answer's reading gives, a verdict on quotes not in the transcript, and an
#: endpoint that never answered (docs/judge.md, "Unknown is a verdict, never a no").
JUDGE_STATUSES = (*PARSE_STATUSES, "unknown:evidence_not_found", "unknown:judge_unavailable")


class SelfJudgeWarning(Note):
    """The judge model is the model being evaluated (a `UserWarning`; the command line
    prints it as one line ``note: ...``)."""


class SelfJudgeError(AgentgaugeError):
    """The judge model is the evaluated model and ``self_judge="error"``."""


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class RubricScore:
    """A case's rubric score from its criteria's verdicts."""

    score: float | None
    """Weighted share of decided criteria passed; 0 after a failed blocking
    criterion; ``None`` when no weight was decided."""
    passed: bool | None
    """Clears ``pass_threshold`` however the unknowns resolve; ``None`` if that depends on them."""
    bounds: tuple[float, float] | None
    """Score if every unknown were "no", and if every unknown were "yes" (all weights)."""
    blocking_failed: list[str]
    """Ids of blocking criteria answered "no"."""
    unknown: list[str]
    """Ids of criteria left unknown (excluded from the score's denominator)."""
    reason: str | None = None
    """Why the case has no score and no outcome when the criteria's verdicts do not say
    (every weight is 0), else ``None``."""


#: Why a rubric whose every criterion weighs 0 has no score: the weighted share of
#: "yes" is 0/0 there, whatever the judge said.
ZERO_WEIGHT_REASON = (
    "every criterion of the rubric weighs 0: a weighted score over no weight is undefined "
    "(0/0), so the case is neither passed nor failed; give a criterion a weight above 0"
)


def rubric_score(
    criteria: Sequence[Criterion],
    verdicts: Sequence[bool | None],
    *,
    pass_threshold: float = 1.0,
) -> RubricScore:
    """Weighted cumulative score with blocking criteria (see the module docstring).

    ``verdicts[i]`` is criterion i's verdict: ``True`` yes, ``False`` no,
    ``None`` unknown. Example: weights 2, 1, 1 with verdicts yes, no, unknown give
    score 2/3 (decided weight 3), bounds [2/4, 3/4], and with threshold 1.0
    passed ``False`` (even "yes" on the unknown reaches only 3/4).
    """
    if len(criteria) != len(verdicts):
        raise ValueError(f"{len(criteria)} criteria but {len(verdicts)} verdicts")
    if not 0 <= pass_threshold <= 1:
        raise ValueError(f"pass_threshold must be in [0, 1], got {pass_threshold}")
    blocking_failed = [
        c.id for c, v in zip(criteria, verdicts, strict=True) if c.blocking and v is False
    ]
    unknown = [c.id for c, v in zip(criteria, verdicts, strict=True) if v is None]
    yes_w = sum(c.weight for c, v in zip(criteria, verdicts, strict=True) if v is True)
    decided_w = sum(c.weight for c, v in zip(criteria, verdicts, strict=True) if v is not None)
    unknown_w = sum(c.weight for c, v in zip(criteria, verdicts, strict=True) if v is None)
    total_w = decided_w + unknown_w
    blocking_unknown = any(
        c.blocking and v is None for c, v in zip(criteria, verdicts, strict=True)
    )
    if blocking_failed:
        return RubricScore(0.0, False, (0.0, 0.0), blocking_failed, unknown)
    score = yes_w / decided_w if decided_w > 0 else None
    passed: bool | None
    if total_w <= 0:
        # Every weight is 0: the score is 0/0, so there is no outcome to read from it.
        # Before, a rubric all of whose criteria weighed 0 passed with no score, whatever
        # the judge said. (A blocking "no" still fails the case, above: blocking does not
        # depend on weight.)
        reason = ZERO_WEIGHT_REASON if criteria else None
        return RubricScore(None, None, None, blocking_failed, unknown, reason)
    lo = 0.0 if blocking_unknown else yes_w / total_w
    hi = (yes_w + unknown_w) / total_w
    if lo >= pass_threshold - _TOL:
        passed = True
    elif hi < pass_threshold - _TOL:
        passed = False
    else:
        passed = None
    return RubricScore(score, passed, (lo, hi), blocking_failed, unknown)


# --------------------------------------------------------------------------- self-judging

_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def _model_key(name: str) -> str:
    key = name.strip().casefold()
    key = re.split(r"[/:]", key)[-1]  # provider prefixes: openai/gpt-4o, openai:gpt-4o
    return _DATE_SUFFIX.sub("", key)


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two model names denote the same model, ignoring case, a provider
    prefix (``openai/``, ``openai:``) and a dated snapshot suffix (``-2024-08-06``)."""
    if not a or not b:
        return False
    return _model_key(a) == _model_key(b)


def evaluated_models(trial: Trial) -> set[str]:
    """Models behind the trial: its ``model`` and every model call's model."""
    names = {trial.model} | {e.model for e in trial.events if isinstance(e, ModelCallEvent)}
    return {n for n in names if n}


# --------------------------------------------------------------------------- spend


@dataclass(frozen=True)
class JudgeSpend:
    """What a trial's judge calls cost together."""

    cost_usd: float | None
    """``None`` when any call's cost is unknown."""
    input_tokens: int | None
    output_tokens: int | None
    reason: str | None = None
    """Why ``cost_usd`` is unknown (the first such call's ``unknown: ...``), else ``None``."""
    cached_tokens: int | None = None
    """Of ``input_tokens``, those read from the prompt cache; ``None`` when a call did
    not report them."""
    reasoning_tokens: int | None = None
    """Of ``output_tokens``, the reasoning ones; ``None`` when a call did not report them."""

    def token_evidence(self) -> dict[str, int | None]:
        """The token counts as a grade's evidence names them."""
        return {
            "judge_input_tokens": self.input_tokens,
            "judge_output_tokens": self.output_tokens,
            "judge_cached_tokens": self.cached_tokens,
            "judge_reasoning_tokens": self.reasoning_tokens,
        }

    def record(self, trial: Trial) -> None:
        """Add the spend to ``trial.judge_cost_usd`` (unknown poisons it), never to
        ``cost_usd``, the agent's own."""
        if self.cost_usd is None:
            trial.judge_cost_usd = None
        else:
            trial.judge_cost_usd = (trial.judge_cost_usd or 0.0) + self.cost_usd


def judge_spend(calls: Sequence[JudgeReply | JudgeUnavailable]) -> JudgeSpend:
    """The summed cost and tokens of judge calls, answered or failed."""
    # Providers bill completions: a call that delivered none and was refused (an HTTP
    # error status, no connection) adds 0. One whose request was sent and whose reply
    # was not read (a timeout) may have been billed: unknown, like an unknown price,
    # poisons the sum (`JudgeUnavailable`). A trial's judge spend nobody measured is
    # unknown, never $0.00.
    costs = [c.cost_usd for c in calls]
    unknown = [c.price_source or "unknown" for c in calls if c.cost_usd is None]
    return JudgeSpend(
        cost_usd=None if unknown else float(sum(c for c in costs if c)),
        input_tokens=_total([c.input_tokens for c in calls]),
        output_tokens=_total([c.output_tokens for c in calls]),
        reason=unknown[0] if unknown else None,
        cached_tokens=_total([c.cached_tokens for c in calls]),
        reasoning_tokens=_total([c.reasoning_tokens for c in calls]),
    )


def _total(counts: Sequence[int | None]) -> int | None:
    """The sum of counts, ``None`` when any is unknown."""
    return None if any(t is None for t in counts) else sum(t for t in counts if t)


def answered(got: JudgeReply | JudgeUnavailable) -> tuple[JudgeReply | None, str | None]:
    """``(reply, None)`` for an answer, ``(None, error)`` for a failed call."""
    return (got, None) if isinstance(got, JudgeReply) else (None, str(got))


def failure_spend(failure: JudgeUnavailable) -> dict[str, Any]:
    """A failed call's cost fields for a grade's evidence, as `read_reply` gives an
    answer's: 0 when nothing was billed, ``None`` with why when unknown."""
    return {
        "judge_input_tokens": failure.input_tokens,
        "judge_output_tokens": failure.output_tokens,
        "judge_cached_tokens": failure.cached_tokens,
        "judge_reasoning_tokens": failure.reasoning_tokens,
        "judge_cost_usd": failure.cost_usd,
        "judge_price_source": failure.price_source,
        "attempts": failure.attempts,
    }


# --------------------------------------------------------------------------- the judge


@dataclass
class RubricResult:
    """Every criterion's grade for one trial, the case score, and the judge's spend."""

    grades: list[Grade]
    """One grade per criterion (``rubric:<id>``), in rubric order."""
    score: RubricScore
    judge_model: str | None
    """The model that answered; ``None`` when no criterion was asked (an empty rubric),
    so that the case's grade does not claim a judge graded it."""
    cost_usd: float | None
    """Judge spend on this trial; ``None`` when any call's cost is unknown."""
    input_tokens: int | None
    output_tokens: int | None
    warnings: list[str] = field(default_factory=list)
    cost_reason: str | None = None
    """Why ``cost_usd`` is unknown (`JudgeSpend.reason`)."""
    cached_tokens: int | None = None
    """Of ``input_tokens``, those read from the prompt cache (`JudgeSpend`)."""
    reasoning_tokens: int | None = None

    def to_grade(self) -> Grade:
        """The case's aggregate grade (``rubric``), the criteria's grades in its evidence."""
        s = self.score
        if not self.grades:  # nothing asked: told apart from a judge that decided nothing
            status = "unknown:no_rubric"
        elif s.blocking_failed:
            status = "rubric:blocking_failed"
        elif s.reason is not None:
            status = "unknown:zero_weight"
        elif s.passed is None:
            status = "unknown:undecided" if s.score is not None else "unknown:no_decided_criteria"
        else:
            status = "passed" if s.passed else "failed"
        return Grade(
            grader="rubric",
            score=s.score,
            passed=s.passed,
            status=status,
            judge_model=self.judge_model,
            evidence={
                "criteria": [g.model_dump(mode="json") for g in self.grades],
                "score_bounds": list(s.bounds) if s.bounds else None,
                "blocking_failed": s.blocking_failed,
                "unknown": s.unknown,
                "judge_cost_usd": self.cost_usd,
                **({"judge_cost_unknown": self.cost_reason} if self.cost_reason else {}),
                "judge_input_tokens": self.input_tokens,
                "judge_output_tokens": self.output_tokens,
                "judge_cached_tokens": self.cached_tokens,
                "judge_reasoning_tokens": self.reasoning_tokens,
                "warnings": self.warnings,
                **({} if self.grades else {"reason": "the task has no rubric: no judge was asked"}),
                **({"reason": s.reason} if self.grades and s.reason else {}),
            },
        )


def read_reply(
    reply: JudgeReply,
    parsed: ParsedAnswer,
    haystacks: Sequence[str],
    on_bad_evidence: EvidencePolicy,
    **fields: Any,
) -> tuple[str | None, str | None, dict[str, Any]]:
    """``(verdict, status, evidence)`` of one judge reply: what it said, what it cost,
    and its quotes looked up in ``haystacks`` (the text it judged). A verdict resting
    on a quote that is not there is unknown (``unknown:evidence_not_found``) under
    ``on_bad_evidence="unknown"``. ``fields`` join the evidence (a criterion's weight)."""
    evidence: dict[str, Any] = {
        "verdict": parsed.verdict or "unknown",
        "quotes": parsed.evidence,
        "reason": parsed.reason,
        "raw": reply.text if reply.text is not None else reply.refusal,
        **fields,
        "judge_input_tokens": reply.input_tokens,
        "judge_output_tokens": reply.output_tokens,
        "judge_cached_tokens": reply.cached_tokens,
        "judge_reasoning_tokens": reply.reasoning_tokens,
        "judge_cost_usd": reply.cost_usd,
        "judge_price_source": reply.price_source,
        "attempts": reply.attempts,
        **({"judge_thinking": reply.thinking} if reply.thinking is not None else {}),
    }
    verdict, status = parsed.verdict, parsed.status
    not_found = missing_quotes(parsed.evidence, *haystacks)
    if not_found:
        evidence["quotes_not_found"] = not_found
        if verdict is not None and on_bad_evidence == "unknown":
            evidence["judge_verdict"], evidence["verdict"] = verdict, "unknown"
            verdict, status = None, "unknown:evidence_not_found"
    return verdict, status, evidence


class RubricJudge:
    """Grades transcripts against rubric criteria with a model judge.

    ``judge`` is a `JudgeConfig` (a client is made and owned) or a `JudgeClient`.
    """

    def __init__(
        self,
        judge: JudgeConfig | JudgeClient,
        *,
        self_judge: SelfJudgePolicy = "warn",
        on_bad_evidence: EvidencePolicy = "unknown",
        pass_threshold: float = 1.0,
        max_transcript_chars: int = 60_000,
    ) -> None:
        self.client = judge if isinstance(judge, JudgeClient) else JudgeClient(judge)
        self.self_judge = self_judge
        self.on_bad_evidence = on_bad_evidence
        self.pass_threshold = pass_threshold
        self.max_transcript_chars = max_transcript_chars

    @property
    def model(self) -> str:
        return self.client.config.model

    def close(self) -> None:
        self.client.close()

    def check_self_judge(self, *trials: Trial) -> list[str]:
        """Apply the self-judging policy; returns the warnings to record."""
        clash = sorted(
            {m for t in trials for m in evaluated_models(t) if same_model(m, self.model)}
        )
        if not clash:
            return []
        message = (
            f"judge model {self.model!r} is the evaluated model ({', '.join(clash)}): "
            "models favour their own output; use a different judge"
        )
        if self.self_judge == "error":
            raise SelfJudgeError(message + ", or allow it explicitly (self_judge='allow')")
        if self.self_judge == "warn":
            warnings.warn(message, SelfJudgeWarning, stacklevel=3)
        return [message]

    def call(self, messages: list[dict[str, str]]) -> JudgeReply | JudgeUnavailable:
        """One judge call: the reply, or the failure (with what it is known to have cost,
        for `judge_spend`)."""
        try:
            return self.client.complete(messages)
        except JudgeUnavailable as exc:
            return exc

    def ask(self, messages: list[dict[str, str]]) -> tuple[JudgeReply | None, str | None]:
        """One judge call: the reply, or ``None`` and the error when the endpoint failed."""
        return answered(self.call(messages))

    def judge_criterion(
        self, criterion: Criterion, trial: Trial, *, instruction: str | None = None
    ) -> tuple[Grade, JudgeReply | None]:
        """Ask the judge about one criterion; the grade and the raw reply.

        Applies the self-judging policy; does not touch the trial's judge cost
        (`grade_rubric` does).
        """
        notes = self.check_self_judge(trial)
        transcript = render_transcript(trial, max_chars=self.max_transcript_chars)
        got = self.call(rubric_messages(criterion, transcript, instruction))
        grade = self._grade(criterion, transcript, got)
        if notes:
            grade.evidence["self_judged"] = True
        return grade, got if isinstance(got, JudgeReply) else None

    def _grade(
        self, criterion: Criterion, transcript: str, reply: JudgeReply | JudgeUnavailable
    ) -> Grade:
        name = f"rubric:{criterion.id}"
        if isinstance(reply, JudgeUnavailable):
            return Grade(
                grader=name,
                passed=None,
                status="unknown:judge_unavailable",
                evidence={
                    "error": str(reply),
                    "weight": criterion.weight,
                    "blocking": criterion.blocking,
                    **failure_spend(reply),
                },
                judge_model=self.model,
            )
        parsed = parse_answer(
            reply.text, finish_reason=reply.finish_reason, refusal=reply.refusal, thinking=False
        )
        verdict, status, evidence = read_reply(
            reply,
            parsed,
            (transcript,),
            self.on_bad_evidence,
            weight=criterion.weight,
            blocking=criterion.blocking,
        )
        if verdict is None:
            return Grade(
                grader=name, passed=None, status=status, evidence=evidence, judge_model=reply.model
            )
        ok = verdict == "yes"
        return Grade(
            grader=name,
            score=1.0 if ok else 0.0,
            passed=ok,
            status="passed" if ok else "failed",
            evidence=evidence,
            judge_model=reply.model,
        )

    def grade_rubric(
        self,
        criteria: Sequence[Criterion],
        trial: Trial,
        *,
        instruction: str | None = None,
        record_cost: bool = True,
    ) -> RubricResult:
        """Judge every criterion (one call each) and score the case.

        With ``record_cost`` the judge spend is added to ``trial.judge_cost_usd``
        (which becomes ``None`` — unknown — when any call's price is unknown).
        """
        notes = self.check_self_judge(trial)
        transcript = render_transcript(trial, max_chars=self.max_transcript_chars)
        grades: list[Grade] = []
        calls: list[JudgeReply | JudgeUnavailable] = []
        for criterion in criteria:
            got = self.call(rubric_messages(criterion, transcript, instruction))
            grade = self._grade(criterion, transcript, got)
            if notes:
                grade.evidence["self_judged"] = True
            grades.append(grade)
            calls.append(got)
        replies = [c for c in calls if isinstance(c, JudgeReply)]
        spend = judge_spend(calls)
        result = RubricResult(
            grades=grades,
            score=rubric_score(
                criteria, [g.passed for g in grades], pass_threshold=self.pass_threshold
            ),
            # No criterion, no call: the grade names no judge, so the trial is not
            # counted as judged (`agentgauge.facts`, ``judged``). Before, a task without
            # a rubric re-graded with ``--graders rubric`` counted as judged at an
            # unknown price.
            judge_model=(replies[0].model if replies else self.model) if criteria else None,
            cost_usd=spend.cost_usd,
            input_tokens=spend.input_tokens,
            output_tokens=spend.output_tokens,
            warnings=notes,
            cost_reason=spend.reason,
            cached_tokens=spend.cached_tokens,
            reasoning_tokens=spend.reasoning_tokens,
        )
        if record_cost and criteria:
            spend.record(trial)
        return result


# --------------------------------------------------------------------------- grader


def build_judge(
    judge: RubricJudge | JudgeConfig | None,
    *,
    what: str,
    self_judge: SelfJudgePolicy = "warn",
    on_bad_evidence: EvidencePolicy = "unknown",
    pass_threshold: float = 1.0,
    **config: Any,
) -> RubricJudge:
    """The judge of a model grader: given, built from a `JudgeConfig`, or from
    ``config`` (`JudgeConfig` fields) with ``base_url`` and ``model`` defaulting to
    ``AGENTGAUGE_JUDGE_BASE_URL`` and ``AGENTGAUGE_JUDGE_MODEL``. ``what`` names the
    grader in the error when neither gives an endpoint."""
    if isinstance(judge, RubricJudge):
        return judge
    if judge is None:
        base_url = config.pop("base_url", None) or os.environ.get("AGENTGAUGE_JUDGE_BASE_URL")
        model = config.pop("model", None) or os.environ.get("AGENTGAUGE_JUDGE_MODEL")
        missing = [
            (name, var, arg)
            for name, var, arg, value in (
                ("base URL", "AGENTGAUGE_JUDGE_BASE_URL", "base_url=", base_url),
                ("model", "AGENTGAUGE_JUDGE_MODEL", "model=", model),
            )
            if not value
        ]
        if missing:
            # The variables first: they are all a command-line user can set (the message
            # named the Python arguments first, which `agentgauge grade` has no way to take).
            names, variables, args = (" and ".join(m[k] for m in missing) for k in range(3))
            raise AgentgaugeError(
                f"{what} has no {names}: set {variables} (in Python: {args}); docs/judge.md"
            )
        if "max_tokens" not in config and os.environ.get(MAX_TOKENS_VARIABLE, "").strip():
            config["max_tokens"] = judge_max_tokens_from_env()
        judge = JudgeConfig(base_url=str(base_url), model=str(model), **config)
    return RubricJudge(
        judge,
        self_judge=self_judge,
        on_bad_evidence=on_bad_evidence,
        pass_threshold=pass_threshold,
    )


#: The variable that sets a judge's `JudgeConfig.max_tokens` where the judge comes from
#: the environment (``agentgauge grade --graders rubric``).
MAX_TOKENS_VARIABLE = "AGENTGAUGE_JUDGE_MAX_TOKENS"


def judge_max_tokens_from_env() -> int:
    """`MAX_TOKENS_VARIABLE` as a whole number >= 1, else `InputError` naming it."""
    text = os.environ.get(MAX_TOKENS_VARIABLE, "").strip()
    try:
        value: object = int(text)
    except ValueError:
        value = text
    return whole_number(value, MAX_TOKENS_VARIABLE, least=1)


#: What a grader's ``judges`` may list (and its ``judge`` be), so the run checks them.
JudgeLike = RubricJudge | JudgeClient | JudgeConfig


def declared_judges(grader: object) -> list[JudgeClient]:
    """The judge clients ``grader`` declares: its ``judge`` (the built-in model graders'
    `RubricJudge`, or a `JudgeClient`) and each of its ``judges`` (`RubricJudge`,
    `JudgeClient` or `JudgeConfig`; `uses_judges` sets it on a grading function). A
    ``judges`` holding anything else is refused (`InputError`): a judge the run cannot
    check is one it would find out trial by trial."""
    out: list[JudgeClient] = []
    judge = getattr(grader, "judge", None)
    if isinstance(judge, RubricJudge):
        out.append(judge.client)
    elif isinstance(judge, JudgeClient):
        out.append(judge)
    judges = getattr(grader, "judges", None)
    if judges is None:
        return out
    listed = list(judges) if isinstance(judges, list | tuple | set | frozenset) else [judges]
    for item in listed:
        if isinstance(item, RubricJudge):
            out.append(item.client)
        elif isinstance(item, JudgeClient):
            out.append(item)
        elif isinstance(item, JudgeConfig):
            out.append(JudgeClient(item))
        else:
            raise InputError(
                f"grader {_grader_name(grader)!r} lists {type(item).__name__} {item!r:.60} "
                "among its judges: list RubricJudge, JudgeClient or JudgeConfig objects, "
                "so the run can check them before its first trial (docs/judge.md)",
                field="judges",
            )
    return out


def _grader_name(grader: object) -> str:
    name = getattr(grader, "name", None)
    if not isinstance(name, str) or not name:
        name = getattr(grader, "__name__", None)
    return name if isinstance(name, str) and name else type(grader).__name__


def judges_needed(
    graders: Sequence[object], tasks: Sequence[Task]
) -> list[tuple[str, JudgeClient]]:
    """The judges ``graders`` will call on ``tasks``, as ``(grader name, client)``, each
    endpoint once: those each grader declares (`declared_judges`: the built-in model
    graders' — rubric, semantic_match, groundedness — and any grader's or grading
    function's ``judges``) when some task enables it (``enabled(task)``; a rubric grader
    only where a task has a rubric; a grader without ``enabled`` always). A grader no
    task enables answers without a call, so its judge is not needed."""
    out: list[tuple[str, JudgeClient]] = []
    seen: set[tuple[str, str | None, tuple[tuple[str, str], ...]]] = set()
    for grader in graders:
        clients = declared_judges(grader)
        if not clients:
            continue
        enabled = getattr(grader, "enabled", None)
        if callable(enabled) and not any(enabled(t) for t in tasks):
            continue
        for client in clients:
            cfg = client.config
            key = (client.route, cfg.api_key_env, tuple(sorted(cfg.headers.items())))
            if key not in seen:
                seen.add(key)
                out.append((_grader_name(grader), client))
    return out


async def check_judges(
    graders: Sequence[object], tasks: Sequence[Task], *, nothing: str = "nothing was run"
) -> None:
    """The preflight of the judges ``graders`` will call (`judges_needed`): each
    endpoint is sent the `agentgauge.agents.openai.check_chat_route` check once, and the
    first that has no chat route stops with one line (`InputError`, exit 2) before any
    trial is run or graded (``nothing`` says what was spared): without it every judged
    trial was stored with ``unknown:judge_unavailable`` criteria. A judge that answers
    the check and fails later is left to the calls (their criteria unknown, as before)."""
    for name, client in judges_needed(graders, tasks):
        problem = await client.preflight()
        if problem is None:
            continue
        judge = f"the judge of grader {name!r}"
        if problem.kind == "no_answer":
            raise InputError(
                f"{judge}: no answer from {client.route} ({problem.detail}); {nothing}: "
                "start it, or point AGENTGAUGE_JUDGE_BASE_URL at it (in Python: "
                "base_url=; docs/judge.md)"
            )
        if problem.kind == "refused":
            env = client.config.api_key_env
            key = f"the key in ${env}" if env and os.environ.get(env) else "no API key was sent"
            raise InputError(
                f"{judge}: {client.route} refused the request ({problem.detail}); {nothing}: "
                f"{key}; set the judge's api_key_env to the variable holding its "
                "key (docs/judge.md)"
            )
        raise InputError(
            f"{judge}: {client.route} answered {problem.detail}: no chat-completions route "
            f"there; {nothing}: check AGENTGAUGE_JUDGE_BASE_URL, which usually ends in "
            "/v1 (in Python: base_url=; docs/judge.md)"
        )


@register("rubric")
class RubricGrader:
    """The rubric judge as a grader: ``grade(task, trial) -> Grade``.

    Grades the task's ``expectations.rubric`` and returns the aggregate
    ``rubric`` grade (criteria grades in its evidence; `grade_all` returns them
    as separate grades). Options are `JudgeConfig` fields; ``base_url`` and
    ``model`` default to the environment variables ``AGENTGAUGE_JUDGE_BASE_URL``
    and ``AGENTGAUGE_JUDGE_MODEL``.
    """

    name = "rubric"
    kind: Literal["model"] = "model"

    def __init__(
        self,
        judge: RubricJudge | JudgeConfig | None = None,
        *,
        self_judge: SelfJudgePolicy = "warn",
        on_bad_evidence: EvidencePolicy = "unknown",
        pass_threshold: float = 1.0,
        **config: Any,
    ) -> None:
        self.judge = build_judge(
            judge,
            what="the rubric judge",
            self_judge=self_judge,
            on_bad_evidence=on_bad_evidence,
            pass_threshold=pass_threshold,
            **config,
        )

    def enabled(self, task: Task) -> bool:
        return bool(task.expectations.rubric)

    def result(self, task: Task, trial: Trial) -> RubricResult:
        """The full result (criteria grades, score, spend, warnings)."""
        return self.judge.grade_rubric(
            task.expectations.rubric, trial, instruction=task.instruction
        )

    def grade(self, task: Task, trial: Trial) -> Grade:
        return self.result(task, trial).to_grade()

    def grade_all(self, task: Task, trial: Trial) -> list[Grade]:
        """The aggregate ``rubric`` grade followed by each criterion's grade."""
        result = self.result(task, trial)
        return [result.to_grade(), *result.grades]
