"""``agentgauge collect --port P``: receive OTLP/HTTP traces into a run, one trial
per trace (docs/formats/otel.md, "Receiving traces live")."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agentgauge._version import __version__
from agentgauge.cli import app
from agentgauge.cli.common import DEFAULT_STORE_PATH, StoreOption, console
from agentgauge.cli.span_options import (
    OutcomeEvaluation,
    OutcomesFile,
    PricesOption,
    ScoreAttr,
    SuccessAttr,
    SuiteOption,
    TaskAttr,
    TrialAttr,
)
from agentgauge.errors import AgentgaugeError, InputError
from agentgauge.report.formats import counted

if TYPE_CHECKING:
    from agentgauge.agents.prices import PriceTable
    from agentgauge.collect.server import Receiver
    from agentgauge.importers.spans import Outcome, TraceOptions
    from agentgauge.schema import Task
    from agentgauge.suite import Suite

SOURCE = "collect:otlp-http"


@app.command()
def collect(
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free port)."),
    ] = 4318,
    store: StoreOption = DEFAULT_STORE_PATH,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id", help="Run to write into (default: collect-YYYYMMDDTHHMMSSZ, UTC)."
        ),
    ] = None,
    task_attr: TaskAttr = None,
    trial_attr: TrialAttr = None,
    success_attr: SuccessAttr = None,
    score_attr: ScoreAttr = None,
    outcome_evaluation: OutcomeEvaluation = None,
    outcomes: OutcomesFile = None,
    suite: SuiteOption = None,
    prices: PricesOption = None,
    settle: Annotated[
        float,
        typer.Option(
            "--settle",
            min=0,
            metavar="SECONDS",
            help="Wait this long after a trace's root span before storing its trial, for "
            "its spans and event records still on the way (SDKs export logs and spans "
            "apart).",
        ),
    ] = 0.0,
    max_held_mib: Annotated[
        int,
        typer.Option(
            "--max-held-mib",
            min=1,
            metavar="MIB",
            help="Hold at most this many MiB of open traces' spans and event records (as "
            "sent, inflated); a request that would hold more is answered 503 with "
            "Retry-After, and the exporter sends it again later.",
        ),
    ] = 512,
) -> None:
    """Receive traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON; GenAI event
    records on POST /v1/logs) and store each trace as a trial when its root span ends;
    Ctrl-C stores open traces as incomplete trials and stops."""
    from agentgauge.agents.prices import default_prices
    from agentgauge.importers.spans import TraceOptions, outcomes_record, read_outcomes
    from agentgauge.store import check_store_path, utc_now
    from agentgauge.suite import load_suite

    check_store_path(store)  # before anything is read or bound: the trials would be lost

    defaults = TraceOptions()
    options = TraceOptions(
        task_attr=task_attr or defaults.task_attr,
        trial_attr=trial_attr or defaults.trial_attr,
        success_attr=success_attr or defaults.success_attr,
        score_attr=score_attr or defaults.score_attr,
        outcome_evaluation=outcome_evaluation,
    )
    rows = read_outcomes(outcomes) if outcomes else None
    # Read now, so that a bad file stops the receiver before it listens; genai-prices'
    # snapshot is loaded by the first call that needs it.
    table = default_prices(prices, warm=False)
    config: dict[str, object] = {"attributes": options.__dict__}
    if outcomes and rows is not None:
        config["outcomes"] = outcomes_record(outcomes, rows)
    loaded = load_suite(suite, include_heldout=True) if suite else None
    tasks = {t.id: t for t in loaded.tasks} if loaded else {}
    from agentgauge.sources import check_run_id

    check_run_id(run_id)
    run_id = run_id or "collect-" + re.sub(r"[^0-9TZ]", "", utc_now())[:15] + "Z"
    out = console()
    created = not Path(store).exists()
    from agentgauge.store.removal import remove_if_empty

    try:
        receiver, dropped = _receive(
            store, run_id, port, options, rows, tasks, suite, loaded, out,
            config=config, settle_s=settle, max_held_bytes=max_held_mib * 1024 * 1024,
            prices=table,
        )  # fmt: skip
    except InputError:
        if created:  # a port in use (or a bad run id) leaves no empty store behind,
            # and one that another session filled meanwhile is kept
            remove_if_empty(Path(store))
        raise
    if dropped and created:  # the store this command made holds nothing either
        remove_if_empty(Path(store))
    n_events = receiver.events_stored
    events = f" and {counted(n_events, 'event record')}" if n_events else ""
    out.print(
        f"stored {counted(receiver.trials_written, 'trial')} from "
        f"{counted(receiver.spans_stored, 'span')}{events} in run {run_id}",
        soft_wrap=True,
    )
    for line in dropped_lines(receiver):
        out.print(line, soft_wrap=True, markup=False, highlight=False)
    if dropped:
        out.print(f"run {run_id} holds no trial: not kept", soft_wrap=True, markup=False)
    if receiver.traces_joined:
        from agentgauge.store import Store

        with Store(store, readonly=True) as db:
            graded = {run for run in receiver.traces_joined.values() if db.has_tasks(run)}
        for line in joined_lines(store, receiver.traces_joined, graded):
            out.print(line, soft_wrap=True, markup=False, highlight=False)


def dropped_lines(receiver: Receiver) -> list[str]:
    """What was answered as accepted (held for an open trace) and then not stored:
    counted apart, so the summary's figures are what the store holds."""
    spans, events = receiver.spans_dropped, receiver.buffer.events_dropped
    what = [counted(n, noun) for n, noun in ((spans, "span"), (events, "event record")) if n]
    if not what:
        return []
    one = spans + events == 1
    were = "its trace was open was" if one else "their traces were open were"
    return [f"{' and '.join(what)} accepted while {were} not stored (stderr says why)"]


def joined_lines(store: str, traces: dict[str, str], graded: set[str]) -> list[str]:
    """What to tell about spans added to trials already stored (``traces``: trace id to
    the trial's run). The runs in ``graded`` hold their tasks: their grades were given
    before the spans came, and count them only once the run is re-graded. A run without
    (a ``collect`` or ``import otel`` run with no suite) took its outcomes from its
    traces: there is nothing to re-grade, and `agentgauge grade` would refuse it."""
    if not traces:
        return []
    joined = Counter(traces.values())
    total = len(traces)
    runs = ", ".join(f"{run} ({n})" for run, n in sorted(joined.items()))
    predate = "; their grades predate those spans" if graded & set(joined) else ""
    lines = [
        f"added the spans of {counted(total, 'trace')} to trials "
        f"already stored, by run: {runs}{predate}"
    ]
    for run in sorted(joined):
        if run in graded:
            quoted = shlex.quote(f"{store}:{run}")
            lines.append(f"  re-grade to count them: agentgauge grade {quoted} --activate")
        else:
            lines.append(
                f"  {run}: nothing to re-grade (no stored tasks: its outcomes came from its "
                "traces); the added calls count in its calls, tokens and cost already"
            )
    return lines


def _receive(
    store: str,
    run_id: str,
    port: int,
    options: TraceOptions,
    rows: dict[str, Outcome] | None,
    tasks: dict[str, Task],
    suite: str | None,
    loaded: Suite | None,
    out: Console,
    *,
    config: dict[str, object],
    settle_s: float = 0.0,
    max_held_bytes: int,
    prices: PriceTable | None = None,
) -> tuple[Receiver, bool]:
    """The receiver once stopped, and whether the run it made was deleted: a run this
    session made that holds no trial when it stops goes, as a `run` that saved none
    does, unless another session has opened it since (a second `collect --run-id`
    writing into it). A run that was there before this session is kept, empty or not."""
    from agentgauge.collect import collect as receive
    from agentgauge.schema import Run
    from agentgauge.store import Store, utc_now

    def refuse_another(existing: Run | None) -> None:
        if existing is not None and existing.source != SOURCE:
            raise InputError(
                f"run {run_id!r} exists and was not made by collect; choose another --run-id",
                file=store,
                field="--run-id",
            )

    opened: list[str] = []  # this session's mark on the run, when it made the run
    with Store(store) as db:
        existing = db.get_run(run_id)
        refuse_another(existing)
        if existing is None:  # before the port is taken, as the check above
            db.refuse_lookalike_run(run_id)

        def ready(bound: int) -> None:
            # Only once the port is ours: a port in use leaves the store as it was.
            # Looked for again and made in one write transaction: a second `collect`
            # started at the same moment on the same new run may have made it since
            # the look above, and then this one writes into it too (two sessions may
            # share a run).
            with db.transaction():
                now = db.get_run(run_id)
                refuse_another(now)
                if now is None:
                    db.create_run(
                        Run(
                            run_id=run_id,
                            suite=loaded.name if loaded else None,
                            suite_version=loaded.version if loaded else None,
                            created_at=utc_now(),
                            source=SOURCE,
                            agentgauge_version=__version__,
                            config=config,
                        )
                    )
                    if tasks:
                        db.add_tasks(run_id, tasks.values())
                    opened.append(db.mark_opened(run_id))
                else:  # another session's run: its maker must not delete it from under us
                    db.mark_opened(run_id)
            out.print(
                f"listening on http://127.0.0.1:{bound}/v1/traces (and /v1/logs) into run "
                f"{run_id} in {store}; Ctrl-C stops",
                soft_wrap=True,
            )
            sys.stdout.flush()  # a test or a supervisor reads the port from a pipe

        try:
            receiver = asyncio.run(
                receive(
                    db,
                    run_id,
                    port=port,
                    options=options,
                    outcomes=rows,
                    tasks=tasks,
                    ready=ready,
                    settle_s=settle_s,
                    max_held_bytes=max_held_bytes,
                    prices=prices,
                )
            )
        except BaseException:
            if opened:
                with contextlib.suppress(AgentgaugeError, sqlite3.Error):
                    db.delete_run_if_empty(run_id, opened=opened[0])
            raise
        dropped = bool(opened) and db.delete_run_if_empty(run_id, opened=opened[0])
        return receiver, dropped
