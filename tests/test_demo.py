"""End to end: the demo on the built-in suite with the simulated reference agents."""

from __future__ import annotations

import io
import shlex
from pathlib import Path

import pytest
from rich.console import Console
from tests.conftest import stored_trials

import agentgauge
from agentgauge.demo import demo_run_ids, run_demo
from agentgauge.store import Store


def _run(out: Path) -> tuple[str, dict[str, dict[str, object]]]:
    buf = io.StringIO()
    result = run_demo(out, trials=2, console=Console(file=buf, width=160), progress=False)
    groups = {}
    for name in ("null", "oracle", "careful", "hasty"):
        report = agentgauge.metrics(f"{result.store}:retail-{name}", k=(1, 2), by=())
        groups[name] = report.to_dict()["groups"][0]
    return buf.getvalue(), groups


def test_demo_shows_the_method_and_is_reproducible(tmp_path: Path) -> None:
    text, groups = _run(tmp_path / "a")
    rate = {name: g["success_rate"]["value"] for name, g in groups.items()}
    assert rate["null"] < 0.05
    assert rate["oracle"] > 0.95
    assert rate["careful"] > rate["hasty"]
    for name in ("careful", "hasty"):
        # Noisy agents are inconsistent: succeeding on both attempts is rarer than on one.
        assert groups[name]["pass_hat_k"]["2"] < groups[name]["pass_hat_k"]["1"]
    assert "B is better" in text
    assert "SIMULATED" in text
    # Record line 5: the baselines the demo has (null, previous = A, the marked
    # ablation) with their figures, and the human baseline named as missing.
    flat = " ".join(text.split())
    assert "previous system: A (" in flat and "ablation: " in flat
    assert "retail-ablation" in flat and "human baseline: not run" in flat
    # The executable check (functions) and response_match (retail) have their tables.
    assert "executable check, BFCL" in text and "response_match, ROUGE-1 F" in text
    out = tmp_path / "a"
    # The last lines say where to look next, with a run the demo wrote.
    assert f"agentgauge show {out / 'agentgauge.db'}:retail-hasty" in text
    assert f"agentgauge view --store {out / 'agentgauge.db'}" in text
    html = (out / "report.html").read_text()
    assert "Comparison record" in html and "builtin:careful" in html
    with Store(out / "agentgauge.db") as db:
        assert {r.run_id for r in db.list_runs()} >= {"retail-null", "retail-careful"}
        assert db.integrity_check() == "ok"
    # Seeded: a second run prints the same numbers (paths aside).
    text2, groups2 = _run(tmp_path / "b")
    assert groups2 == groups
    assert text2.replace(str(tmp_path / "b"), "X") == text.replace(str(tmp_path / "a"), "X")


def test_demo_refuses_a_store_holding_runs_it_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from agentgauge.cli import main
    from agentgauge.schema import Run
    from agentgauge.store import utc_now

    out = tmp_path / "demo"
    out.mkdir()
    with Store(out / "agentgauge.db") as db:
        db.create_run(Run(run_id="mine", agent="openai:gpt-x", created_at=utc_now()))
        # A run with a demo id but another agent is not the demo's either.
        db.create_run(Run(run_id="retail-hasty", agent="my-agent", created_at=utc_now()))
        # Nor is an import of several agents (no single agent recorded).
        db.create_run(Run(run_id="imported", agent=None, created_at=utc_now()))
    err = io.StringIO()
    monkeypatch.setattr(sys, "argv", ["agentgauge", "demo", "--out", str(out), "--trials", "1"])
    monkeypatch.setattr(sys, "stderr", err)
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1
    assert "3 runs the demo did not write (" in lines[0]
    assert all(name in lines[0] for name in ("mine", "retail-hasty", "imported"))
    assert "--force" in lines[0]
    with Store(out / "agentgauge.db") as db:
        assert sorted(r.run_id for r in db.list_runs()) == ["imported", "mine", "retail-hasty"]


def test_demo_with_force_replaces_a_store_holding_other_runs(tmp_path: Path) -> None:
    from agentgauge.schema import Run
    from agentgauge.store import utc_now

    out = tmp_path / "my demo"  # a space: the printed commands must quote it
    out.mkdir()
    with Store(out / "agentgauge.db") as db:
        db.create_run(Run(run_id="mine", created_at=utc_now()))
    printed = io.StringIO()
    quiet = Console(file=printed, width=400)
    run_demo(out, trials=1, console=quiet, progress=False, force=True)
    with Store(out / "agentgauge.db") as db:
        runs = {r.run_id: r.agent for r in db.list_runs()}
    # Only the demo's own runs are left, so running it again there needs no --force.
    assert runs == demo_run_ids()
    # The next steps it prints paste into a shell as one argument per path.
    lines = printed.getvalue().splitlines()
    show = next(ln for ln in lines if ln.startswith("why trials failed:"))
    assert shlex.split(show.split(":", 1)[1]) == [
        "agentgauge",
        "show",
        f"{out}/agentgauge.db:retail-hasty",
    ]
    view = next(ln for ln in lines if ln.startswith("browse the runs:"))
    assert shlex.split(view.split(":", 1)[1]) == [
        "agentgauge",
        "view",
        "--store",
        f"{out}/agentgauge.db",
    ]


@pytest.mark.slow
def test_ctrl_c_says_what_was_saved_and_how_to_go_on(tmp_path: Path) -> None:
    # It printed "agentgauge: error: interrupted: 417 trials saved" (the trials of the
    # run under way only), with no word of what to do next.
    import os
    import shlex
    import signal
    import subprocess
    import sys
    import time

    from agentgauge.demo import _refuse_foreign_store

    out = tmp_path / "my demo"
    db = out / "agentgauge.db"

    argv = [sys.executable, "-m", "agentgauge", "demo", "--out", str(out), "--seed", "3",
            "--no-progress"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))  # fmt: skip
    deadline = time.monotonic() + 120
    # Past the first run (retail-null, 1,000-odd trials), so the count spans runs.
    while stored_trials(db) < 1500 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the demo ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (line,) = err.strip().splitlines()
    assert not line.startswith("agentgauge: error")
    head, _, command = line.partition("; the demo does not resume, it starts over: ")
    saved = stored_trials(db)
    # "(run retail-careful unfinished)" when a run was under way, as it mostly is.
    assert head.startswith(
        f"interrupted: {saved} trial{'' if saved == 1 else 's'} saved in {db}"
    ), line
    assert shlex.split(command) == ["agentgauge", "demo", "--out", str(out), "--seed", "3"]
    _refuse_foreign_store(db)  # what it left is the demo's: running it again is not refused
