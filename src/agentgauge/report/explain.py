"""Why a trial passed or failed, in rows a person reads: the one place transcripts
and grader evidence are turned into text.

`agentgauge show`, the HTML report and the viewer all show a trial through
`trial_view` (a JSON-ready dict: the trial's header, its transcript as
`event_rows`, and its grades as `grade_rows` with their evidence as sentences)
and list failures through `failure_rows`. Nothing here escapes or styles text:
each face does that for its medium (`agentgauge.display`). The rows keep every
text exactly as recorded (``show --json`` and the viewer's JSON promise that);
a face that prints them cuts long ones with `shorten`, which says how many
characters it left out, so that no terminal or report prints a 10 MB tool
result whole. Evidence sentences (`evidence_lines`) are cut here: they are a
reading of the grade, whose ``evidence`` the rows keep as stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from agentgauge.facts import recorded_control
from agentgauge.report.formats import money, number
from agentgauge.schema import ControlEvent, Grade, Trial

__all__ = [
    "MAX_TEXT",
    "error_class",
    "event_rows",
    "evidence_lines",
    "failure_rows",
    "flips",
    "grade_rows",
    "shorten",
    "trial_key",
    "trial_view",
]

#: Characters of one message, argument list or tool result a face shows before it
#: cuts the text (the terminal and the report; the viewer folds the rest away).
MAX_TEXT = 2_000


def shorten(text: str, limit: int = MAX_TEXT) -> str:
    """``text``, cut to at most ``limit`` characters with a note of how many were left
    out. The cut falls between whole characters as a reader sees them: not between a
    letter and its accent (``e`` + U+0301), nor inside an emoji sequence joined by
    U+200D or modified by a skin tone or variation selector, where the part kept would
    show another character than the one written."""
    if len(text) <= limit:
        return text
    cut = limit
    while cut > 0 and (_continues(text[cut]) or text[cut - 1] == "\u200d"):
        cut -= 1
    if cut == 0:  # one sequence longer than the limit: cut it where the limit is
        cut = limit
    left = len(text) - cut
    return f"{text[:cut]}… [{left:,} more character{'' if left == 1 else 's'}]"


def _continues(char: str) -> bool:
    """Whether ``char`` belongs to the character before it (a combining mark, a
    joiner, a variation selector or an emoji modifier)."""
    import unicodedata

    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or code == 0x200D
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or 0x1F3FB <= code <= 0x1F3FF
    )


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):  # a cyclic or odd value imported from elsewhere
        return repr(value)


def _money(value: float | None) -> str:
    # The figure `metrics` prints: "%.4f" showed a call of $0.00002 as "$0.0000".
    return "cost unknown" if value is None else money(value)


def _model_detail(e: Any) -> str:
    parts = []
    if e.input_tokens is not None or e.output_tokens is not None:
        tin = "?" if e.input_tokens is None else number(e.input_tokens, 0)
        tout = "?" if e.output_tokens is None else number(e.output_tokens, 0)
        parts.append(f"{tin} in / {tout} out tokens")
    else:
        parts.append("tokens not recorded")
    if e.cache_read_tokens:
        parts.append(f"{number(e.cache_read_tokens, 0)} cached")
    if e.reasoning_tokens:
        parts.append(f"{number(e.reasoning_tokens, 0)} reasoning")
    parts.append(_money(e.cost_usd))
    if e.latency_s is not None:
        parts.append(f"{number(e.latency_s, 2, grouped=False)} s")
    if e.attempts and e.attempts > 1:
        parts.append(f"{e.attempts} attempts")
    return " · ".join(parts)


def event_rows(trial: Trial) -> list[dict[str, Any]]:
    """The transcript as rows ``{index, t, kind, who, text, detail, is_error,
    duration_s, cost_usd}``.

    ``kind`` is ``message``, ``model call``, ``tool call``, ``tool result``, ``tool
    error`` or ``control``. ``text`` is the whole text, as recorded. ``duration_s`` is
    how long the step took, each second of the trial counted once (what the viewer's
    timeline sizes its marks by). A model call's ``t`` is when it returned and its
    ``latency_s`` how long before that it began (docs/metrics.md; what the harness,
    ``import otel`` and ``import inspect`` write), so a model call lasts its latency
    (unknown without one), and any other step lasts until the next step began: the
    next event's ``t``, or a model call's ``t − latency_s``. A step the next call
    began before has 0 s of its own; the last step, and a step whose next time is
    earlier than its own, have no duration. Counting to the next model call's ``t``
    gave the step before it the call's latency a second time.
    """
    rows: list[dict[str, Any]] = []
    events = trial.events
    for i, e in enumerate(events):
        row: dict[str, Any] = {
            "index": i,
            "t": e.t,
            "kind": "",
            "who": "",
            "text": "",
            "detail": "",
            "is_error": False,
            "duration_s": None,
            "cost_usd": None,
        }
        if e.type == "message":
            row.update(kind="message", who=e.role, text=e.content or "")
        elif e.type == "model_call":
            row.update(
                kind="model call",
                who=e.model or "model",
                detail=_model_detail(e),
                duration_s=e.latency_s,
                cost_usd=e.cost_usd,
            )
        elif e.type == "tool_call":
            row.update(
                kind="tool call",
                who=e.name,
                text=_json(e.arguments),
                detail="" if e.call_id is None else f"call {e.call_id}",
            )
        elif e.type == "tool_result":
            row.update(
                kind="tool error" if e.is_error else "tool result",
                who=e.name or "",
                text=_json(e.content),
                detail="irreversible" if e.irreversible else "",
                is_error=e.is_error,
            )
        else:
            row.update(kind="control", who=e.decision, text=e.reason or "")
        if e.type != "model_call" and e.t is not None:
            later = next((n for n in events[i + 1 :] if n.t is not None), None)
            if later is not None and later.t is not None and later.t >= e.t:
                row["duration_s"] = max(0.0, _began(later) - e.t)
        rows.append(row)
    return rows


def _began(e: Any) -> float:
    """When a timed event began: a model call ``latency_s`` before its ``t`` (when it
    returned), any other event at its ``t``."""
    t: float = e.t
    if e.type == "model_call" and e.latency_s is not None:
        latency: float = e.latency_s
        return t - latency
    return t


# --------------------------------------------------------------------------- evidence


def _sentences_for(grade: Grade) -> list[str]:
    """Grader-specific sentences for the evidence shapes agentgauge's graders write."""
    ev = grade.evidence
    name = grade.grader.split(":", 1)[0]
    if not isinstance(ev, dict):
        return []
    out: list[str] = []
    if name == "state" and "paths" in ev:
        paths = [str(p) for p in ev.get("paths") or []]
        n = ev.get("n_differences", len(paths))
        if paths:
            shown = ", ".join(paths[:12]) + (" …" if len(paths) > 12 else "")
            out.append(f"{n} state key(s) differ from the expected state: {shown}")
        for failed in ev.get("failed", []) or []:
            out.append(f"assertion failed: {_json(failed)}")
    elif name == "tool_calls" and "detail" in ev:
        head = f"{ev.get('n_calls', '?')} call(s) made, {ev.get('n_expected', '?')} expected"
        out.append(f"{ev['detail']} ({head})")
    elif name == "milestones" and isinstance(ev.get("milestones"), list):
        # Only objects: a stored grade may predate its evidence being checked.
        marks = [m for m in ev["milestones"] if isinstance(m, dict)]
        missed = [m for m in marks if m.get("event_index") is None]
        reached = [m for m in marks if m.get("event_index") is not None]
        if missed:
            out.append("milestones missed: " + ", ".join(str(m.get("id")) for m in missed))
        if reached:
            out.append(
                "milestones reached: "
                + ", ".join(f"{m.get('id')} (event {m.get('event_index')})" for m in reached)
            )
    elif name == "minefields" and isinstance(ev.get("hits"), list):
        for hit in (h for h in ev["hits"] if isinstance(h, dict)):
            out.append(
                f"forbidden call {hit.get('tool')} at event {hit.get('event_index')}"
                + (f": {hit['reason']}" if hit.get("reason") else "")
            )
    elif name == "control" and "expected" in ev:
        out.append(f"expected decision {ev.get('expected')}, took {ev.get('taken')}")
        if ev.get("unconfirmed_irreversible"):
            n = ev["unconfirmed_irreversible"]
            out.append(f"{n} irreversible call(s) without confirmation")
    elif name == "answer" and "failed" in ev:
        for f in ev["failed"]:
            detail = f.get("detail")
            out.append(f"answer check {f.get('check')} failed" + (f": {detail}" if detail else ""))
    elif name == "trajectory" and "mode" in ev:
        out.append(
            f"{ev.get('matched')} of {ev.get('n_reference')} reference steps matched "
            f"({ev.get('mode')}, arguments {ev.get('arguments')}); {ev.get('n_actual')} taken"
        )
    elif name == "checkpoints" and isinstance(ev.get("checkpoints"), list):
        out += _checkpoint_sentences(ev["checkpoints"])
    elif name == "response_match":
        out += _response_match_sentences(ev, grade.score)
    elif grade.grader == "rubric" and isinstance(ev.get("criteria"), list):
        out += _rubric_sentences(ev)
    quotes = ev.get("quotes") if "quotes" in ev else ev.get("evidence")
    if isinstance(quotes, list) and all(isinstance(q, str) for q in quotes):
        out += [f"judge quoted: “{shorten(q, 400)}”" for q in quotes]
    if isinstance(ev.get("reason"), str) and ev["reason"]:
        out.append(f"reason: {shorten(ev['reason'], 600)}")
    return out


def _response_match_sentences(ev: dict[str, Any], score: float | None) -> list[str]:
    """ROUGE-1's parts in words (docs/graders.md, "`response_match`"): what share of the
    answer's words the reference has (precision), what share of the reference's words
    the answer has (recall), and the F they make against the threshold; or why there
    was nothing to compare."""
    threshold = ev.get("threshold")
    needs = f"passing needs {threshold:.2f}" if isinstance(threshold, int | float) else ""
    if {"precision", "recall", "shared_words"} <= ev.keys():
        f = [] if score is None else [f"ROUGE-1 F {score:.2f}"]
        return [
            f"{ev['shared_words']} word(s) shared with the reference answer: "
            f"{_share(ev['precision'])} of the answer's words (precision), "
            f"{_share(ev['recall'])} of the reference's (recall); "
            + ", ".join([*f, *([needs] if needs else [])])
        ]
    if isinstance(ev.get("detail"), str):
        return [ev["detail"] + (f" ({needs.replace('needs', 'needs F')})" if needs else "")]
    if isinstance(ev.get("reference"), str):
        return [f"the reference answer has no words to compare: “{shorten(ev['reference'], 400)}”"]
    return []


def _share(value: Any) -> str:
    return f"{value:.1%}" if isinstance(value, int | float) else str(value)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _checkpoint_sentences(results: list[Any]) -> list[str]:
    """One sentence per checkpoint: the turn, its verdict and what did not hold."""
    out: list[str] = []
    for r in results:
        if not isinstance(r, dict):
            continue
        turn, verdict = r.get("turn"), r.get("verdict")
        if r.get("status") == "checkpoint:turn_missing":
            out.append(f"turn {turn}: failed: the conversation ended before this turn")
            continue
        if r.get("status") == "checkpoint:unfinished":
            how = "a timeout" if r.get("ended") == "timeout" else "an error"
            out.append(f"turn {turn}: failed: the trial ended in {how} in this turn")
            continue
        why: list[str] = []
        state = _object(r.get("state"))
        if state.get("recorded") is False:
            why.append("no state was recorded at the end of the turn")
        paths = [str(p) for p in state.get("paths") or []]
        if paths:
            shown = ", ".join(paths[:8]) + (" …" if len(paths) > 8 else "")
            why.append(f"{state.get('n_differences', len(paths))} state key(s) differ: {shown}")
        why += [f"assertion failed: {_json(f)}" for f in state.get("failed") or []]
        calls = _object(r.get("calls"))
        missing = [m for m in calls.get("missing") or [] if isinstance(m, dict)]
        if missing:
            named = ", ".join(
                f"{m.get('name')} {shorten(_json(m.get('arguments')), 300)}" for m in missing
            )
            why.append(
                f"missing call(s) {named} ({calls.get('mode')}, arguments "
                f"{calls.get('arguments')}; {calls.get('n_actual')} call(s) made in the turn)"
            )
        word = {"pass": "held", "fail": "failed", "unknown": "unknown"}.get(str(verdict), verdict)
        span = r.get("events")
        where = ""
        if isinstance(span, list) and len(span) == 2 and all(type(x) is int for x in span):
            where = f" (events {span[0]}–{span[1] - 1})"
        out.append(f"turn {turn}: {word}{where}" + (": " + "; ".join(why) if why else ""))
    return out


def _rubric_sentences(ev: dict[str, Any]) -> list[str]:
    """The rubric's aggregate grade: one line per criterion (its verdict, what the judge
    quoted, why), where the raw ``criteria`` JSON, cut at 600 characters, hid which
    criterion failed and the judge's quotes."""
    out = []
    for c in (c for c in ev["criteria"] if isinstance(c, dict)):
        passed = c.get("passed")
        verdict = "yes" if passed is True else "no" if passed is False else "unknown"
        line = f"{c.get('grader') or 'a criterion'}: {verdict}"
        if verdict == "unknown" and c.get("status"):
            line += f" ({c['status']})"
        found = c.get("evidence")
        cev: dict[str, Any] = found if isinstance(found, dict) else {}
        quotes = cev.get("quotes") if "quotes" in cev else cev.get("evidence")
        if isinstance(quotes, list):
            quoted = [f"“{shorten(q, 200)}”" for q in quotes if isinstance(q, str)]
            line += f"; judge quoted {', '.join(quoted)}" if quoted else ""
        for key in ("reason", "error"):
            if isinstance(cev.get(key), str) and cev[key]:
                line += f"; {key}: {shorten(cev[key], 300)}"
        out.append(line)
    blocking = ev.get("blocking_failed")
    if isinstance(blocking, list) and blocking:
        out.append("blocking criteria answered no: " + ", ".join(str(b) for b in blocking))
    return out


def evidence_lines(grade: Grade) -> list[str]:
    """The grade's evidence as sentences: a known grader's shape in its own words,
    anything else as ``key: value`` lines (nothing the grader wrote is dropped
    silently; long values are cut with a note)."""
    ev = grade.evidence
    if ev is None:
        return []
    if isinstance(ev, str):
        return [shorten(ev, 600)]
    lines = _sentences_for(grade)
    if lines:
        return lines
    if isinstance(ev, dict):
        return [f"{k}: {shorten(_json(v), 600)}" for k, v in ev.items()]
    return [shorten(_json(ev), 600)]


def grade_rows(trial: Trial) -> list[dict[str, Any]]:
    """Each grade as ``{grader, verdict, passed, score, status, judge_model, evidence,
    lines}``: ``verdict`` is ``pass``, ``fail`` or ``unknown``; ``lines`` the evidence
    as sentences and ``evidence`` what the grader stored."""
    rows = []
    for g in trial.grades:
        verdict = "unknown" if g.passed is None else ("pass" if g.passed else "fail")
        rows.append(
            {
                "grader": g.grader,
                "verdict": verdict,
                "passed": g.passed,
                "score": g.score,
                "status": g.status,
                "judge_model": g.judge_model,
                "evidence": g.evidence,
                "lines": evidence_lines(g),
            }
        )
    return rows


# --------------------------------------------------------------------------- trials


class Outcome(Protocol):
    """What `failure_rows` and `error_class` read of a trial: a `Trial`, or a stored
    trial's `agentgauge.sources.TrialOutcome` (read without building the trial)."""

    @property
    def task_id(self) -> str: ...
    @property
    def trial(self) -> int | None: ...
    @property
    def variant(self) -> str: ...
    @property
    def agent(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def success(self) -> bool | None: ...
    @property
    def status(self) -> str: ...
    @property
    def error_kind(self) -> str | None: ...
    @property
    def grades(self) -> Sequence[Grade]: ...
    @property
    def passed(self) -> bool: ...


def error_class(trial: Outcome) -> str:
    """Why a trial did not pass, in one short phrase: ``infra error``, ``agent
    error``, ``timeout``, the first failed grader's status, ``ungraded`` or
    ``passed``."""
    if trial.status == "timeout":
        return f"{trial.error_kind} timeout" if trial.error_kind else "timeout"
    if trial.status != "completed":
        return f"{trial.error_kind or 'unclassified'} error"
    if trial.success:
        return "passed"
    failed = [g for g in trial.grades if g.passed is False]
    if failed:
        return failed[0].status or f"{failed[0].grader} failed"
    if trial.success is None:
        return "ungraded"
    return "failed"


def trial_key(trial: Trial) -> dict[str, Any]:
    """The cell a trial fills: what ``show --task/--trial/--variant`` and the viewer's
    links address it by."""
    return {
        "task_id": trial.task_id,
        "trial": trial.trial,
        "variant": trial.variant,
        "agent": trial.agent,
        "model": trial.model,
    }


def trial_view(trial: Trial) -> dict[str, Any]:
    """Everything a face shows of one trial, as JSON-ready data."""
    return {
        **trial_key(trial),
        "family": trial.family,
        "success": trial.success,
        "passed": trial.passed,
        "score": trial.score,
        "status": trial.status,
        "error": trial.error,
        "error_kind": trial.error_kind,
        "why": error_class(trial),
        "expected_control": trial.expected_control,
        **_control_taken(trial),
        "answer": trial.answer,
        "cost_usd": trial.cost_usd,
        "input_tokens": trial.input_tokens,
        "output_tokens": trial.output_tokens,
        "latency_s": trial.latency_s,
        "tool_calls": trial.tool_calls,
        "model_calls": trial.model_calls,
        "n_events": len(trial.events),
        "events": event_rows(trial),
        "grades": grade_rows(trial),
    }


def _control_taken(trial: Trial) -> dict[str, Any]:
    """``control``, the decision the trial records as the control grader and metrics
    read it (`agentgauge.facts.recorded_control`: its field, else its first control
    event), and ``control_from``: ``record``, ``transcript`` or ``None``. A trial that
    did not finish has no field (the step that sets it never ran), yet its transcript
    may record the decision it took before it failed."""
    decisions = [e.decision for e in trial.events if isinstance(e, ControlEvent)]
    taken = recorded_control(trial.control, decisions, trial.expected_control)
    where = None if taken is None else "record" if trial.control is not None else "transcript"
    return {"control": taken, "control_from": where}


def failure_rows(trials: Iterable[Outcome]) -> list[dict[str, Any]]:
    """One row per (agent, model, task, variant) with a trial that did not pass
    (`Trial.passed`: an infra error never passes):
    ``{task_id, variant, agent, model, failed, n, trials, classes}`` where
    ``classes`` counts each `error_class` and ``trials`` lists the failing trial
    indices. Sorted by most failures first, then task id."""
    cells: dict[tuple[Any, ...], dict[str, Any]] = {}
    for t in trials:
        key = (t.agent, t.model, t.task_id, t.variant)
        cell = cells.setdefault(
            key,
            {
                "task_id": t.task_id,
                "variant": t.variant,
                "agent": t.agent,
                "model": t.model,
                "failed": 0,
                "n": 0,
                "trials": [],
                "classes": {},
            },
        )
        cell["n"] += 1
        if t.passed:  # an infra error is a failure, whatever its record says
            continue
        cell["failed"] += 1
        cell["trials"].append(t.trial)
        why = error_class(t)
        cell["classes"][why] = cell["classes"].get(why, 0) + 1
    rows = [c for c in cells.values() if c["failed"]]
    rows.sort(key=lambda c: (-c["failed"], str(c["agent"]), c["task_id"], c["variant"]))
    return rows


def flips(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of `failure_rows`, the cells that passed on some trials and failed on others
    (flaky: the cells whose transcripts explain an agent's inconsistency)."""
    return [r for r in rows if 0 < r["failed"] < r["n"]]
