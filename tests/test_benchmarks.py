"""The benchmark suite's runner: `benchmarks/run_all.py` through its command line.

Timings are never asserted (speed lives in the figures the suite prints); what is
checked is that a benchmark's rows reach the one table and RESULTS.md, and that a
benchmark that fails makes the run fail, naming it, after the others ran.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUN_ALL = ROOT / "benchmarks" / "run_all.py"


def run_all(*args: str) -> subprocess.CompletedProcess[str]:
    # A wide table, so that no cell is wrapped across lines in what is checked.
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, str(RUN_ALL), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )


def test_smoke_run_of_one_benchmark_prints_its_rows_and_writes_nothing(tmp_path: Path) -> None:
    results = ROOT / "benchmarks" / "RESULTS.md"
    before = results.read_bytes() if results.exists() else None
    proc = run_all("--smoke", "--only", "metrics")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = proc.stdout[proc.stdout.index("agentgauge benchmarks") :]
    for header in ("benchmark", "figure", "ours", "reference", "ratio", "goal", "met"):
        assert header in table
    # bench_metrics's three figures, each beside the loop it is measured against.
    assert "all outcome metrics, 20,000 trials (codes cached)" in table
    assert "all outcome metrics, 20,000 trials (cold: task ids coded too)" in table
    assert "pass_at_k + pass_hat_k, 2,000 tasks, k = 1..10" in table
    assert table.count("per-task Python loop, math.comb") == 3
    assert "×" in table
    assert "bench_horizon" not in proc.stdout  # --only ran one benchmark
    after = results.read_bytes() if results.exists() else None
    assert after == before  # --smoke without --out writes nothing


_OK = """
    from _report import emit, row

    def main():
        return [row("bench_ok", "one figure", 2.0, "s", reference=5.0,
                    reference_name="a loop", goal="≥ 2×", met=True)]

    if __name__ == "__main__":
        emit(main())
"""
_FAIL = """
    raise RuntimeError("this benchmark is broken")
"""
_SILENT = """
    print("measured something, reported nothing")
"""


def test_a_failing_benchmark_fails_the_run_after_the_others_ran(tmp_path: Path) -> None:
    for name, body in (("bench_fail", _FAIL), ("bench_ok", _OK), ("bench_silent", _SILENT)):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    out = tmp_path / "RESULTS.md"
    proc = run_all("--smoke", "--dir", str(tmp_path), "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "RuntimeError: this benchmark is broken" in proc.stderr
    assert "FAILED: bench_fail.py: exit code 1" in proc.stdout
    assert "FAILED: bench_silent.py: exited 0 but reported no rows" in proc.stdout
    assert "FAILED: bench_ok.py" not in proc.stdout
    # bench_ok ran after bench_fail (in name order) and its row is in the table:
    # 5.0 s for the reference over 2.0 s for ours is 2.5 times better.
    line = next(x for x in proc.stdout.splitlines() if "one figure" in x)
    assert "2.00 s" in line and "5.00 s (a loop)" in line and "2.50×" in line
    assert "yes" in line
    text = out.read_text(encoding="utf-8")
    assert "| bench_ok | one figure | 2.00 s | 5.00 s (a loop) | 2.50× | ≥ 2× | yes |" in text
    assert "## Machine" in text and "| cores |" in text and "load average" in text
    assert "| `bench_fail.py` |" in text and "exit code 1 |" in text


def test_every_benchmark_reports_rows_and_has_a_smoke_size() -> None:
    """run_all picks up every bench_*.py; each must speak the one row format."""
    scripts = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    assert len(scripts) >= 12
    lacking = [
        s.name
        for s in scripts
        if "smoke_flag(" not in (text := s.read_text(encoding="utf-8"))
        or "emit(main())" not in text
    ]
    assert lacking == [], f"benchmarks without --smoke or rows (benchmarks/_report.py): {lacking}"


def _report_module() -> Any:
    """benchmarks/_report.py by path: benchmarks are not a package of the wheel."""
    name = "agentgauge_benchmarks_report"
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_a_ratio_reads_how_many_times_better_ours_is_for_times_and_rates() -> None:
    report = _report_module()
    # A time: the reference's 5 s over our 2 s.
    assert report.row("b", "f", 2.0, "s", reference=5.0, reference_name="r").ratio == 2.5
    # A rate: our 300/s over the reference's 100/s.
    rate = report.row("b", "f", 300.0, "/s", reference=100.0, higher_is_better=True)
    assert rate.ratio == 3.0
    # No reference measured (not installed), or no figure of ours: no ratio, not 0 or 1.
    assert report.row("b", "f", 2.0, "s", reference_name="X: not installed").ratio is None
    assert report.row("b", "f", None, "s", reference=5.0, note="no data").ratio is None


def test_figures_print_with_three_significant_digits_never_in_exponent_form() -> None:
    report = _report_module()
    # 0.000123456: 2 - floor(log10) = 2 - (-4) = 6 decimals -> 0.000123.
    assert report.fmt(0.000123456, "s") == "0.000123 s"
    assert report.fmt(4.4837, "s") == "4.48 s"
    assert report.fmt(68.97) == "69.0"
    assert report.fmt(179400.4, "outputs/s") == "179,400 outputs/s"
    assert report.fmt(None, "s") == "—"
    assert report.fmt_ratio(0.00286) == "0.00286×"
    assert report.fmt_met(None) == "—" and report.fmt_met(False) == "NO"


def test_a_benchmark_that_is_not_there_is_one_clear_error(tmp_path: Path) -> None:
    proc = run_all("--smoke", "--only", "nosuch")
    assert proc.returncode == 2
    assert "no bench_nosuch.py in" in proc.stderr
    proc = run_all("--smoke", "--dir", str(tmp_path))  # an empty folder
    assert proc.returncode == 2
    assert f"no bench_*.py in {tmp_path}" in proc.stderr
