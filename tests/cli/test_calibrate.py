"""``agentgauge calibrate`` end to end, on label files with hand-computed answers."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

from agentgauge.graders.calibration import calibrate, kappa_band
from agentgauge.graders.human import Label


def agentgauge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def row(task: str, rater: str, label: str, criterion: str = "c", **kw: Any) -> dict[str, Any]:
    return {
        "task_id": task,
        "trial": 0,
        "criterion": criterion,
        "label": label,
        "rater": rater,
        **kw,
    }


def table_rows() -> list[dict[str, Any]]:
    """50 items in the table [[20, 5], [10, 15]] (rows human ann, columns judge),
    plus 5 items the judge left unknown (ann: pass)."""
    cells = [("pass", "pass", 20), ("pass", "fail", 5), ("fail", "pass", 10), ("fail", "fail", 15)]
    rows, k = [], 0
    for human, judge, count in cells:
        for _ in range(count):
            rows += [row(f"t{k}", "ann", human), row(f"t{k}", "judge", judge)]
            k += 1
    for _ in range(5):
        rows += [row(f"t{k}", "ann", "pass"), row(f"t{k}", "judge", "unknown")]
        k += 1
    return rows


def test_calibrate_json_matches_hand_computation_and_statsmodels(tmp_path: Path) -> None:
    labels = write(tmp_path / "labels.jsonl", table_rows())
    proc = agentgauge("calibrate", str(labels), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["schema"] == "agentgauge.calibrate/1"
    jh = out["judge_vs_human"]
    # p_o = 35/50 = 0.7, p_e = (25·30 + 25·20)/2500 = 0.5, κ = 0.4
    expected = sm_cohens_kappa(np.array([[20, 5], [10, 15]])).kappa
    assert jh["kappa"] == pytest.approx(expected)
    assert jh["kappa"] == pytest.approx(0.4)
    assert jh["kappa_band"] == "fair"
    assert jh["raw_agreement"] == pytest.approx(0.7)
    assert (jh["n_items"], jh["n_decided"]) == (55, 50)
    assert jh["confusion"]["labels"] == ["pass", "fail", "unknown"]
    assert jh["confusion"]["matrix"] == [[20, 5, 5], [10, 15, 0], [0, 0, 0]]
    lo, hi = jh["ci95"]
    assert lo < 0.4 < hi
    assert "B=2000, seed=0" in jh["ci_method"]
    # α over judge + ann: o_pp = 2·20, o_ff = 2·15, o_pf = o_fp = 5 + 10; n_p = 55, n_f = 45,
    # n = 100; α = 1 − 99·30 / (2·55·45) = 1 − 2970/4950 = 0.4. Judge-unknown items are
    # single-valued units and drop out.
    assert out["krippendorff_alpha"]["all_raters"] == pytest.approx(0.4)
    assert out["krippendorff_alpha"]["humans"] is None  # one human
    assert out["unknown_share"]["judge"] == pytest.approx(5 / 55)
    assert out["unknown_share"]["humans"] == 0.0
    assert out["pairwise"] is None
    # same seed, same interval
    again = json.loads(agentgauge("calibrate", str(labels), "--json", cwd=tmp_path).stdout)
    assert again["judge_vs_human"]["ci95"] == jh["ci95"]


def several_raters() -> list[dict[str, Any]]:
    return [
        # item 1: humans p, p, f -> consensus pass; judge pass
        row("t1", "ann", "pass"),
        row("t1", "bo", "pass"),
        row("t1", "cy", "fail"),
        row("t1", "judge", "pass"),
        # item 2: humans f, f, f -> fail; judge pass
        row("t2", "ann", "fail"),
        row("t2", "bo", "fail"),
        row("t2", "cy", "fail"),
        row("t2", "judge", "pass"),
        # item 3: humans p, f, unknown -> a tie, consensus unknown; judge fail
        row("t3", "ann", "pass"),
        row("t3", "bo", "fail"),
        row("t3", "cy", "unknown"),
        row("t3", "judge", "fail"),
        # item 4: humans p, p, p -> pass; judge pass (criterion d)
        row("t4", "ann", "pass", "d"),
        row("t4", "bo", "pass", "d"),
        row("t4", "cy", "pass", "d"),
        row("t4", "judge", "pass", "d"),
        # pairwise: P1 flips (A then B), P2 consistent, P3 one unknown, P4 incomplete
        {**row("p1", "judge", "A"), "kind": "pairwise", "order": "AB"},
        {**row("p1", "judge", "B"), "kind": "pairwise", "order": "BA"},
        {**row("p2", "judge", "A"), "kind": "pairwise", "order": "AB"},
        {**row("p2", "judge", "a"), "kind": "pairwise", "order": "BA"},
        {**row("p3", "judge", "B"), "kind": "pairwise", "order": "AB"},
        {**row("p3", "judge", "unknown"), "kind": "pairwise", "order": "BA"},
        {**row("p4", "judge", "tie"), "kind": "pairwise", "order": "ab"},
    ]


def test_several_raters_majority_alpha_and_position_flips(tmp_path: Path) -> None:
    labels = write(tmp_path / "labels.jsonl", several_raters())
    proc = agentgauge("calibrate", str(labels), "--json", "--bootstrap", "200", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["human_raters"] == ["ann", "bo", "cy"]
    jh = out["judge_vs_human"]
    # consensus vs judge, decided pairs: t1 (p, p), t2 (f, p), t4 (p, p)
    # p_o = 2/3; rows (2, 1), columns (3, 0): p_e = (2·3 + 1·0)/9 = 2/3; κ = 0
    assert jh["kappa"] == pytest.approx(0.0)
    assert jh["confusion"]["matrix"] == [[2, 0, 0], [1, 0, 0], [0, 1, 0]]
    ann = next(p for p in out["per_rater"] if p["rater"] == "ann")
    # ann vs judge: (p,p) (f,p) (p,f) (p,p): [[2,1],[1,0]]; p_o = 1/2,
    # p_e = (3·3 + 1·1)/16 = 10/16; κ = (8/16 − 10/16)/(6/16) = −1/3
    assert ann["kappa"] == pytest.approx(-1 / 3)
    assert ann["kappa_band"] == "poor"
    by = {g["grader"]: g for g in out["by_grader"]}
    assert set(by) == {"rubric:c", "rubric:d"}
    assert by["rubric:d"]["kappa"] is None  # one category everywhere: κ undefined, not 1
    assert by["rubric:d"]["raw_agreement"] == 1.0
    # humans' α: t1 p,p,f -> o_pp 1, o_pf 1, o_fp 1; t2 f,f,f -> o_ff 3; t3 p,f -> o_pf 1,
    # o_fp 1; t4 p,p,p -> o_pp 3. n_p = 6, n_f = 5, n = 11; α = 1 − 10·4/(2·6·5) = 1/3
    assert out["krippendorff_alpha"]["humans"] == pytest.approx(1 / 3)
    assert out["unknown_share"]["judge"] == 0.0
    assert out["unknown_share"]["humans"] == pytest.approx(1 / 12)
    assert out["unknown_share"]["by_rater"]["cy"] == pytest.approx(1 / 4)
    (pw,) = out["pairwise"]
    # complete pairs p1, p2, p3; decided p1, p2; one flip (p1)
    assert pw == {
        "rater": "judge",
        "n_pairs": 4,
        "n_complete": 3,
        "n_decided": 2,
        "position_flips": 1,
        "position_flip_rate": 0.5,
        "unknown_share": pytest.approx(1 / 7),
    }
    assert any("only 3 items" in w for w in out["warnings"])


def test_against_restricts_the_human_raters(tmp_path: Path) -> None:
    labels = write(tmp_path / "labels.jsonl", several_raters())
    out = json.loads(
        agentgauge("calibrate", str(labels), "--json", "--against", "ann", cwd=tmp_path).stdout
    )
    assert out["human_raters"] == ["ann"]
    assert out["judge_vs_human"]["kappa"] == pytest.approx(-1 / 3)


def test_separate_judge_file_and_judge_rater(tmp_path: Path) -> None:
    rows = table_rows()
    humans = write(tmp_path / "humans.jsonl", [r for r in rows if r["rater"] == "ann"])
    judge_csv = tmp_path / "judge.csv"
    judge_csv.write_text(
        "task_id,trial,criterion,label\n"
        + "".join(f"{r['task_id']},0,c,{r['label']}\n" for r in rows if r["rater"] == "judge"),
        encoding="utf-8",
    )
    out = json.loads(
        agentgauge(
            "calibrate",
            str(humans),
            "--judge",
            str(judge_csv),
            "--judge-rater",
            "gpt-judge",
            "--json",
            cwd=tmp_path,
        ).stdout
    )
    assert out["judge_rater"] == "gpt-judge"
    assert out["judge_vs_human"]["kappa"] == pytest.approx(0.4)


def judge_file(path: Path, agents: dict[str, str]) -> Path:
    """The judge's records as the docs say to write them: `judge_label_records` of
    trials of tasks t0, t1... run by ``agents[task]``, criterion ``polite`` alternating
    pass/fail."""
    from agentgauge.graders.human import judge_label_records
    from agentgauge.schema import Grade, Trial

    records = []
    for k, (task, agent) in enumerate(agents.items()):
        trial = Trial(task_id=task, trial=0, success=True, agent=agent)
        records += judge_label_records(trial, [Grade(grader="rubric:polite", passed=k % 2 == 0)])
    return write(path, records)


def test_labels_without_an_agent_match_the_judges_records_of_trials_with_one(
    tmp_path: Path,
) -> None:
    # The documented workflow: a label sheet with the docs' own columns (no agent), and
    # the judge's records from `judge_label_records`, which name the trial's agent.
    # Before: "no item is labelled by both the judge and a human", exit 2.
    agents = {"t0": "careful", "t1": "careful", "t2": "hasty", "t3": "hasty"}
    judge = judge_file(tmp_path / "judge.jsonl", agents)
    humans = tmp_path / "humans.csv"
    # judge: pass, fail, pass, fail; ana: pass, fail, fail, fail -> 3 of 4 agree,
    # p_o = 3/4, p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2, κ = (3/4 − 1/2)/(1 − 1/2) = 0.5
    humans.write_text(
        "task_id,trial,criterion,label,rater\n"
        "t0,0,polite,pass,ana\nt1,0,polite,fail,ana\nt2,0,polite,fail,ana\n"
        "t3,0,polite,fail,ana\n",
        encoding="utf-8",
    )
    proc = agentgauge("calibrate", str(humans), "--judge", str(judge), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["judge_vs_human"]["n_items"], out["n_judge_only"], out["n_human_only"]) == (4, 0, 0)
    assert out["judge_vs_human"]["kappa"] == pytest.approx(0.5)


def test_a_label_without_an_agent_that_could_be_two_agents_trials_is_refused(
    tmp_path: Path,
) -> None:
    # The judge graded trial 0 of t0 run by two agents: which one did ana label?
    judge = judge_file(tmp_path / "judge.jsonl", {"t0": "careful"})
    more = judge_file(tmp_path / "more.jsonl", {"t0": "hasty"})
    with judge.open("a", encoding="utf-8") as handle:
        handle.write(more.read_text(encoding="utf-8"))
    humans = tmp_path / "humans.csv"
    humans.write_text(
        "task_id,trial,criterion,label,rater\nt0,0,polite,pass,ana\n", encoding="utf-8"
    )
    proc = agentgauge("calibrate", str(humans), "--judge", str(judge), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert "humans.csv:2: agent: the label names no agent" in proc.stderr
    assert "for agents 'careful', 'hasty': add an agent column" in proc.stderr


def test_text_output(tmp_path: Path) -> None:
    labels = write(tmp_path / "labels.jsonl", several_raters())
    proc = agentgauge("calibrate", str(labels), "--bootstrap", "100", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Cohen's κ 0.000" in proc.stdout
    assert "1 position flips in 2 decided pairs" in proc.stdout
    assert "Krippendorff's α" in proc.stdout


def test_the_table_counts_the_items_given_and_those_decided_apart(tmp_path: Path) -> None:
    # 55 items labelled by both, 5 of them left unknown by the judge: the table's
    # "items" column said 50, the items decided by both, as if 50 had been given.
    labels = write(tmp_path / "labels.jsonl", table_rows())
    proc = agentgauge("calibrate", str(labels), "--bootstrap", "20", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    [head] = [line for line in lines if "┃ against" in line]
    cells = [c.strip() for c in head.strip("┃│ ").replace("┃", "│").split("│")]
    assert cells[:3] == ["against", "items", "decided"], cells
    for who in ("rater ann", "grader rubric:c"):
        [line] = [line for line in lines if line.startswith(f"│ {who} ")]
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        assert cells[:3] == [who, "55", "50"], cells
    out = json.loads(
        agentgauge("calibrate", str(labels), "--bootstrap", "20", "--json", cwd=tmp_path).stdout
    )
    for p in (out["per_rater"][0], out["by_grader"][0]):
        assert (p["n_items"], p["n_decided"]) == (55, 50)


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        (
            [row("t1", "ann", "pass"), row("t1", "bo", "fail")],
            [],
            "no labels by the judge rater 'judge'",
        ),
        ([row("t1", "judge", "pass")], [], "no human rater"),
        ([row("t1", "ann", "pass"), row("t2", "judge", "pass")], [], "no item is labelled by both"),
        (
            [row("t1", "ann", "pass"), row("t1", "judge", "pass")],
            ["--against", "zed"],
            "'zed' have no labels",
        ),
    ],
)
def test_unusable_labels_exit_2(
    tmp_path: Path, rows: list[dict[str, Any]], args: list[str], message: str
) -> None:
    labels = write(tmp_path / "labels.jsonl", rows)
    proc = agentgauge("calibrate", str(labels), *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("against", "message"),
    [
        ("zed", "--against: rater(s) 'zed' have no labels (raters found: 'ann', 'judge')"),
        ("ann,judge", "--against: 'judge' is the judge (--judge-rater) and cannot also be"),
    ],
)
def test_against_naming_no_human_rater_names_the_option(
    tmp_path: Path, against: str, message: str
) -> None:
    # The refusal named the label file and its field (`labels.jsonl: rater: ...`), as
    # if a line of it were wrong, where the raters typed were.
    labels = write(
        tmp_path / "labels.jsonl", [row("t1", "ann", "pass"), row("t1", "judge", "pass")]
    )
    proc = agentgauge("calibrate", str(labels), "--against", against, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"agentgauge: error: {message}")
    assert "labels.jsonl" not in proc.stderr


def test_bad_label_file_exits_2_naming_line_and_field(tmp_path: Path) -> None:
    labels = write(
        tmp_path / "labels.jsonl", [row("t1", "ann", "pass"), row("t1", "judge", "maybe")]
    )
    proc = agentgauge("calibrate", str(labels), "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"{labels}:2: label: expected one of" in proc.stderr


def test_pairwise_only_labels() -> None:
    labels = [
        Label("p1", 0, "rubric:c", "A", "judge", kind="pairwise", order="AB"),
        Label("p1", 0, "rubric:c", "B", "judge", kind="pairwise", order="BA"),
    ]
    out = calibrate(labels)
    assert out["judge_vs_human"] is None
    assert out["pairwise"][0]["position_flip_rate"] == 1.0


def test_kappa_bands() -> None:
    # Landis & Koch (1977)
    assert [kappa_band(k) for k in (-0.1, 0.1, 0.3, 0.5, 0.7, 0.9)] == [
        "poor",
        "slight",
        "fair",
        "moderate",
        "substantial",
        "almost perfect",
    ]
    assert kappa_band(None) is None


@pytest.mark.parametrize("all_pass", [False, True])
def test_agreement_with_nothing_to_resample_says_so(tmp_path: Path, all_pass: bool) -> None:
    # 30 items, judge and human always agree: the interval was [1, 1]. Both always say
    # "pass": κ was null with no reason (chance agreement is 1).
    rows = []
    for k in range(30):
        label = "pass" if all_pass or k % 3 else "fail"
        rows += [row(f"t{k}", "ann", label), row(f"t{k}", "judge", label)]
    labels = write(tmp_path / "labels.jsonl", rows)
    proc = agentgauge("calibrate", str(labels), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    jh = json.loads(proc.stdout)["judge_vs_human"]
    assert jh["ci95"] is None
    if all_pass:
        assert jh["kappa"] is None and "agreement by chance is 1" in jh["null_reason"]
    else:
        assert jh["kappa"] == 1.0
        assert jh["null_reason"].startswith("no interval: every bootstrap replicate gave κ = 1")


@pytest.mark.parametrize("constant", ["judge", "ann"])
def test_a_constant_label_says_why_kappa_has_no_interval(tmp_path: Path, constant: str) -> None:
    # 30 items; one side says "pass" on all of them, the other fails 10: raw agreement
    # 20/30 = 0.667, and p_o = p_e = 20/30 (the constant side's marginal is 1), so κ =
    # (p_o − p_e)/(1 − p_e) = 0 on the data and on every resample (statsmodels agrees).
    # The reason said "the 30 items leave no disagreement to resample": 10 disagree.
    rows = []
    for k in range(30):
        varied = "fail" if k % 3 == 0 else "pass"
        human, judge = ("pass", varied) if constant == "ann" else (varied, "pass")
        rows += [row(f"t{k}", "ann", human), row(f"t{k}", "judge", judge)]
    labels = write(tmp_path / "labels.jsonl", rows)
    proc = agentgauge("calibrate", str(labels), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    jh = json.loads(proc.stdout)["judge_vs_human"]
    table = np.array(jh["confusion"]["matrix"])[:2, :2]
    with np.errstate(invalid="ignore"):  # statsmodels' SE of a κ with a constant margin
        reference = sm_cohens_kappa(table).kappa
    assert jh["kappa"] == pytest.approx(reference, abs=1e-12)
    assert jh["kappa"] == 0.0 and jh["raw_agreement"] == pytest.approx(20 / 30)
    assert jh["ci95"] is None
    who = "the judge" if constant == "judge" else "the human labels"
    assert jh["null_reason"].startswith(
        f"no interval: {who} gave all 30 decided items the same label ('pass'), so κ is 0"
    )
    assert "no disagreement" not in jh["null_reason"]


@pytest.mark.parametrize("bootstrap", ["0", "200"])
def test_a_kappa_of_0_from_a_constant_label_says_so_without_an_interval_too(
    tmp_path: Path, bootstrap: str
) -> None:
    # The judge says "pass" on all 6 items, the humans fail 2: p_o = 4/6 and p_e =
    # (4/6)·1 + (2/6)·0 = 4/6, so κ = (4/6 − 4/6)/(1 − 4/6) = 0. sklearn's
    # cohen_kappa_score gives the same 0 (nan only for 0/0, p_e = 1: our null): κ is
    # kept as 0, with a note. Without a bootstrap (a criterion's row, --bootstrap 0)
    # that 0 came with no word on why, or only "no interval per grader".
    human = ["pass", "fail", "pass", "fail", "pass", "pass"]
    rows = []
    for k, label in enumerate(human):
        rows += [row(f"t{k}", "ann", label), row(f"t{k}", "judge", "pass")]
    labels = write(tmp_path / "labels.jsonl", rows)
    proc = agentgauge("calibrate", str(labels), "--json", "--bootstrap", bootstrap, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    sklearn = pytest.importorskip("sklearn.metrics")
    reference = sklearn.cohen_kappa_score(human, ["pass"] * 6)
    assert reference == 0.0
    note = "the judge gave all 6 decided items the same label ('pass'), so κ is 0 on the data"
    for stats in (out["judge_vs_human"], out["per_rater"][0], out["by_grader"][0]):
        assert stats["kappa"] == reference and stats["raw_agreement"] == pytest.approx(4 / 6)
        assert stats["ci95"] is None
        assert note in stats["null_reason"], stats["null_reason"]
        assert "constant label cannot show" in stats["null_reason"]
    # Both sides constant on different labels: p_o = 0, p_e = 0, κ = 0 (sklearn: 0).
    rows = [
        row(f"t{k}", r, lab) for k in range(3) for r, lab in (("ann", "fail"), ("judge", "pass"))
    ]
    labels = write(tmp_path / "apart.jsonl", rows)
    proc = agentgauge("calibrate", str(labels), "--json", "--bootstrap", bootstrap, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    grader = json.loads(proc.stdout)["by_grader"][0]
    assert grader["kappa"] == sklearn.cohen_kappa_score(["fail"] * 3, ["pass"] * 3) == 0.0
    assert "same label ('pass'), so κ is 0" in grader["null_reason"]
    # Both constant on one label: 0/0, null with its reason (sklearn: nan, warning).
    rows = [row(f"t{k}", r, "pass") for k in range(3) for r in ("ann", "judge")]
    labels = write(tmp_path / "same.jsonl", rows)
    proc = agentgauge("calibrate", str(labels), "--json", "--bootstrap", bootstrap, cwd=tmp_path)
    grader = json.loads(proc.stdout)["by_grader"][0]
    assert grader["kappa"] is None and "agreement by chance is 1" in grader["null_reason"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "only one label in common": undefined
        assert np.isnan(sklearn.cohen_kappa_score(["pass"] * 3, ["pass"] * 3))


@pytest.mark.parametrize(("n_items", "label"), [(1, "pass"), (1, "unknown"), (3, "unknown")])
def test_too_few_decided_items_warn_about_kappa_not_its_interval(
    tmp_path: Path, n_items: int, label: str
) -> None:
    # One decided item (κ undefined, p_e = 1), or none (the judge said unknown): there
    # is no interval, yet the warning said "κ's interval is wide".
    rows = []
    for k in range(n_items):
        rows += [row(f"t{k}", "ann", "pass"), row(f"t{k}", "judge", label)]
    labels = write(tmp_path / "labels.jsonl", rows)
    proc = agentgauge("calibrate", str(labels), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    n = out["judge_vs_human"]["n_decided"]
    assert n == (1 if label == "pass" else 0) and out["judge_vs_human"]["kappa"] is None
    assert out["warnings"] == [
        f"only {n} item{'' if n == 1 else 's'} decided by both judge and humans: κ needs at "
        "least two, so it has no value and no interval"
    ]


def test_few_items_with_an_interval_still_warn_that_it_is_wide(tmp_path: Path) -> None:
    rows = []
    for k in range(10):
        human, judge = ("pass" if k % 2 else "fail"), ("pass" if k % 3 else "fail")
        rows += [row(f"t{k}", "ann", human), row(f"t{k}", "judge", judge)]
    out = json.loads(
        agentgauge(
            "calibrate", str(write(tmp_path / "l.jsonl", rows)), "--json", cwd=tmp_path
        ).stdout
    )
    assert out["judge_vs_human"]["ci95"] is not None
    assert out["warnings"] == [
        "only 10 items decided by both judge and humans: κ's interval is wide"
    ]
    # Without a bootstrap there is no interval to be wide (it said it was).
    out = json.loads(
        agentgauge(
            "calibrate", str(tmp_path / "l.jsonl"), "--bootstrap", "0", "--json", cwd=tmp_path
        ).stdout
    )
    assert out["judge_vs_human"]["ci95"] is None
    assert out["warnings"] == [
        "only 10 items decided by both judge and humans: κ's interval would be wide "
        "(--bootstrap 0 computes none)"
    ]


def test_a_binary_file_given_as_labels_is_one_line(tmp_path: Path) -> None:
    # A store given by mistake: its first 4,096 bytes were decoded as text to sniff CSV
    # from JSONL, and the UnicodeDecodeError came out as a traceback.
    store = tmp_path / "s.db"
    store.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 4)
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "calibrate", str(store)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    # Line 2: the first byte past UTF-8 is 0x80, after the "\\n" at byte 26.
    assert f"{store}:2: not a UTF-8 text file: byte 144 (0x80)" in out.stderr


def test_a_label_csv_with_a_column_written_twice_is_refused(tmp_path: Path) -> None:
    # Read before as its last "label" column (the rater's "pass" became "fail"),
    # while a JSONL label with a key written twice is refused.
    labels = tmp_path / "dup.csv"
    labels.write_text("task_id,trial,criterion,label,rater,label\nt1,0,c,pass,ann,fail\n")
    proc = agentgauge("calibrate", str(labels), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"agentgauge: error: {labels}:1: label: column appears twice"


@pytest.mark.parametrize("text", ["", "\n\n", "task_id,trial,label,rater\n"])
def test_a_label_csv_without_labels_says_so(tmp_path: Path, text: str) -> None:
    # A 0-byte CSV said "task_id: required column is missing" on line 1, which it
    # does not have; it is empty, as an empty JSONL file or a header alone is.
    labels = tmp_path / "empty.csv"
    labels.write_text(text)
    proc = agentgauge("calibrate", str(labels), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"agentgauge: error: {labels}: no labels in file"


def test_a_label_csv_from_a_spreadsheet_keeps_its_byte_order_mark(tmp_path: Path) -> None:
    from agentgauge.graders.human import load_labels

    path = tmp_path / "labels.csv"
    path.write_bytes(b"\xef\xbb\xbftask_id,trial,grader,label,rater\r\nt1,0,g,pass,ann\r\n")
    (label,) = load_labels(path)
    assert (label.task_id, label.trial, label.rater) == ("t1", 0, "ann")


def test_one_decided_item_has_no_kappa_anywhere_and_says_why(tmp_path: Path) -> None:
    # One item, judge and human disagree: p_o = 0, p_e = 1·0 + 0·1 = 0, so the formula
    # gives κ = 0 ("slight") from no sample, beside a warning that κ has no value.
    labels = write(tmp_path / "one.jsonl", [row("t0", "ana", "pass"), row("t0", "judge", "fail")])
    proc = agentgauge("calibrate", str(labels), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    why = (
        "κ has no value: only 1 item is decided by both raters, and κ needs at least two "
        "(label more items to measure agreement)"
    )
    for stats in [out["judge_vs_human"], *out["per_rater"], *out["by_grader"]]:
        assert stats["kappa"] is None and stats["kappa_band"] is None
        assert stats["ci95"] is None and stats["null_reason"] == why
        assert stats["raw_agreement"] == 0.0  # measured: the one item disagrees
    # α over one pairable item is 0 or undefined whatever the raters say.
    alpha = out["krippendorff_alpha"]
    assert alpha["all_raters"] is None and alpha["humans"] is None
    assert alpha["null_reasons"] == {
        "all_raters": "only 1 item has decided labels from two of these raters: α needs at "
        "least two such items",
        "humans": "one human rater: α among the humans needs two",
    }
    text = " ".join(agentgauge("calibrate", str(labels), cwd=tmp_path).stdout.split())
    assert "Cohen's κ - [-, -] (undefined)" in text and "0.000 [" not in text
    assert f"— rater ana, grader rubric:c: {why}" in text
    assert "— α, all raters: only 1 item has decided labels" in text
    assert "— α, humans only: one human rater" in text


def test_alpha_of_one_label_says_it_is_undefined(tmp_path: Path) -> None:
    # Two items, every label 'pass': D_e = 0, α is 0/0; it printed a bare '-'.
    rows = [row(f"t{k}", r, "pass") for k in range(2) for r in ("ana", "ben", "judge")]
    labels = write(tmp_path / "allpass.jsonl", rows)
    out = json.loads(agentgauge("calibrate", str(labels), "--json", cwd=tmp_path).stdout)
    why = (
        "every decided label on the items rated twice is 'pass': α is undefined (no "
        "disagreement is expected by chance)"
    )
    assert out["krippendorff_alpha"]["null_reasons"] == {"all_raters": why, "humans": why}
    text = " ".join(agentgauge("calibrate", str(labels), cwd=tmp_path).stdout.split())
    assert f"— α, all raters: {why}" in text and f"— α, humans only: {why}" in text


def test_alpha_has_no_null_reasons_when_measured(tmp_path: Path) -> None:
    rows = []
    for k, (a, b, j) in enumerate([("pass", "pass", "pass"), ("fail", "fail", "pass")]):
        rows += [row(f"t{k}", "ana", a), row(f"t{k}", "ben", b), row(f"t{k}", "judge", j)]
    out = json.loads(
        agentgauge(
            "calibrate", str(write(tmp_path / "l.jsonl", rows)), "--json", cwd=tmp_path
        ).stdout
    )
    assert out["krippendorff_alpha"]["humans"] == 1.0
    assert out["krippendorff_alpha"]["null_reasons"] == {}


def test_no_bootstrap_says_why_there_is_no_interval(tmp_path: Path) -> None:
    # --bootstrap 0: κ's interval was null with null_reason null, printed as [-, -].
    rows = []
    for k, (human, judge) in enumerate([("pass", "pass"), ("fail", "pass"), ("fail", "fail")]):
        rows += [row(f"t{k}", "ana", human), row(f"t{k}", "judge", judge)]
    labels = write(tmp_path / "l.jsonl", rows)
    out = json.loads(
        agentgauge("calibrate", str(labels), "--bootstrap", "0", "--json", cwd=tmp_path).stdout
    )
    off = "no interval: the bootstrap was turned off (--bootstrap 0)"
    for stats in [out["judge_vs_human"], *out["per_rater"]]:
        # p_o = 2/3, p_e = (1·2 + 2·1)/9 = 4/9, κ = (2/3 − 4/9)/(5/9) = 0.4
        assert stats["kappa"] == pytest.approx(0.4)
        assert stats["ci95"] is None and stats["null_reason"] == off
    (grader,) = out["by_grader"]
    assert grader["ci95"] is None
    assert grader["null_reason"].startswith("no interval per grader:")
    text = " ".join(
        agentgauge("calibrate", str(labels), "--bootstrap", "0", cwd=tmp_path).stdout.split()
    )
    assert f"Cohen's κ 0.400 [-, -] (fair), raw agreement 0.667 — {off}" in text
    assert f"— rater ana: {off}" in text
    assert "— grader rubric:c: no interval per grader:" in text


def test_grader_rows_say_why_they_have_no_interval(tmp_path: Path) -> None:
    # With the bootstrap on, the overall κ has an interval; a criterion's never has, and
    # its row now says so rather than leaving the cell empty.
    out = json.loads(
        agentgauge(
            "calibrate", str(write(tmp_path / "l.jsonl", table_rows())), "--json", cwd=tmp_path
        ).stdout
    )
    assert out["judge_vs_human"]["ci95"] is not None
    assert out["judge_vs_human"]["null_reason"] is None
    (grader,) = out["by_grader"]
    assert grader["kappa"] == pytest.approx(0.4) and grader["ci95"] is None
    assert grader["null_reason"].startswith("no interval per grader:")


def test_one_bootstrap_replicate_is_said_to_make_no_interval(tmp_path: Path) -> None:
    # 50 items, κ = 0.4 (table_rows). One replicate resamples the items once: its κ is
    # not the data's, and the reason said "every bootstrap replicate gave κ = 0.400".
    labels = write(tmp_path / "labels.jsonl", table_rows())
    proc = agentgauge("calibrate", str(labels), "--bootstrap", "1", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    jh = json.loads(proc.stdout)["judge_vs_human"]
    assert jh["kappa"] == pytest.approx(0.4)
    assert jh["ci95"] is None
    assert jh["null_reason"] == (
        "no interval: one bootstrap replicate cannot make one (give more replicates, "
        "2000 by default, or 0 for none)"
    )
    # Replicates that all give one κ are named by that κ, the replicates' own.
    rows = [
        row(f"t{k}", r, "pass" if k % 2 else "fail") for k in range(6) for r in ("ann", "judge")
    ]
    same = write(tmp_path / "same.jsonl", rows)
    proc = agentgauge("calibrate", str(same), "--bootstrap", "200", "--json", cwd=tmp_path)
    jh = json.loads(proc.stdout)["judge_vs_human"]
    assert jh["ci95"] is None and jh["kappa"] == 1.0
    assert "every bootstrap replicate gave κ = 1.000" in jh["null_reason"]


def test_more_replicates_than_memory_holds_is_one_line(tmp_path: Path) -> None:
    labels = write(tmp_path / "labels.jsonl", table_rows())
    proc = agentgauge("calibrate", str(labels), "--bootstrap", "1000000000000", cwd=tmp_path)
    # Was a numpy traceback: "Unable to allocate 364. TiB for an array with shape ...".
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("agentgauge: error: --bootstrap: 1000000000000 bootstrap")
    assert "do not fit in memory" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_a_judge_file_naming_another_rater_is_refused_at_its_line(tmp_path: Path) -> None:
    # The humans' file given as --judge by mistake: each record, 'ana's, was read as the
    # judge's, and the judge "agreed" with ana on every item: κ 1.000, almost perfect.
    humans = tmp_path / "humans.csv"
    humans.write_text(
        "task_id,trial,criterion,label,rater\n"
        + "".join(f"t{k},0,c,{'yes' if k % 2 else 'no'},ana\n" for k in range(6))
    )
    proc = agentgauge("calibrate", str(humans), "--judge", str(humans), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith(
        f"agentgauge: error: {humans}:2: rater: the --judge file holds the judge's labels "
        "(rater 'judge'), but this record names rater 'ana'"
    ), proc.stderr
    # A rater column naming the judge, or none, is the judge's file as before.
    judge = tmp_path / "judge.csv"
    judge.write_text(humans.read_text().replace(",ana\n", ",judge\n"))
    ok = agentgauge("calibrate", str(humans), "--judge", str(judge), "--json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["judge_vs_human"]["kappa"] == 1.0
