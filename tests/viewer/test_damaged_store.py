"""A store with a damaged row: the viewer names what is damaged, keeps the rest
browsable, and prints one line on its terminal, never a traceback, as the commands
do (tests/test_store_damage.py: one line naming the store, exit 2)."""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.conftest import Cli
from viewer_support import Served, serving

from agentgauge.importers import import_file


def _get(served: Served, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(served.url + path, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, int]:
    """Runs ``good``, ``bad`` and ``fine``: ``bad``'s config is not JSON, and one trial
    of ``good`` has metadata that is not an object. Returns the store and that trial."""
    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id":"a","success":true}\n{"task_id":"b","success":false}\n')
    db = tmp_path / "s.db"
    for run_id in ("good", "bad", "fine"):
        import_file("jsonl", src, db, run_id)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET config = '{bad' WHERE run_id = 'bad'")
        (pk,) = conn.execute(
            "SELECT id FROM trials WHERE run_id = 'good' AND task_id = 'a'"
        ).fetchone()
        conn.execute("UPDATE trials SET metadata = '[1]' WHERE id = ?", (pk,))
    conn.close()
    return db, pk


def test_one_damaged_row_leaves_the_rest_browsable(
    damaged: tuple[Path, int], capfd: pytest.CaptureFixture[str]
) -> None:
    # The runs list was a bare "500 internal error" because of run "bad", and the
    # server's terminal got a JSONDecodeError traceback.
    db, pk = damaged
    with serving(db) as s:
        status, page = _get(s, "/")
        assert status == 200
        assert "damaged: config: not valid JSON" in page
        status, body = _get(s, "/?format=json")
        runs = {r["run_id"]: r for r in json.loads(body)["runs"]}
        assert set(runs) == {"good", "bad", "fine"}
        assert runs["bad"]["damaged"].startswith("config: not valid JSON")
        assert runs["bad"]["n_trials"] == 2 and runs["bad"]["base"]["passed"] == 1
        assert runs["good"]["damaged"] is None and runs["fine"]["damaged"] is None
        # The pages that do not need the damaged row render.
        for path in ("/runs/fine", "/runs/good", "/runs/good/tasks", "/diff?a=good&b=fine"):
            assert _get(s, path)[0] == 200, path
        # Those that need it say which row of which store is damaged, in HTML and JSON.
        status, page = _get(s, "/runs/bad")
        assert status == 500
        assert f"{db}: config: run &#39;bad&#39; is damaged in the store: not valid JSON" in page
        status, page = _get(s, f"/runs/good/trials/{pk}")
        assert status == 500
        assert f"metadata: trial {pk} of run &#39;good&#39; is damaged in the store" in page
        assert "Input should be a valid dictionary" in page
        status, body = _get(s, f"/runs/good/trials/{pk}?format=json")
        assert status == 500
        error = json.loads(body)
        assert error["status"] == 500 and f"trial {pk} of run 'good'" in error["error"]
    err = capfd.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("agentgauge view: error: ")]
    assert len(lines) == 3, err  # one per failed page, nothing else
    assert lines[0].startswith(f"agentgauge view: error: /runs/bad: {db}: config: run 'bad'")


def test_the_commands_name_the_damaged_row_in_one_line(damaged: tuple[Path, int], cli: Cli) -> None:
    # The same rule as a damaged SQLite page: one line naming the store, exit 2.
    db, pk = damaged
    code, _, err = cli("show", f"{db}:good", "--task", "a")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"agentgauge: error: {db}: metadata: trial {pk} of run 'good'")
    code, _, err = cli("show", f"{db}:bad")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"agentgauge: error: {db}: config: run 'bad' is damaged in the store")


def test_runs_lists_every_run_and_says_which_is_damaged(
    damaged: tuple[Path, int], cli: Cli
) -> None:
    # `agentgauge runs` stopped at the first damaged run (one line, exit 2), so the
    # store's other runs could not be listed; the viewer's list already showed them.
    db, _ = damaged
    code, out, err = cli("runs", "--store", str(db), "--json")
    assert code == 0, err
    runs = {r["run_id"]: r for r in json.loads(out)["runs"]}
    assert list(runs) == ["good", "bad", "fine"]
    assert runs["good"]["damaged"] is None and runs["fine"]["n_trials"] == 2
    assert runs["bad"]["damaged"].startswith("config: not valid JSON")
    code, out, err = cli("runs", "--store", str(db))
    assert code == 0 and all(name in out for name in ("good", "bad", "fine"))
    assert err.startswith(f"run bad is damaged in {db}: config: not valid JSON")


@pytest.mark.parametrize("value", [7, -1, "'yes'", 0.5])
def test_a_success_that_is_neither_pass_nor_fail_is_a_damaged_row(
    tmp_path: Path, cli: Cli, capfd: pytest.CaptureFixture[str], value: object
) -> None:
    # `UPDATE trials SET success = 7`: the run page and `metrics` counted the trial as a
    # pass (its record), the runs list as a failure (SQL `success = 1`). It is neither.
    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id":"a","success":false}\n{"task_id":"b","success":true}\n')
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "r")
    import_file("jsonl", src, db, "fine")
    with sqlite3.connect(db) as conn:
        (pk,) = conn.execute(
            "SELECT id FROM trials WHERE run_id = 'r' AND task_id = 'a'"
        ).fetchone()
        conn.execute(f"UPDATE trials SET success = {value} WHERE id = ?", (pk,))
    conn.close()
    line = (
        f"{db}: success: trial {pk} of run 'r' is damaged in the store: a success is 1, 0 "
        f"or null (passed, failed, not graded), got {value}"
    )
    with serving(db) as s:
        status, body = _get(s, "/runs/r?format=json")
        assert status == 500 and json.loads(body)["error"] == line
        status, page = _get(s, "/diff?a=fine&b=r")
        assert status == 500 and f"trial {pk} of run &#39;r&#39; is damaged" in page
        assert _get(s, "/runs/fine")[0] == 200
        # Every reader agrees: the trial's page and the tasks page read it as a pass (the
        # trial page) or a failure (the tasks' marks); the runs list counted it failed.
        for path in (f"/runs/r/trials/{pk}?format=json", "/runs/r/tasks?format=json"):
            status, body = _get(s, path)
            assert status == 500 and json.loads(body)["error"] == line, path
        status, body = _get(s, "/?format=json")
        assert status == 200
        runs = {r["run_id"]: r for r in json.loads(body)["runs"]}
        assert runs["r"]["damaged"] == (
            f"success: trial {pk}: a success is 1, 0 or null (passed, failed, not graded),"
            f" got {value}"
        )
        assert runs["r"]["base"] == {"n": 2, "passed": None, "success_rate": None}
        assert runs["fine"]["damaged"] is None and runs["fine"]["base"]["passed"] == 1
        status, page = _get(s, "/")
        assert status == 200 and f"damaged: success: trial {pk}: a success is" in page
    err = capfd.readouterr().err
    assert "Traceback" not in err
    assert f"agentgauge view: error: /runs/r: {line}" in err.splitlines()
    code, _, err = cli("metrics", f"{db}:r")  # (after: it takes sys.stderr over)
    assert code == 2 and err.strip() == f"agentgauge: error: {line}"
    out = str(tmp_path / "out.jsonl")
    for args in (("show", f"{db}:r", "--task", "a"), ("export", f"{db}:r", "--jsonl", out)):
        code, _, err = cli(*args)
        assert code == 2 and err.strip() == f"agentgauge: error: {line}", args
    # `agentgauge runs` says so as the viewer's list does (it listed the run as sound).
    code, out, err = cli("runs", "--store", str(db), "--json")
    assert code == 0, err
    listed = {r["run_id"]: r["damaged"] for r in json.loads(out)["runs"]}
    assert listed == {"r": runs["r"]["damaged"], "fine": None}
    code, out, err = cli("runs", "--store", str(db))
    assert code == 0 and err.strip() == f"run r is damaged in {db}: {runs['r']['damaged']}"


def test_the_terminal_line_shows_controls_in_the_address_as_escapes(
    damaged: tuple[Path, int], capfd: pytest.CaptureFixture[str]
) -> None:
    # The address of a page that fails on a damaged row was printed as sent: ESC and BEL
    # from whoever requested it reached the viewer's terminal.
    db, _ = damaged
    with serving(db) as s:
        assert _get(s, "/runs/bad/trials/%1B%5B31mRED%07")[0] == 500
    err = capfd.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("agentgauge view: error: ")]
    assert line.startswith("agentgauge view: error: /runs/bad/trials/\\x1b[31mRED\\x07: ")
