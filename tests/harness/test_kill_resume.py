"""SIGKILL a running `agentgauge run` at random points, resume, and check every cell."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from tests.conftest import stored_trials

from agentgauge.store import Store

N_TASKS, TRIALS = 12, 10
VARIANTS = 3  # base + 2 paraphrases


def write_suite(path: Path) -> None:
    tasks = [
        {
            "id": f"task-{i:02d}",
            "family": f"fam-{i % 4}",
            "human_minutes": i + 1,
            "environment": "agentgauge.testing.worlds:make_counter_env",
            "instruction": f"please add {i}",
            "paraphrases": [f"could you add {i}", f"increase it by {i}"],
            "expectations": {"final_state": {"counter": i}},
        }
        for i in range(N_TASKS)
    ]
    path.write_text(yaml.safe_dump({"name": "kill-test", "tasks": tasks}))


@pytest.mark.slow
def test_killed_runs_resume_to_exactly_one_trial_per_cell(tmp_path: Path) -> None:
    suite, db = tmp_path / "suite.yaml", tmp_path / "runs.db"
    write_suite(suite)
    total = N_TASKS * TRIALS * VARIANTS
    base_cmd = [
        sys.executable,
        "-m",
        "agentgauge",
        "run",
        str(suite),
        "--agent",
        "agentgauge.testing.worlds:counting_agent",
        "--store",
        str(db),
        "--run-id",
        "killme",
        "--no-progress",
    ]
    first = [
        *base_cmd,
        "--trials",
        str(TRIALS),
        "--variants",
        "base,paraphrase",
        "--concurrency",
        "4",
        "--seed",
        "5",
    ]
    rng = random.Random(20261130)
    kills = 0
    for attempt in range(3):
        proc = subprocess.Popen(
            first if attempt == 0 else base_cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        before = stored_trials(db)
        deadline = time.monotonic() + 60
        while stored_trials(db) == before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # wait until this process is writing trials
        time.sleep(rng.uniform(0.0, 0.4))  # then kill it at a random point
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=30)
        n = stored_trials(db)
        print(f"attempt {attempt}: {before} -> {n} of {total} trials")
        assert before <= n <= total
    assert kills >= 1, "the run finished before it could be killed; make it longer"
    assert stored_trials(db) < total or kills < 3
    # Resume with only the run id: settings come from the stored header.
    done = subprocess.run(base_cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{total} trials" in done.stdout

    with Store(db) as store:
        assert store.integrity_check() == "ok"
        trials = store.trials("killme")
        header = store.get_run("killme")
    assert header is not None and header.config["trials"] == TRIALS and header.config["seed"] == 5
    cells = Counter((t.task_id, t.trial, t.variant) for t in trials)
    expected = {
        (f"task-{i:02d}", k, v)
        for i in range(N_TASKS)
        for k in range(TRIALS)
        for v in ("base", "paraphrase:1", "paraphrase:2")
    }
    assert set(cells) == expected
    assert all(c == 1 for c in cells.values())
    assert all(t.status == "completed" and t.success for t in trials)
    # Every trial's transcript was committed with it (no half-written trials).
    assert all([e.type for e in t.events][:2] == ["message", "tool_call"] for t in trials)
