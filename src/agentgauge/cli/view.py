"""``agentgauge view``: the local web viewer of a store."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import DEFAULT_STORE_PATH, StoreOption
from agentgauge.viewer import DEFAULT_PORT


@app.command()
def view(
    store: StoreOption = DEFAULT_STORE_PATH,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free one).")
    ] = DEFAULT_PORT,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; beyond loopback needs --allow-remote.")
    ] = "127.0.0.1",
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Allow a non-loopback --host. The viewer has no authentication: anyone who "
            "reaches the address reads every transcript.",
        ),
    ] = False,
) -> None:
    """Browse a store's runs, tasks and transcripts, and compare two runs, in a local
    web app (read-only; binds 127.0.0.1; docs/viewer.md)."""
    from agentgauge.store import check_store_path
    from agentgauge.viewer.serve import serve  # starlette and uvicorn load for this command only

    check_store_path(store)  # a private database holds no runs to browse

    serve(store, host=host, port=port, allow_remote=allow_remote)
