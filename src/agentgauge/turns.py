"""The user turns of a multi-turn trial: where each ended, and the state then.

A conversation whose user sends follow-up requests ("actually, ship it to my
office instead") has several user turns. A turn ends when the agent hands it
back (a statement, not a question) and the user sends the next request. The
harness records each such hand-back in the trial's ``turns`` field as
``{"end": E, "state": S}``: the turn holds the events before index ``E``
(after the previous hand-back) and ``S`` is the environment's state at that
moment. The last turn is not listed: it runs to the end of the transcript, and
its state is the trial's ``final_state``. So a trial of three turns lists two
hand-backs, and a single-turn trial of a multi-turn world lists none (``[]``).

The record is a trial field, so it survives the store and the JSONL interchange
as every trial field does, without a new event type; the store keeps it as a
document, as it keeps final states (each distinct record once, compressed: the
trials of a task that take the same route hand back the same states). A trial with
no record (imported, or written before turns were recorded) has unknown turns;
an importer that knows where its turns ended may write ``state: null``, and the
calls of each turn can then still be checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentgauge.schema import ToolCallEvent, Trial

__all__ = ["Turn", "TurnRecordError", "hand_back", "turns_of"]


class TurnRecordError(ValueError):
    """A trial's turn record is malformed (hostile or hand-written input)."""


@dataclass(frozen=True)
class Turn:
    """One user turn of a trial."""

    index: int
    """1-based position in the conversation."""
    start: int
    """Index of its first event."""
    end: int
    """Index one past its last event."""
    calls: list[ToolCallEvent]
    """The tool calls made during the turn, in order."""
    state: dict[str, Any] | None
    """The state when the turn was handed back; ``None`` when not recorded."""


def hand_back(end: int, state: dict[str, Any] | None) -> dict[str, Any]:
    """One entry of the record (what the harness appends at a hand-back)."""
    return {"end": end, "state": state}


def turns_of(trial: Trial) -> list[Turn] | None:
    """The trial's turns, or ``None`` when it recorded none.

    Raises `TurnRecordError` for a record that is not a list of ``{end, state}``
    objects with increasing ``end`` within the transcript.
    """
    record: Any = trial.turns
    if record is None:
        return None
    if not isinstance(record, list):  # a model built without validation
        raise TurnRecordError(f"turns must be a list, got {type(record).__name__}")
    n = len(trial.events)
    ends: list[int] = []
    states: list[dict[str, Any] | None] = []
    for i, entry in enumerate(record):
        where = f"turns[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"end", "state"}:
            raise TurnRecordError(f"{where} must be an object with 'end' and 'state'")
        end, state = entry.get("end"), entry.get("state")
        if isinstance(end, bool) or not isinstance(end, int) or not 0 <= end <= n:
            raise TurnRecordError(f"{where}.end must be an event index from 0 to {n}")
        if ends and end < ends[-1]:
            raise TurnRecordError(f"{where}.end comes before the previous turn's end")
        if state is not None and not isinstance(state, dict):
            raise TurnRecordError(f"{where}.state must be an object or null")
        ends.append(end)
        states.append(state)
    ends.append(n)
    states.append(trial.final_state)
    turns: list[Turn] = []
    start = 0
    for i, (end, state) in enumerate(zip(ends, states, strict=True)):
        calls = [e for e in trial.events[start:end] if isinstance(e, ToolCallEvent)]
        turns.append(Turn(index=i + 1, start=start, end=end, calls=calls, state=state))
        start = end
    return turns
