"""``agentgauge show`` in the terminal: the failing cells as a table, and a trial as
its header, its transcript and its grades with their evidence.

It renders the ``agentgauge.show/1`` document (`agentgauge.report.show`), so the
terminal and ``--json`` cannot disagree. Everything from the data (task ids,
agent names, messages, tool arguments, errors, evidence) is a `Text` with
controls made visible (`agentgauge.display.terminal_text`), never markup.
Tables fit the console's width: long texts wrap inside their column.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentgauge.display import shell_command
from agentgauge.display import terminal_text as _text
from agentgauge.report.explain import shorten
from agentgauge.report.formats import DASH, counted, money, number, plural
from agentgauge.report.layout import fitted

__all__ = ["print_failures", "print_trials"]

#: Line breaks of messages, results and errors are shown as line breaks; every other
#: control character (ESC, CR, bidi overrides) is written as an escape.
_KEEP = "\n"

_VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "unknown": "bold yellow"}
_KIND_STYLE = {"tool error": "bold red", "control": "magenta", "model call": "dim"}


def _who(agent: Any, model: Any, run_model: str | None = None) -> str:
    """``agent / model``; a trial that names no model takes ``run_model``, the run's."""
    model = run_model if model is None else model
    return " / ".join(str(x) for x in (agent, model) if x is not None) or "agent not recorded"


def _classes(classes: dict[str, int]) -> str:
    ranked = sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{name} ×{n}" for name, n in ranked)


def _command(source: str, *args: str) -> Text:
    # Quoted so that a shell runs it as given, controls in a task id included.
    return _text(shell_command(["agentgauge", "show", source, *args]), "bold")


def print_failures(
    doc: dict[str, Any],
    console: Console,
    *,
    grade_version: int | None = None,
    run_model: str | None = None,
) -> None:
    """The failing cells: a count line, how to open one, and one row per cell.
    ``grade_version`` is the ``--grade-version`` the cells were read with: the command
    to open one names it, so that it shows the trial as graded here. ``run_model``
    (`agentgauge.cli.show`) names the model in the count line when the trials name
    none."""
    rows = doc["failures"]
    scope = "" if doc["variant"] is None else f" (variant {doc['variant']})"
    if not rows:
        console.print(
            _text(
                f"every trial passed{scope}: {doc['n_trials']:,} "
                f"{plural(doc['n_trials'], 'trial')} in {doc['n_cells']:,} "
                f"{plural(doc['n_cells'], 'cell')}"
            )
        )
        return
    configs = {(r["agent"], r["model"]) for r in rows}
    head = Text()
    if len(configs) == 1:
        head.append_text(_text(_who(*next(iter(configs)), run_model), "bold")).append(": ")
    head.append(
        f"{doc['n_failed_cells']:,} {plural(doc['n_failed_cells'], 'cell')} with a failure "
        f"out of {doc['n_cells']:,}{scope}; "
        f"{doc['n_flaky_cells']:,} flaky (passed and failed); "
        f"{doc['n_failed_trials']:,} of {doc['n_trials']:,} {plural(doc['n_trials'], 'trial')} "
        "did not pass"
    )
    console.print(head)
    first = rows[0]
    console.print(
        Text.assemble(
            "open one: ",
            # The row's variant too: the same trial number of the task's other variants
            # is another trial, which `--task --trial` alone would show beside it.
            _command(
                doc["source"],
                "--task",
                first["task_id"],
                "--variant",
                first["variant"],
                "--trial",
                str(first["trials"][0]),
                # Without it, the active version's grades: the trial may pass there.
                *(() if grade_version is None else ("--grade-version", str(grade_version))),
            ),
            " (without --trial: all its trials)",
        ),
        soft_wrap=True,  # one line however long: a command broken by a newline pastes wrong
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left")
    if len(configs) > 1:
        table.add_column("agent / model", overflow="fold")
    table.add_column("task", overflow="fold")
    table.add_column("variant", overflow="fold")
    table.add_column("failed", justify="right", no_wrap=True)
    table.add_column("failing trials", overflow="fold")
    table.add_column("why (count)", overflow="fold")
    for r in rows:
        cells = [
            _text(r["task_id"]),
            _text(r["variant"]),
            Text(f"{r['failed']}/{r['n']}", style="yellow" if r["flaky"] else "red"),
            _text(", ".join(str(i) for i in r["trials"])),
            _text(_classes(r["classes"]) + ("; flaky" if r["flaky"] else "")),
        ]
        if len(configs) > 1:
            cells.insert(0, _text(_who(r["agent"], r["model"])))
        table.add_row(*cells)
    # Long ids fold between columns; narrower than that, each row a block.
    console.print(fitted(console, table, head=3 if len(configs) > 1 else 2, wrap_width=24))


# --------------------------------------------------------------------------- a trial


def _seconds(x: float | None) -> str:
    return DASH if x is None else f"{number(x, 2, grouped=False)} s"


def _tokens(view: dict[str, Any]) -> str:
    tin, tout = view["input_tokens"], view["output_tokens"]
    if tin is None and tout is None:
        return "not recorded"
    shown_in = DASH if tin is None else number(tin, 0)
    return f"{shown_in} in / {DASH if tout is None else number(tout, 0)} out"


def _outcome(view: dict[str, Any]) -> Text:
    if view["passed"]:
        return Text("passed", style="bold green")
    score = "" if view["score"] is None else f" (score {view['score']:.2f})"
    if view["success"]:  # an infra error, whatever its record says (`Trial.passed`)
        score = " (its record says success)"
    return Text.assemble(("did not pass", "bold red"), score, " — ", _text(view["why"]))


def _header(view: dict[str, Any], run_model: str | None) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("outcome", _outcome(view))
    status = view["status"] + (f" ({view['error_kind']} error)" if view["error_kind"] else "")
    grid.add_row("status", _text(status))
    if view["error"]:
        grid.add_row("error", _text(view["error"], "red", keep=_KEEP))
    grid.add_row("agent / model", _text(_who(view["agent"], view["model"], run_model)))
    if view["family"]:
        grid.add_row("family", _text(view["family"]))
    cost = "cost unknown" if view["cost_usd"] is None else money(view["cost_usd"])
    calls = [  # grouped, as the tokens are: "12,345 model calls"
        f"{number(view[k], 0)} {plural(view[k], label)}"
        for k, label in (("tool_calls", "tool call"), ("model_calls", "model call"))
        if view[k] is not None
    ]
    grid.add_row(
        "spend",
        _text(
            f"{cost} · tokens {_tokens(view)} · latency {_seconds(view['latency_s'])}"
            + "".join(f" · {c}" for c in calls)
        ),
    )
    if view["expected_control"] or view["control"]:
        # A trial that did not finish records its decision only in its transcript.
        source = " (from the transcript)" if view.get("control_from") == "transcript" else ""
        took = f"took {view['control'] or DASH}{source}"
        grid.add_row("control", _text(f"expected {view['expected_control'] or DASH}, {took}"))
    if view["answer"] is not None:
        grid.add_row("answer", _text(shorten(view["answer"]), keep=_KEEP))
    return grid


def _transcript(view: dict[str, Any]) -> Table:
    table = Table(
        title=f"transcript ({counted(view['n_events'], 'event')})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("t (s)", justify="right", no_wrap=True)
    table.add_column("step", no_wrap=True)
    table.add_column("who", overflow="fold", max_width=28)
    table.add_column("content", overflow="fold", ratio=1)
    for e in view["events"]:
        style = _KIND_STYLE.get(e["kind"], "")
        content = _text(shorten(e["text"]), keep=_KEEP)
        if e["detail"]:
            if content:
                content.append("\n")
            content.append_text(_text(e["detail"], "dim"))
        table.add_row(
            str(e["index"]),
            DASH if e["t"] is None else f"{e['t']:.2f}",
            Text(e["kind"], style=style),
            _text(e["who"], style),
            content,
        )
    return table


def _grades(view: dict[str, Any]) -> Table | Text:
    """One row per grade: its verdict, then grader, score, status and evidence sentences
    (wrapped under the grader's name, not under the verdict)."""
    if not view["grades"]:
        return Text("no grades recorded (the outcome is as recorded or imported)", style="dim")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for g in view["grades"]:
        body = _text(g["grader"], "bold")
        facts = []
        if g["score"] is not None:
            facts.append(f"score {g['score']:.2f}")
        if g["status"]:
            facts.append(f"status {g['status']}")
        if g["judge_model"]:
            facts.append(f"judge {g['judge_model']}")
        if facts:
            body.append("  ")
            body.append_text(_text(", ".join(facts), "dim"))
        for line in g["lines"]:
            body.append("\n· ")
            body.append_text(_text(line, keep=_KEEP))
        grid.add_row(Text(g["verdict"].upper(), style=_VERDICT_STYLE[g["verdict"]]), body)
    return grid


def print_trials(doc: dict[str, Any], console: Console, *, run_model: str | None = None) -> None:
    """Each chosen trial: header, transcript, grades; then which trials were shown.
    ``run_model``: the model of the trials that name none (`agentgauge.cli.show`)."""
    views = doc["trials"]
    for view in views:
        title = (
            f"task {view['task_id']} · trial {view['trial']} · {view['variant']} · "
            f"{_who(view['agent'], view['model'], run_model)}"
        )
        # Not a Rule: a Rule cuts a long title to one line, this wraps it.
        console.print(Text.assemble(("\n── ", "dim"), _text(title, "bold")))
        console.print(_header(view, run_model))
        if view["events"]:
            # Content folds between words; narrower than 20 columns for it, blocks.
            console.print(fitted(console, _transcript(view), head=4, wrap_width=20))
        else:
            console.print(Text("no transcript recorded", style="dim"))
        console.print(Text("grades", style="bold"))
        console.print(_grades(view))
    _print_shown(doc, console)


def _print_shown(doc: dict[str, Any], console: Console) -> None:
    views = doc["trials"]
    which = "not passed " if doc["failed_only"] else ""
    task = _text(doc["task_id"], "bold")
    if not views:
        console.print(
            Text.assemble(
                "every selected trial of task ",
                task,
                f" passed ({counted(doc['n_selected'], 'trial')})",
            )
        )
        return
    indices = sorted({v["trial"] for v in views if v["trial"] is not None})
    line = Text.assemble(
        f"shown: {len(views)} {which}{plural(len(views), 'trial')} of task ",
        task,
        f" (of {doc['n_task_trials']}); trials {', '.join(map(str, indices))}; variants ",
        _text(", ".join(doc["variants"])),
    )
    if doc["trial"] is None and len(views) > 1:
        line.append("; narrow with --trial N or --variant V")
    console.print(line)
