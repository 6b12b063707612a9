"""The docs' samples of what a command prints, checked against what it prints now.

docs/guide-is-b-better.md and docs/show.md's samples are run on a demo by
tests/test_guide.py. The samples here need no demo: `$ agentgauge ...` blocks whose
command reads only files the repository ships (examples/), and the sketches of the
`--json` objects, which must name every key the command prints. Both had drifted
with nothing to notice: the pilot refusal of docs/compare-and-plan.md had lost the
quotes the message now puts around names, and the JSON sketches of `metrics` and
`compare` left out keys added since (`reliability`, `p_method`, `scope`, ...).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import pytest
from tests.conftest import ROOT, Cli

DOCS = sorted((ROOT / "docs").glob("*.md"))

#: A fenced block that starts with a `$ agentgauge` command line.
_SAMPLE = re.compile(r"```\w*\n(\$ agentgauge [^`]*)```")

#: Commands that only read: their samples are run as written, from the repository.
_READERS = {"plan", "metrics", "compare", "horizon", "show"}


def _samples() -> list[tuple[str, list[str], list[str]]]:
    """(where, argv, quoted output lines) of every sample that can run as written."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        for match in _SAMPLE.finditer(text):
            command, *printed = match.group(1).splitlines()
            argv = shlex.split(command[2:])[1:]
            files = [a.split("#")[0] for a in argv if "/" in a or a.endswith(".jsonl")]
            if argv[0] not in _READERS or not all((ROOT / f).exists() for f in files):
                continue
            where = f"{doc.name}:{text[: match.start()].count(chr(10)) + 2}"
            found.append((where, argv, [line for line in printed if line.strip() != "..."]))
    return found


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_docs_have_runnable_samples() -> None:
    # compare-and-plan.md: plan's δ underflow, its raised minimum, the pilot refusal.
    assert len(_samples()) >= 3


@pytest.mark.parametrize(("where", "argv", "quoted"), _samples(), ids=[s[0] for s in _samples()])
def test_every_quoted_line_is_printed(
    where: str, argv: list[str], quoted: list[str], cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "400")
    _, out, err = cli(*argv)
    printed = {_flat(line) for line in (out + err).splitlines()}
    for line in quoted:
        if line.strip():
            assert _flat(line) in printed, (where, line, out + err)


def _sketch(doc: str, schema: str) -> set[str]:
    """The names a doc's sketches of a JSON object quote (the blocks holding the schema)."""
    names: set[str] = set()
    for block in re.findall(r"```\n([^`]*)```", (ROOT / "docs" / doc).read_text()):
        if f'"schema": "{schema}"' in block:
            names |= set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', block))
    assert names, f"docs/{doc} has no sketch of {schema}"
    return names


def _keys(obj: Any, *paths: str) -> set[str]:
    """The keys of the object and of the objects at the dotted paths (a list: its
    first item)."""
    keys = set(obj)
    for path in paths:
        node = obj
        for part in path.split("."):
            node = node[part]
            if isinstance(node, list):
                node = node[0]
        keys |= set(node)
    return keys


def _json(cli: Cli, *argv: str) -> Any:
    code, out, err = cli(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


SAMPLE = str(ROOT / "examples" / "sample_trials.jsonl")


def test_the_metrics_sketch_names_every_key(cli: Cli) -> None:
    printed = _json(cli, "metrics", SAMPLE)
    keys = _keys(
        printed, "groups", "groups.success_rate", "groups.cost", "groups.latency_s",
        "groups.tokens", "groups.calls", "reliability",
    )  # fmt: skip
    assert keys - _sketch("metrics.md", "agentgauge.metrics/1") == set()


def test_the_compare_sketch_names_every_key(cli: Cli) -> None:
    printed = _json(cli, "compare", f"{SAMPLE}#agent=hasty", f"{SAMPLE}#agent=careful")
    keys = _keys(
        printed, "cost_of_pass", "a", "record", "record.lines", "record.capabilities",
        "record.capabilities.a", "components", "per_task",
    )  # fmt: skip
    keys |= {key for baseline in printed["baselines"].values() for key in baseline}
    assert keys - _sketch("compare-and-plan.md", "agentgauge.compare/1") == set()


def test_the_show_sketch_names_every_key(cli: Cli) -> None:
    failures = _json(cli, "show", SAMPLE)
    trials = _json(cli, "show", SAMPLE, "--task", "refund-damaged")
    keys = _keys(failures, "failures") | _keys(trials, "trials")
    assert keys - _sketch("show.md", "agentgauge.show/1") == set()


def test_the_horizon_sketch_names_every_key(cli: Cli) -> None:
    printed = _json(cli, "horizon", SAMPLE, "--bootstrap", "20")
    keys = _keys(printed, "groups", "groups.half_life", "groups.log_loss")
    assert keys - _sketch("horizon.md", "agentgauge.horizon/1") == set()
