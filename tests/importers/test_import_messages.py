"""What `import` says of a path that is no file of its format, and of a cut JSON line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.importers import read_import
from agentgauge.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("fmt", ["jsonl", "otel", "inspect", "taubench"])
def test_a_directory_is_named_as_one(tmp_path: Path, fmt: str) -> None:
    # It said "no such file" of a folder that is there.
    with pytest.raises(InputError) as err:
        read_import(fmt, tmp_path)
    assert f"is a directory; the {fmt} format reads a file" in str(err.value)
    assert "tau2" in str(err.value)  # the format that reads one


def test_a_cut_string_reads_without_a_doubled_word(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task_id": "a')
    with pytest.raises(InputError) as err:
        read_import("jsonl", path)
    assert str(err.value) == f"{path}:1: invalid JSON: Unterminated string starting at column 13"


def test_a_run_id_db_run_cannot_name_is_refused_by_import_and_collect(
    tmp_path: Path, cli: Any
) -> None:
    # "v2#1" was stored, and then "DB:v2#1" read "#1" as a selector.
    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id": "a", "success": true}\n')
    db = tmp_path / "s.db"
    for args in (["import", "jsonl", str(src)], ["collect", "--port", "0"]):
        code, _, err = cli(*args, "--store", str(db), "--run-id", "v2#1")
        assert code == 2 and "'v2#1' holds '#'" in err, err
    assert not db.exists()


@pytest.mark.parametrize("fmt", ["jsonl", "otel", "openinference"])
def test_a_device_is_named_as_no_regular_file(fmt: str) -> None:
    # /dev/null is there: "no such file" sent the user looking for a typo.
    with pytest.raises(InputError) as err:
        read_import(fmt, "/dev/null")
    assert str(err.value).startswith("/dev/null: is not a regular file")


@pytest.mark.parametrize("text", ["", "\n\n", "\n   \n\t\n"])
@pytest.mark.parametrize("fmt", ["otel", "openinference"])
def test_a_file_of_blank_lines_holds_no_traces(tmp_path: Path, fmt: str, text: str) -> None:
    # A two-line file of blank lines was "invalid JSON" on its line 3.
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_import(fmt, path)
    assert str(err.value) == (
        f"{path}: holds no traces: no span in it (an empty file, blank lines, or requests "
        "without spans)"
    )


def test_blank_lines_before_the_first_request_leave_a_file_of_lines(tmp_path: Path) -> None:
    # A blank first line made the whole file read as one document ("Extra data").
    lines = (FIXTURES / "otel" / "genai.jsonl").read_text(encoding="utf-8")
    path = tmp_path / "t.jsonl"
    path.write_text("\n  \n" + lines, encoding="utf-8")
    options = {"suite": str(FIXTURES / "otel" / "suite.yaml")}
    assert len(read_import("otel", path, options).trials) == 3


def test_logs_that_are_no_regular_file_are_named(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        read_import("otel", FIXTURES / "otel" / "genai.jsonl", {"logs": "/dev/null"})
    assert (err.value.field, err.value.reason[:27]) == ("--logs", "is not a regular file (a de")


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_a_cut_line_is_placed_at_its_own_end_whatever_its_line_ending(
    tmp_path: Path, ending: str
) -> None:
    # With its newline the line was parsed as two, and the error said "column 1".
    import subprocess
    import sys

    from agentgauge.importers.spans import read_outcomes
    from agentgauge.suite import load_suite

    good = '{"task_id": "b", "success": true}\n'
    cut = '{"task_id": "a", "success": true' + ending
    path = tmp_path / "r.jsonl"
    path.write_text(good + cut, newline="")
    expected = f"{path}:2: invalid JSON: Expecting ',' delimiter at column 33"
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (2, f"agentgauge: error: {expected}")
    # Suites and span outcomes go through the same reader (here the cut line is first,
    # as they check each record as they read it).
    path.write_text(cut, newline="")
    for read in (read_outcomes, load_suite):
        with pytest.raises(InputError) as err:
            read(path)
        assert str(err.value) == expected.replace(":2:", ":1:")


def test_a_file_imported_twice_is_named_as_imported_not_invited_again(
    tmp_path: Path, cli: Any
) -> None:
    # It said "run 'sample_trials-2721506b' already exists in this store; choose
    # another --run-id": an invitation to store the same trials twice.
    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id": "a", "success": true}\n')
    db = tmp_path / "s.db"
    assert cli("import", "jsonl", str(src), "--store", str(db))[0] == 0
    code, _, err = cli("import", "jsonl", str(src), "--store", str(db))
    assert code == 2
    assert f"--run-id: {src} was already imported as run 't-" in err
    assert "its trials are in the store; to store them a second time, give --run-id" in err
    # The same name with other content is another file: the generic refusal stays out
    # of its way (its own hash names another run), and --run-id stores a second copy.
    src.write_text('{"task_id": "a", "success": false}\n')
    assert cli("import", "jsonl", str(src), "--store", str(db))[0] == 0
    src.write_text('{"task_id": "a", "success": true}\n')
    assert cli("import", "jsonl", str(src), "--store", str(db), "--run-id", "x")[0] == 0


def test_a_file_imported_under_its_own_run_id_is_still_named_when_imported_again(
    tmp_path: Path, cli: Any
) -> None:
    # Only the default run id was looked up: imported first with --run-id, the same
    # file imported again without one was stored a second time.
    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id": "a", "success": true}\n')
    copy = tmp_path / "copy.jsonl"  # the same bytes by another name are the same trials
    copy.write_bytes(src.read_bytes())
    db = tmp_path / "s.db"
    assert cli("import", "jsonl", str(src), "--store", str(db), "--run-id", "mine")[0] == 0
    for again in (src, copy):
        code, _, err = cli("import", "jsonl", str(again), "--store", str(db))
        assert code == 2, err
        assert f"--run-id: {again} was already imported as run 'mine' at " in err
        assert "to store them a second time, give --run-id" in err
    with Store(db, readonly=True) as store:
        assert [r.run_id for r in store.list_runs()] == ["mine"]
    # Deliberately, under another run id, it is stored again.
    assert cli("import", "jsonl", str(src), "--store", str(db), "--run-id", "again")[0] == 0
