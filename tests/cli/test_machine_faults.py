"""The machine misbehaving (issue 12, section 4): a full disk, a read-only store, an
output encoding without the report's characters, a report path that is a directory,
and reports on the smallest inputs. Each case runs the real command in its own
process, on real files: the full disk is a real tmpfs of a few hundred kilobytes,
and the read-only store a real read-only mount, both in a mount namespace of the
test's own (``unshare``), so nothing outside the test sees them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgauge.suite import load_suite

#: Runs inside the namespace: each step is a shell command (mounts) or an agentgauge
#: command; prints every step's exit code and output as JSON.
_DRIVER = """
import json, subprocess, sys
out = []
for step in json.loads(sys.argv[1]):
    cmd = step if isinstance(step, str) else [sys.executable, "-m", "agentgauge", *step]
    p = subprocess.run(cmd, shell=isinstance(step, str), capture_output=True, text=True)
    out.append({"rc": p.returncode, "out": p.stdout, "err": p.stderr})
print(json.dumps(out))
"""


def _unshare() -> list[str] | None:
    """How to enter a mount namespace of our own here: as root, or as a user with a
    user namespace (root inside it); None when the machine allows neither."""
    tool = shutil.which("unshare")
    if tool is None:
        return None
    for how in ([tool, "-m"], [tool, "-rm"]):
        probe = subprocess.run(
            [*how, "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True
        )
        if probe.returncode == 0:
            return how
    return None


@pytest.fixture(scope="module")
def namespace() -> list[str]:
    how = _unshare()
    if how is None:
        pytest.skip("cannot mount a tmpfs: unshare -m (as root) or unshare -rm not permitted")
    return how


def _steps(namespace: list[str], steps: list[str | list[str]]) -> list[dict[str, Any]]:
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": _src_path()}
    proc = subprocess.run(
        [*namespace, sys.executable, "-c", _DRIVER, json.dumps(steps)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


def _src_path() -> str:
    # The package under test, also for a user namespace that cannot read the venv's .pth.
    import agentgauge

    return str(Path(agentgauge.__file__).resolve().parents[1])


def _one_line_error(result: dict[str, Any], words: str) -> None:
    assert "Traceback" not in result["err"], result["err"]
    lines = result["err"].strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result["err"]


def _trials(path: Path, n_tasks: int, *, pad: int = 0, **fields: Any) -> Path:
    rows = []
    for t in range(n_tasks):
        for k in range(3):
            row = {"task_id": f"t{t}", "trial": k, "agent": "a", "success": (t + k) % 3 == 0}
            if pad:  # a transcript, so that the trials need room on the disk
                event = {"type": "message", "role": "assistant", "content": f"{t}.{k} " * pad}
                row["events"] = [event]
            rows.append({**row, **fields})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _integrity(store: str) -> str:
    return (
        f"{sys.executable} -c \"import sqlite3; c = sqlite3.connect('{store}'); "
        "print(c.execute('PRAGMA integrity_check').fetchone()[0], "
        "c.execute('SELECT COUNT(*) FROM trials').fetchone()[0])\""
    )


# --------------------------------------------------------------------------- full disk


def test_import_onto_a_full_disk_is_one_line_and_the_store_stays_usable(
    tmp_path: Path, namespace: list[str]
) -> None:
    big = _trials(tmp_path / "big.jsonl", 300, pad=400)  # about 2 MB of transcripts
    disk = tmp_path / "disk"
    disk.mkdir()
    store = str(disk / "s.db")
    full, check, _grown, again, listed = _steps(
        namespace,
        [
            f"mount -t tmpfs -o size=600k tmpfs {disk}",
            ["import", "jsonl", str(big), "--store", store, "--run-id", "r1"],
            _integrity(store),
            f"mount -o remount,size=64m {disk}",
            ["import", "jsonl", str(big), "--store", store, "--run-id", "r1"],
            ["runs", "--store", store, "--json"],
        ],
    )[1:]
    assert full["rc"] == 4, full
    _one_line_error(full, "database or disk is full")
    assert check["out"].split() == ["ok", "0"], check  # nothing half-imported
    assert again["rc"] == 0, again
    runs = json.loads(listed["out"])["runs"]
    assert [(r["run_id"], r["n_trials"]) for r in runs] == [("r1", 900)]


def test_run_onto_a_full_disk_stops_in_one_line_and_resumes(
    tmp_path: Path, namespace: list[str]
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    store = str(disk / "s.db")
    run = ["run", "builtin:retail", "--agent", "builtin:oracle", "-k", "3"]
    run += ["--store", store, "--run-id", "r", "--no-progress"]
    results = _steps(
        namespace,
        [
            f"mount -t tmpfs -o size=600k tmpfs {disk}",
            f"head -c 580000 /dev/zero > {disk}/filler",
            run,  # no room to start: SQLite cannot even grow the -shm index
            f"rm {disk}/filler",
            run,  # room for a few trials
            _integrity(store),
            f"mount -o remount,size=64m {disk}",
            run,
            _integrity(store),
        ],
    )
    unstarted, full, check, resumed, final = (results[i] for i in (2, 4, 5, 7, 8))
    for stopped in (unstarted, full):
        assert stopped["rc"] == 4, stopped
        _one_line_error(stopped, "disk")
    assert "database or disk is full" in full["err"]
    assert "--run-id" in full["err"]  # says how to go on
    status, saved = check["out"].split()
    every = str(3 * len(load_suite("builtin:retail").tasks))  # every task x 3 trials
    assert status == "ok" and 0 < int(saved) < int(every), check  # stopped during the run
    assert resumed["rc"] == 0, resumed
    assert final["out"].split() == ["ok", every], final


# --------------------------------------------------------------------------- read-only


def _store_with_a_run(tmp_path: Path) -> tuple[Path, Path]:
    trials = _trials(tmp_path / "t.jsonl", 4)
    store = tmp_path / "ro" / "s.db"
    store.parent.mkdir()
    command = ["import", "jsonl", str(trials), "--store", str(store), "--run-id", "r1"]
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", *command],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return store, trials


def _reading_commands(store: Path, out: Path) -> list[list[str]]:
    gates = out / "gates.yaml"
    gates.write_text("gates:\n  - metric: success_rate\n    min: 0.1\n", encoding="utf-8")
    src = f"{store}:r1"
    return [
        ["runs", "--store", str(store)],
        ["metrics", src],
        ["report", src, "--markdown", str(out / "r.md"), "--html", str(out / "r.html")],
        ["compare", src, src],
        ["gate", src, "--config", str(gates)],
    ]


def test_reading_commands_work_on_a_read_only_filesystem(
    tmp_path: Path, namespace: list[str]
) -> None:
    store, _ = _store_with_a_run(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    before = store.read_bytes()
    commands = _reading_commands(store, out)
    # The store's folder, bound read-only onto itself: writes get EROFS.
    folder = store.parent
    mount = f"mount --bind {folder} {folder} && mount -o remount,bind,ro {folder}"
    results = _steps(namespace, [mount, *commands, f"touch {folder}/probe"])
    assert results[0]["rc"] == 0, results[0]
    for command, result in zip(commands, results[1:-1], strict=True):
        assert result["rc"] == 0, (command, result["err"])
    assert results[-1]["rc"] != 0, "the mount was writable: the test proved nothing"
    assert "r1" in results[1]["out"]
    assert store.read_bytes() == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["s.db"]


@pytest.fixture
def unprivileged() -> Iterator[tuple[list[str], Path]]:
    """A command prefix that runs as a user who cannot write a 0555 folder (root can),
    and a folder that user can reach."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop to a plain user")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        # The plain user must reach this Python and its packages: a checkout under a
        # private folder (mktemp -d, /root) hides them. The read-only mount test above
        # covers a read-only store as root in that case.
        probe = subprocess.run(
            [*prefix, sys.executable, "-c", "import agentgauge"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": _src_path()},
            cwd="/",
        )
        if probe.returncode != 0:
            pytest.skip(
                f"user 65534 cannot import agentgauge from {sys.prefix} "
                f"({probe.stderr.strip().splitlines()[-1:]}): the checkout is private"
            )
    folder = Path(tempfile.mkdtemp(prefix="agentgauge-ro-"))
    folder.chmod(0o755)
    try:
        yield prefix, folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(folder)


def test_reading_commands_work_on_a_store_in_a_folder_nobody_may_write(
    unprivileged: tuple[list[str], Path],
) -> None:
    prefix, folder = unprivileged
    store, _ = _store_with_a_run(folder)
    out = folder / "out"
    out.mkdir()
    out.chmod(0o777)
    store.chmod(0o444)
    store.parent.chmod(0o555)
    before = store.read_bytes()
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": _src_path(), "HOME": str(out)}
    for command in _reading_commands(store, out):
        proc = subprocess.run(
            [*prefix, sys.executable, "-m", "agentgauge", *command],
            capture_output=True,
            text=True,
            env=env,
            cwd=out,
        )
        assert proc.returncode == 0, (command, proc.stderr)
    assert store.read_bytes() == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["s.db"]


# --------------------------------------------------------------------------- encoding


def test_an_ascii_terminal_gets_replacements_not_a_traceback(tmp_path: Path) -> None:
    trials = _trials(tmp_path / "t.jsonl", 3, agent="café ✓ ±")
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "200"}
    for command in (
        ["metrics", str(trials)],
        ["compare", str(trials), str(trials)],
        ["metrics", str(trials), "--json"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "agentgauge", *command],
            capture_output=True,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        assert b"Traceback" not in proc.stderr
        proc.stdout.decode("ascii")  # every byte is ASCII
    assert b"caf" in proc.stdout


# --------------------------------------------------------------------------- report paths


def _report(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", "report", *args], capture_output=True, text=True
    )


def test_report_into_a_missing_folder_creates_it(tmp_path: Path) -> None:
    trials = _trials(tmp_path / "t.jsonl", 3)
    page, md = tmp_path / "new" / "deeper" / "r.html", tmp_path / "other" / "r.md"
    proc = _report(str(trials), "--html", str(page), "--markdown", str(md))
    assert proc.returncode == 0, proc.stderr
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert md.read_text(encoding="utf-8").startswith("# agentgauge report")


def test_report_onto_a_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    trials = _trials(tmp_path / "t.jsonl", 3)
    for option in ("--html", "--markdown"):
        proc = _report(str(trials), option, str(tmp_path))
        assert proc.returncode == 2, proc.stderr
        _one_line_error({"err": proc.stderr}, "is a directory")
        assert f"{tmp_path}: {option}:" in proc.stderr


# --------------------------------------------------------------------------- smallest inputs


def _rows(n_tasks: int, n_trials: int, outcome: Any, **fields: Any) -> list[dict[str, Any]]:
    return [
        {"task_id": f"t{t}", "trial": k, "agent": "a", "success": outcome(t, k), **fields}
        for t in range(n_tasks)
        for k in range(n_trials)
    ]


SMALLEST = {
    "one task, one trial": _rows(1, 1, lambda t, k: True),
    "one task, several trials": _rows(1, 3, lambda t, k: k == 0),
    "all passing": _rows(3, 2, lambda t, k: True, cost_usd=0.01),
    "all failing": _rows(3, 2, lambda t, k: False, cost_usd=0.01),
    "no costs": _rows(3, 2, lambda t, k: (t + k) % 2 == 0),
    "one failing trial": _rows(1, 1, lambda t, k: False),
}


@pytest.mark.parametrize("case", list(SMALLEST))
def test_every_report_copes_with_the_smallest_inputs(tmp_path: Path, case: str) -> None:
    trials = tmp_path / "t.jsonl"
    trials.write_text("".join(json.dumps(r) + "\n" for r in SMALLEST[case]), encoding="utf-8")
    page, md = tmp_path / "r.html", tmp_path / "r.md"
    # One source, and the same run compared with itself (the paired sections).
    for sources in ([str(trials)], [str(trials), str(trials)]):
        proc = _report(*sources, "--html", str(page), "--markdown", str(md), "--force")
        assert proc.returncode == 0, proc.stderr
        assert "None" not in md.read_text(encoding="utf-8")
