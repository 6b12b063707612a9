"""The grid of cells a run must fill: (task, trial, variant), each with its own seed.

Variants (docs/running-agents.md, "Variants") are given as a list of names; two
are shorthands expanded per task:

- ``paraphrase`` -> ``paraphrase:1`` ... ``paraphrase:P`` for the task's P
  paraphrases (at most ``max_paraphrases`` when set); a task without
  paraphrases gets none. ``paraphrase:N`` names one (1-based) and is skipped
  for tasks that have fewer than N.
- ``fault`` -> ``fault:KIND`` for every fault kind the environments support.

``base``, ``fault:KIND[@RATE]`` and ``env:KIND`` are taken as they are (and
checked by the environments' variant parser when it is installed).

Cells are ordered trial-major (all tasks' trial 0, then trial 1, ...), so a run
that stops early still has a balanced first few trials for every task.

Seeds: a cell's seed is the first 63 bits of SHA-256 over ``run seed, task id,
trial, variant`` — stable across processes, Python versions and resumes
(unlike ``hash()``), and distinct per cell, so re-running a cell replays it.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from agentgauge.errors import InputError
from agentgauge.schema import Task
from agentgauge.textio import is_digits

__all__ = [
    "DEFAULT_FAULT_KINDS",
    "MAX_RUN_TRIALS",
    "Cell",
    "cell_seed",
    "cells_of_run",
    "check_variants",
    "count_cells",
    "expand_variants",
    "fault_kinds",
]

#: The most trials one run may plan (tasks x variants x trials). A run of a million
#: trials already takes days; a design past it is a typo (``--trials 100000000``), and
#: is refused before anything is written rather than found out by running out of
#: memory or time.
MAX_RUN_TRIALS = 1_000_000

#: Used when the environment package does not declare its fault kinds: tool errors,
#: timeouts and rate-limit responses, the faults docs/running-agents.md, "Variants" lists.
DEFAULT_FAULT_KINDS: tuple[str, ...] = ("tool_error", "timeout", "rate_limit")


@dataclass(frozen=True)
class Cell:
    """One trial to run."""

    task: Task
    trial: int
    variant: str
    seed: int

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.task.id, self.trial, self.variant)


def cell_seed(run_seed: int, task_id: str, trial: int, variant: str) -> int:
    """Deterministic 63-bit seed for one cell (fits SQLite's signed INTEGER)."""
    digest = hashlib.sha256(f"{run_seed}\x1f{task_id}\x1f{trial}\x1f{variant}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _declared(name: str) -> tuple[str, ...] | None:
    # The environments package owns the fault and perturbation kinds; read them
    # lazily so the harness does not depend on any one world.
    try:
        faults = importlib.import_module("agentgauge.envs.faults")
    except ImportError:
        return None
    kinds = getattr(faults, name, None)
    return tuple(kinds) if kinds else None


def fault_kinds() -> tuple[str, ...]:
    """Fault kinds ``fault`` expands to."""
    return _declared("FAULT_KINDS") or DEFAULT_FAULT_KINDS


def expand_variants(
    task: Task, variants: Sequence[str], *, max_paraphrases: int | None = None
) -> list[str]:
    """The concrete variants of ``variants`` for ``task``, in order, without repeats."""
    out: list[str] = []
    for v in variants:
        if v == "base":
            out.append(v)
        elif v == "paraphrase":
            n = len(task.paraphrases)
            if max_paraphrases is not None:
                n = min(n, max_paraphrases)
            out.extend(f"paraphrase:{i}" for i in range(1, n + 1))
        elif v.startswith("paraphrase:"):
            if int(v.split(":", 1)[1]) <= len(task.paraphrases):
                out.append(v)
        elif v == "fault":
            out.extend(f"fault:{k}" for k in fault_kinds())
        else:
            out.append(v)
    return list(dict.fromkeys(out))


def check_variants(variants: Sequence[str]) -> list[str]:
    """Validate variant names once, before anything runs (`InputError` names the bad one).

    Concrete names go to the environments' own parser
    (`agentgauge.envs.faults.parse_variant`, which also knows ``fault:KIND@RATE``)
    when it is installed; otherwise to the same grammar checked here."""
    if not variants:
        raise InputError("at least one variant is needed (e.g. base)", field="variants")
    try:
        parse = importlib.import_module("agentgauge.envs.faults").parse_variant
    except (ImportError, AttributeError):
        parse = _parse_variant
    for v in variants:
        if v not in ("paraphrase", "fault"):
            parse(v)
    return list(variants)


def _parse_variant(variant: str) -> None:
    kind, _, arg = variant.partition(":")
    name, _, rate = arg.partition("@")
    ok = variant == "base"
    if kind == "paraphrase":
        ok = is_digits(arg) and int(arg) >= 1
    elif kind == "fault":
        ok = name in fault_kinds() and (not rate or _is_rate(rate))
    elif kind == "env":
        envs = _declared("ENV_KINDS")
        ok = bool(arg) and (envs is None or arg in envs)
    if not ok:
        raise InputError(
            f"unknown variant {variant!r}: use base, paraphrase, paraphrase:N, fault, "
            f"fault:KIND[@RATE] (KIND in {', '.join(fault_kinds())}) or env:KIND",
            field="variants",
        )


def _is_rate(text: str) -> bool:
    try:
        return 0.0 <= float(text) <= 1.0
    except ValueError:
        return False


def cells_of_run(
    tasks: Sequence[Task],
    *,
    trials: int,
    variants: Sequence[str],
    seed: int,
    max_paraphrases: int | None = None,
) -> Iterator[Cell]:
    """Every cell of the grid, trial-major."""
    per_task = [(t, expand_variants(t, variants, max_paraphrases=max_paraphrases)) for t in tasks]
    for trial in range(trials):
        for task, expanded in per_task:
            for variant in expanded:
                yield Cell(task, trial, variant, cell_seed(seed, task.id, trial, variant))


def count_cells(
    tasks: Sequence[Task],
    *,
    trials: int,
    variants: Sequence[str],
    max_paraphrases: int | None = None,
    skip: Iterable[tuple[str, int, str]] = (),
) -> tuple[int, int]:
    """``(cells per trial, cells of the grid not in skip)`` for the grid `cells_of_run`
    yields, counted without building it: a run's cells are generated one by one as
    they are launched, so the grid is never held whole. ``skip`` holds the keys of
    stored cells (some may lie outside the grid: a resume cannot drop them)."""
    per_task = {
        t.id: set(expand_variants(t, variants, max_paraphrases=max_paraphrases)) for t in tasks
    }
    per_trial = sum(len(per_task[t.id]) for t in tasks)
    stored = sum(1 for t, i, v in skip if 0 <= i < trials and v in per_task.get(t, ()))
    return per_trial, per_trial * trials - stored
