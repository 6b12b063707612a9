"""End to end: the demo on the built-in suite with the simulated reference agents."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

import agentgauge
from agentgauge.demo import run_demo
from agentgauge.store import Store


def _run(out: Path) -> tuple[str, dict[str, dict[str, object]]]:
    buf = io.StringIO()
    result = run_demo(out, trials=2, console=Console(file=buf, width=160), progress=False)
    groups = {}
    for name in ("null", "oracle", "careful", "hasty"):
        report = agentgauge.metrics(f"{result.store}:retail-{name}", k=(1, 2), by=())
        groups[name] = report.to_dict()["groups"][0]
    return buf.getvalue(), groups


def test_demo_shows_the_method_and_is_reproducible(tmp_path: Path) -> None:
    text, groups = _run(tmp_path / "a")
    rate = {name: g["success_rate"]["value"] for name, g in groups.items()}
    assert rate["null"] < 0.05
    assert rate["oracle"] > 0.95
    assert rate["careful"] > rate["hasty"]
    for name in ("careful", "hasty"):
        # Noisy agents are inconsistent: succeeding on both attempts is rarer than on one.
        assert groups[name]["pass_hat_k"]["2"] < groups[name]["pass_hat_k"]["1"]
    assert "B is better" in text
    assert "SIMULATED" in text
    out = tmp_path / "a"
    html = (out / "report.html").read_text()
    assert "Comparison record" in html and "builtin:careful" in html
    with Store(out / "agentgauge.db") as db:
        assert {r.run_id for r in db.list_runs()} >= {"retail-null", "retail-careful"}
        assert db.integrity_check() == "ok"
    # Seeded: a second run prints the same numbers (paths aside).
    text2, groups2 = _run(tmp_path / "b")
    assert groups2 == groups
    assert text2.replace(str(tmp_path / "b"), "X") == text.replace(str(tmp_path / "a"), "X")
