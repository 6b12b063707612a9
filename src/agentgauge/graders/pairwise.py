"""Pairwise judging: which of two transcripts better satisfies a criterion (docs/judge.md,
"Pairwise mode").

Judges prefer a position (Zheng et al. 2023, *Judging LLM-as-a-Judge with
MT-Bench and Chatbot Arena*, §3.3; Wang et al. 2023, *Large Language Models are
not Fair Evaluators*). So every comparison is asked twice, A shown first (A–B)
and B shown first (B–A), and the two answers are mapped back to A/B:

- both name the same transcript: that one wins;
- both say tie: tie;
- they name different transcripts — each time the one in the same position —
  this is a **position flip**: the preference followed the position, not the
  content. As MT-Bench does, the verdict is then ``tie``, and
  ``position_flip``/``position_bias`` (``first`` or ``second``) record it;
- one names a winner and the other says tie: inconsistent, verdict ``tie``;
- either is unknown: ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agentgauge.graders.judge_client import JudgeReply, JudgeUnavailable
from agentgauge.graders.judge_prompt import (
    missing_quotes,
    pairwise_messages,
    parse_answer,
    render_transcript,
)
from agentgauge.graders.rubric import RubricJudge, failure_spend, judge_spend
from agentgauge.schema import Criterion, Trial

__all__ = ["PairwiseResult", "compare_pairwise"]

Preference = Literal["A", "B", "tie", "unknown"]
# Position answer -> transcript, for A shown first and for B shown first.
_AS_SHOWN: dict[str, Preference] = {"1": "A", "2": "B", "tie": "tie"}
_SWAPPED: dict[str, Preference] = {"1": "B", "2": "A", "tie": "tie"}


@dataclass
class PairwiseResult:
    """A two-order pairwise comparison on one criterion."""

    criterion: str
    verdict: Preference
    """The combined verdict (see the module docstring)."""
    ab: Preference
    """Preference with A shown first, mapped to A/B."""
    ba: Preference
    """Preference with B shown first, mapped to A/B."""
    position_flip: bool
    """The two orders preferred different transcripts: the preference followed position."""
    position_bias: Literal["first", "second"] | None
    """Which position was preferred both times, when the preference flipped."""
    judge_model: str
    cost_usd: float | None
    """Judge spend for both calls; ``None`` when any price is unknown."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """Per order: status, quotes, quotes not found, reason and raw text."""
    warnings: list[str] = field(default_factory=list)

    def label_records(
        self, task_id: str, trial: int, *, rater: str = "judge", **keys: Any
    ) -> list[dict[str, Any]]:
        """The two orders as pairwise label records for ``agentgauge calibrate``."""
        return [
            {
                "kind": "pairwise",
                "task_id": task_id,
                "trial": trial,
                "criterion": self.criterion,
                "order": order,
                "label": pref,
                "rater": rater,
                **keys,
            }
            for order, pref in (("AB", self.ab), ("BA", self.ba))
        ]


def _one_order(
    judge: RubricJudge,
    criterion: Criterion,
    first: str,
    second: str,
    instruction: str | None,
) -> tuple[str | None, dict[str, Any], JudgeReply | JudgeUnavailable]:
    """Ask with ``first`` shown as response 1; returns the position preferred (1/2/tie)."""
    reply = judge.call(pairwise_messages(criterion, first, second, instruction))
    if isinstance(reply, JudgeUnavailable):
        failed = {"status": "unknown:judge_unavailable", "error": str(reply)}
        return None, {**failed, **failure_spend(reply)}, reply
    parsed = parse_answer(
        reply.text,
        decisive=("1", "2", "tie"),
        finish_reason=reply.finish_reason,
        refusal=reply.refusal,
        thinking=False,
    )
    info: dict[str, Any] = {
        "status": parsed.status,
        "quotes": parsed.evidence,
        "reason": parsed.reason,
        "raw": reply.text if reply.text is not None else reply.refusal,
        **({"judge_thinking": reply.thinking} if reply.thinking is not None else {}),
    }
    verdict = parsed.verdict
    not_found = missing_quotes(parsed.evidence, first, second)
    if not_found:
        info["quotes_not_found"] = not_found
        if verdict is not None and judge.on_bad_evidence == "unknown":
            info["judge_verdict"] = verdict
            verdict, info["status"] = None, "unknown:evidence_not_found"
    return verdict, info, reply


def compare_pairwise(
    judge: RubricJudge,
    criterion: Criterion,
    trial_a: Trial,
    trial_b: Trial,
    *,
    instruction: str | None = None,
) -> PairwiseResult:
    """Compare transcripts A and B on ``criterion`` in both orders (A–B, then B–A)."""
    notes = judge.check_self_judge(trial_a, trial_b)
    a = render_transcript(trial_a, max_chars=judge.max_transcript_chars)
    b = render_transcript(trial_b, max_chars=judge.max_transcript_chars)
    pos_ab, info_ab, reply_ab = _one_order(judge, criterion, a, b, instruction)
    pos_ba, info_ba, reply_ba = _one_order(judge, criterion, b, a, instruction)
    ab = _AS_SHOWN.get(pos_ab or "", "unknown")
    ba = _SWAPPED.get(pos_ba or "", "unknown")
    flip = {ab, ba} == {"A", "B"}
    bias: Literal["first", "second"] | None = None
    if flip:
        bias = "first" if pos_ab == "1" else "second"
    verdict: Preference
    if "unknown" in (ab, ba):
        verdict = "unknown"
    elif ab == ba:
        verdict = ab
    else:
        verdict = "tie"  # a flip or a win against a tie: no stable preference (MT-Bench)
    replies = [r for r in (reply_ab, reply_ba) if isinstance(r, JudgeReply)]
    return PairwiseResult(
        criterion=criterion.id,
        verdict=verdict,
        ab=ab,
        ba=ba,
        position_flip=flip,
        position_bias=bias,
        judge_model=replies[0].model if replies else judge.model,
        cost_usd=judge_spend([reply_ab, reply_ba]).cost_usd,
        evidence={"AB": info_ab, "BA": info_ba},
        warnings=notes,
    )
