"""Exporters: a stored run -> a file other tools read.

`export_run` reads one run (``DB:RUN``, its active grade version) and writes it
as the JSONL interchange format (`agentgauge.exporters.jsonl`, which
``agentgauge import jsonl`` reads back) or as OTLP JSON
(`agentgauge.exporters.otel`). The file is written beside its destination and
renamed into place, so a failed export leaves no half-written file.
`export_parquet` writes a directory of Parquet files (`agentgauge.parquet`),
read column-wise from the store, as atomically.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentgauge.errors import InputError
from agentgauge.schema import Run, Trial
from agentgauge.sources import parse_source
from agentgauge.store import Store

if TYPE_CHECKING:
    from agentgauge.parquet.write import ExportCounts

__all__ = ["EXPORT_FORMATS", "export_parquet", "export_run", "run_source"]

Writer = Callable[[Run, list[Trial]], str]


def _jsonl(run: Run, trials: list[Trial]) -> str:
    from agentgauge.exporters.jsonl import trials_jsonl

    return trials_jsonl(trials)


def _otel(run: Run, trials: list[Trial]) -> str:
    from agentgauge.exporters.otel import otlp_json, run_to_otlp

    return otlp_json(run_to_otlp(run, trials)) + "\n"


EXPORT_FORMATS: dict[str, Writer] = {"jsonl": _jsonl, "otel": _otel}
"""Format name -> writer of the file's text."""


def export_run(source: str, fmt: str, out: str | Path) -> int:
    """Write run ``source`` (``DB:RUN``) to ``out`` in format ``fmt``; returns the trial count."""
    if fmt not in EXPORT_FORMATS:
        raise InputError(
            f"unknown export format {fmt!r}; choose from {', '.join(EXPORT_FORMATS)}",
            field="format",
        )
    path, run_id = run_source(source)
    with Store(path, readonly=True) as db:
        run = db.require_run(run_id)
        trials = db.trials(run_id)
    text = EXPORT_FORMATS[fmt](run, trials)
    _write_atomically(Path(out), text)
    return len(trials)


def export_parquet(
    source: str, out: str | Path, *, grade_version: int | None = None, force: bool = False
) -> ExportCounts:
    """Write run ``source`` (``DB:RUN``) as a Parquet export directory ``out``
    (docs/parquet.md), with the outcomes and grades of ``grade_version`` (default:
    the active one). An existing non-empty ``out`` is refused unless ``force``,
    which replaces an earlier export only."""
    from agentgauge.parquet.write import write_parquet

    path, run_id = run_source(source)
    return write_parquet(path, run_id, out, grade_version=grade_version, force=force)


def run_source(source: str) -> tuple[Path, str]:
    """The store and run of ``source``: ``DB:RUN``, or ``DB`` when the store holds one
    run; refused when it holds several (which one to export is the user's choice) or
    none."""
    path, run_id = parse_source(source)
    if run_id is not None:
        return path, run_id
    with Store(path, readonly=True) as db:
        runs = [r.run_id for r in db.list_runs()]
    if len(runs) == 1:
        return path, runs[0]
    if not runs:
        raise InputError("this store holds no run to export", file=source)
    recent = ", ".join(runs[-5:])
    raise InputError(
        f"this store holds {len(runs)} runs: name the one to export as DB:RUN, e.g. "
        f"{source}:{runs[-1]} (recent runs: {recent})",
        file=source,
    )


def _write_atomically(out: Path, text: str) -> None:
    folder = out.parent if str(out.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{out.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write here: {exc.strerror}", file=out) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
