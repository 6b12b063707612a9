"""Where ``export --jsonl/--otel`` and ``report --html/--markdown`` write.

Nothing is replaced without ``--force``; a command's own input (the store, its
``-wal``/``-shm``, the trials file, a Parquet export's files) is never replaced,
whatever the name it is given by; a directory or a socket is one line, exit 2;
a symlink's target is replaced and the link kept; a terminal or pipe is written
to as a stream; a new file gets 0666 less the umask."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentgauge.store import Store

Cli = Any

ROWS = [{"task_id": "t1", "success": True}, {"task_id": "t2", "success": False}]


@pytest.fixture
def work(tmp_path: Path, cli: Cli) -> Path:
    """tmp_path with m.jsonl and m.db (run ``m`` imported from it)."""
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    code, _, err = cli(
        "import", "jsonl", str(tmp_path / "m.jsonl"), "--store", str(tmp_path / "m.db"),
        "--run-id", "m",
    )  # fmt: skip
    assert code == 0, err
    return tmp_path


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def one_line(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


# --------------------------------------------------------------------------- export


@pytest.mark.parametrize("fmt", ["jsonl", "otel"])
def test_export_refuses_an_existing_file_unless_forced(cli: Cli, work: Path, fmt: str) -> None:
    out = work / "out.txt"
    out.write_text("someone's notes\n")
    code, _, err = cli("export", str(work / "m.db"), f"--{fmt}", str(out))
    one_line(code, err, f"{out}: --{fmt}: exists and is not empty; add --force")
    assert out.read_text() == "someone's notes\n"
    code, said, err = cli("export", str(work / "m.db"), f"--{fmt}", str(out), "--force")
    assert code == 0, err
    assert "exported 2 trials" in said
    assert out.read_text() != "someone's notes\n"
    # An empty file holds nothing to lose (mktemp's): written without --force.
    empty = work / "empty.txt"
    empty.touch()
    assert cli("export", str(work / "m.db"), f"--{fmt}", str(empty))[0] == 0
    assert empty.stat().st_size > 0
    assert leftovers(work) == []


@pytest.mark.parametrize("name", ["m.db", "m.db-wal", "m.db-shm", "m.db-journal"])
@pytest.mark.parametrize("fmt", ["jsonl", "otel"])
def test_export_never_replaces_its_store_even_forced(
    cli: Cli, work: Path, fmt: str, name: str
) -> None:
    db = work / "m.db"
    before = db.read_bytes()
    for force in ([], ["--force"]):
        code, _, err = cli("export", str(db), f"--{fmt}", str(work / name), *force)
        one_line(code, err, f"--{fmt}: is one of this command's inputs", "--force never")
    assert db.read_bytes() == before
    if name != "m.db":
        assert not (work / name).exists()
    with Store(db, readonly=True) as store:
        assert [r.run_id for r in store.list_runs()] == ["m"]
    assert leftovers(work) == []


def test_export_never_replaces_its_store_by_another_name(cli: Cli, work: Path) -> None:
    db = work / "m.db"
    before = db.read_bytes()
    os.link(db, work / "hard.db")
    (work / "soft.db").symlink_to(db)
    (work / "wal-link").symlink_to(work / "m.db-wal")  # dangling: the WAL is not there now
    (work / "sub").mkdir()
    for dest in ("hard.db", "soft.db", "wal-link", "sub/../m.db"):
        code, _, err = cli("export", f"{db}:m", "--jsonl", str(work / dest), "--force")
        one_line(code, err, "is one of this command's inputs")
    # The store named through a symlink is still the store.
    code, _, err = cli("export", str(work / "soft.db"), "--otel", str(db), "--force")
    one_line(code, err, "is one of this command's inputs")
    assert db.read_bytes() == before
    assert not (work / "m.db-wal").exists()


@pytest.mark.parametrize("fmt", ["jsonl", "otel"])
def test_export_onto_a_directory_is_one_line(cli: Cli, work: Path, fmt: str) -> None:
    folder = work / "d"
    folder.mkdir()
    for force in ([], ["--force"]):
        code, _, err = cli("export", str(work / "m.db"), f"--{fmt}", str(folder), *force)
        one_line(code, err, f"{folder}: --{fmt}: is a directory", str(folder / "m."))
    assert list(folder.iterdir()) == [] and leftovers(work) == []


@pytest.mark.parametrize(
    ("fmt", "example"),
    [("parquet", "directory (e.g. --parquet m)"), ("jsonl", "file (e.g. --jsonl m.jsonl)"),
     ("otel", "file (e.g. --otel m.otlp.json)")],
)  # fmt: skip
def test_export_to_an_empty_path_names_the_option(
    cli: Cli, work: Path, fmt: str, example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "" was the current folder to the writers: `--parquet ''` beside the store said
    # ".: holds m.db, the store this export reads, ...", naming neither the option nor
    # the mistake.
    monkeypatch.chdir(work)
    before = sorted(p.name for p in work.iterdir())
    code, _, err = cli("export", "m.db:m", f"--{fmt}", "")
    one_line(code, err)
    what = example.split(" ")[0]
    assert err == (
        f"agentgauge: error: --{fmt}: an empty path names no {what}: give the export's {example}\n"
    )
    assert sorted(p.name for p in work.iterdir()) == before


def test_export_into_a_file_as_folder_is_one_line(cli: Cli, work: Path) -> None:
    dest = work / "m.jsonl" / "x.jsonl"
    code, _, err = cli("export", str(work / "m.db"), "--jsonl", str(dest))
    one_line(code, err, f"{dest}: --jsonl: cannot write here")


@pytest.mark.parametrize("fmt", ["jsonl", "otel", "parquet"])
def test_export_into_a_missing_folder_makes_it_as_report_does(
    cli: Cli, work: Path, fmt: str
) -> None:
    # --jsonl and --otel refused it ("make it first") while --parquet, report --html and
    # compare --markdown made it: one rule for every output now, mkdir -p's.
    dest = work / "missing" / "deeper" / f"x.{fmt}"
    code, _, err = cli("export", str(work / "m.db"), f"--{fmt}", str(dest))
    assert code == 0, err
    assert dest.exists()


def test_export_refused_for_a_bad_run_makes_no_folder(cli: Cli, work: Path) -> None:
    dest = work / "missing" / "x.jsonl"
    code, _, err = cli("export", f"{work / 'm.db'}:nope", "--jsonl", str(dest))
    assert code == 2, err
    assert not (work / "missing").exists()


def test_export_onto_a_socket_is_refused(cli: Cli, work: Path) -> None:
    path = work / "s.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        for force in ([], ["--force"]):
            code, _, err = cli("export", str(work / "m.db"), "--jsonl", str(path), *force)
            one_line(code, err, "exists and is not a regular file, a terminal or a pipe")
        assert stat.S_ISSOCK(path.lstat().st_mode)
    finally:
        sock.close()


def test_export_through_a_symlink_replaces_its_target(
    cli: Cli, work: Path, umask_022: None
) -> None:
    (work / "real").mkdir()
    target = work / "real" / "t.jsonl"
    target.write_text("old\n")
    target.chmod(0o640)
    link = work / "link.jsonl"
    link.symlink_to(target)
    code, _, err = cli("export", str(work / "m.db"), "--jsonl", str(link))
    one_line(code, err, "exists and is not empty")
    assert cli("export", str(work / "m.db"), "--jsonl", str(link), "--force")[0] == 0
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text().count("\n") == 2
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # a replaced file keeps its mode
    # A symlink to nothing yet: the file it names is made, the link kept.
    dangling = work / "later.jsonl"
    dangling.symlink_to(work / "real" / "new.jsonl")
    assert cli("export", str(work / "m.db"), "--otel", str(dangling))[0] == 0
    assert dangling.is_symlink() and (work / "real" / "new.jsonl").is_file()
    assert leftovers(work) == []


def test_a_new_export_gets_the_usual_permissions(cli: Cli, work: Path) -> None:
    for umask in (0o022, 0o077, 0o002):
        old = os.umask(umask)
        try:
            out = work / f"u{umask:o}.jsonl"
            assert cli("export", str(work / "m.db"), "--jsonl", str(out))[0] == 0
        finally:
            os.umask(old)
        assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_export_streams_to_a_character_device_and_a_fifo(cli: Cli, work: Path) -> None:
    code, said, err = cli("export", str(work / "m.db"), "--jsonl", os.devnull)
    assert code == 0, err
    assert Path(os.devnull).is_char_device()
    assert "exported 2 trials" in err and said == ""  # the output may be the stream itself
    fifo = work / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = cli("export", str(work / "m.db"), "--jsonl", str(fifo))
    reader.join(timeout=30)
    assert code == 0, err
    assert [json.loads(line)["task_id"] for line in got[0].decode().splitlines()] == ["t1", "t2"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_export_to_dev_stdout_is_the_output(work: Path) -> None:
    if not Path("/dev/stdout").exists():
        pytest.skip("no /dev/stdout")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "export",
            str(work / "m.db"),
            "--jsonl",
            "/dev/stdout",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["task_id"] for line in proc.stdout.splitlines()] == ["t1", "t2"]
    assert "exported 2 trials" in proc.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "otel"])
def test_export_to_a_dash_is_standard_output_not_a_file_named_dash(work: Path, fmt: str) -> None:
    """``--jsonl -`` wrote a file named ``-`` in the current folder and printed the
    ``exported ...`` line on stdout, so ``... --jsonl - | jq`` read no trial."""
    if not Path("/dev/stdout").exists():
        pytest.skip("no /dev/stdout")
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", "export", "m.db", f"--{fmt}", "-"],
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (work / "-").exists()
    if fmt == "jsonl":
        assert [json.loads(line)["task_id"] for line in proc.stdout.splitlines()] == ["t1", "t2"]
    else:
        assert "resourceSpans" in json.loads(proc.stdout)
    assert "exported 2 trials of m.db:m to standard output" in proc.stderr


def test_a_parquet_export_to_a_dash_is_one_line(
    cli: Cli, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)
    code, _, err = cli("export", "m.db", "--parquet", "-")
    one_line(code, err, "-: --parquet: standard output cannot hold a directory")
    assert not (work / "-").exists()


# --------------------------------------------------------------------------- report


@pytest.mark.parametrize(
    ("option", "start", "what"),
    [("--markdown", "# ", "Markdown summary"), ("--html", "<!doctype html>", "HTML report")],
)
def test_report_to_a_dash_is_standard_output_not_a_file_named_dash(
    work: Path, option: str, start: str, what: str
) -> None:
    """``--markdown -`` wrote a file named ``-`` and printed ``wrote -`` on stdout."""
    if not Path("/dev/stdout").exists():
        pytest.skip("no /dev/stdout")
    proc = subprocess.run(
        [sys.executable, "-m", "agentgauge", "report", "m.db", option, "-"],
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert proc.returncode == 0, proc.stderr
    assert not (work / "-").exists()
    assert proc.stdout.lower().startswith(start.lower()), proc.stdout[:80]
    assert "wrote -" not in proc.stdout + proc.stderr
    assert f"wrote the {what} to standard output" in proc.stderr


def test_report_refuses_an_existing_file_unless_forced(cli: Cli, work: Path) -> None:
    src = str(work / "m.jsonl")
    page, md = work / "r.html", work / "r.md"
    assert cli("report", src, "--html", str(page), "--markdown", str(md))[0] == 0
    page.write_text("edited by hand")
    md.unlink()
    code, _, err = cli("report", src, "--html", str(page), "--markdown", str(md))
    one_line(code, err, f"{page}: --html: exists and is not empty; add --force")
    # Refused before anything is written: the Markdown, allowed alone, is not written either.
    assert page.read_text() == "edited by hand" and not md.exists()
    code, said, err = cli("report", src, "--html", str(page), "--markdown", str(md), "--force")
    assert code == 0, err
    assert page.read_text().startswith("<!doctype html>") and md.is_file()
    assert f"wrote {page}" in said and leftovers(work) == []


@pytest.mark.parametrize("option", ["--html", "--markdown"])
def test_report_never_replaces_its_sources_even_forced(cli: Cli, work: Path, option: str) -> None:
    trials, db = work / "m.jsonl", work / "m.db"
    exported = work / "exp"
    assert cli("export", f"{db}:m", "--parquet", str(exported))[0] == 0
    (work / "link.jsonl").symlink_to(trials)
    before = {p: p.read_bytes() for p in (trials, db, *exported.iterdir())}
    cases = [
        (str(trials), trials),
        (f"{trials}#agent=a", trials),
        (str(trials), work / "link.jsonl"),
        (f"{db}:m", db),
        (f"{db}:m", Path(f"{db}-wal")),
        (str(db), Path(f"{db}-shm")),
        (str(exported), exported / "trials.parquet"),
        (str(work / "e*"), exported / "_agentgauge.json"),
        # A trials file is read with the export's other files beside it: those are inputs.
        (str(exported / "trials.parquet"), exported / "events.parquet"),
        (str(exported / "trials.parquet"), exported / "_agentgauge.json"),
        (str(work / "e*" / "trials.parquet"), exported / "grades.parquet"),
    ]
    for source, dest in cases:
        for force in ([], ["--force"]):
            code, _, err = cli("report", source, option, str(dest), *force)
            one_line(code, err, f"{dest}: {option}: is one of this command's inputs")
    # The second SOURCE is an input too.
    code, _, err = cli("report", f"{db}:m", str(trials), option, str(trials), "--force")
    one_line(code, err, "is one of this command's inputs")
    assert {p: p.read_bytes() for p in before} == before
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0


def test_report_html_and_markdown_into_one_file_is_refused(cli: Cli, work: Path) -> None:
    out = work / "r.txt"
    code, _, err = cli(
        "report", str(work / "m.jsonl"), "--html", str(out), "--markdown", str(out), "--force"
    )
    one_line(code, err, "is given to both --html and --markdown")
    assert not out.exists()


def test_report_through_a_symlink_and_with_the_usual_permissions(
    cli: Cli, work: Path, umask_022: None
) -> None:
    target = work / "reports" / "r.md"
    target.parent.mkdir()
    link = work / "r.md"
    link.symlink_to(target)
    assert cli("report", str(work / "m.jsonl"), "--markdown", str(link))[0] == 0
    assert link.is_symlink() and target.read_text().startswith("# agentgauge report")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    page = work / "new" / "r.html"  # a missing folder is still created
    assert cli("report", str(work / "m.jsonl"), "--html", str(page))[0] == 0
    assert stat.S_IMODE(page.stat().st_mode) == 0o644


def test_report_onto_a_directory_keeps_its_message(cli: Cli, work: Path) -> None:
    code, _, err = cli("report", str(work / "m.jsonl"), "--html", str(work), "--force")
    one_line(code, err, f"{work}: --html: is a directory: give the report's file name")
    assert str(work / "report.html") in err


def test_report_to_a_stream_says_so_on_stderr(cli: Cli, work: Path) -> None:
    code, said, err = cli("report", str(work / "m.jsonl"), "--markdown", os.devnull)
    assert code == 0, err
    assert said == "" and f"wrote {os.devnull}" in err
