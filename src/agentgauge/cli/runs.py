"""``agentgauge runs``: list the runs in a store."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from agentgauge.cli import app
from agentgauge.cli.common import DEFAULT_STORE_PATH, JsonOption, StoreOption, console, print_json
from agentgauge.display import terminal_text, visible
from agentgauge.store import Store

_COLUMNS = ("run", "agent", "model", "suite", "version", "trials", "created")


@app.command()
def runs(store: StoreOption = DEFAULT_STORE_PATH, json_out: JsonOption = False) -> None:
    """List the runs in a store: id, agent, model, suite and version, trials, created."""
    with Store(store, readonly=True) as db:
        found = db.list_runs()
    if json_out:
        print_json(
            {
                "schema": "agentgauge.runs/1",
                "runs": [
                    {
                        "run_id": r.run_id,
                        "agent": r.agent,
                        "model": r.model,
                        "suite": r.suite,
                        "suite_version": r.suite_version,
                        "n_trials": r.n_trials,
                        "created_at": r.created_at,
                    }
                    for r in found
                ],
            }
        )
        return
    # Shown as written, controls visible: ids and names come from users and agents.
    rows = [
        tuple(
            visible(cell)
            for cell in (
                r.run_id,
                r.agent or "-",
                r.model or "-",
                r.suite or "-",
                (r.suite_version or "-")[:12],
                str(r.n_trials),
                r.created_at,
            )
        )
        for r in found
    ]
    out = console()
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(_COLUMNS)]
    if sum(widths) + 3 * len(widths) + 1 > out.width:
        # Too narrow for a table that shows every id whole: one block per run instead.
        out.print(terminal_text(f"runs in {store}"))
        for row in rows:
            out.print(Text(row[0], style="bold"))
            detail = " · ".join(f"{h} {v}" for h, v in zip(_COLUMNS[1:], row[1:], strict=True))
            out.print(Text("  " + detail), soft_wrap=True)
        return
    # Text, not markup: ids and names come from users and agents.
    table = Table(title=terminal_text(f"runs in {store}"))
    for col in _COLUMNS:
        table.add_column(col, justify="right" if col == "trials" else "left", no_wrap=True)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    out.print(table)
