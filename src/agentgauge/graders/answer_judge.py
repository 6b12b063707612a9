"""What the judge criteria on a final answer share (docs/judge.md, "Judging the
final answer"): where the answer and the reference answer come from, and how one
judge reply becomes a verdict whose quotes were checked.

`semantic_match` (Google ADK's ``final_response_match_v2``) and `groundedness`
(ADK's ``hallucinations_v1``) are built on the rubric judge's machinery: its
client (endpoint, retries, prices), its self-judging check, its strict reading
of the answer (`judge_prompt.parse_answer`) and its evidence check
(`judge_prompt.missing_quotes`). A decisive verdict whose quotes are not in the
texts it was shown is downgraded to ``unknown:evidence_not_found``, as for a
rubric criterion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgauge.graders.judge_client import JudgeReply
from agentgauge.graders.judge_prompt import parse_answer
from agentgauge.graders.rubric import EvidencePolicy, read_reply
from agentgauge.schema import MessageEvent, Task, Trial

__all__ = ["JudgedVerdict", "final_answer", "read_verdict", "reference_answer"]


def final_answer(trial: Trial) -> str | None:
    """The agent's final answer: ``trial.answer``, else its last assistant message
    with text; ``None`` when it gave neither (or only whitespace)."""
    if trial.answer is not None and trial.answer.strip():
        return trial.answer
    for event in reversed(trial.events):
        if isinstance(event, MessageEvent) and event.role == "assistant" and event.content:
            return event.content if event.content.strip() else None
    return None


def reference_answer(task: Task) -> str | None:
    """The task's reference answer: an ``expectations.reference_answer`` where the
    schema has one, else ``metadata.reference_answer`` (where the built-in retail
    tasks keep theirs); ``None`` when absent or blank."""
    value: Any = getattr(task.expectations, "reference_answer", None)
    if value is None:
        value = task.metadata.get("reference_answer")
    return value if isinstance(value, str) and value.strip() else None


@dataclass
class JudgedVerdict:
    """One judge reply read strictly, its quotes checked."""

    verdict: str | None
    """A decisive verdict, or ``None`` (unknown)."""
    status: str | None
    """``unknown:<why>`` when ``verdict`` is ``None``."""
    evidence: dict[str, Any]
    """``verdict``, ``quotes``, ``reason``, ``raw``, tokens, cost, attempts, and
    ``quotes_not_found`` / ``judge_verdict`` when the check failed."""


def read_verdict(
    reply: JudgeReply | None,
    error: str | None,
    *,
    haystacks: Sequence[str],
    decisive: Sequence[str],
    quoted: Sequence[str] = (),
    on_bad_evidence: EvidencePolicy = "unknown",
) -> JudgedVerdict:
    """Read one reply: strict parsing, then every quote looked up in ``haystacks``.

    ``quoted`` are the verdicts that must rest on at least one quote (a claim is
    not *supported* by nothing): without one they are ``unknown:no_evidence``.
    """
    if reply is None:
        return JudgedVerdict(None, "unknown:judge_unavailable", {"error": error})
    parsed = parse_answer(
        reply.text,
        decisive=decisive,
        finish_reason=reply.finish_reason,
        refusal=reply.refusal,
        thinking=False,
    )
    verdict, status, evidence = read_reply(reply, parsed, haystacks, on_bad_evidence)
    if verdict in quoted and not parsed.evidence:
        evidence["judge_verdict"], evidence["verdict"] = verdict, "unknown"
        verdict, status = None, "unknown:no_evidence"
    return JudgedVerdict(verdict, status, evidence)
