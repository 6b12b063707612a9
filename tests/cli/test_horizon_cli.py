from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def agentgauge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


@pytest.fixture
def trials_file(tmp_path: Path) -> Path:
    # Two agents over 4 task lengths; "good" succeeds longer than "weak".
    lines = []
    for agent, cutoff in (("good", 8.0), ("weak", 2.0)):
        for minutes in (1.0, 2.0, 4.0, 8.0, 16.0):
            for k in range(4):
                ok = minutes < cutoff or (minutes == cutoff and k < 2)
                lines.append(
                    {
                        "task_id": f"t{minutes:g}",
                        "family": f"f{minutes:g}",
                        "agent": agent,
                        "human_minutes": minutes,
                        "success": ok,
                    }
                )
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_horizon_json(trials_file: Path, tmp_path: Path) -> None:
    res = agentgauge("horizon", str(trials_file), "--bootstrap", "200", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["schema"] == "agentgauge.horizon/1"
    groups = {g["agent"]: g for g in out["groups"]}
    assert set(groups) == {"good", "weak"}
    # Successes and failures meet at 8 min (half succeed there) for "good": p50 = 8 min.
    assert groups["good"]["p50_minutes"] == pytest.approx(8.0, rel=1e-3)
    assert groups["weak"]["p50_minutes"] == pytest.approx(2.0, rel=1e-3)
    lo, hi = groups["good"]["ci95"]["0.5"]
    # With 5 families some replicates draw no failing task: the upper bound is then
    # unbounded, which JSON carries as null.
    assert lo <= 8.0 and (hi is None or hi >= 8.0)


def test_horizon_table_and_custom_q(trials_file: Path, tmp_path: Path) -> None:
    res = agentgauge(
        "horizon", str(trials_file), "--q", "0.5,0.9", "--bootstrap", "50", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert "good" in res.stdout and "p90" in res.stdout and "95% CI" in res.stdout


def test_horizon_bad_q_exits_2(trials_file: Path, tmp_path: Path) -> None:
    res = agentgauge("horizon", str(trials_file), "--q", "1.5", cwd=tmp_path)
    assert res.returncode == 2
    assert "--q" in res.stderr and "between 0 and 1" in res.stderr


def test_horizon_q_with_many_digits_is_named_in_full_and_a_repeat_refused(
    trials_file: Path, tmp_path: Path
) -> None:
    res = agentgauge(
        "horizon",
        str(trials_file),
        "--q",
        "0.9999999,0.5000001",
        "--bootstrap",
        "0",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    assert "p99.99999" in res.stdout and "p50.00001" in res.stdout and "p100" not in res.stdout
    res = agentgauge("horizon", str(trials_file), "--q", "0.5,0.50", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr == "agentgauge: error: --q: each q once, got 0.5 more than once\n"


def test_horizon_without_minutes_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task_id": "a", "success": true}\n')
    res = agentgauge("horizon", str(path), cwd=tmp_path)
    assert res.returncode == 2 and "human_minutes" in res.stderr


def test_import_metr_then_horizon(shared_data: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    src = shared_data / "metr" / "all_runs.jsonl"
    res = agentgauge(
        "import", "metr", str(src), "--store", str(db), "--run-id", "metr", cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    res = agentgauge("horizon", f"{db}:metr", "--bootstrap", "100", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    groups = {g["agent"]: g for g in json.loads(res.stdout)["groups"]}
    assert len(groups) == 11
    # Claude 3.5 Sonnet (New): p50 = 60.9 min in our fit, which the sklearn test pins.
    assert groups["Claude 3.5 Sonnet (New)"]["p50_minutes"] == pytest.approx(60.94, rel=1e-3)
    assert groups["davinci-002"]["p50_minutes"] == 0.0
    # One agent read alone through the selector gets the interval it has beside the
    # other ten (o1: [2.96, 246] in the full run, [3.42, 211] alone, by B = 1000).
    res = agentgauge("horizon", f"{db}:metr#agent=o1", "--bootstrap", "100", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    [alone] = json.loads(res.stdout)["groups"]
    assert alone["ci95"] == groups["o1"]["ci95"]


def test_horizon_of_one_task_length_is_null_in_the_table(tmp_path: Path) -> None:
    # Nine tasks of 10 minutes: the table read p50 0 [0, ∞] and p80 0 [0, 0] beside the
    # warning that the slope is not identified.
    path = tmp_path / "same.jsonl"
    path.write_text(
        "".join(
            json.dumps({"task_id": f"t{i}", "human_minutes": 10, "success": i % 2 == 0}) + "\n"
            for i in range(9)
        )
    )
    res = agentgauge("horizon", str(path), "--bootstrap", "100", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "[—, —]" in res.stdout and "[0, " not in res.stdout
    shown = " ".join(res.stdout.split())
    assert "the slope is not identified, so no horizon is" in shown
    assert "lies below the shortest task" not in shown and "slope b1" not in shown


def test_a_task_under_two_families_is_named_and_the_report_still_written(tmp_path: Path) -> None:
    # Trial 0 of t1 in family F, trial 1 in family <b>G</b>: the fit refused with
    # "family: task np.str_('t1') appears under more than one family" (no source), and
    # `report` stopped on it too, though `metrics` reads the file.
    rows = [("t1", 0, "F", True, 1), ("t1", 1, "<b>G</b>", False, 1), ("t2", 0, "G", False, 4)]
    path = tmp_path / "fam.jsonl"
    path.write_text(
        "".join(
            json.dumps({"task_id": t, "trial": k, "family": f, "success": ok, "human_minutes": m})
            + "\n"
            for t, k, f, ok, m in rows
        )
    )
    res = agentgauge("horizon", str(path), cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr == (
        f"agentgauge: error: {path}: family: task 't1' appears under more than one family "
        "('<b>G</b>', 'F'); the time horizon weighs each task within its family, so give all "
        "its trials one\n"
    )
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    res = agentgauge("report", str(path), "--html", str(html), "--markdown", str(md), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    page = html.read_text()
    assert (
        "No time horizon fitted: task &#39;t1&#39; appears under more than one family "
        "(&#39;&lt;b&gt;G&lt;/b&gt;&#39;, &#39;F&#39;)"
    ) in page
    assert "<b>G</b>" not in page
    assert md.read_text().startswith("# ")
