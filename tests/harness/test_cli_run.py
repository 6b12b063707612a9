"""`agentgauge run` on the command line: success, resume, and bad input (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"


def agentgauge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True, timeout=120
    )


def test_run_the_example_suite_with_the_cmd_example_then_resume(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    agent = f"cmd:{sys.executable} {ROOT / 'examples' / 'cmd_agent.py'}"
    args = ["run", str(SUITE), "--agent", agent, "--store", db, "--run-id", "r"]
    first = agentgauge(*args, "--trials", "2", "--variants", "base,paraphrase:1")
    assert first.returncode == 0, first.stderr
    # 3 tasks x 2 trials x 2 variants; the example solves all of them
    assert "run r in" in first.stdout and "12 trials, success 100.0%" in first.stdout
    again = agentgauge(*args)
    assert again.returncode == 0 and "12 trials" in again.stdout
    listed = json.loads(agentgauge("runs", "--store", db, "--json").stdout)
    (entry,) = listed["runs"]
    # The suite file's declared name, not the path it was run by.
    assert entry["suite"] == "counter" and entry["n_trials"] == 12 and entry["suite_version"]


def test_a_suite_run_by_two_spellings_of_its_path_is_recorded_by_its_name(
    tmp_path: Path,
) -> None:
    # The name was ignored: each run recorded the path as typed, so the same file
    # was two suites in `runs` and in the comparison record.
    (tmp_path / "my-suite.yaml").write_text(SUITE.read_text())
    db = str(tmp_path / "s.db")
    for run_id, spec in (("a", "my-suite.yaml"), ("b", "./my-suite.yaml")):
        out = subprocess.run(
            [sys.executable, "-m", "agentgauge", "run", spec, "--store", db, "--run-id", run_id,
             "--agent", "agentgauge.testing.worlds:counting_agent"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
    listed = json.loads(agentgauge("runs", "--store", db, "--json").stdout)
    assert [r["suite"] for r in listed["runs"]] == ["counter", "counter"]
    compared = agentgauge("compare", f"{db}:a", f"{db}:b")
    assert compared.returncode == 0, compared.stderr
    assert "suite counter @ " in compared.stdout and "suites differ" not in compared.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--backend", "spark"], "unknown backend 'spark'; use local or ray"),
        (
            ["--base-url", "http://127.0.0.1:1/v1"],
            "--base-url: applies to openai: agents, not agentgauge.testing.worlds:counting_agent",
        ),
        (["--variants", "base,fault:gremlins"], "unknown variant 'fault:gremlins'"),
        (["--trials", "0"], "--trials: must be a positive integer, got 0"),
        # Named, then not set: every request went without a key, with no word.
        (
            ["--api-key-env", "AGENTGAUGE_TEST_UNSET_KEY"],
            "the environment variable AGENTGAUGE_TEST_UNSET_KEY is not set",
        ),
    ],
)
def test_bad_options_exit_2_with_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    db = tmp_path / "s.db"
    out = agentgauge(
        "run",
        str(SUITE),
        "--agent",
        "agentgauge.testing.worlds:counting_agent",
        "--store",
        str(db),
        *extra,
    )
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--trials", "0"], "--trials: must be a positive integer, got 0"),
        (["--concurrency", "0"], "--concurrency: must be a positive integer, got 0"),
        (["--variants", "basee"], "--variants: unknown variant 'basee'"),
        # An empty value ran the default design (base), as if none were given.
        (["--variants", ""], "--variants: at least one variant is needed (e.g. base)"),
        # Named the breaker's internal fields: breaker.first, breaker.window.
        (["--breaker-first", "-1"], "--breaker-first: must be a whole number, 0 to turn"),
        (["--breaker-window", "-2"], "--breaker-window: must be a whole number, 0 to turn"),
        (["--ray-address", "auto"], "--ray-address: applies to --backend ray only"),
        (["--backend", "spark"], "--backend: unknown backend 'spark'; use local or ray"),
    ],
)
def test_a_refused_design_option_writes_no_store(
    tmp_path: Path, extra: list[str], line: str
) -> None:
    # Each was checked as the run's header was written: a 94 KB store was left behind,
    # and the message named "trials", not the option.
    db = tmp_path / "t0.db"
    out = agentgauge("run", str(SUITE), "--agent", "builtin:oracle", "--store", str(db), *extra)
    assert out.returncode == 2
    (said,) = out.stderr.strip().splitlines()
    assert said.startswith(f"agentgauge: error: {line}")
    assert not db.exists()


def test_bad_suite_file_names_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks:\n  - id: a\n    instruction: hi\n  - id: b\n    instrution: typo\n")
    out = agentgauge(
        "run",
        str(bad),
        "--agent",
        "agentgauge.testing.worlds:noop_agent",
        "--store",
        str(tmp_path / "s.db"),
    )
    assert out.returncode == 2
    # The file and the offending field are named (the exact wording is the loader's).
    assert str(bad) in out.stderr and "instru" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
