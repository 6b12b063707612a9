"""Run every benchmark, print one table of their figures, write benchmarks/RESULTS.md.

``make bench`` calls this. Each ``bench_*.py`` of the folder (new ones are picked up
by their name) runs in its own subprocess, so that one's memory and imports do not
weigh on the next; its detail prints as it runs, and its rows (`_report.Row`) come
back as JSON. Then one table of every row: our figure, the reference measured in the
same run, the ratio (above 1: ours is better), the goal and whether it was met.
RESULTS.md adds the machine and its load before and after, since every figure moves
with them.

    python benchmarks/run_all.py                  # all, full sizes; writes RESULTS.md
    python benchmarks/run_all.py --smoke          # all, reduced; writes nothing
    python benchmarks/run_all.py --only bench_metrics --only horizon
    python benchmarks/run_all.py --python bench_graders=/tmp/bfclvenv/bin/python

``--python NAME=PYTHON`` runs one benchmark with another interpreter, one whose
environment has a reference installed that agentgauge's does not (bfcl-eval drags
in every provider SDK); agentgauge's ``src`` is put on its path. A benchmark that
fails (non-zero exit, or no rows) does not stop the others; run_all then exits 1
and names it. Timings never fail a run: a goal not met is a row that says so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from _report import ROWS_ENV, Row, cells, from_json, table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass
class Outcome:
    """What one benchmark's subprocess gave: its rows, or why it failed."""

    script: Path
    python: str
    seconds: float = 0.0
    rows: list[Row] = field(default_factory=list)
    error: str | None = None


def discover(folder: Path, only: list[str]) -> list[Path]:
    scripts = sorted(folder.glob("bench_*.py"))
    if not scripts:
        raise ValueError(f"no bench_*.py in {folder}")
    if not only:
        return scripts
    wanted = {name.removesuffix(".py").removeprefix("bench_") for name in only}
    chosen = [s for s in scripts if s.stem.removeprefix("bench_") in wanted]
    missing = wanted - {s.stem.removeprefix("bench_") for s in chosen}
    if missing:
        names = ", ".join(sorted(f"bench_{m}.py" for m in missing))
        raise ValueError(f"no {names} in {folder}")
    return chosen


def _pythonpath(foreign: bool) -> str:
    """The benchmarks' folder (for `_report`) and, for another interpreter, agentgauge's
    ``src`` (its environment does not have agentgauge installed)."""
    parts = [str(HERE), *([str(ROOT / "src")] if foreign else [])]
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


def run_one(script: Path, python: str, smoke: bool, timeout: float | None) -> Outcome:
    outcome = Outcome(script, python)
    with tempfile.TemporaryDirectory(prefix="agentgauge-bench-") as tmp:
        rows_file = Path(tmp) / "rows.json"
        env = {
            **os.environ,
            ROWS_ENV: str(rows_file),
            "PYTHONPATH": _pythonpath(python != sys.executable),
            "PYTHONUNBUFFERED": "1",
        }
        command = [python, str(script), *(["--smoke"] if smoke else [])]
        start = time.perf_counter()
        try:
            # The script's detail prints as it runs (stdout and stderr inherited).
            proc = subprocess.run(command, env=env, cwd=ROOT, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            outcome.error = f"did not finish in {timeout:.0f} s"
        except OSError as exc:
            outcome.error = f"could not start {python}: {exc}"
        else:
            if proc.returncode != 0:
                outcome.error = f"exit code {proc.returncode}"
            elif not rows_file.is_file():
                outcome.error = "exited 0 but reported no rows"
            else:
                outcome.rows = from_json(json.loads(rows_file.read_text(encoding="utf-8")))
        outcome.seconds = time.perf_counter() - start
    return outcome


def _rows(outcome: Outcome) -> str:
    return f"{len(outcome.rows)} row{'' if len(outcome.rows) == 1 else 's'}"


# ------------------------------------------------------------------ the machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> str:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return "unknown"
    return f"{pages * size / 2**30:.1f} GiB"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return proc.stdout.strip()


def _commit() -> str:
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    # Figures measured on code that differs from the commit say so.
    changed = _git("status", "--porcelain", "--untracked-files=no", "--", "src", "benchmarks")
    return f"{commit} (with uncommitted changes)" if changed else commit


def machine() -> dict[str, str]:
    return {
        "CPU": _cpu_model(),
        "cores": str(os.cpu_count()),
        "RAM": _ram_gib(),
        "OS": platform.platform(),
        "Python": sys.version.split()[0],
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "pyarrow": _version("pyarrow"),
        "agentgauge commit": _commit(),
    }


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


# ------------------------------------------------------------------ RESULTS.md


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def results_markdown(
    outcomes: list[Outcome],
    info: dict[str, str],
    load_before: str,
    load_after: str,
    started: dt.datetime,
    command: str,
) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"Written by `{command}` on {started:%Y-%m-%d %H:%M} UTC. Every figure moves with "
        "the machine and its load; each ratio is taken within one run, ours and the "
        "reference side by side, and reads how many times better ours is (above 1: ours "
        "is better, whether a time or a rate). What each benchmark measures, and how, is "
        "in its script's docstring (`benchmarks/`).",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
        *(f"| {key} | {_cell(value)} |" for key, value in info.items()),
        f"| load average (1 / 5 / 15 min) before | {load_before} |",
        f"| load average (1 / 5 / 15 min) after | {load_after} |",
        "",
        "## Figures",
        "",
        "| benchmark | figure | ours | reference | ratio | goal | met |",
        "|---|---|---:|---|---:|---|---|",
    ]
    for outcome in outcomes:
        for r in outcome.rows:
            lines.append("| " + " | ".join(_cell(c) for c in cells(r)) + " |")
    lines += [
        "",
        "## Runs",
        "",
        "| script | interpreter | wall time | result |",
        "|---|---|---:|---|",
    ]
    for o in outcomes:
        result = o.error or _rows(o)
        lines.append(f"| `{o.script.name}` | `{o.python}` | {o.seconds:,.0f} s | {result} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the command


def _interpreters(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, python = pair.partition("=")
        if not sep or not name or not python:
            raise ValueError(f"--python wants NAME=PYTHON, got {pair!r}")
        out[name.removesuffix(".py").removeprefix("bench_")] = python
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="reduced sizes; writes nothing")
    parser.add_argument("--dir", type=Path, default=HERE, help="where the bench_*.py are")
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="run only this one"
    )
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="NAME=PYTHON",
        help="run benchmark NAME with interpreter PYTHON",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the results here (default: benchmarks/RESULTS.md; none with --smoke)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds per benchmark")
    args = parser.parse_args(argv)
    try:
        interpreters = _interpreters(args.python)
        scripts = discover(args.dir, args.only)
        discover(args.dir, list(interpreters))  # a --python for no benchmark is a typo
    except ValueError as exc:
        parser.error(str(exc))  # exit code 2
    out = args.out if args.out is not None or args.smoke else HERE / "RESULTS.md"
    # Piped output gets a width of 160, not rich's 80 (COLUMNS, when set, decides).
    wide = sys.stdout.isatty() or "COLUMNS" in os.environ
    console = Console(highlight=False, width=None if wide else 160)

    started = dt.datetime.now(dt.UTC)
    load_before = load()
    outcomes = []
    for script in scripts:
        python = interpreters.get(script.stem.removeprefix("bench_"), sys.executable)
        console.rule(f"{script.name}{' --smoke' if args.smoke else ''} ({python})")
        outcome = run_one(script, python, args.smoke, args.timeout)
        said = outcome.error or _rows(outcome)
        console.print(f"{script.name}: {said}, {outcome.seconds:.1f} s")
        outcomes.append(outcome)
    load_after = load()

    title = "agentgauge benchmarks" + (
        " (smoke: reduced sizes, figures not comparable)" if args.smoke else ""
    )
    console.print(table([r for o in outcomes for r in o.rows], title=title))
    console.print(f"load average before {load_before}, after {load_after}")
    if out is not None:
        command = "python benchmarks/run_all.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        text = results_markdown(
            outcomes, machine(), load_before, load_after, started, command.strip()
        )
        out.write_text(text, encoding="utf-8")
        console.print(f"wrote {out}")
    failed = [o for o in outcomes if o.error]
    for o in failed:
        console.print(f"FAILED: {o.script.name}: {o.error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
