"""AST-matching throughput over every BFCL v4 single-turn entry, and BFCL's own
checker side by side when ``bfcl-eval`` is importable (goal: compiled keys
>= 3x BFCL's checker, ``ast_match`` used once no slower than it).

Inputs: for each entry of ../shared/data/bfcl, the reference output (first
acceptable value per argument) and a perturbed one (the first argument's value
replaced), so both the passing and the failing paths are timed; irrelevance
entries are checked with no call and with one call. BFCL's checker is run on
the Python-language categories, where its inputs are exactly ours (its Java
and JavaScript checks require source-literal strings, its irrelevance check
lives outside ``ast_checker``). Verdict agreement is printed with the ids of
any disagreement.

Side by side, in alternating runs on the same outputs: BFCL timed on its
``ast_checker`` call; our public ``ast_match`` (single use, nothing cached
between calls); our compiled keys reused (timed on ``match`` after a first use
has built their lookup sets), one key per task shared by that task's outputs
(as `agentgauge.graders.toolcalls` keeps them, and as BFCL reads one entry's
docs and key for both its outputs) and one key per output; and keys used once
(a fresh key per output: ``compile_key`` and the first ``match``, set building
included).
Every timed run checks a fresh copy of the outputs, parsed anew from JSON
before the clock starts (see `fresh`), so no run gains from string hashes
computed by an earlier one; garbage collection is left as Python sets it.

Run: ``python benchmarks/bench_graders.py [--data DIR] [--repeat N] [--smoke]``
(``--smoke``: the first 10 entries of each category, one run each).
bfcl-eval drags in every provider SDK, so it belongs in a throwaway virtual
environment: ``PYTHONPATH=src /tmp/bfclvenv/bin/python benchmarks/bench_graders.py``.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _report import Row, emit, row, smoke_flag
from agentgauge.graders import ast_match
from agentgauge.graders.ast import CompiledKey, compile_key
from agentgauge.testing.bfcl import SINGLE_TURN, BfclEntry, load_category, reference_calls

ROOT = Path(__file__).resolve().parents[1]
NAME = "bench_graders"
BFCL = "BFCL's ast_checker"
PYTHON_KEYED = [
    c for c in SINGLE_TURN if "relevance" not in c and c not in ("simple_java", "simple_javascript")
]

Case = tuple[BfclEntry, list[dict[str, Any]]]


def _perturb(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(calls)
    for call in out:
        ((_, args),) = call.items()
        for k, v in args.items():
            args[k] = f"{v}-x" if isinstance(v, str) else ["perturbed"] if v is None else None
            return out
    return out


def build_cases(data: Path, limit: int | None = None) -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {}
    for category in SINGLE_TURN:
        entries = load_category(data, category)[:limit]
        rows: list[Case] = []
        for e in entries:
            if "relevance" in category:
                name = e.functions[0]["name"] if e.functions else "f"
                rows += [(e, []), (e, [{name: {}}])]
            else:
                ref = reference_calls(e.answer)
                rows += [(e, ref), (e, _perturb(ref))]
        cases[category] = rows
    return cases


Rows = list[tuple[str, Case]]


def fresh(rows: Rows) -> Rows:
    """The same outputs as new objects (parsed anew from JSON), as a grader sees
    each trial's output once: no string of theirs has its hash computed yet,
    and none is the key's own object (the reference outputs are built from the
    key), so no contender gains from an earlier run on the same objects."""
    return [(c, (e, json.loads(json.dumps(calls)))) for c, (e, calls) in rows]


def _time(fn: Callable[[Rows], Any], rows: Rows, repeat: int) -> float:
    """Best CPU time of ``repeat`` runs, each on a fresh copy of ``rows`` (made
    before the clock starts): the machine is shared, and process time is what
    other processes disturb least."""
    best = float("inf")
    for _ in range(repeat):
        outputs = fresh(rows)
        t0 = time.process_time()
        fn(outputs)
        best = min(best, time.process_time() - t0)
    return best


def ours(rows: Rows) -> list[bool]:
    return [ast_match(e.functions, calls, e.answer, cat)[0] for cat, (e, calls) in rows]


def compiled(rows: Rows, per_task: bool = True) -> list[CompiledKey]:
    """A compiled key for each output: one per task (entry), shared by that
    task's outputs, as `agentgauge.graders.toolcalls` keeps one per task; or,
    with ``per_task=False``, a key of its own for every output."""
    if not per_task:
        return [compile_key(e.functions, e.answer) for _, (e, _) in rows]
    by_task: dict[int, CompiledKey] = {}
    keys = []
    for _, (e, _) in rows:
        key = by_task.get(id(e))
        if key is None:
            key = by_task[id(e)] = compile_key(e.functions, e.answer)
        keys.append(key)
    return keys


def compiled_once(rows: Rows) -> list[bool]:
    """A fresh key per output: compiling, and building each parameter's lookup
    sets on first use, are all timed."""
    return [compile_key(e.functions, e.answer).match(calls, cat)[0] for cat, (e, calls) in rows]


def matched(rows: Rows, keys: list[CompiledKey]) -> list[bool]:
    return [k.match(calls, cat)[0] for k, (cat, (_, calls)) in zip(keys, rows, strict=True)]


def load_bfcl() -> Callable[[Rows], list[bool]] | str:
    try:
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    except Exception as exc:  # any import failure: bfcl-eval pulls many SDKs
        return f"{type(exc).__name__}: {exc}"

    def bfcl(rows: Rows) -> list[bool]:
        out = []
        for cat, (e, calls) in rows:
            # A model whose config keeps dots in names, so names are compared as given.
            r = ast_checker(
                e.functions, calls, e.answer, Language.PYTHON, cat, "gorilla-openfunctions-v2"
            )
            out.append(bool(r["valid"]))
        return out

    return bfcl


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "bfcl")
    parser.add_argument("--repeat", type=int, default=9)
    smoke_flag(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeat = 1
    if not args.data.is_dir():
        print(f"BFCL's data not found at {args.data}: skipped")
        return [row(NAME, "AST matching", None, "outputs/s", note=f"no data at {args.data}")]
    cases = build_cases(args.data, 10 if args.smoke else None)
    every = [(c, case) for c, rows in cases.items() for case in rows]
    n_entries = sum(len(v) for v in cases.values()) // 2
    t_all = _time(ours, every, args.repeat)
    print(f"BFCL v4 single-turn: {n_entries} entries, {len(every)} model outputs")
    print(
        f"agentgauge ast_match, all categories: {t_all:.3f} s, {len(every) / t_all:,.0f} outputs/s"
    )

    python_rows = [(c, case) for c in PYTHON_KEYED for case in cases[c]]
    t_ours = _time(ours, python_rows, args.repeat)
    print(
        f"agentgauge ast_match, Python-language keyed categories ({len(python_rows)} outputs): "
        f"{t_ours:.3f} s, {len(python_rows) / t_ours:,.0f} outputs/s"
    )
    keys = compiled(python_rows)
    own_keys = compiled(python_rows, per_task=False)
    for k in (keys, own_keys):
        matched(python_rows, k)  # lookup sets are built on first use; reuse is timed
    t_once = _time(compiled_once, python_rows, args.repeat)
    t_warm = _time(lambda rows: matched(rows, keys), python_rows, args.repeat)
    print(
        "agentgauge, keys compiled once and reused (many trials per task): "
        f"{t_warm:.3f} s, {len(python_rows) / t_warm:,.0f} outputs/s; a fresh key per output "
        f"(compile + first match): {t_once:.3f} s"
    )
    n = len(python_rows)
    rows = [
        row(
            NAME,
            f"ast_match, every single-turn category, {len(every):,} outputs",
            len(every) / t_all,
            "outputs/s",
        )
    ]
    # Each figure with its goal: at least this many times BFCL's checker's speed.
    figures: dict[str, tuple[str, float | None]] = {
        "agentgauge ast_match": (f"ast_match, single use, {n:,} Python-language outputs", 1.0),
        "agentgauge compiled keys, one per task": (
            f"compiled keys reused, one per task, {n:,} outputs",
            3.0,
        ),
        "agentgauge compiled keys, one per output": (
            f"compiled keys reused, one per output, {n:,} outputs",
            None,
        ),
        "agentgauge compile_key + first match": (
            f"compiled keys used once (compile + first match), {n:,} outputs",
            None,
        ),
    }
    bfcl = load_bfcl()
    if isinstance(bfcl, str):
        print(f"BFCL's checker: skipped, bfcl-eval is not importable here ({bfcl})")
        alone = {
            "agentgauge ast_match": t_ours,
            "agentgauge compiled keys, one per task": t_warm,
            "agentgauge compile_key + first match": t_once,
        }
        return rows + [
            row(
                NAME,
                figures[name][0],
                n / t,
                "outputs/s",
                reference_name=f"{BFCL}: not installed ({bfcl.split(':')[0]})",
                goal=_goal(figures[name][1]),
            )
            for name, t in alone.items()
        ]
    # All contenders on the same outputs, runs alternating so that they see the
    # same machine load. BFCL is timed on its ast_checker call; ours on the
    # public ast_match (the key read afresh on every call, nothing cached), on
    # keys compiled once (one per task, as the tool-call grader keeps them; and
    # one per output), and on a key compiled for every output.
    contenders: dict[str, Callable[[Rows], Any]] = {
        "BFCL ast_checker": bfcl,
        "agentgauge ast_match": ours,
        "agentgauge compiled keys, one per task": lambda rows: matched(rows, keys),
        "agentgauge compiled keys, one per output": lambda rows: matched(rows, own_keys),
        "agentgauge compile_key + first match": compiled_once,
    }
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(args.repeat):
        for name, fn in contenders.items():
            best[name] = min(best[name], _time(fn, python_rows, 1))
    print(
        "side by side on the Python-language outputs, runs alternating, "
        "each run on a fresh copy of the outputs (garbage collection as Python sets it, "
        "the same for all):"
    )
    for name, t in best.items():
        print(f"  {name + ':':<44}{t:.4f} s, {n / t:>9,.0f} outputs/s")
    t_bfcl = best["BFCL ast_checker"]
    for name, what in (
        ("agentgauge ast_match", "ast_match, single use (goal >= 1x)"),
        (
            "agentgauge compiled keys, one per task",
            "compiled keys reused, one per task (many trials per task; goal >= 3x)",
        ),
        ("agentgauge compiled keys, one per output", "compiled keys reused, one per output"),
        (
            "agentgauge compile_key + first match",
            "compiled keys used once (compiling and building the lookup sets included)",
        ),
    ):
        print(f"speed ratio agentgauge / BFCL: {t_bfcl / best[name]:.2f}x  {what}")
    verdicts = matched(python_rows, keys)
    full = [ast_match(e.functions, calls, e.answer, c) for c, (e, calls) in python_rows]
    same = sum(
        k.match(calls, c) == r
        for k, (c, (_, calls)), r in zip(keys, python_rows, full, strict=True)
    )
    print(f"ast_match and compiled keys give the same (valid, error, detail) on {same} of {n}")
    assert verdicts == [r[0] for r in full]
    a, b = ours(python_rows), bfcl(python_rows)
    differ = [
        (c, e.id, x, y) for (c, (e, _)), x, y in zip(python_rows, a, b, strict=True) if x != y
    ]
    print(f"verdicts agree on {len(a) - len(differ)} of {len(a)} outputs")
    for c, i, x, y in differ[:20]:
        print(f"  {c} {i}: agentgauge {'pass' if x else 'fail'}, BFCL {'pass' if y else 'fail'}")
    perturbations(bfcl_checker())
    t_bfcl = best["BFCL ast_checker"]
    for name, (figure, bar) in figures.items():
        ratio = t_bfcl / best[name]
        rows.append(
            row(
                NAME,
                figure,
                n / best[name],
                "outputs/s",
                reference=n / t_bfcl,
                reference_name=f"{BFCL}, same outputs, runs alternating",
                higher_is_better=True,
                goal=_goal(bar),
                met=None if bar is None or args.smoke else ratio >= bar,
            )
        )
    return rows


def _goal(bar: float | None) -> str | None:
    return None if bar is None else f"≥ {bar:g}×"


def bfcl_checker() -> Callable[..., dict[str, Any]]:
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    def check(functions: Any, calls: Any, key: Any, category: str) -> dict[str, Any]:
        out: dict[str, Any] = ast_checker(
            functions, calls, key, Language.PYTHON, category, "gorilla-openfunctions-v2"
        )
        return out

    return check


def perturbations(check: Callable[..., dict[str, Any]]) -> None:
    """Re-run the perturbation suite through BFCL's checker and compare verdicts."""
    data = json.loads((ROOT / "tests" / "graders" / "data" / "bfcl_perturbations.json").read_text())
    print("perturbation suite (tests/graders/data/bfcl_perturbations.json):")
    for case in data["cases"]:
        functions = [data["AREA"]] if case["functions"] == "AREA" else case["functions"]
        key = [data["KEY"]] if case["key"] == "KEY" else case["key"]
        theirs = bool(check(functions, case["calls"], key, case["category"])["valid"])
        ours_ = ast_match(functions, case["calls"], key, case["category"])[0]
        same = "same" if theirs == ours_ else "DIFFERENT"
        recorded = "" if theirs == case["bfcl_valid"] else " (BFCL changed since recorded!)"
        print(f"  {case['case']:<62} BFCL {theirs!s:<5} ours {ours_!s:<5} {same}{recorded}")


if __name__ == "__main__":
    emit(main())
