"""Every command's tables on a narrow terminal (COLUMNS=40 and 60, stdout not a
terminal, as in a pipe): no figure cut with "…", no number broken across lines, no
column dropped. Where a table cannot fit, its rows are printed as blocks of
``header: value`` lines (docs/reports.md, "Narrow terminals")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import Cli

AGENTS = ("builtin:careful-with-a-long-name", "openai:gpt-4o-mini-2024-07-18")


@pytest.fixture
def trials_file(tmp_path: Path) -> Path:
    """Two agents x 10 tasks x 2 trials, with capabilities, task lengths, costs and a
    transcript whose model call gives its token counts (``1,020 in / 64 out``)."""
    rows = []
    for a, agent in enumerate(AGENTS):
        for t in range(10):
            for k in range(2):
                rows.append(
                    {
                        "task_id": f"t{t}", "trial": k, "agent": agent, "family": f"f{t % 5}",
                        "capability": f"capability_with_a_long_name_{t % 3}",
                        "human_minutes": 2.0 ** (t % 5), "success": (t + k) % (a + 2) == 0,
                        "cost_usd": 0.0123, "latency_s": 1.5,
                        "events": [
                            {"t": 0.0, "type": "message", "role": "user", "content": "hi"},
                            {"t": 0.1, "type": "model_call", "model": "m", "input_tokens": 1020,
                             "output_tokens": 64, "cost_usd": 0.000191, "latency_s": 0.58},
                        ],
                    }
                )  # fmt: skip
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _narrow(cli: Cli, monkeypatch: pytest.MonkeyPatch, width: int, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = cli(*args)
    assert code == 0, err
    assert "…" not in out  # nothing cut
    # Lines longer than the width are the ones printed whole on purpose (the record, the
    # command to open a trial, the flipped tasks), each a paragraph of its own.
    return out


@pytest.mark.parametrize("width", [40, 60])
def test_metrics_of_a_long_agent_name_keeps_every_figure_whole(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, trials_file: Path, width: int
) -> None:
    out = _narrow(cli, monkeypatch, width, "metrics", f"{trials_file}#agent={AGENTS[0]}")
    # At 40 columns the one group's table was cut: "builtin:careful-with…", "success
    # rat…", "none (5 families ali…".
    assert AGENTS[0] in out  # the group is named, whole
    assert "95% CI: 29.9–70.1%" in out or "29.9–70.1%" in out
    assert any("cost / trial" in line and "$0.0123" in line for line in out.splitlines())
    assert max(len(line) for line in out.splitlines()) <= width


@pytest.mark.parametrize("width", [40, 60])
def test_the_capability_table_keeps_its_names_and_figures(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, trials_file: Path, width: int
) -> None:
    out = _narrow(
        cli, monkeypatch, width, "compare", f"{trials_file}#agent={AGENTS[0]}",
        f"{trials_file}#agent={AGENTS[1]}",
    )  # fmt: skip
    table = out[out.index("per-capability table") :]
    for i in range(3):  # no capability column given no width
        assert f"capability_with_a_long_name_{i}" in table
    # Each difference is whole on its line: "B − A: -25.0 pp".
    diffs = [line for line in table.splitlines() if line.strip().startswith("B − A:")]
    assert len(diffs) == 3 and all(line.rstrip().endswith(" pp") for line in diffs)


@pytest.mark.parametrize("width", [40, 60])
def test_horizon_names_each_group_and_its_horizons(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, trials_file: Path, width: int
) -> None:
    out = _narrow(cli, monkeypatch, width, "horizon", str(trials_file), "--bootstrap", "20")
    # At 40 columns the agent and p50/p80 columns were given no width: two rows of
    # runs/tasks and slopes, with no name and no horizon.
    for agent in AGENTS:
        assert agent in out
    assert out.count("p50 [95% CI]: ") == 2 and out.count("p80 [95% CI]: ") == 2


def test_show_never_breaks_a_number(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, trials_file: Path
) -> None:
    out = _narrow(
        cli, monkeypatch, 40, "show", f"{trials_file}#agent={AGENTS[0]}", "--task", "t1",
        "--trial", "0",
    )  # fmt: skip
    # The model call's line was folded to a 4-column cell: "1,02" / "0 in".
    assert "1,020 in / 64 out tokens" in out
    failures = _narrow(cli, monkeypatch, 40, "show", f"{trials_file}#agent={AGENTS[0]}")
    assert "failed: 1/2" in failures and "failing trials: 0" in failures


def test_an_ascii_terminal_keeps_a_table_of_wide_names_aligned(tmp_path: Path) -> None:
    # Rich lays 日本 out two columns wide; written as one "?" each, every border after
    # it moved left: "| ?mega-?????-?? |" was two columns short of its column.
    rows = [
        {"task_id": f"t{t}", "trial": 0, "agent": agent, "success": t % 2 == 0}
        for agent in ("Ωmega-агент-日本", "plain")
        for t in range(4)
    ]
    trials = tmp_path / "t.jsonl"
    trials.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", str(trials), "--by", "agent"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = proc.stdout.decode("ascii")  # every byte is ASCII
    assert "?mega-?????-????" in out  # two "?" for each of 日 and 本
    table = [line.rstrip() for line in out.splitlines() if line.startswith(("|", "+"))]
    assert len(table) > 5 and len({len(line) for line in table}) == 1


def test_calibrate_per_rater_figures_are_whole(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.cli.test_calibrate import several_raters, write

    labels = write(tmp_path / "labels.jsonl", several_raters())
    out = _narrow(cli, monkeypatch, 40, "calibrate", str(labels), "--bootstrap", "100")
    # κ and agreement read "-0.3…" and "0.5…" at 40 columns.
    assert "κ: -0.333" in out and "95% CI: [-0.500, 0.000]" in out and "agreement: 0.500" in out
