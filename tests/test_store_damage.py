"""A store SQLite cannot read or write, met mid-command: one line and exit 2, never a
traceback (exit 1 is a failed gate, which a damaged store must not read as)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from tests.conftest import Cli

import agentgauge
from agentgauge import run
from agentgauge.errors import InputError
from agentgauge.store import Store
from agentgauge.testing.worlds import counting_agent

SUITE = Path(__file__).resolve().parents[1] / "examples" / "counter-suite.yaml"
SAMPLE = SUITE.parent / "sample_trials.jsonl"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    run(str(SUITE), counting_agent, trials=10, store=path, run_id="r1")
    return path


def damage_events(path: Path, table: str = "events", *, every: bool = False) -> None:
    """Overwrite the middle leaf page of the ``events`` table (or ``table``) with garbage;
    with ``every``, each of its leaf pages."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        try:
            pages = [
                p
                for (p,) in conn.execute(
                    "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,)
                )
            ]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table to find the events' pages with")
    conn.close()
    assert pages, f"the run wrote no {table} pages"
    with path.open("r+b") as fh:
        for page in pages if every else [pages[len(pages) // 2]]:
            fh.seek((page - 1) * size + 8)
            fh.write(b"\xde\xad" * 50)


@pytest.mark.parametrize(
    "command",
    [
        ["show", "{db}:r1", "--task", "add-large"],
        ["export", "{db}:r1", "--jsonl", "{out}"],
        ["report", "{db}:r1", "--html", "{out}"],
    ],
)
def test_a_damaged_store_is_one_line_and_exit_2(
    store: Path, tmp_path: Path, cli: Cli, command: list[str]
) -> None:
    # The report reads each trial's record, and the transcripts of the few failing trials
    # it shows only (none here: every trial passes), so its damage is in the records.
    # `show --task` reads that task's transcripts only, wherever they lie: every page of
    # the events is damaged for it, so that the task's own are.
    damage_events(
        store, "trial_facts" if command[0] == "report" else "events", every=command[0] == "show"
    )
    args = [a.format(db=store, out=tmp_path / "out.file") for a in command]
    code, _, err = cli(*args)
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"agentgauge: error: {store}: the store is damaged (SQLite: ")
    assert "PRAGMA integrity_check" in err
    assert not (tmp_path / "out.file").exists()


def read_only_folder(folder: Path) -> bool:
    """Mount ``folder`` read-only on itself (root only); whether that worked."""
    if os.geteuid() != 0:
        return False
    for args in (["mount", "--bind", str(folder), str(folder)],
                 ["mount", "-o", "remount,ro,bind", str(folder)]):  # fmt: skip
        done = subprocess.run(args, capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["umount", str(folder)], capture_output=True, check=False)
            return False
    return True


def test_a_store_on_a_read_only_filesystem_is_named_read_only(tmp_path: Path, cli: Cli) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "s.db"
    run(str(SUITE), counting_agent, trials=1, store=db, run_id="r1")
    if not read_only_folder(folder):
        pytest.skip("needs root and mount(8) to make a read-only filesystem")
    try:
        code, _, err = cli("grade", f"{db}:r1")
        assert code == 2
        # The filesystem is the cause, not the file's mode (which chmod would change):
        # it said "the file is read-only".
        assert err.strip() == (
            f"agentgauge: error: {db}: cannot write to the store: it is on a read-only "
            "filesystem (mounted read-only, which no file mode changes); this command adds "
            "to the store. Copy the store to a writable disk and name the copy, or remount "
            "the filesystem read-write (metrics, compare, show, report, export and gate "
            "only read a store, and work on it as it is)"
        )
        code, _, err = cli("import", "jsonl", str(SAMPLE), "--store", str(folder / "new.db"))
        assert code == 2
        assert err.strip() == (
            f"agentgauge: error: {folder / 'new.db'}: cannot create the store: the folder "
            f"{folder} is on a read-only filesystem (mounted read-only, which no file mode "
            "changes); name a store on a writable disk"
        )
        code, _, err = cli("metrics", f"{db}:r1", "--json")  # reading works as it is
        assert code == 0, err
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_store_file_is_named_read_only(tmp_path: Path, cli: Cli) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes a file whatever its mode")
    db = tmp_path / "s.db"
    run(str(SUITE), counting_agent, trials=1, store=db, run_id="r1")
    db.chmod(0o444)
    code, _, err = cli("grade", f"{db}:r1")
    assert code == 2
    assert "cannot write to the store: the file is read-only; this command adds" in err
    assert f"Make it writable (chmod u+w {db}) or work on a copy" in err


def test_a_store_in_a_read_only_folder_names_the_folder(tmp_path: Path, cli: Cli) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes a folder whatever its mode")
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "s.db"
    run(str(SUITE), counting_agent, trials=1, store=db, run_id="r1")
    folder.chmod(0o555)
    try:
        code, _, err = cli("grade", f"{db}:r1")
        assert code == 2
        assert f"its folder {folder} is read-only (SQLite writes the store's -wal and" in err
        assert f"(chmod u+w {folder})" in err
        db.chmod(0o444)  # both: both are named
        code, _, err = cli("grade", f"{db}:r1")
        assert f"the file and its folder {folder} are read-only" in err
        assert f"(chmod u+w {db} {folder})" in err
    finally:
        folder.chmod(0o755)


def test_a_store_cut_short_is_called_damaged_not_a_foreign_file(
    store: Path, tmp_path: Path, cli: Cli
) -> None:
    cut = tmp_path / "cut.db"
    with sqlite3.connect(store) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    cut.write_bytes(store.read_bytes()[:40960])  # head -c 40960: a copy that stopped
    for command in (["runs", "--store", str(cut)], ["metrics", f"{cut}:r1"]):
        code, _, err = cli(*command)
        assert code == 2, err
        assert err.strip() == (
            f"agentgauge: error: {cut}: the store is damaged (SQLite: database disk image is "
            f"malformed); nothing more was written to it. Check it with: sqlite3 {cut} "
            "'PRAGMA integrity_check', and restore it from a copy"
        )
    text = tmp_path / "text.db"
    text.write_text("a file that is no SQLite database at all, long enough to have a header\n")
    code, _, err = cli("runs", "--store", str(text))
    assert code == 2 and "not an agentgauge store: file is not a database" in err


def test_writes_in_the_wal_of_a_store_that_cannot_be_read_with_it_are_never_dropped(
    tmp_path: Path, cli: Cli
) -> None:
    db = tmp_path / "s.db"
    run(str(SUITE), counting_agent, trials=1, store=db, run_id="first")
    # A copy of the store and its -wal without the -shm (or a writer killed before
    # its checkpoint): the second run is committed, in the -wal only.
    holder = sqlite3.connect(db)  # open, so that the run's close does not checkpoint
    try:
        holder.execute("SELECT COUNT(*) FROM runs").fetchone()
        run(str(SUITE), counting_agent, trials=1, store=db, run_id="second")
        folder = tmp_path / "ro"
        folder.mkdir()
        for name in ("s.db", "s.db-wal"):
            (folder / name).write_bytes((tmp_path / name).read_bytes())
    finally:
        holder.close()
    copy = folder / "s.db"
    assert (folder / "s.db-wal").stat().st_size > 0
    mounted = read_only_folder(folder)
    if not mounted:
        if os.geteuid() == 0:
            pytest.skip("needs mount(8) to make a folder root cannot write")
        folder.chmod(0o555)
    try:
        for command in (["runs", "--store", str(copy)], ["metrics", f"{copy}:second"]):
            code, out, err = cli(*command)
            assert code == 2, (command, out, err)
            assert err.strip() == (
                f"agentgauge: error: {copy}: cannot read the store here: its latest writes "
                f"are in {copy}-wal, which SQLite reads only where it may write beside the "
                "store (this folder is read-only); copy the store with its -wal file to a "
                "folder you can write and read the copy, or run an agentgauge command on it "
                "once as a user who may write the folder (which moves those writes into the "
                "store)"
            )
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        folder.chmod(0o755)
    # What the line says to do works: read once with write access, the store is whole.
    code, out, err = cli("runs", "--store", str(copy), "--json")
    assert code == 0, err
    assert "first" in out and "second" in out
    assert not (folder / "s.db-wal").exists()


def test_the_python_functions_name_a_damaged_store_as_the_commands_do(store: Path) -> None:
    damage_events(store)
    source = f"{store}:r1"
    calls = {
        "load_trials": lambda: agentgauge.load_trials(source),
        "compare": lambda: agentgauge.compare(source, source),
        "regrade": lambda: agentgauge.regrade(source),
        "Store.trials": lambda: Store(store, readonly=True).trials("r1"),
    }
    for name, call in calls.items():
        with pytest.raises(InputError) as caught:
            call()
        assert str(caught.value) == (
            f"{store}: the store is damaged (SQLite: database disk image is malformed); "
            f"nothing more was written to it. Check it with: sqlite3 {store} "
            "'PRAGMA integrity_check', and restore it from a copy"
        ), name


def test_a_damaged_store_read_lazily_is_named_as_the_commands_do(
    store: Path, tmp_path: Path
) -> None:
    # The column-wise readers are generators: the damaged page is met while they are
    # iterated, after the call returned, and was a bare sqlite3.DatabaseError there.
    from agentgauge.parquet.write import write_parquet
    from agentgauge.store.columns import event_batches

    damage_events(store)
    said = (
        f"{store}: the store is damaged (SQLite: database disk image is malformed); "
        f"nothing more was written to it. Check it with: sqlite3 {store} "
        "'PRAGMA integrity_check', and restore it from a copy"
    )
    with Store(store, readonly=True) as db:
        batches = event_batches(db, "r1", 4)
        with pytest.raises(InputError) as caught:
            for _ in batches:
                pass
    assert str(caught.value) == said
    with pytest.raises(InputError) as caught:
        write_parquet(store, "r1", tmp_path / "out")
    assert str(caught.value) == said
    assert not (tmp_path / "out").exists()
