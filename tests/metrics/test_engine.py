from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgauge
from agentgauge import Trial, TrialTable
from agentgauge.metrics import compute_metrics


def trial(task: str, ok: bool, **kw: Any) -> Trial:
    return Trial(task_id=task, success=ok, **kw)


def sample() -> list[Trial]:
    out = []
    for agent, rates in (("A", [1, 1, 0, 1]), ("B", [1, 0, 0, 0])):
        for t in range(3):
            for i, ok in enumerate(rates):
                out.append(
                    trial(
                        f"t{t}",
                        bool(ok) if t else True,
                        agent=agent,
                        model="m-" + agent,
                        family=f"f{t % 2}",
                        cost_usd=0.5,
                        latency_s=float(i + 1),
                    )
                )
    return out


def test_groups_in_order_with_labels() -> None:
    report = compute_metrics(TrialTable.from_trials(sample()), by=("agent",), k=(1, 2))
    d = report.to_dict()
    assert [g["agent"] for g in d["groups"]] == ["A", "B"]
    # model was not grouped by but is constant within each group, so it is shown
    assert [g["model"] for g in d["groups"]] == ["m-A", "m-B"]
    a = d["groups"][0]
    # A: t0 4/4, t1 3/4, t2 3/4 -> (1 + .75 + .75)/3 = .833333
    assert a["success_rate"]["value"] == pytest.approx(2.5 / 3)
    assert a["n_tasks"] == 3 and a["n_trials"] == 12 and a["n_clusters"] == 2
    assert a["cluster_unit"] == "family" and a["success_rate"]["se_clustered"] is not None
    assert a["cost"]["per_trial"] == 0.5 and a["cost"]["cost_of_pass"] == pytest.approx(0.6)
    assert a["latency_s"] == {"p50": 2.5, "p95": pytest.approx(4.0), "mean": 2.5, "n": 12}
    assert a["flaky_tasks"] == ["t1", "t2"]


def test_json_has_the_fixed_fields_and_no_nan() -> None:
    d = compute_metrics(TrialTable.from_trials(sample()), k=(1, 4, 5)).to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["schema"] == "agentgauge.metrics/1"
    g = d["groups"][0]
    fixed = {
        "agent", "model", "variant", "n_tasks", "n_trials", "n_clusters", "success_rate",
        "pass_at_k", "pass_hat_k", "outcome_consistency", "flaky_tasks", "infra_errors",
        "cost", "latency_s", "tokens",
    }  # fmt: skip
    assert fixed <= g.keys()
    assert {"value", "se", "se_clustered", "ci95", "ci_method"} <= g["success_rate"].keys()
    assert {"per_trial", "total", "cost_of_pass", "judge_total", "missing"} <= g["cost"].keys()
    assert {"p50", "p95", "mean"} <= g["latency_s"].keys()
    assert {"input", "output"} <= g["tokens"].keys()
    assert set(g["pass_at_k"]) == {"1", "4", "5"}
    assert g["pass_hat_k"]["5"] is None
    assert g["null_reasons"]["pass_hat_k.5"].startswith("k=5 exceeds the trials of 3 of 3")


def test_infra_errors_count_as_failures_by_default() -> None:
    trials = [
        trial("a", True),
        trial("a", True),
        trial("b", True),
        # a crashed trial that a buggy recorder marked successful is still not a success
        trial("b", True, status="error", error="ConnectionReset"),
        trial("c", False, status="timeout"),
        trial("c", False),
        trial("d", False, status="error", error_kind="agent"),  # the agent's fault
        trial("d", True),
    ]
    table = TrialTable.from_trials(trials)
    d = compute_metrics(table, by=()).to_dict()
    g = d["groups"][0]
    assert g["infra_errors"] == 2 and g["n_trials"] == 8
    # p = a 1, b .5, c 0, d .5 -> .5
    assert g["success_rate"]["value"] == pytest.approx(0.5)
    assert "2 infra-error trials counted as failures" in d["warnings"][0]

    ex = compute_metrics(table, by=(), exclude_infra_errors=True).to_dict()
    e = ex["groups"][0]
    # without the 2 infra trials: a 1, b 1, c 0, d .5 -> .625 (the inflation the flag warns about)
    assert e["n_trials"] == 6 and e["infra_errors"] == 2
    assert e["success_rate"]["value"] == pytest.approx(0.625)
    assert ex["infra_excluded"] == 2
    assert ex["warnings"][0].startswith("excluded 2 infra-error trials (of 8)")


def test_group_with_only_infra_errors_excluded_is_reported_empty() -> None:
    trials = [trial("a", True, agent="A"), trial("a", False, agent="B", status="error")]
    d = compute_metrics(TrialTable.from_trials(trials), exclude_infra_errors=True).to_dict()
    b = d["groups"][1]
    assert b["n_tasks"] == 0 and b["success_rate"]["value"] is None
    assert any("no trials left" in w for w in d["warnings"])


def test_tasks_without_family_are_their_own_clusters() -> None:
    trials = [
        trial(t, ok, family=f)
        for t, f, oks in (("a", "x", (1, 0)), ("b", "x", (1, 1)), ("c", None, (0, 0)))
        for ok in map(bool, oks)
    ]
    g = compute_metrics(TrialTable.from_trials(trials)).to_dict()["groups"][0]
    assert g["n_clusters"] == 2 and g["cluster_unit"] == "family" and g["n_families"] == 1
    # p = .5, 1, 0; mean .5; e = 0, .5, -.5; cluster sums x: .5, c: -.5 -> Σ² = .5
    # √(2/1 · .5)/3 = 1/3
    assert g["success_rate"]["se_clustered"] == pytest.approx(1 / 3)


def test_no_families_means_tasks_are_clusters() -> None:
    g = compute_metrics(TrialTable.from_trials(sample()[:12])).to_dict()["groups"][0]
    assert g["n_clusters"] == 2  # tasks t0, t2 in family f0; t1 in f1
    plain = [trial(f"t{i}", i % 3 == 0) for i in range(9)]
    g = compute_metrics(TrialTable.from_trials(plain)).to_dict()["groups"][0]
    assert g["cluster_unit"] == "task" and g["n_clusters"] == 9
    assert g["success_rate"]["se_clustered"] is None
    assert g["success_rate"]["ci_method"] == "wilson"


def test_public_api_accepts_trials_table_and_source(tmp_path: Any) -> None:
    trials = sample()
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(t.model_dump_json(exclude_defaults=True) for t in trials))
    a = agentgauge.metrics(trials, behaviour=False).to_dict()
    b = agentgauge.metrics(TrialTable.from_trials(trials)).to_dict()
    c = agentgauge.metrics(str(path), behaviour=False).to_dict()
    assert a == c
    # A table has no grades: which trials a judge graded is not known there, so its
    # judge figures say so where the trials' say no judge graded any (as `metrics` and
    # `gate` do); everything else is the same.
    for ga, gb in zip(a["groups"], b["groups"], strict=True):
        assert (ga["cost"]["judge_missing"], gb["cost"]["judge_missing"]) == (0, None)
        assert ga["null_reasons"]["cost.judge_total"].startswith("not applicable: no model")
        assert gb["null_reasons"]["cost.judge_total"] == "no trial records a judge cost"
        for g in (ga, gb):
            del g["cost"]["judge_missing"], g["null_reasons"]["cost.judge_total"]
    assert a["groups"] == b["groups"]
    assert {k: v for k, v in a.items() if k != "groups"} == {
        k: v for k, v in b.items() if k != "groups"
    }
    # Trials carry transcripts, so the default adds behaviour sections a table cannot have.
    full = agentgauge.metrics(trials).to_dict()
    assert "reliability" in full and "reliability" not in b
    assert {k: v for k, v in full.items() if k != "reliability"}["groups"][0]["success_rate"] == (
        b["groups"][0]["success_rate"]
    )


def test_rejects_bad_options() -> None:
    table = TrialTable.from_trials(sample())
    with pytest.raises(ValueError):
        compute_metrics(table, k=(0,))
    with pytest.raises(ValueError):
        compute_metrics(table, by=("colour",))


def test_by_as_text_is_split_at_its_commas() -> None:
    # compute_metrics(by="agent,model") was refused as one label of that name ("cannot
    # group by 'agent,model'"), where agentgauge.metrics and the CLI's --by split it.
    table = TrialTable.from_trials(sample())
    keys = ("agent", "model")
    assert compute_metrics(table, by=" agent, model").to_dict() == (
        compute_metrics(table, by=keys).to_dict()
    )
    assert compute_metrics(table, by="agent,model").by == keys
    assert compute_metrics(table, by="agent").by == ("agent",)
    assert compute_metrics(table, by="").by == () == compute_metrics(table, by=()).by
    with pytest.raises(ValueError, match="cannot group by 'colour'; choose from agent, model"):
        compute_metrics(table, by="agent,colour")


# ------------------------------------------------------- against a plain Python reference


def reference(rows: list[dict[str, Any]], ks: tuple[int, ...]) -> dict[str, Any]:
    """Straight loops over tasks with math.comb: the definitions of SPEC 5.1/5.3."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    fam: dict[str, str | None] = {}
    for r in rows:
        by_task[r["task_id"]].append(r["success"])
        fam.setdefault(r["task_id"], r["family"])
    p = {t: sum(v) / len(v) for t, v in by_task.items()}
    mean = sum(p.values()) / len(p)
    out: dict[str, Any] = {"value": mean}
    out["se"] = statistics.stdev(p.values()) / math.sqrt(len(p)) if len(p) > 1 else None
    if any(f is not None for f in fam.values()):
        sums: dict[str, float] = defaultdict(float)
        for t, pt in p.items():
            sums[fam[t] if fam[t] is not None else "task:" + t] += pt - mean
        big_c = len(sums)
        out["se_clustered"] = (
            math.sqrt(big_c / (big_c - 1) * sum(s * s for s in sums.values())) / len(p)
            if big_c > 1
            else None
        )
    else:
        out["se_clustered"] = None
    for k in ks:
        ns = [(len(v), sum(v)) for v in by_task.values()]
        if any(k > n for n, _ in ns):
            out[f"at{k}"] = out[f"hat{k}"] = None
            continue
        out[f"at{k}"] = sum(1 - math.comb(n - c, k) / math.comb(n, k) for n, c in ns) / len(ns)
        out[f"hat{k}"] = sum(math.comb(c, k) / math.comb(n, k) for n, c in ns) / len(ns)
    if all(len(v) >= 2 for v in by_task.values()):
        out["consistency"] = sum((2 * x - 1) ** 2 for x in p.values()) / len(p)
    else:
        out["consistency"] = None
    out["flaky"] = {t for t, v in by_task.items() if 0 < sum(v) < len(v)}
    costs = [r["cost_usd"] for r in rows]
    out["per_trial"] = None if None in costs else sum(costs) / len(costs)
    return out


trial_rows = st.lists(
    st.fixed_dictionaries(
        {
            "task_id": st.sampled_from([f"t{i}" for i in range(8)]),
            "success": st.booleans(),
            "cost_usd": st.one_of(st.none(), st.floats(0, 2)) | st.floats(0, 2),
        }
    ),
    min_size=1,
    max_size=60,
)


def _with_family(rows: list[dict[str, Any]], families: bool) -> list[dict[str, Any]]:
    fam = {f"t{i}": (None if i == 7 else f"f{i % 3}") for i in range(8)}
    return [{**r, "family": fam[r["task_id"]] if families else None} for r in rows]


@settings(max_examples=80, deadline=None)
@given(trial_rows, st.booleans())
def test_engine_equals_reference(rows: list[dict[str, Any]], families: bool) -> None:
    rows = _with_family(rows, families)
    ks = (1, 2, 3)
    table = TrialTable.from_trials([Trial(**r) for r in rows])
    g = compute_metrics(table, k=ks, by=()).to_dict()["groups"][0]
    ref = reference(rows, ks)
    sr = g["success_rate"]
    assert sr["value"] == pytest.approx(ref["value"])
    assert sr["se"] == pytest.approx(ref["se"])
    assert sr["se_clustered"] == pytest.approx(ref["se_clustered"])
    for k in ks:
        assert g["pass_at_k"][str(k)] == pytest.approx(ref[f"at{k}"])
        assert g["pass_hat_k"][str(k)] == pytest.approx(ref[f"hat{k}"])
    assert g["outcome_consistency"] == pytest.approx(ref["consistency"])
    assert set(g["flaky_tasks"]) == ref["flaky"]
    assert g["cost"]["per_trial"] == pytest.approx(ref["per_trial"])


@settings(max_examples=40, deadline=None)
@given(trial_rows, st.booleans(), st.randoms(use_true_random=False))
def test_invariant_to_trial_order(rows: list[dict[str, Any]], families: bool, rnd: Any) -> None:
    rows = _with_family(rows, families)
    # To the last digit, flaky tasks in one order: a Ray run stores the trials of a
    # local run's cells in the order they finish (its latency mean moved a digit).
    latency = [rnd.choice([0.1, 0.2, 0.7, 1e-3, 3.3]) for _ in rows]
    rows = [{**r, "latency_s": x} for r, x in zip(rows, latency, strict=True)]
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    a = compute_metrics(TrialTable.from_trials([Trial(**r) for r in rows]), by=())
    b = compute_metrics(TrialTable.from_trials([Trial(**r) for r in shuffled]), by=())
    assert a.to_dict() == b.to_dict()
    assert a.groups[0].outcome.flaky_tasks == sorted(a.groups[0].outcome.flaky_tasks)


def test_sparse_cell_counting_equals_dense() -> None:
    # A many-group table goes through the sparse path and agrees with the dense one.
    rng = np.random.default_rng(0)
    n = 4000
    table = TrialTable.from_columns(
        n,
        task_id=np.array([f"t{i}" for i in rng.integers(0, 300, n)], dtype=object),
        success=rng.random(n) < 0.6,
        agent=np.array([f"a{i}" for i in rng.integers(0, 5, n)], dtype=object),
    )
    from agentgauge.metrics import engine

    dense = compute_metrics(table, by=("agent",)).to_dict()
    old = engine._DENSE_LIMIT
    engine._DENSE_LIMIT = 0
    try:
        sparse = compute_metrics(table, by=("agent",)).to_dict()
    finally:
        engine._DENSE_LIMIT = old
    assert dense == sparse


@given(st.lists(st.integers(0, 6), min_size=1, max_size=40))
def test_first_rows_any_code_order(codes: list[int]) -> None:
    from agentgauge.metrics.engine import _first_rows

    # relabel to 0..K-1 in arbitrary (sorted) order and in first-appearance order
    for labels in (sorted(set(codes)), list(dict.fromkeys(codes))):
        arr = np.array([labels.index(c) for c in codes], dtype=np.intp)
        expected = [int(np.flatnonzero(arr == j)[0]) for j in range(len(labels))]
        assert _first_rows(arr, len(labels)).tolist() == expected


def test_per_table_arrays_are_derived_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tasks in label order, their first rows, clusters and counts depend on the table
    # alone: a second query of the same table reuses them, and reports alike.
    from agentgauge.metrics import engine

    rows = [
        Trial(
            task_id=f"t{i % 7}",
            success=bool(i % 3),
            family=None if i % 7 == 6 else f"f{i % 2}",
            agent="AB"[i % 2],
            status="error" if i == 4 else "completed",  # an infra error
            cost_usd=0.1 * i,
        )
        for i in range(40)
    ]
    fresh = [compute_metrics(TrialTable.from_trials(rows), **kw).to_dict() for kw in QUERIES]
    calls: list[int] = []
    first_rows = engine._first_rows

    def counted(codes: Any, size: int) -> Any:
        calls.append(size)
        return first_rows(codes, size)

    monkeypatch.setattr(engine, "_first_rows", counted)
    table = TrialTable.from_trials(rows)
    assert [compute_metrics(table, **kw).to_dict() for kw in QUERIES] == fresh
    assert len(calls) == 1
    # Coded anew (as a store seeds its keys): derived again, and still alike.
    uniques, codes = table.codes("task_id")
    table.seed_codes("task_id", uniques[::-1].copy(), len(uniques) - 1 - codes)
    assert [compute_metrics(table, **kw).to_dict() for kw in QUERIES] == fresh
    assert len(calls) == 2


QUERIES: list[dict[str, Any]] = [
    {},
    {"by": ()},
    {"by": (), "exclude_infra_errors": True},
    {"by": "agent", "exclude_infra_errors": True},
    {"k": (1, 5)},
]


@pytest.mark.parametrize(
    ("codes", "first"),
    [
        ([0, 0, 1, 1, 1, 2], [0, 2, 5]),  # each task's rows side by side
        ([0, 0, 1, 1, 0, 2], [0, 2, 5]),  # a task's rows apart: as many runs as codes + 1
        ([0, 1, 1, 0], [0, 1]),  # as many runs as codes + 1 again
        ([1, 1, 0, 0], [2, 0]),  # side by side, not in code order
        ([0, 1, 0, 1], [0, 1]),  # interleaved
    ],
)
def test_first_rows_of_runs(codes: list[int], first: list[int]) -> None:
    from agentgauge.metrics.engine import _first_rows

    assert _first_rows(np.array(codes, dtype=np.intp), 1 + max(codes)).tolist() == first
