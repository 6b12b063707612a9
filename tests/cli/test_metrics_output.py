"""What `agentgauge metrics` prints for odd data: intervals never read as zero width,
groups named for what they hold, empty tables left out, every dash explained."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., tuple[int, str, str]]  # the `cli` fixture (tests/conftest.py)
Run = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def run(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Run:
    """The real console entry point (conftest's ``cli``), 200 columns wide."""
    monkeypatch.setenv("COLUMNS", "200")
    return lambda args: cli(*args)


def _write(path: Path, rows: list[dict[str, object]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_tight_interval_never_prints_as_zero_width(tmp_path: Path, run: Run) -> None:
    # Five agents make one row per group, whose interval had no decimals: 1000 tasks all
    # passing printed "100–100%" (Wilson's is 99.6–100%), none passing "0–0%".
    rows = [
        {"task_id": f"t{t}", "agent": agent, "success": ok}
        for agent, ok in (("all", True), ("none", False), ("c", True), ("d", True), ("e", True))
        for t in range(1000)
    ]
    path = _write(tmp_path / "five.jsonl", rows)
    code, out, err = run(["metrics", path])
    assert code == 0, err
    assert "100–100%" not in out and "0–0%" not in out, out
    assert "99.6–100.0%" in out and "0.0–0.4%" in out, out
    # One group: the table's one decimal holds, and 0 of 10,000 is not "0.0–0.0%".
    many = [{"task_id": f"t{t}", "success": False} for t in range(10_000)]
    code, out, err = run(["metrics", _write(tmp_path / "many.jsonl", many)])
    assert code == 0, err
    assert "0.0–0.0%" not in out and "0.00–0.04%" in out, out


def test_a_group_without_the_label_is_not_all_trials(tmp_path: Path, run: Run) -> None:
    # Half the tasks name a capability: --by capability made a group "refunds" and one
    # titled "all trials", which held the other half only.
    rows = [
        {"task_id": f"t{t}", "success": t % 2 == 0, **({"capability": "refunds"} if t < 4 else {})}
        for t in range(8)
    ]
    code, out, err = run(["metrics", _write(tmp_path / "cap.jsonl", rows), "--by", "capability"])
    assert code == 0, err
    assert "all trials" not in out, out
    assert "refunds" in out and "no capability" in out, out


def test_a_by_label_no_trial_records_is_said(tmp_path: Path, run: Run) -> None:
    rows = [{"task_id": f"t{t}", "success": t % 2 == 0} for t in range(4)]
    path = _write(tmp_path / "plain.jsonl", rows)
    code, out, err = run(["metrics", path, "--by", "split"])
    assert code == 0, err
    assert "no trial records a split" in err, err
    code, out, err = run(["metrics", path, "--by", "split", "--json"])
    assert code == 0, err
    assert any("no trial records a split" in w for w in json.loads(out)["warnings"])
    # The labels the table groups by by default say nothing: a file without agents is usual.
    code, out, err = run(["metrics", path])
    assert code == 0 and "no trial records" not in err, err


def test_a_label_typed_twice_groups_once(tmp_path: Path, run: Run) -> None:
    rows = [{"task_id": "t", "agent": a, "success": True} for a in ("x", "y")]
    path = _write(tmp_path / "two.jsonl", rows)
    code, out, err = run(["metrics", path, "--by", "agent,agent", "--json"])
    assert code == 0, err
    assert json.loads(out)["by"] == ["agent"]
    code, out, err = run(["metrics", path, "--by", "agent,agent"])
    assert "x / x" not in out, out


def test_a_table_with_no_figure_is_not_printed(tmp_path: Path, run: Run) -> None:
    # No figure of reliability can be measured here: its table had a header and no row.
    rows = [{"task_id": f"t{t}", "success": True} for t in range(3)]
    code, out, err = run(["metrics", _write(tmp_path / "bare.jsonl", rows)])
    assert code == 0, err
    assert "reliability per configuration" not in out, out
    # Its notes still say why each figure is missing.
    assert "calibration (1 − ECE): no trial reports a confidence" in out, out


def test_output_tokens_nobody_recorded_say_so(tmp_path: Path, run: Run) -> None:
    rows = [{"task_id": f"t{t}", "success": True, "input_tokens": 10} for t in range(3)]
    code, out, err = run(["metrics", _write(tmp_path / "tok.jsonl", rows)])
    assert code == 0, err
    assert "10 / — (3 / 0 of 3 trials)" in out, out


def test_latency_from_some_trials_says_how_many(tmp_path: Path, run: Run) -> None:
    # p50 / p95 / mean over the 2 trials that record a latency read as over all 3.
    rows = [
        {"task_id": "a", "success": True, "latency_s": 2.0},
        {"task_id": "b", "success": False},
        {"task_id": "c", "success": True, "latency_s": 4.0},
    ]
    src = _write(tmp_path / "lat.jsonl", rows)
    code, out, err = run(["metrics", src])
    assert code == 0, err
    assert "3.0 s / 3.9 s (2 of 3 trials)" in out, out
    code, out, err = run(["metrics", src, "--json"])
    assert json.loads(out)["groups"][0]["latency_s"] == {
        "p50": 3.0,
        "p95": 3.9,
        "mean": 3.0,
        "n": 2,
    }
    # Every trial recording one: no count beside the figures.
    rows[1]["latency_s"] = 3.0
    code, out, err = run(["metrics", _write(tmp_path / "all.jsonl", rows)])
    assert code == 0, err
    assert "3.0 s / 3.9 s" in out and "of 3 trials)" not in out, out


def test_counts_of_one_are_singular(tmp_path: Path, run: Run) -> None:
    rows = [
        {"task_id": "a", "family": "F", "success": True},
        {"task_id": "b", "family": "F", "success": False},
        {"task_id": "b", "family": "F", "success": True},
    ]
    code, out, err = run(["metrics", _write(tmp_path / "one.jsonl", rows)])
    assert code == 0, err
    assert "1 family " in out and "1 families" not in out, out
    assert "1 task has 1" in out and "1 tasks" not in out, out


def test_tasks_without_a_family_are_not_counted_as_families(tmp_path: Path, run: Run) -> None:
    # Tasks a, b in family x, c in y, d and e in none: 4 clusters (each family-less task
    # is its own), which the table printed as "4 families".
    rows = [
        {"task_id": t, "agent": agent, "family": f, "success": (i + len(agent) + n) % 2 == 0}
        for agent in ("A", "BB")
        for n, (t, f) in enumerate((("a", "x"), ("b", "x"), ("c", "y"), ("d", None), ("e", None)))
        for i in range(3)
    ]
    path = _write(tmp_path / "mixed.jsonl", rows)
    code, out, err = run(["metrics", path])
    assert code == 0, err
    assert "2 families and 2 tasks without a family" in out and "4 families" not in out, out
    code, out, err = run(["metrics", path, "--json"])
    assert code == 0, err
    g = json.loads(out)["groups"][0]
    assert (g["n_clusters"], g["cluster_unit"], g["n_families"]) == (4, "family", 2)
    # The comparison record's headline names its clusters the same way.
    a = _write(tmp_path / "a.jsonl", [r for r in rows if r["agent"] == "A"])
    b = _write(tmp_path / "b.jsonl", [r for r in rows if r["agent"] == "BB"])
    code, out, err = run(["compare", a, b])
    assert code == 0, err
    assert out.count("over 2 families and 2 tasks without a family") == 2, out


def test_one_family_beside_one_task_without_is_singular(tmp_path: Path, run: Run) -> None:
    rows = [
        {"task_id": t, "family": f, "success": ok}
        for t, f in (("a", "F"), ("b", None))
        for ok in (True, False)
    ]
    code, out, err = run(["metrics", _write(tmp_path / "one.jsonl", rows)])
    assert code == 0, err
    assert "1 family and 1 task without a family" in out, out


def test_the_python_twin_warns_of_a_by_label_no_trial_records(tmp_path: Path, run: Run) -> None:
    """`agentgauge.metrics` gives the warning the command prints, from the same rule."""
    import agentgauge

    rows = [{"task_id": f"t{t}", "success": t % 2 == 0} for t in range(4)]
    path = _write(tmp_path / "plain.jsonl", rows)
    warning = "--by split: no trial records a split, so no group is split by it"
    assert warning in agentgauge.metrics(path, by="split").warnings
    assert warning in agentgauge.metrics(path, by=["agent", "split"]).to_dict()["warnings"]
    code, out, _ = run(["metrics", path, "--by", "split", "--json"])
    assert code == 0 and json.loads(out)["warnings"].count(warning) == 1, out
    assert not any("no trial records" in w for w in agentgauge.metrics(path).warnings)


def test_the_same_trials_in_another_order_give_the_same_means(tmp_path: Path, run: Run) -> None:
    # Float sums in file order gave a latency mean of 0.20000000000000004 one way and
    # 0.19999999999999998 the other; both are 0.2, the exact mean rounded once.
    rows = [
        {"task_id": f"t{i}", "success": True, "latency_s": s, "input_tokens": n}
        for i, (s, n) in enumerate(((0.1, 2**53), (0.2, 1), (0.3, 1)))
    ]
    got = []
    for name, order in (("up", rows), ("down", rows[::-1])):
        code, out, err = run(["metrics", _write(tmp_path / f"{name}.jsonl", order), "--json"])
        assert code == 0, err
        got.append(json.loads(out)["groups"][0])
    for g in got:
        assert g["latency_s"]["mean"] == 0.2
        assert g["tokens"]["input_total"] == 2**53 + 2
