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
    # davinci-002 never succeeds: its horizon lies below the shortest task it ran, 2 min
    # (it read 0.0).
    davinci = groups["davinci-002"]
    assert davinci["p50_minutes"] is None and davinci["task_minutes"][0] == 2.0
    assert (davinci["p50_status"], davinci["p50_bound_minutes"]) == ("below", 2.0)
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


def test_a_task_under_two_families_is_refused_by_every_command_at_its_line(
    tmp_path: Path,
) -> None:
    # Trial 0 of t1 in family F, trial 1 in family <b>G</b>: only `horizon` refused it,
    # while `metrics` clustered t1 by its first trial's family. A task belongs to one
    # family (the trial record's `family`, docs/metrics.md), so the file is refused.
    rows = [("t1", 0, "F", True, 1), ("t1", 1, "<b>G</b>", False, 1), ("t2", 0, "G", False, 4)]
    path = tmp_path / "fam.jsonl"
    path.write_text(
        "".join(
            json.dumps({"task_id": t, "trial": k, "family": f, "success": ok, "human_minutes": m})
            + "\n"
            for t, k, f, ok, m in rows
        )
    )
    line = (
        f"agentgauge: error: {path}:2: family: task 't1' is in family '<b>G</b>' here and in "
        "family 'F' (line 1); a task belongs to one family, the cluster its intervals "
        "resample: give all its trials one\n"
    )
    for command in (["horizon"], ["metrics"], ["report", "--markdown", "r.md"]):
        res = agentgauge(command[0], str(path), *command[1:], cwd=tmp_path)
        assert (res.returncode, res.stdout, res.stderr) == (2, "", line), command
    res = agentgauge("import", "jsonl", str(path), "--store", "s.db", cwd=tmp_path)
    assert res.returncode == 2 and not (tmp_path / "s.db").exists()


def test_a_stored_or_exported_task_under_two_families_is_refused_too(tmp_path: Path) -> None:
    # A store written before the loader refused it (or by Python): the fit refused with
    # "family: task np.str_('t1') appears under more than one family" (no source), and
    # the other commands read it; they refuse it alike now, naming the trials, and an
    # export of it is refused at its row.
    from agentgauge.schema import Run, Trial
    from agentgauge.store import Store, utc_now
    from agentgauge.store.rows import trial_rows

    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="r", created_at=utc_now()))
        for t, k, f in (("t1", 0, "F"), ("t1", 1, "<b>G</b>"), ("t2", 0, "G")):
            trial = Trial(task_id=t, trial=k, family=f, success=k == 0, human_minutes=1)
            # Past the write's family check (`Store.add_trial` refuses t1's second
            # family now), as a store written before it holds them.
            with store.transaction():
                store._insert_rest(store._insert_trial_rows([trial_rows("r", trial)]))
    reason = (
        "task 't1' is in family '<b>G</b>' {here} and in family 'F' ({first}); a task "
        "belongs to one family, the cluster its intervals resample: give all its trials one\n"
    )
    stored = f"agentgauge: error: {db}: family: run 'r': " + reason.format(
        here="(trial 1)", first="trial 0"
    ).replace(
        "\n",
        f" (export it with agentgauge export {db}:r --jsonl FILE, give the task's trials one "
        "family there, and import FILE again)\n",
    )
    for command in (["horizon"], ["metrics"], ["report", "--html", "r.html"], ["show"]):
        res = agentgauge(command[0], f"{db}:r", *command[1:], cwd=tmp_path)
        assert (res.returncode, res.stdout, res.stderr) == (2, "", stored), command
    res = agentgauge("export", f"{db}:r", "--parquet", "x", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    res = agentgauge("metrics", "x", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr == "agentgauge: error: x/trials.parquet: family: row 2: " + reason.format(
        here="here", first="row 1"
    )


def test_one_bootstrap_replicate_is_no_interval(tmp_path: Path) -> None:
    # Ten task lengths, three runs each, success falling with length.
    rows = [
        {"task_id": f"t{t}", "agent": "a", "human_minutes": 2.0**t, "success": (i + t) % 10 < 9 - t}
        for t in range(10)
        for i in range(3)
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = agentgauge("horizon", str(path), "--bootstrap", "1", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    [group] = json.loads(res.stdout)["groups"]
    # Was {"0.5": [38.2, 38.2], ...}: a "95% interval" of zero width, from one
    # replicate, that did not even hold the point estimate (17.9).
    assert group["horizons"]["0.5"] is not None
    for q in ("0.5", "0.8"):
        assert group["ci95"][q] == [None, None]
    assert any("one bootstrap replicate" in w for w in group["warnings"]), group["warnings"]
    table = agentgauge("horizon", str(path), "--bootstrap", "1", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "[—, —]" in table.stdout
    # Two replicates do make an interval, with width.
    res = agentgauge("horizon", str(path), "--bootstrap", "2", "--json", cwd=tmp_path)
    [group] = json.loads(res.stdout)["groups"]
    lo, hi = group["ci95"]["0.5"]
    assert lo is not None and hi is not None and lo < hi


def test_more_replicates_than_memory_holds_is_one_line(trials_file: Path, tmp_path: Path) -> None:
    # A few zeros too many: the replicates' draws (255 TiB) cannot be allocated. Was a
    # numpy traceback ending in "_ArrayMemoryError: Unable to allocate 72.8 TiB".
    res = agentgauge("horizon", str(trials_file), "--bootstrap", "1000000000000", cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.startswith("agentgauge: error: --bootstrap: 1000000000000 bootstrap")
    assert "do not fit in memory" in res.stderr and len(res.stderr.splitlines()) == 1
