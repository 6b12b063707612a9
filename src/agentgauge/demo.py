"""`agentgauge demo`: the whole method on a machine with no model (docs/builtin-suite.md).

Runs the built-in customer-service suite (``builtin:retail``) and the
function-calling set (``builtin:functions``) with the four SIMULATED reference
agents — ``null``, ``oracle``, ``careful``, ``hasty`` — k trials per task on the
base instruction, its paraphrases and with injected tool faults; prints each
agent's metrics with pass^k, the behaviour tables, the validity checks and the
comparison record of ``careful`` (B) against ``hasty`` (A), whose line 5 reads
the null agent and a SIMULATED ablation (``builtin:ablation``, one planning call
and no orchestration, marked as the ablation baseline); and writes
``DIR/agentgauge.db`` and ``DIR/report.html``. Everything is seeded: a second
run prints the same numbers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from agentgauge.api import compare_sources
from agentgauge.api import metrics as agentgauge_metrics
from agentgauge.display import shell_command
from agentgauge.errors import InputError
from agentgauge.exporters import write_output
from agentgauge.harness.runner import run
from agentgauge.metrics.grades import grade_summary
from agentgauge.report.build import ReportInputs, build_report, markdown_summary
from agentgauge.report.formats import counted
from agentgauge.report.grade_table import grade_table
from agentgauge.report.html import render_html
from agentgauge.report.layout import fitted
from agentgauge.report.scope import scoped_metrics
from agentgauge.report.terminal import (
    capability_table,
    print_behaviour,
    print_metrics,
    print_recovery,
    print_variants,
)
from agentgauge.schema import Trial
from agentgauge.sources import TrialSource, open_source
from agentgauge.store import Store
from agentgauge.suite import load_suite

__all__ = ["REFERENCE_AGENTS", "DemoResult", "demo_run_ids", "run_demo"]

REFERENCE_AGENTS = ("null", "oracle", "careful", "hasty")
VARIANTS = ("base", "paraphrase", "fault:tool_error", "fault:rate_limit", "env:rename_keys")
SIMULATED_NOTE = (
    "The agents in this demo are SIMULATED reference policies (builtin:null, oracle, careful, "
    "hasty, ablation): they read each task's reference plan and make seeded errors. Their "
    "numbers show the method, not any real system."
)


def _print_fault_recovery(trials: list[Trial], con: Console, *, seed: int) -> None:
    # Few base trials meet a tool error; the fault variants make tools fail on purpose,
    # which is where recovering (or not) shows (HAL, Kapoor et al. 2025).
    faulty = [t for t in trials if t.variant.startswith("fault:")]
    if faulty:
        report = agentgauge_metrics(faulty, k=[1], by=("agent",), seed=seed)
        print_recovery(report, con, scope="fault variants: tools fail on purpose")


#: The ablation baseline (the simplest version of the same system), run on retail's base
#: variant only and marked as such, so record line 5 has it (docs/compare-and-plan.md, "Baselines").
ABLATION_RUN = "retail-ablation"


def demo_run_ids() -> dict[str, str]:
    """The runs the demo writes: run id -> the agent that made it."""
    return {
        **{
            f"{suite}-{name}": f"builtin:{name}"
            for name in REFERENCE_AGENTS
            for suite in ("retail", "functions")
        },
        ABLATION_RUN: "builtin:ablation",
    }


def _print_grader_scores(
    con: Console, retail: list[TrialSource], functions: list[TrialSource]
) -> None:
    """The executable check (functions) and response_match (retail), per agent, base variant."""
    for sources, grader, title in (
        (functions, "executable", "executable check, BFCL (functions: the fn_exec tasks)"),
        (retail, "response_match", "response_match, ROUGE-1 F vs the reference (retail, base; "
         "a score, not required for success)"),
    ):  # fmt: skip
        summaries = {
            s.trials[0].agent or s.label: grade_summary(
                [t.grades for t in base], grader, task_ids=[t.task_id for t in base]
            )
            for s in sources
            if s.trials
            for base in ([t for t in s.trials if t.variant == "base"],)
        }
        con.print(grade_table(summaries, title=title))


def _refuse_foreign_store(db: Path) -> None:
    if not db.exists():
        return
    ours = demo_run_ids()
    try:
        with Store(db, readonly=True) as store:
            # A run with no single agent (an import of several) is never the demo's.
            others = [
                r.run_id
                for r in store.list_runs()
                if r.run_id not in ours or ours[r.run_id] != r.agent
            ]
    except InputError as exc:
        raise InputError(
            f"{exc.reason}; the demo replaces its store: use another --out, "
            "or --force to replace this file",
            file=db,
        ) from None
    if others:
        shown = ", ".join(others[:5]) + (" …" if len(others) > 5 else "")
        raise InputError(
            f"holds {len(others)} run{'s' if len(others) != 1 else ''} the demo did not write "
            f"({shown}); the demo replaces its store: use another --out, "
            "or --force to delete them",
            file=db,
        )


#: How the demo's own reports begin (their title), so a second demo may replace them;
#: a report.md or report.html that does not is someone else's and is kept.
_REPORT_MARKS = {"report.md": "# agentgauge demo", "report.html": "<title>agentgauge demo"}


def _check_out_folder(out: Path) -> None:
    """Refuse, before anything runs, a ``--out`` that is not a folder the demo can make
    and write, or whose report.md / report.html the demo did not write (a user's own
    report of that name would be replaced). One line each, exit 2."""
    if out.exists() and not out.is_dir():
        raise InputError(
            "is not a folder; the demo writes agentgauge.db and its reports into a folder: "
            "give --out a folder (it is made if missing)",
            file=out,
            field="--out",
        )
    for name, mark in _REPORT_MARKS.items():
        path = out / name
        if not path.exists():
            continue
        try:
            with path.open("rb") as fh:
                head = fh.read(4096).decode("utf-8", "replace")
        except OSError as exc:
            raise InputError(
                f"cannot read it ({exc.strerror or exc}); use another --out", file=path
            ) from None
        if not path.is_file() or mark not in head:
            raise InputError(
                "was not written by the demo, which would replace it: use another --out, "
                "or --force to replace it",
                file=path,
            )


def _make_out_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file on the way, no such parent, no permission
        raise InputError(
            f"cannot make the demo's folder: {exc.strerror or exc}", file=out, field="--out"
        ) from None


@dataclass(frozen=True)
class DemoResult:
    """Where the demo wrote its outputs, and the comparison verdict it printed."""

    store: Path
    report: Path
    markdown: Path
    run_ids: list[str]
    verdict: str


def run_demo(
    out: str | Path = "agentgauge-demo",
    *,
    trials: int = 4,
    seed: int = 0,
    console: Console | None = None,
    progress: bool | None = None,
    force: bool = False,
) -> DemoResult:
    """Run the demo into ``out``, replacing an earlier demo's store there.

    A store there that holds runs the demo did not write (docs/store.md tells
    users to add their runs to it), or a report.md / report.html there that is not
    an earlier demo's, is refused with `InputError` unless ``force``: the demo never
    deletes someone's results silently. An ``out`` that is a file, or that cannot be
    made, is refused before anything runs.
    """
    con = console or Console(
        highlight=False, markup=False, width=None if sys.stdout.isatty() else 120
    )
    out = Path(out)
    db = out / "agentgauge.db"
    if out.exists() and not out.is_dir():
        _check_out_folder(out)  # even with --force: a file is not a folder
    if not force:
        _check_out_folder(out)
        _refuse_foreign_store(db)
    _make_out_folder(out)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)

    retail = load_suite("builtin:retail")
    functions = load_suite("builtin:functions")
    con.print(Rule("agentgauge demo"))
    con.print(Text(SIMULATED_NOTE, style="yellow"))
    con.print(
        f"suite {retail.name} ({len(retail.tasks)} tasks, version {retail.version[:12]}) and "
        f"{functions.name} ({len(functions.tasks)} tasks); {counted(trials, 'trial')} per task and "
        f"variant; variants: {', '.join(VARIANTS)} (paraphrase = each of a task's rewordings)"
    )
    run_ids: list[str] = []
    say = Console(stderr=True)

    def notify(message: str) -> None:
        say.print(Text(message))

    # With ``notify`` given, run() neither warns of the reference agents' seeded errors
    # (the demo's point, not news) nor reads every run's trials again to summarise them:
    # that read widened the gap between runs where a Ctrl-C found no run to stop.
    with Store(db) as store:
        for name in REFERENCE_AGENTS:
            for suite, variants in ((retail, VARIANTS), (functions, ("base",))):
                run_id = f"{suite.name.removeprefix('builtin:')}-{name}"
                run(
                    suite,
                    f"builtin:{name}",
                    trials=trials,
                    variants=list(variants),
                    store=store,
                    run_id=run_id,
                    seed=seed,
                    progress=progress,
                    notify=notify,
                )
                run_ids.append(run_id)
        run(
            retail,
            "builtin:ablation",
            trials=trials,
            # A baseline is compared on the base variant (record line 5); its
            # robustness is not what it is there for, and the store stays small.
            variants=["base"],
            store=store,
            run_id=ABLATION_RUN,
            seed=seed,
            progress=progress,
            baseline_role="ablation",
            notify=notify,
        )
        run_ids.append(ABLATION_RUN)
        # The store is the demo's own (a foreign one was refused above), written once:
        # hand the free space in its pages back to the disk, as VACUUM does for any
        # store (docs/store.md), so the folder it leaves is as small as it can be.
        store.conn.execute("VACUUM")

    retail_sources = [open_source(f"{db}:retail-{n}") for n in REFERENCE_AGENTS]
    retail_trials = [t for s in retail_sources for t in s.trials]
    ks = [1, 2, 4]
    # The tables follow the scope rule of every face (`agentgauge.report.scope`), so the
    # terminal and report.html print the same figure for the same scope.
    scoped = scoped_metrics(retail_trials, k=ks, by=("agent",), seed=seed)
    con.print(Rule(f"builtin:retail — outcome ({scoped.base_scope})"))
    print_metrics(scoped.base, con, title=f"outcome per agent ({scoped.base_scope})")
    print_variants(scoped.per_variant, con, title="outcome per variant (success rate ± se, trials)")
    con.print(Rule("builtin:retail — behaviour"))
    print_behaviour(scoped.base, con, scope=scoped.base_scope, reliability=scoped.all)
    _print_fault_recovery(retail_trials, con, seed=seed)

    con.print(Rule("builtin:functions — tool-call AST matching (base variant: the only one run)"))
    fn_sources = [open_source(f"{db}:functions-{n}") for n in REFERENCE_AGENTS]
    fn_trials = [t for s in fn_sources for t in s.trials]
    fn = scoped_metrics(fn_trials, k=[1], by=("agent",), seed=seed)
    print_behaviour(fn.base, con, scope=fn.base_scope, reliability=fn.all)
    _print_grader_scores(con, retail_sources, fn_sources)

    con.print(Rule("is careful better than hasty? (paired over tasks, Miller 2024)"))
    result = compare_sources(
        f"{db}:retail-hasty", f"{db}:retail-careful", deployment_k=4, seed=seed
    )
    con.print(Text(result.record.to_text()))
    if result.record.capabilities:
        table = capability_table(
            result.record.capabilities, title="per-capability table (record line 6)"
        )
        con.print(fitted(con, table))  # as `compare` prints it: whole at any width
    con.print(Text.assemble("\n", (result.comparison.verdict, "bold")))

    by_name = dict(zip(REFERENCE_AGENTS, retail_sources, strict=True))
    inputs = ReportInputs(
        sources=retail_sources + fn_sources,
        title="agentgauge demo — builtin:retail and builtin:functions with simulated agents",
        ks=ks,
        record=[f"{ln.title}: {ln.text}" for ln in result.record.lines],
        comparison=result.comparison.to_dict(),
        notes=[SIMULATED_NOTE],
        seed=seed,
        compared=(by_name["hasty"], by_name["careful"]),
    )
    data = build_report(inputs)
    html_path = out / "report.html"
    md_path = out / "report.md"
    # Both rendered before either is written, each written whole (beside it, then
    # renamed): an error or Ctrl-C leaves the last demo's files, never half of one.
    html, md = render_html(data), markdown_summary(data)
    for path, text in ((html_path, html), (md_path, md)):
        write_output(path, text, option="--out", force=True, what="report")
    con.print(Rule())
    # Paths as plain text: a folder named like Rich markup ("[bold]") is printed as it is.
    # Commands quoted as the shell reads them: a folder "my demo" is one argument.
    for line in (
        f"store:  {db}   (try: {shell_command(['agentgauge', 'runs', '--store', str(db)])})",
        f"report: {html_path}  and  {md_path}",
        f"why trials failed: {shell_command(['agentgauge', 'show', f'{db}:retail-hasty'])}",
        f"browse the runs:   {shell_command(['agentgauge', 'view', '--store', str(db)])}",
    ):
        con.print(Text(line), soft_wrap=True)
    return DemoResult(db, html_path, md_path, run_ids, result.comparison.verdict)
