"""``agentgauge runs``: list the runs in a store."""

from __future__ import annotations

from rich.table import Table

from agentgauge.cli import app
from agentgauge.cli.common import DEFAULT_STORE_PATH, JsonOption, StoreOption, console, print_json
from agentgauge.store import Store


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
    table = Table(title=f"runs in {store}")
    for col in ("run", "agent", "model", "suite", "version", "trials", "created"):
        table.add_column(col, justify="right" if col == "trials" else "left")
    for r in found:
        table.add_row(
            r.run_id,
            r.agent or "-",
            r.model or "-",
            r.suite or "-",
            (r.suite_version or "-")[:12],
            str(r.n_trials),
            r.created_at,
        )
    console().print(table)
