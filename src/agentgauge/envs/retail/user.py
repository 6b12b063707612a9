"""A scripted user: answers the agent from the task's ``user_scenario``.

No model is involved, so a trial is fast and exactly repeatable. The rules:

1. A request for confirmation ("... shall I proceed? (yes/no)", "would you like
   me to go ahead?") gets the scenario's ``confirm`` answer (default yes).
2. A question that mentions something the user knows (``known``: email, name,
   zip, order id, reason, new address...) gets those facts. A question that
   opens with a wh-word ("Which item ...?") is always a request for facts.
3. A weaker confirmation ("Can you confirm ...?", "Is that correct?") that asks
   for no fact gets the ``confirm`` answer; any other question gets
   ``default_reply`` ("I don't know").
4. A statement (no question mark) ends the conversation: the user takes it as
   the agent's final answer and leaves (``None``).
   With ``follow_ups`` left, the user sends the next one instead (a new user turn:
   "actually, ship it to my office instead"), and leaves after the last.
5. After ``max_turns`` answers to questions, the user leaves at the next question,
   so a looping agent cannot run forever. Follow-ups are neither counted nor held
   back: a statement with follow-ups left gets the next one whatever the count (the
   scenario bounds them).

The scenario fields::

    user_scenario:
      known: {email: ana.silva@example.com, order_id: W1001}
      confirm: true          # answer to confirmation requests
      default_reply: "I don't know."
      max_turns: 8
      follow_ups: ["Also, what's the tracking number of W1030?"]

Which of several phrasings the user picks is drawn from a seeded generator, so
trials differ in wording but replay exactly from their seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Scenario", "ScriptedUser"]


class Scenario(BaseModel):
    """A retail task's ``user_scenario`` (the fields above; any other key is an error)."""

    model_config = ConfigDict(extra="forbid")

    known: dict[str, Any] = Field(default_factory=dict)
    """Facts the user gives when asked."""
    confirm: bool = True
    """The answer to confirmation requests."""
    default_reply: str = "I don't know, sorry."
    """The reply to any other question."""
    max_turns: int = Field(default=8, ge=1)
    """Answers to questions before the user leaves (follow-ups are not counted)."""
    follow_ups: list[str] = Field(default_factory=list)
    """Requests the user sends, one after each statement of the agent, before leaving:
    each opens a new user turn (the task declares one checkpoint per turn)."""


#: Words in an agent message that point at each kind of fact.
_ALIASES: dict[str, tuple[str, ...]] = {
    "email": ("email", "e-mail"),
    "name": ("name",),
    "zip": ("zip", "postal"),
    "order_id": ("order id", "order number", "which order", "order"),
    "item": ("item", "which product"),
    "address": ("address",),
    "payment": ("payment", "card", "refund to", "pay with"),
    "reason": ("reason", "why"),
}
_LABELS = {"order_id": "order id", "zip": "ZIP code"}
_CONFIRM_CUES = ("yes/no", "(yes", "proceed", "go ahead", "would you like me to",
                 "do you want me to", "shall i", "should i", "do you confirm")  # fmt: skip
_WEAK_CONFIRM_CUES = ("confirm", "is that correct", "is that right", "is this correct")
_WH = ("which", "what", "where", "when", "who", "how", "could you tell", "can you tell")
_YES = ("Yes, please go ahead.", "Yes, I confirm.", "Yes.")
_NO = ("No, please don't do that.", "No, I've changed my mind.", "No.")


class ScriptedUser:
    """Deterministic user simulator for one trial."""

    def __init__(self, scenario: dict[str, Any], rng: np.random.Generator) -> None:
        fields = Scenario.model_validate(scenario)  # checked when the suite loaded
        self._known: dict[str, Any] = dict(fields.known)
        self._confirm = fields.confirm
        self._default = fields.default_reply
        self._max_turns = fields.max_turns
        self._rng = rng
        self._follow_ups = list(fields.follow_ups)
        self.user_turns = 1 + len(self._follow_ups)
        """How many user turns the conversation has."""
        self.user_turn = 1
        """The user turn under way, from 1 (each follow-up opens the next)."""
        self.turns = 0
        self.confirmations: list[bool] = []
        """The answers given to confirmation requests, in order."""

    def _pick(self, options: tuple[str, ...]) -> str:
        return options[int(self._rng.integers(len(options)))]

    def reply(self, message: str) -> str | None:
        text = message.lower()
        if "?" not in text:
            if self.user_turn <= len(self._follow_ups):
                self.user_turn += 1
                return self._follow_ups[self.user_turn - 2]
            return None
        # The budget bounds answers to questions (a looping agent), not the scenario's
        # follow-ups: a statement with one left gets it whatever the count.
        if self.turns >= self._max_turns:
            return None
        self.turns += 1
        question = _last_question(text)
        asks_facts = question.startswith(_WH)
        if not asks_facts and any(cue in text for cue in _CONFIRM_CUES):
            return self._answer_confirmation()
        facts = [key for key in self._known if any(a in text for a in _aliases(key))]
        if facts:
            return " ".join(
                f"My {_LABELS.get(k, k.replace('_', ' '))} is {_say(self._known[k])}."
                for k in facts
            )
        if not asks_facts and any(cue in text for cue in _WEAK_CONFIRM_CUES):
            return self._answer_confirmation()
        return self._default

    def _answer_confirmation(self) -> str:
        self.confirmations.append(self._confirm)
        return self._pick(_YES if self._confirm else _NO)


def _last_question(text: str) -> str:
    """The sentence holding the last question mark, stripped."""
    head = text[: text.rfind("?")]
    for stop in (". ", "! ", "? ", "\n"):
        head = head.rsplit(stop, 1)[-1]
    return head.strip()


def _aliases(key: str) -> tuple[str, ...]:
    return _ALIASES.get(key, (key.replace("_", " "),))


def _say(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(str(v) for v in value.values())
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)
