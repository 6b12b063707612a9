"""Prompt, fault and environment robustness (SPEC 5.2) with the paired bootstrap SE."""

from __future__ import annotations

import numpy as np
import pytest

from agentgauge.metrics.robustness import robustness
from agentgauge.table import TrialTable


def _table(rows: list[tuple[str, str, int]], family: list[str | None] | None = None) -> TrialTable:
    return TrialTable.from_columns(
        len(rows),
        task_id=[r[0] for r in rows],
        variant=[r[1] for r in rows],
        success=[bool(r[2]) for r in rows],
        family=family if family is not None else [None] * len(rows),
    )


ROWS = [
    # base, two trials each: t1 = 1, t2 = 1, t3 = 0.5, t4 = 0 → acc_base = 2.5/4 = 0.625
    *[("t1", "base", 1), ("t1", "base", 1), ("t2", "base", 1), ("t2", "base", 1)],
    *[("t3", "base", 1), ("t3", "base", 0), ("t4", "base", 0), ("t4", "base", 0)],
    # paraphrase:1: 1, 0, 1, 0 (0.5) ; paraphrase:2: 1, 0, 0, 0 (0.25)
    *[("t1", "paraphrase:1", 1), ("t2", "paraphrase:1", 0)],
    *[("t3", "paraphrase:1", 1), ("t4", "paraphrase:1", 0)],
    *[("t1", "paraphrase:2", 1), ("t2", "paraphrase:2", 0)],
    *[("t3", "paraphrase:2", 0), ("t4", "paraphrase:2", 0)],
    # fault:timeout on t1 and t2 only: 0 and 1
    ("t1", "fault:timeout", 0),
    ("t2", "fault:timeout", 1),
]


def test_prompt_robustness_by_hand() -> None:
    # Pooled paraphrases per task: t1 = 1, t2 = 0, t3 = 0.5, t4 = 0 → acc = 1.5/4 = 0.375
    # value = min(0.375 / 0.625, 1) = 0.6; paraphrase:1 alone 0.5/0.625 = 0.8, :2 0.25/0.625 = 0.4
    r = robustness(_table(ROWS), "prompt")
    assert r.acc_base == pytest.approx(0.625) and r.acc_perturbed == pytest.approx(0.375)
    assert r.value == pytest.approx(0.6)
    assert r.per_variant == {"paraphrase:1": pytest.approx(0.8), "paraphrase:2": pytest.approx(0.4)}
    assert r.variants == ["paraphrase:1", "paraphrase:2"] and r.n_tasks == 4
    assert r.se is not None and r.se > 0


def test_fault_robustness_uses_tasks_run_both_ways() -> None:
    # Shared tasks t1, t2: base (1 + 1)/2 = 1, fault (0 + 1)/2 = 0.5 → 0.5
    r = robustness(_table(ROWS), "fault")
    assert r.value == pytest.approx(0.5) and r.n_tasks == 2


def test_missing_variant_and_zero_base() -> None:
    r = robustness(_table(ROWS), "environment")
    assert r.value is None and r.reason == "no env:* variant trials"
    zero = robustness(_table([("a", "base", 0), ("a", "env:rename", 1)]), "environment")
    assert zero.value is None and zero.reason == "base accuracy is 0 on the 1 shared task"
    with pytest.raises(ValueError, match="kind"):
        robustness(_table(ROWS), "typo")


def test_bootstrap_is_paired() -> None:
    # The perturbed column equals the base one task by task: every paired replicate
    # has ratio exactly 1, so the SE is 0. An unpaired resampling would scatter it.
    rng = np.random.default_rng(3)
    ok = rng.random(40) < 0.6
    rows = [(f"t{i}", "base", int(o)) for i, o in enumerate(ok)]
    rows += [(f"t{i}", "env:rename", int(o)) for i, o in enumerate(ok)]
    r = robustness(_table(rows), "environment", n_boot=500)
    assert r.value == 1.0 and r.se == 0.0


def test_bootstrap_se_agrees_with_delta_method() -> None:
    # Ratio R = P̄/B̄ over T tasks; delta method: Var(R) ≈ Var(P − R·B)/(T·B̄²) with the
    # task-level sd (ddof = 1). The bootstrap SE (plug-in) should agree within ~10%.
    rng = np.random.default_rng(7)
    t = 300
    theta = rng.beta(2, 1.5, size=t)
    base = rng.binomial(4, theta)
    pert = rng.binomial(4, 0.7 * theta)
    rows = []
    for i in range(t):
        rows += [(f"t{i}", "base", int(k < base[i])) for k in range(4)]
        rows += [(f"t{i}", "fault:rate_limit", int(k < pert[i])) for k in range(4)]
    r = robustness(_table(rows), "fault", n_boot=4000, seed=1)
    pb, pp = base / 4, pert / 4
    ratio = pp.mean() / pb.mean()
    delta_se = np.std(pp - ratio * pb, ddof=1) / np.sqrt(t) / pb.mean()
    assert r.value == pytest.approx(ratio)
    assert r.se == pytest.approx(delta_se, rel=0.1)
    # Reproducible from its seed, different under another seed.
    assert robustness(_table(rows), "fault", n_boot=4000, seed=1).se == r.se
    assert robustness(_table(rows), "fault", n_boot=4000, seed=2).se != r.se


def test_families_are_resampled_when_every_task_has_one() -> None:
    # Families of perfectly correlated tasks: clustering makes the SE larger than
    # pretending the tasks are independent.
    rng = np.random.default_rng(5)
    rows, fams = [], []
    for f in range(30):
        b, p = int(rng.random() < 0.7), int(rng.random() < 0.5)
        for j in range(4):
            rows += [(f"f{f}t{j}", "base", b), (f"f{f}t{j}", "paraphrase:1", p)]
            fams += [f"f{f}", f"f{f}"]
    clustered = robustness(_table(rows, fams), "prompt", n_boot=2000)
    plain = robustness(_table(rows), "prompt", n_boot=2000)
    assert clustered.value == plain.value
    assert clustered.se is not None and plain.se is not None
    assert clustered.se > 1.5 * plain.se


def test_one_task_has_no_se_and_says_why() -> None:
    # One task, base 2/2, paraphrase 1/2: robustness 0.5/1 = 0.5. Resampling one task
    # gives the same ratio every time, an SD of 0 that is no certainty: no SE, a reason.
    rows = [("A", "base", 1), ("A", "base", 1), ("A", "paraphrase:1", 1)]
    r = robustness(_table([*rows, ("A", "paraphrase:1", 0)]), "prompt")
    assert r.value == 0.5 and r.n_tasks == 1
    assert r.se is None and r.se_reason == "one task: no spread to estimate"


def test_tasks_alike_have_an_se_of_zero_shown_as_their_count() -> None:
    # Three tasks, each base 1/1 and paraphrase 1/2: every replicate's ratio is 0.5/1,
    # an SE of 0; the reliability table shows the tasks behind it, not "± 0.000".
    from agentgauge.report.formats import estimate

    rows = [
        row
        for t in "ABC"
        for row in ((t, "base", 1), (t, "paraphrase:1", 1), (t, "paraphrase:1", 0))
    ]
    r = robustness(_table(rows), "prompt")
    assert (r.value, r.se, r.n_tasks, r.se_reason) == (0.5, 0.0, 3, None)
    assert estimate(r.to_dict()) == "0.500 (each of 3)"


def test_accuracies_are_exact_task_averages() -> None:
    # Base successes (1, 1, 1, 2, 2, 2) of 3 trials: 9 of 18, 0.5 exactly, as the metrics'
    # rate (the float average was 0.49999999999999994); paraphrase passes 2 of 6 tasks.
    rows = [
        (f"t{i}", "base", int(j < k)) for i, k in enumerate([1, 1, 1, 2, 2, 2]) for j in range(3)
    ]
    rows += [(f"t{i}", "paraphrase:1", int(i < 2)) for i in range(6)]
    r = robustness(_table(rows), "prompt")
    assert r.acc_base == 0.5 and r.acc_perturbed == 1 / 3
    assert r.value == 2 / 3 and r.per_variant == {"paraphrase:1": 2 / 3}


def test_a_null_ratio_of_one_variant_says_why() -> None:
    # paraphrase:1 shares task a only, whose base is 0; paraphrase:3 shares no task.
    rows = [("a", "base", 0), ("b", "base", 1), ("a", "paraphrase:1", 1)]
    rows += [("b", "paraphrase:2", 1), ("c", "paraphrase:3", 1)]
    r = robustness(_table(rows), "prompt")
    assert r.per_variant == {"paraphrase:1": None, "paraphrase:2": 1.0, "paraphrase:3": None}
    assert r.per_variant_reasons == {
        "paraphrase:1": "base accuracy is 0 on its 1 shared task",
        "paraphrase:3": "no task shared with base",
    }
    no_base = robustness(_table([("a", "paraphrase:1", 1)]), "prompt")
    assert no_base.value is None and no_base.reason == "no base-variant trial"


def test_a_ratio_capped_in_every_resample_does_not_read_as_tasks_alike() -> None:
    # Task a goes 0 → 1, task b 1 → 1: every resample with a base above 0 is capped at
    # 1, an SE of 0, though the tasks differ.
    from agentgauge.report.formats import estimate

    rows = [("a", "base", 0), ("b", "base", 1), ("a", "paraphrase:1", 1), ("b", "paraphrase:1", 1)]
    r = robustness(_table(rows), "prompt")
    assert (r.value, r.se) == (1.0, 0.0)
    assert estimate(r.to_dict()) == "1.000 (capped in every resample of 2 tasks)"
