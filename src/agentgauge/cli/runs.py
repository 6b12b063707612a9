"""``agentgauge runs``: list the runs in a store; ``--mark RUN ROLE`` marks one as a baseline."""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from agentgauge.cli import app
from agentgauge.cli.common import (
    DEFAULT_STORE_PATH,
    JsonOption,
    StoreOption,
    console,
    err_console,
    print_json,
)
from agentgauge.display import terminal_text, visible
from agentgauge.errors import InputError

if TYPE_CHECKING:
    from agentgauge.store.claims import Claim

_COLUMNS = ("run", "agent", "model", "suite", "version", "trials", "created")


@app.command()
def runs(
    store: StoreOption = DEFAULT_STORE_PATH,
    json_out: JsonOption = False,
    mark: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--mark",
            metavar="RUN ROLE",
            help="Mark RUN as a baseline: null, previous, human or ablation (its config "
            "records the role; its trials are not touched).",
        ),
    ] = None,
    unmark: Annotated[
        str | None, typer.Option("--unmark", metavar="RUN", help="Clear RUN's baseline role.")
    ] = None,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Store anew the trials' records that another agentgauge derived (reads "
            "derive stale ones again each time, slowly); no trial, grade or metric changes.",
        ),
    ] = False,
) -> None:
    """List the runs in a store: id, agent, model, suite and version, trials, created,
    the baseline role of those marked as one, and the session writing a run now."""
    from agentgauge.components import run_model
    from agentgauge.schema import ROLE_KEY, runs_entry
    from agentgauge.store import Store, check_store_path
    from agentgauge.store.claims import writing, writing_entry

    check_store_path(store)  # a private database holds no runs to list or mark

    if refresh:
        if (mark is not None and mark[0] is not None) or unmark is not None:
            raise InputError("--refresh and --mark/--unmark: give one of them per command")
        _refresh(store, json_out)
        return

    if mark is not None and mark[0] is not None and unmark is not None:
        # Which one was meant? Doing one and dropping the other said "marked" for a run
        # the user had also asked to clear.
        raise InputError("--mark and --unmark: give one of them per command")
    if (mark is not None and mark[0] is not None) or unmark is not None:
        from agentgauge.baseline_runs import mark_baseline  # the metrics: only to mark

        run_id, role = (mark[0], mark[1]) if mark is not None and mark[0] else (unmark, None)
        assert run_id is not None
        marked = mark_baseline(store, run_id, role)
        if json_out:
            print_json(
                {
                    "schema": "agentgauge.runs.mark/1",
                    "store": str(store),
                    "run": marked.run_id,
                    "role": role,
                }
            )
        elif role is not None:
            console().print(
                terminal_text(f"run {marked.run_id} in {store} marked as {role}"), soft_wrap=True
            )
        else:
            console().print(
                terminal_text(f"run {marked.run_id} in {store}: baseline role cleared"),
                soft_wrap=True,
            )
        return
    with Store(store, readonly=True) as db:
        listed = db.list_runs_marked()
        live = writing(db.conn)
    found = [r for r, _ in listed]
    damaged = {r.run_id: why for r, why in listed if why is not None}
    roles = {r.run_id: r.config.get(ROLE_KEY) for r in found}
    if json_out:
        print_json(
            {
                "schema": "agentgauge.runs/1",
                # `damaged`: why a run's settings cannot be read back (null when they
                # can), as the viewer's list of runs says it.
                # `writing`: the live session writing the run now (null when none).
                "runs": [
                    {
                        **runs_entry(r),
                        "damaged": damaged.get(r.run_id),
                        "writing": writing_entry(live.get(r.run_id)),
                    }
                    for r in found
                ],
            }
        )
        return
    # The role column only when a run has one: most stores hold no baseline marks.
    columns = (*_COLUMNS, "role") if any(roles.values()) else _COLUMNS
    if live:  # the session writing a run, only when one is
        columns = (*columns, "writing")
    # Shown as written, controls visible: ids and names come from users and agents.
    rows = [
        tuple(
            visible(cell)
            for cell in (
                r.run_id,
                r.agent or "-",
                run_model(r) or "-",
                r.suite or "-",
                (r.suite_version or "-")[:12],
                str(r.n_trials),
                r.created_at,
                *([str(roles[r.run_id] or "-")] if "role" in columns else []),
                *([_writing_text(live.get(r.run_id))] if live else []),
            )
        )
        for r in found
    ]
    out = console()
    # One run's damaged settings do not hide the others: each is listed, and said so.
    for run_id, why in damaged.items():
        err_console().print(
            terminal_text(f"run {visible(run_id)} is damaged in {store}: {why}"), soft_wrap=True
        )
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(columns)]
    if sum(widths) + 3 * len(widths) + 1 > out.width:
        # Too narrow for a table that shows every id whole: one block per run instead.
        out.print(terminal_text(f"runs in {store}"))
        for row in rows:
            out.print(Text(row[0], style="bold"))
            detail = " · ".join(f"{h} {v}" for h, v in zip(columns[1:], row[1:], strict=True))
            out.print(Text("  " + detail), soft_wrap=True)
        return
    # Text, not markup: ids and names come from users and agents.
    table = Table(title=terminal_text(f"runs in {store}"))
    for col in columns:
        table.add_column(col, justify="right" if col == "trials" else "left", no_wrap=True)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    out.print(table)


def _refresh(store: str, json_out: bool) -> None:
    """Store anew, in one transaction, the records of the trials whose records another
    agentgauge derived (or that have none), and say what was done (docs/store.md,
    "Records")."""
    from agentgauge.store import StaleRecordsWarning, Store

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StaleRecordsWarning)  # said below, once
        with Store(store, readonly=True) as db:  # the schema before, and a store at all
            before = db.schema_version
        try:
            with Store(store, create=False) as db:
                done = db.refreshed or db.refresh_records()
                after = db.schema_version
        except KeyboardInterrupt:
            # One transaction: rolled back unless it had committed, which is read back.
            with Store(store, readonly=True) as db:
                stored = db.stale_records() is None
            err_console().print(
                "interrupted: "
                + (
                    "the records were already stored"
                    if stored
                    else "nothing stored (the store is as it was, and reads as before)"
                )
            )
            raise typer.Exit(130) from None
    seconds = round(time.perf_counter() - started, 1)
    if json_out:
        print_json(
            {
                "schema": "agentgauge.runs.refresh/1",
                "store": str(store),
                "schema_version": {"before": before, "after": after},
                "trials": 0 if done is None else done.trials,
                "reason": None if done is None else done.why,
                "seconds": seconds,
            }
        )
        return
    upgraded = f"; store upgraded from schema {before} to {after}" if after != before else ""
    said = (
        f"{store}: every trial's records are current; nothing to store{upgraded}"
        if done is None
        else f"{store}: stored the records of {done.trials} "
        f"{'trial' if done.trials == 1 else 'trials'} ({done.why}) in {seconds:.1f} s"
        f"{upgraded}; reads use them from now on"
    )
    console().print(terminal_text(said), soft_wrap=True)


def _writing_text(held: Claim | None) -> str:
    if held is None:
        return "-"
    what = f"{held.command}, " if held.command else ""
    age = max(0, round(time.time() - held.heartbeat))
    return f"{what}pid {held.pid} on {held.host}, since {held.since}, heartbeat {age} s ago"
