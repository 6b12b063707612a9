"""A success rate of every trial passing has an SE of 0: no spread between trials, not
certainty. The Markdown and HTML reports and the viewer's outcome table show the count
behind it (``100.0% (18/18)``) instead of "± 0.0", as the terminal tables do; a rate with
spread keeps its ± SE."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import agentgauge
from agentgauge.viewer.app import _ENV


def _trials(path: Path) -> Path:
    rows = [
        {"task_id": f"t{i}", "trial": k, "agent": agent, "family": f"f{i % 3}",
         "success": agent == "always" or (agent == "mixed" and (i + k) % 2 == 0)
                    or (agent == "uneven" and i in (0, 1, 3))}
        for agent in ("always", "mixed", "uneven") for i in range(6) for k in range(3)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _report(source: Path, tmp_path: Path) -> tuple[Path, Path]:
    """`agentgauge report SOURCE` as a user runs it: the HTML and Markdown it wrote."""
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "report", str(source), "--html", str(html),
         "--markdown", str(md)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return html, md


def test_reports_show_the_count_where_the_se_is_zero(tmp_path: Path) -> None:
    source = _trials(tmp_path / "t.jsonl")
    html, md = _report(source, tmp_path)
    rows: dict[str, str] = {}
    for line in md.read_text().splitlines():  # the outcome table comes first
        if line.startswith(("| always", "| mixed", "| uneven")):
            rows.setdefault(line.split("|")[1].strip(), line)
    assert "100.0% (18/18)" in rows["always"] and "± 0.0" not in rows["always"]
    # The report shows the clustered SE, as the viewer does: 0 for "mixed", whose
    # families are alike.
    success = {agent: row.split("|")[2].strip() for agent, row in rows.items()}
    assert success["mixed"] == "50.0% (9/18)"
    assert "±" in success["uneven"]
    page = html.read_text()
    assert '1.000 <span class="ci">(18/18)</span>' in page
    assert "± 0.000" not in page


def test_the_viewers_outcome_table_shows_the_count_too(tmp_path: Path) -> None:
    report = agentgauge.metrics(str(_trials(tmp_path / "t.jsonl")), by=("agent",))
    macro = _ENV.get_template("outcome.html.j2").module.outcome_table  # type: ignore[attr-defined]
    page = str(macro(report.to_dict(), ["agent"], "o", [1]))
    always, mixed, uneven = (
        page.split(f"<td>{a}</td>", 1)[1].split("</tr>", 1)[0]
        for a in ("always", "mixed", "uneven")
    )
    assert '<td class="n">100.0% (18/18)</td>' in always and "±" not in always
    # The viewer shows the clustered SE, which for "mixed" is 0: its families are alike.
    # (Its pass@1 has the SE over tasks, as `agentgauge metrics` prints it.)
    assert '<td class="n">50.0% (9/18)</td>' in mixed
    assert "± " in uneven.split('<td class="n">[')[0]


def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_record_line_shows_the_count_where_the_se_is_zero(tmp_path: Path) -> None:
    # "mixed": tasks alternate 2/3 and 1/3, and each family holds one of each, so every
    # family averages exactly 1/2: the clustered SE is 0 (it was 2e-17 of round-off,
    # printed "±0.0"), and "always" has no spread at all.
    source = str(_trials(tmp_path / "t.jsonl"))
    out = _run("compare", f"{source}#agent=mixed", f"{source}#agent=always")
    [headline] = [line for line in out.splitlines() if "Headline" in line]
    assert "B 100.0% (18/18) [" in headline and "A 50.0% (9/18) [" in headline
    assert "±0.0" not in headline


def test_the_clustered_se_of_alike_families_is_none_not_plus_minus_zero(tmp_path: Path) -> None:
    source = str(_trials(tmp_path / "t.jsonl"))
    report = agentgauge.metrics(f"{source}#agent=mixed")
    assert report.to_dict()["groups"][0]["success_rate"]["se_clustered"] == 0.0
    out = _run("metrics", f"{source}#agent=mixed")
    [line] = [line for line in out.splitlines() if "se clustered" in line]
    assert "none (3 families alike)" in line


def test_an_estimate_without_spread_says_over_how_many() -> None:
    from agentgauge.report.terminal import _estimate

    assert _estimate({"value": 1.0, "se": 0.0, "n": 12}) == "1.000 (each of 12)"
    assert _estimate({"value": 0.75, "se": 0.05, "n": 12}) == "0.750 ± 0.050"
    assert _estimate({"value": None, "se": None, "n": 0}) == "—"
    # Robustness counts its tasks as n_tasks: it read "0.500 ± 0.000".
    assert _estimate({"value": 0.5, "se": 0.0, "n_tasks": 3}) == "0.500 (each of 3)"


def _robustness_trials(path: Path, tasks: str) -> Path:
    # Each task: base 1/1, paraphrase:1 1/2 → robustness 0.5 on every task.
    rows = [
        {"task_id": t, "variant": v, "success": ok}
        for t in tasks
        for v, ok in (("base", True), ("paraphrase:1", True), ("paraphrase:1", False))
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_robustness_without_spread_reads_the_same_in_every_medium(tmp_path: Path) -> None:
    """Three tasks alike: an SE of 0, shown as the tasks behind it; one task: no SE at
    all, and the terminal and both reports say why."""
    alike = str(_robustness_trials(tmp_path / "alike.jsonl", "ABC"))
    [row] = [line for line in _run("metrics", alike).splitlines() if "prompt robustness" in line]
    assert "0.500 (each of 3)" in row and "±" not in row
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    _run("report", alike, "--html", str(html), "--markdown", str(md))
    [rel] = [line for line in md.read_text().splitlines() if line.startswith("| all | 0.500")]
    assert rel.startswith("| all | 0.500 (each of 3) |")
    assert ">0.500 (each of 3)</td>" in html.read_text()

    one = str(_robustness_trials(tmp_path / "one.jsonl", "A"))
    why = "prompt robustness, no SE: one task: no spread to estimate"
    out = _run("metrics", one)
    [row] = [line for line in out.splitlines() if "prompt robustness" in line and "0.5" in line]
    assert "±" not in row and why in out
    _run("report", one, "--html", str(html), "--markdown", str(md), "--force")
    assert f"> reliability: {why}" in md.read_text()
    assert why in html.read_text()


def test_reports_never_write_an_interval_as_two_equal_bounds(tmp_path: Path) -> None:
    # 0 of 10,000 single-trial tasks: Wilson's 95% interval is [0, 0.038%]. The Markdown
    # report wrote it "0.0%–0.0%" and the HTML "[0.000, 0.000]": no width, which a
    # rate estimated from finite data never has (the terminal already grew decimals).
    source = tmp_path / "t.jsonl"
    source.write_text(
        "".join(json.dumps({"task_id": f"t{i}", "success": False}) + "\n" for i in range(10_000))
    )
    html, md = _report(source, tmp_path)
    (group,) = agentgauge.metrics(str(source)).to_dict()["groups"]
    assert 0 < group["success_rate"]["ci95"][1] < 0.0005
    assert "0.00–0.04% (wilson)" in md.read_text()
    assert "[0.0000, 0.0004]" in html.read_text()
    assert "0.0%–0.0%" not in md.read_text() and "[0.000, 0.000]" not in html.read_text()


def test_a_comparison_whose_tasks_all_differ_alike_shows_no_se_of_zero(tmp_path: Path) -> None:
    """B passes every task A fails: every task's difference is +1, so the paired SE over
    tasks is 0, and so is each run's own (each has the same rate on every task). Shown
    as what that means, never "0.00 pp" (the interval beside it comes from each run's
    own interval), in `compare`, the record line, the HTML report and the viewer."""
    for name, passed in (("a", False), ("b", True)):
        rows = [
            {"task_id": f"t{i}", "trial": k, "agent": name, "success": passed}
            for i in range(10)
            for k in range(2)
        ]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    a, b = str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")
    out = " ".join(_run("compare", a, b).split())
    assert "paired none (every task's difference is the same)" in out
    assert "unpaired none (each run's rate is the same on every task)" in out
    assert "0.00 pp" not in out
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    _run("report", a, b, "--html", str(html), "--markdown", str(md))
    text = " ".join(md.read_text().split())
    assert "SE paired none (every task's difference is the same) vs unpaired none" in text
    page = html.read_text()
    assert "<td>none (every task&#39;s difference is the same)</td>" in page
    assert "<td>none (each run&#39;s rate is the same on every task)</td>" in page
    se = _ENV.filters["difference_se"]
    assert se(0.0, True) == "none (every task's difference is the same)"
    assert se(0.0152, True) == "1.5%"


def test_a_rate_short_of_every_trial_and_its_se_are_never_written_as_100_and_0(
    tmp_path: Path,
) -> None:
    # 19,999 of 20,000 trials passed: the metrics table read "100.0% ± 0.0", every trial
    # passing with no spread, and `compare` "B 100.0%", where the rate is 99.995% and its
    # SE 0.005 points.
    rows = [{"task_id": f"t{i}", "success": i != 0} for i in range(20000)]
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "99.995% ± 0.005" in done.stdout and "20,000 / 20,000" in done.stdout
    assert "100.0%" not in done.stdout and "± 0.0 " not in done.stdout

    from agentgauge.report.formats import percent

    assert (percent(0.99995), percent(4e-5), percent(1.0), percent(0.0)) == (
        "99.995%",
        "0.004%",
        "100.0%",
        "0.0%",
    )
    assert (percent(0.5234), percent(-0.0)) == ("52.3%", "0.0%")


def test_the_html_reports_rate_short_of_every_trial_is_not_1_000(tmp_path: Path) -> None:
    # The HTML outcome table read "1.000 ± 0.000" for 19,999 of 20,000 trials.
    rows = [{"task_id": f"t{i}", "success": i != 0} for i in range(20000)]
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    html, md = _report(path, tmp_path)
    assert '<td>0.99995 <span class="ci">± 0.00005</span></td>' in html.read_text()
    # The Markdown table's pass^k columns likewise (they read 1.000).
    (row,) = [
        line
        for line in md.read_text().splitlines()
        if "20,000 / 20,000" in line or "20000 / 20000" in line
    ]
    assert "| 99.995% ± 0.005% |" in row and "100.0%" not in row
