"""``agentgauge grade SOURCE``: re-grade stored transcripts as a new grade version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import (
    JsonOption,
    console,
    err_console,
    options_typed,
    print_json,
    run_named,
)
from agentgauge.display import terminal_text
from agentgauge.errors import InputError
from agentgauge.report.formats import counted

if TYPE_CHECKING:
    from agentgauge.graders.regrade import RegradeResult
    from agentgauge.store import GradeVersion

GradersOption = Annotated[
    str | None,
    typer.Option(
        "--graders",
        help="Comma-separated graders (state, answer, tool_calls, trajectory, milestones, "
        "minefields, control...); a code grader grades only the tasks that declare what it "
        "needs. Default: each task's enabled code graders.",
    ),
]


def _versions_json(versions: list[GradeVersion]) -> list[dict[str, object]]:
    return [
        {
            "version": v.version,
            "created_at": v.created_at,
            "graders": v.graders,
            "note": v.note,
            "active": v.active,
            "outcomes_kept": v.outcomes_kept,
        }
        for v in versions
    ]


def _print_versions(versions: list[GradeVersion]) -> None:
    out = console()
    for v in versions:
        mark = "*" if v.active else " "
        graders = ", ".join(v.graders) or "default graders"
        lost = "" if v.outcomes_kept else "  (outcomes overwritten before versions were kept)"
        out.print(
            f"{mark} {v.version}  {v.created_at}  {graders}  {v.note or ''}{lost}",
            soft_wrap=True,
        )
    out.print("* = active: what metrics, compare, gate and report read by default")


@app.command()
def grade(
    source: Annotated[
        str, typer.Argument(metavar="DB:RUN", help="DB:RUN_ID, or a store holding one run.")
    ],
    graders: GradersOption = None,
    store: Annotated[
        str | None, typer.Option("--store", help="Store file, when SOURCE is only a run id.")
    ] = None,
    activate: Annotated[
        bool,
        typer.Option(
            "--activate",
            help="Make the new version what the run reports (default: it is stored beside "
            "the others and changes nothing until activated).",
        ),
    ] = False,
    activate_version: Annotated[
        int | None,
        typer.Option(
            "--activate-version",  # checked by the store, as `--grade-version` is
            help="Do not re-grade: make version N (1 = as recorded) what the run reports.",
        ),
    ] = None,
    list_versions: Annotated[
        bool, typer.Option("--list", help="Do not re-grade: list the run's grade versions.")
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Re-grade stored transcripts without re-running the agent (a new grade version)."""

    # A run id alone is read in --store: named as the DB:RUN it stands for.
    with run_named(source if store is None else f"{store}:{source}"):
        _grade(source, graders, store, activate, activate_version, list_versions, json_out)


def _grade(
    source: str,
    graders: str | None,
    store: str | None,
    activate: bool,
    activate_version: int | None,
    list_versions: bool,
    json_out: bool,
) -> None:
    from agentgauge.api import activate_grade_version, grade_versions, regrade
    from agentgauge.store.database import write_follows

    if activate_version is not None or list_versions:
        if graders or activate or (activate_version is not None and list_versions):
            raise InputError(
                "--activate-version and --list neither re-grade nor combine with "
                "--graders, --activate or each other",
                field="--activate-version" if activate_version is not None else "--list",
            )
        with options_typed(grade_version="--activate-version"):
            versions = (
                grade_versions(source, store=store)
                if activate_version is None
                else activate_grade_version(source, activate_version, store=store)
            )
        if json_out:
            print_json(
                {"schema": "agentgauge.grade_versions/1", "versions": _versions_json(versions)}
            )
        else:
            _print_versions(versions)
        return
    # The newest version before, to tell after a Ctrl-C whether the new one was committed.
    with write_follows():  # the re-grade's writable open says what it does of stale records
        newest = max(v.version for v in grade_versions(source, store=store))
    result: RegradeResult | None = None
    try:
        with options_typed(graders="--graders"):
            # The API splits --graders at its commas and refuses an empty one.
            result = regrade(source, graders, store=store, activate=activate)
        _print_result(result, source, store, json_out=json_out)
    except KeyboardInterrupt:
        _say_interrupted(source, store, newest, result)
        raise typer.Exit(130) from None


def _say_interrupted(
    source: str, store: str | None, newest: int, result: RegradeResult | None
) -> None:
    """Ctrl-C: the re-grade is one transaction, rolled back unless it had committed.
    Which of the two happened is read back from the store, not assumed."""
    from agentgauge.api import grade_versions

    if result is None:
        try:
            written = [v for v in grade_versions(source, store=store) if v.version > newest]
        except KeyboardInterrupt:  # a second Ctrl-C while looking: say only what is sure
            err_console().print("interrupted")
            return
        result_version = written[-1].version if written else None
    else:
        result_version = result.version
    if result_version is None:
        err_console().print("interrupted: nothing written (the re-grade was rolled back)")
    else:
        err_console().print(
            terminal_text(
                f"interrupted: grade version {result_version} was already written; see it "
                f"with: {_again(source, store, '--list')}"
            ),
            soft_wrap=True,
        )


def _print_result(result: RegradeResult, source: str, store: str | None, *, json_out: bool) -> None:
    from agentgauge.report.explain import shorten

    if json_out:
        print_json(
            {
                "schema": "agentgauge.grade/1",
                "run_id": result.run_id,
                "version": result.version,
                "active": result.active,
                "graders": result.graders,
                "n_trials": result.n_trials,
                "n_changed": result.n_changed,
                "n_unknown": result.n_unknown,
                "n_unknown_partial": result.n_unknown_partial,
                "n_judge_truncated": result.n_judge_truncated,
                "unknown_grades": result.unknown_grades,
                "skipped_tasks": result.skipped,
                "n_not_applicable": result.n_not_applicable,
                "n_unfinished": result.n_unfinished,
                "n_unfinished_turns": result.n_unfinished_turns,
                "idle_graders": result.idle,
                "success_before": result.success_before,
                "success_after": result.success_after,
            }
        )
        return
    out = console()
    out.print(
        f"re-graded {counted(result.n_trials, 'trial')} of run {result.run_id} as grade version "
        f"{result.version} ({', '.join(result.graders) or 'default graders'})"
    )
    partial = (
        f", {result.n_unknown_partial} more with an unknown partial-credit grade (left out "
        "of their score)"
        if result.n_unknown_partial
        else ""
    )
    out.print(
        f"success {result.success_before:.3f} -> {result.success_after:.3f}; "
        f"{counted(result.n_changed, 'trial')} changed; {result.n_unknown} with an unknown "
        f"required grade{partial}",
        soft_wrap=True,
    )
    if result.n_not_applicable:
        out.print(
            f"left alone: {counted(result.n_not_applicable, 'trial')} whose tasks declare nothing "
            f"{', '.join(result.graders)} check (their outcomes stand, with no grade)",
            soft_wrap=True,
        )
    if result.n_unfinished:
        turns = result.n_unfinished_turns
        checked = (
            f"; {turns} of them checked on the checkpoints of the turns they completed, "
            "as the run checks them"
            if turns
            else ""
        )
        out.print(
            f"left ungraded, as the run left them: {counted(result.n_unfinished, 'trial')} "
            f"that ended in an error or a timeout (their outcomes stand{checked})",
            soft_wrap=True,
        )
    for name in result.idle:
        out.print(f"{name}: no task of the run declares what it needs; it graded nothing")
    for key, count in result.unknown_grades.items():
        why = result.unknown_examples.get(key, "")
        # A grader that could not decide (a judge nobody answers) is said, not hidden.
        line = f"unknown: {key} × {count}" + (f" (e.g. {shorten(why, 160)})" if why else "")
        out.print(terminal_text(line), soft_wrap=True)  # one line, to grep
    if result.n_judge_truncated:
        out.print(truncated_hint(result.n_judge_truncated), soft_wrap=True)
    if result.active == result.version:
        out.print(f"grade version {result.version} is now what the run reports")
    else:
        out.print(
            f"the run still reports grade version {result.active}; read the new one with "
            f"--grade-version {result.version} (or SOURCE#grade={result.version}), or make "
            f"it the run's with: "
            + _again(source, store, "--activate-version", str(result.version)),
            soft_wrap=True,
        )
    if result.skipped:
        out.print(f"left alone (no stored task): {', '.join(result.skipped[:10])}")


def truncated_hint(n: int) -> str:
    """What to do about judge answers cut off at their token limit (``unknown:truncated``):
    a reasoning judge spends the limit on its thinking before its verdict."""
    from agentgauge.graders.judge_client import DEFAULT_JUDGE_MAX_TOKENS
    from agentgauge.graders.rubric import MAX_TOKENS_VARIABLE

    answers = "1 judge answer was" if n == 1 else f"{n} judge answers were"
    return (
        f"{answers} cut off at the judge's token limit (unknown:truncated; a reasoning "
        f"judge's thinking counts against it): raise it, e.g. {MAX_TOKENS_VARIABLE}="
        f"{4 * DEFAULT_JUDGE_MAX_TOKENS} (default {DEFAULT_JUDGE_MAX_TOKENS}; in Python "
        "JudgeConfig(max_tokens=...)), and grade again (docs/judge.md)"
    )


def _again(source: str, store: str | None, *options: str) -> str:
    """The ``agentgauge grade`` command for the same run, as a shell runs it pasted: the
    SOURCE quoted (a store path may hold a space) and ``--store`` when it was given."""
    from agentgauge.display import shell_command

    where = ["--store", store] if store is not None else []
    return shell_command(["agentgauge", "grade", source, *where, *options])
