"""Hostile input files get one line and exit 2, and leave no store behind.

Each case is a file a user (or an attacker) could hand to a command: trial
JSONL, tau-bench and METR results, suites, gates and price files that are
binary, UTF-16, nested 100,000 deep, hold integers SQLite cannot store, or
YAML aliases that expand without end. The command must print exactly one
line, ``agentgauge: error: FILE[:LINE]: [field: ]reason``, exit with 2, and
write nothing: no new store file, no change to an existing one.

Every case runs through the real console entry point (the ``cli`` fixture);
a few also run as a separate process, the way a shell runs them, since a
crash there (a RecursionError near the real stack limit, an out-of-memory
kill) is what the user would see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import dump_store

Cli = Callable[..., tuple[int, str, str]]  # the `cli` fixture (tests/conftest.py)

OK_TRIAL = {"task_id": "t1", "success": True}
_OK = json.dumps(OK_TRIAL)


def _jsonl(*lines: str | bytes) -> bytes:
    return b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines)


def _trial(**fields: object) -> bytes:
    return _jsonl(json.dumps({**OK_TRIAL, **fields}))


def _taubench(**fields: object) -> bytes:
    base = {"task_id": 1, "reward": 1.0, "trial": 0, "info": {}, "traj": []}
    return json.dumps([{**base, **fields}]).encode()


def _metr(**fields: object) -> bytes:
    base = {"task_id": "t", "task_family": "f", "alias": "a", "human_minutes": 5}
    return _jsonl(json.dumps({**base, "score_binarized": 1, "score": 1, **fields}))


def _bomb(levels: int, use: str) -> bytes:
    """A "billion laughs" document: each level refers to the one below nine times."""
    lines = ['x-a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"x-a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels + 1)]
    return ("\n".join(lines) + "\n" + use.format(top=f"*a{levels}") + "\n").encode()


DEEP = 100_000
BINARY = bytes(range(256)) * 4
BIG = 2**63  # one past SQLite's largest INTEGER


@dataclass(frozen=True)
class Case:
    name: str
    """Command: ``jsonl``/``taubench``/``metr`` (import), ``metrics``, ``suite``, ``gates``,
    ``prices``."""
    content: bytes
    expect: str
    """What the one line must say, after the file name."""
    suffix: str = ".jsonl"


CASES = [
    # Trial records (agentgauge import jsonl, and metrics reading the file directly).
    Case("jsonl", _trial(trial=BIG), ":1: trial: out of range"),
    Case("jsonl", _trial(seed=BIG), ":1: seed: out of range"),
    Case("jsonl", _trial(input_tokens=10**20), ":1: input_tokens: out of range"),
    Case(
        "jsonl",
        _trial(events=[{"type": "model_call", "output_tokens": BIG}]),
        ":1: events.0.model_call.output_tokens: out of range",
    ),
    Case("jsonl", _jsonl(json.dumps(OK_TRIAL), b'{"task_id": "t\xff"}'), ":2: not a UTF-8"),
    Case("jsonl", (json.dumps(OK_TRIAL) + "\n").encode("utf-16"), ":1: not a UTF-8"),
    Case("jsonl", b"\xef\xbb\xbf" + _trial(), ":1: the file starts with a byte-order mark"),
    Case("jsonl", b"\x80" + BINARY, ":1: not a UTF-8 text file: byte 0 (0x80)"),
    Case("jsonl", _jsonl('{"task_id": "t1", "m": ' + "[" * DEEP + "]" * DEEP + "}"), ":1: nested"),
    # 990 levels parse, but what reads the value next recursed past the stack.
    Case("jsonl", _jsonl(_OK[:-1] + ', "metadata": ' + "[" * 990 + "]" * 990 + "}"), ":1: nested"),
    Case("jsonl", _trial(trial=True), ":1: trial: expected a number, got a boolean"),
    Case("jsonl", _trial(trial="1"), ":1: trial: not a valid number"),
    Case("metrics", _trial(trial=BIG), ":1: trial: out of range"),
    Case("metrics", _jsonl(b'{"task_id": "\xc3"}'), ":1: not a UTF-8"),
    Case("metrics", _jsonl("[" * DEEP + "]" * DEEP), ":1: nested"),
    # tau-bench results (one JSON document: errors name the element).
    Case("taubench", _taubench(info=[1]), ": [0].info: expected an object", ".json"),
    Case("taubench", _taubench(traj={"a": 1}), ": [0].traj: expected a list", ".json"),
    Case("taubench", _taubench(traj=[5]), ": [0].traj[0]: expected an object", ".json"),
    Case(
        "taubench",
        _taubench(traj=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
        ": [0].traj[0].content: expected a string, got a list",
        ".json",
    ),
    Case(
        "taubench", _taubench(traj=[{"role": 5}]), ": [0].traj[0].role: expected a string", ".json"
    ),
    Case(
        "taubench",
        _taubench(traj=[{"role": "assistant", "tool_calls": [{"function": []}]}]),
        ": [0].traj[0].tool_calls[0].function: expected an object",
        ".json",
    ),
    # What a default stood in for (role "", a call named "", arguments {"__unparsed__":
    # null}), and a spend that was text or negative, dropped or stored as it stood.
    Case(
        "taubench",
        _taubench(traj=[{"content": "hi"}]),
        ": [0].traj[0].role: required field is missing",
        ".json",
    ),
    Case(
        "taubench",
        _taubench(traj=[{"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]),
        ": [0].traj[0].tool_calls[0].function: required field is missing",
        ".json",
    ),
    Case(
        "taubench",
        _taubench(traj=[{"role": "assistant", "tool_calls": [{"function": None}]}]),
        ": [0].traj[0].tool_calls[0].function: expected an object, got null",
        ".json",
    ),
    Case(
        "taubench",
        _taubench(traj=[{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]),
        ": [0].traj[0].tool_calls[0].function.name: required field is missing",
        ".json",
    ),
    Case(
        "taubench",
        _taubench(info={"user_cost": "0.5"}),
        ": [0].info.user_cost: expected a finite number, got a string",
        ".json",
    ),
    Case(
        "taubench",
        _taubench(info={"user_cost": -7}),
        ": [0].info.user_cost: must be at least 0, got -7",
        ".json",
    ),
    Case("taubench", _taubench(trial=-1), ": [0].trial: Input should be greater than", ".json"),
    Case("taubench", _taubench(trial="x"), ": [0].trial: not a valid number", ".json"),
    Case("taubench", _taubench(trial=BIG), ": [0].trial: out of range", ".json"),
    Case(
        "taubench",
        _taubench(info={"task": {"instruction": "i", "actions": [{"name": "f", "kwargs": [1]}]}}),
        ": [0].info.task.actions[0].kwargs: expected an object",
        ".json",
    ),
    Case("taubench", _taubench(info={"user_cost": 10**400}), ": [0].info.user_cost", ".json"),
    Case("taubench", ("[" * DEEP + "]" * DEEP).encode(), ": nested too deeply", ".json"),
    Case("taubench", b'[{"task_id": "\xff", "reward": 1}]', ":1: not a UTF-8", ".json"),
    # METR runs.
    Case("metr", _metr(human_minutes=10**400), ":1: human_minutes: must be a positive number"),
    Case("metr", _metr(score=10**400), ":1: score: must be a finite number"),
    Case("metr", _metr(score=2.0).replace(b"2.0", b"1e400"), ":1: score: must be a finite number"),
    Case("metr", BINARY[128:], ":1: not a UTF-8"),
    # YAML: suites, gates, prices.
    Case("suite", BINARY, ":2: not a UTF-8 text file", ".yaml"),
    Case("suite", b"- &a [*a]\n", ":1: an alias refers to the node that contains it", ".yaml"),
    Case(
        "suite",
        _bomb(8, "tasks:\n  - id: t1\n    instruction: hi\n    metadata: {{x: {top}}}"),
        ":9: aliases expand this document by",
        ".yaml",
    ),
    Case(
        "suite",
        _bomb(9, "tasks:\n  - id: t1\n    instruction: hi\n    metadata: {{x: {top}}}"),
        ":10: aliases expand this document by",
        ".yaml",
    ),
    # Few nodes, much text: a 200,000-character string named 2,500 times (1 GB of memory
    # and 19 s before it was refused; 10,000 times ran out of memory).
    Case(
        "suite",
        (
            f"x-big: &big {'x' * 200_000}\ntasks:\n  - id: t1\n    instruction: hi\n"
            f"    metadata: {{notes: [{', '.join(['*big'] * 2500)}]}}\n"
        ).encode(),
        ":1: aliases expand this document by 500,000,000 characters, past the limit of 10,000,000",
        ".yaml",
    ),
    Case(
        "suite",
        ("- id: t1\n  instruction: hi\n  metadata: " + "[" * 150 + "]" * 150 + "\n").encode(),
        ":3: nested too deeply",
        ".yaml",
    ),
    Case("gates", BINARY, ":2: not a UTF-8 text file", ".yaml"),
    Case("gates", b"gates: &a [*a]\n", ":1: an alias refers to the node that contains it", ".yaml"),
    Case(
        "gates",
        _bomb(9, "gates: [{{metric: success_rate, min: 0.5, where: {top}}}]"),
        ":10: aliases",
        ".yaml",
    ),
    Case("prices", BINARY, ":2: not a UTF-8 text file", ".yaml"),
    Case("prices", b"m: &a {input: *a, output: 1}\n", ":1: an alias refers", ".yaml"),
    Case("prices", _bomb(9, "m: {{input: 1, output: {top}}}"), ":10: aliases", ".yaml"),
    Case("prices", b'{"m": ' + b"[" * DEEP + b"]" * DEEP + b"}", ": nested too deeply", ".json"),
]


def _args(case: Case, path: Path, store: Path, tmp: Path) -> tuple[list[str], dict[str, str]]:
    """The command line that feeds ``path`` to the command the case names, and its env."""
    if case.name in ("jsonl", "taubench", "metr"):
        return ["import", case.name, str(path), "--store", str(store)], {}
    if case.name == "metrics":
        return ["metrics", str(path)], {}
    if case.name == "suite":
        return ["run", str(path), "--agent", "builtin:null", "--store", str(store)], {}
    ok = tmp / "ok.jsonl"
    ok.write_bytes(_trial())
    if case.name == "gates":
        return ["gate", str(ok), "--config", str(path)], {}
    assert case.name == "prices"
    # The price table is read when the openai: adapter is built, before any request.
    agent = ["--agent", "openai:m", "--base-url", "http://127.0.0.1:9"]
    return ["run", "builtin:functions", *agent, "--store", str(store)], {
        "AGENTGAUGE_PRICES": str(path)
    }


def _check_one_line(case: Case, path: Path, code: int, err: str) -> None:
    lines = err.strip().splitlines()
    assert (code, len(lines)) == (2, 1), err[-2000:]
    assert lines[0].startswith(f"agentgauge: error: {path}"), lines[0]
    assert lines[0].removeprefix(f"agentgauge: error: {path}").startswith(case.expect), lines[0]


def _case_id(case: Case) -> str:
    return f"{case.name}-{case.expect.strip(': ')[:40]}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_hostile_file_is_one_line_exit_2_and_no_store(
    cli: Cli, case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"hostile{case.suffix}"
    path.write_bytes(case.content)
    store = tmp_path / "new.db"
    args, env = _args(case, path, store, tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code, _, err = cli(*args)
    _check_one_line(case, path, code, err)
    assert not store.exists(), "a failed command left a store file behind"


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name in ("jsonl", "taubench", "metr")], ids=_case_id
)
def test_failed_import_leaves_an_existing_store_unchanged(
    cli: Cli, case: Case, tmp_path: Path
) -> None:
    store = tmp_path / "s.db"
    good = tmp_path / "good.jsonl"
    good.write_bytes(_trial())
    assert cli("import", "jsonl", str(good), "--store", str(store), "--run-id", "keep")[0] == 0
    before = dump_store(store)
    path = tmp_path / f"hostile{case.suffix}"
    path.write_bytes(case.content)
    code, _, err = cli("import", case.name, str(path), "--store", str(store), "--run-id", "bad")
    _check_one_line(case, path, code, err)
    assert dump_store(store) == before


SUBPROCESS_CASES = [
    CASES[0],  # jsonl: trial = 2^63
    next(c for c in CASES if c.name == "jsonl" and "nested" in c.expect),
    next(c for c in CASES if c.name == "metrics" and "nested" in c.expect),
    next(c for c in CASES if c.name == "taubench" and "info:" in c.expect),
    next(c for c in CASES if c.name == "metr"),
    next(c for c in CASES if c.name == "suite" and c.expect.startswith(":10: aliases")),
    next(c for c in CASES if c.name == "suite" and "characters" in c.expect),
    next(c for c in CASES if c.name == "gates" and "aliases" in c.expect),
    next(c for c in CASES if c.name == "prices" and "UTF-8" in c.expect),
]


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=_case_id)
def test_hostile_file_in_a_real_process(case: Case, tmp_path: Path) -> None:
    path = tmp_path / f"hostile{case.suffix}"
    path.write_bytes(case.content)
    store = tmp_path / "new.db"
    args, env = _args(case, path, store, tmp_path)
    # A bomb that got through would take minutes and gigabytes: cap both so the
    # test fails rather than the machine.
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        preexec_fn=_limit_memory,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    _check_one_line(case, path, proc.returncode, proc.stderr)
    assert not store.exists()


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


# --------------------------------------------------------------------------- endless files


TAU2_DIR = Path(__file__).resolve().parent / "fixtures" / "tau2" / "dir"
OTEL_TRACES = Path(__file__).resolve().parent / "fixtures" / "otel" / "genai.jsonl"


def _endless(kind: str, path: Path) -> Path:
    """``path`` made a FIFO nobody writes to, or a symlink to ``/dev/zero``."""
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


def _tau2_dir_with(kind: str, tmp_path: Path) -> tuple[list[str], Path]:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(TAU2_DIR, run)
    sim = _endless(kind, run / "simulations" / "sim-0-0.json")
    return ["import", "tau2", str(run)], sim


def _outcomes(kind: str, tmp_path: Path) -> tuple[list[str], Path]:
    bad = _endless(kind, tmp_path / "outcomes.jsonl")
    return ["import", "otel", str(OTEL_TRACES), "--outcomes", str(bad)], bad


def _taubench_file(kind: str, tmp_path: Path) -> tuple[list[str], Path]:
    bad = _endless(kind, tmp_path / "results.json")
    return ["import", "taubench", str(bad)], bad


def _source(kind: str, tmp_path: Path) -> tuple[list[str], Path]:
    bad = _endless(kind, tmp_path / "trials.jsonl")
    return ["metrics", str(bad)], bad


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("where", [_tau2_dir_with, _outcomes, _taubench_file, _source])
def test_a_fifo_or_device_is_refused_not_read_forever(
    kind: str, where: Callable[[str, Path], tuple[list[str], Path]], tmp_path: Path
) -> None:
    """A FIFO with no writer, or a symlink to ``/dev/zero``, anywhere an input is read
    (a tau2 directory's simulation file, an outcomes file, the file imported, a
    SOURCE): one line naming it, exit 2. Reading one never ended (the process
    waited on the FIFO, or its memory grew on ``/dev/zero`` until it was killed)."""
    args, bad = where(kind, tmp_path)
    store = tmp_path / "new.db"
    if args[0] == "import":
        args += ["--store", str(store)]
    # Run apart, with its memory capped: an endless read fails the test, not the machine.
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=lambda: _cap_memory(1 << 30),
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"agentgauge: error: {bad}: is not a regular file ("), proc.stderr
    assert not store.exists()


def _cap_memory(limit: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.timeout(30)
def test_read_text_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """Opening a FIFO for reading waits for a writer: the open must not block."""
    from agentgauge.errors import InputError
    from agentgauge.textio import read_text

    fifo = _endless("fifo", tmp_path / "pipe.json")
    with pytest.raises(InputError) as err:
        read_text(fifo)
    assert str(err.value) == (
        f"{fifo}: is not a regular file (a pipe): save the data to a file and give that"
    )


def test_read_text_refuses_a_device_and_a_directory(tmp_path: Path) -> None:
    from agentgauge.errors import InputError
    from agentgauge.textio import read_text

    # /dev/null reads as empty: refused for what it is, not as an empty file.
    with pytest.raises(InputError, match=r"^/dev/null: is not a regular file \(a device\)"):
        read_text("/dev/null")
    with pytest.raises(InputError, match=r": is a directory, not a file$"):
        read_text(tmp_path)
    regular = tmp_path / "ok.json"
    regular.write_text("[1]")
    assert read_text(regular) == "[1]"
