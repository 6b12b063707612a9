"""`agentgauge run` and `demo` against hostile agent text and bad options: a lone
surrogate in what an agent says is stored as U+FFFD and the run goes on; a store,
run id, URL, number or --out the run cannot use is one line and exit 2, with
nothing written; a KeyboardInterrupt an agent raises is its own error."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentgauge.demo import run_demo
from agentgauge.errors import InputError
from agentgauge.harness.runner import run
from agentgauge.schema import Event, MessageEvent, ToolCallEvent, Trial
from agentgauge.store import Store
from agentgauge.store.rows import event_row, replace_surrogates, trial_rows

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"
BAD = "\ud800"
FFFD = "\ufffd"


def agentgauge(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _stored(db: Path) -> list[Trial]:
    with Store(db, readonly=True) as store:
        (header,) = store.list_runs()
        return store.trials(header.run_id)


def _one_line_exit_2(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    for needle in needles:
        assert needle in lines[0]


# ---------------------------------------------------------------- lone surrogates


def test_replace_surrogates_keeps_pairs_and_replaces_lone_ones() -> None:
    assert replace_surrogates("a\ud800b") == f"a{FFFD}b"
    assert replace_surrogates("\ud83d\ude00") == "\U0001f600"  # a pair is its character
    assert replace_surrogates({"k\udc00": ["x", BAD, 1]}) == {f"k{FFFD}": ["x", FFFD, 1]}
    plain = {"a": "é"}
    assert replace_surrogates(plain) == plain


def test_store_rows_replace_surrogates_in_every_text() -> None:
    events: list[Event] = [
        MessageEvent(role="assistant", content=f"hi {BAD}"),
        ToolCallEvent(name="add", arguments={"note": BAD}, call_id="c1"),
    ]
    for i, e in enumerate(events):
        _, _, _, data = event_row(i, e)
        data.encode("utf-8")  # has a UTF-8 form
        assert FFFD in data and BAD not in data
    trial = Trial(
        task_id="t",
        trial=0,
        success=False,
        answer=f"a{BAD}",
        error=f"ValueError: {BAD}",
        metadata={"note": BAD},
        events=events,
    )
    row, rows, _, _ = trial_rows("r", trial)
    for value in (*row, *(r[-1] for r in rows)):
        if isinstance(value, str):
            value.encode("utf-8")
            assert "\\ud800" not in value


@pytest.fixture
def surrogate_service() -> Iterator[str]:
    class Agent(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(405)
            self.end_headers()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b'{"answer": "hi \\ud800", "cost_usd": 0}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http:http://127.0.0.1:{server.server_address[1]}/run"
    finally:
        server.shutdown()
        server.server_close()


def _surrogate_agents(tmp_path: Path) -> dict[str, str]:
    program = tmp_path / "surrogate_agent.py"
    program.write_text(
        "import sys\n"
        "sys.stdin.readline()\n"
        'print(\'{"type":"answer","content":"\\\\ud800"}\', flush=True)\n'
        'print(\'{"type":"done"}\', flush=True)\n'
    )
    (tmp_path / "surrogate_py.py").write_text(
        "def solve(session):\n"
        "    session.answer('x\\ud800')\n"
        "def fail(session):\n"
        "    raise ValueError('bad \\ud800 text')\n"
    )
    return {
        "cmd": f"cmd:{sys.executable} {program}",
        "python": "surrogate_py:solve",
        "raises": "surrogate_py:fail",
    }


@pytest.mark.parametrize("kind", ["cmd", "python", "raises", "http"])
def test_a_lone_surrogate_from_any_agent_is_stored_as_replacement_character(
    tmp_path: Path, kind: str, surrogate_service: str
) -> None:
    agents = {**_surrogate_agents(tmp_path), "http": surrogate_service}
    db = tmp_path / "s.db"
    out = agentgauge(
        "run", str(SUITE), "--agent", agents[kind], "--store", str(db), "--no-progress",
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "3 trials" in out.stdout
    trials = _stored(db)
    assert len(trials) == 3
    for t in trials:
        if kind == "raises":
            assert t.error is not None and FFFD in t.error and t.error_kind == "agent"
        else:
            assert t.answer is not None and t.answer.endswith(FFFD)
            assert t.status == "completed"


# ---------------------------------------------------------------- options refused


def _run_args(tmp_path: Path, *extra: str) -> list[str]:
    agent = "agentgauge.testing.worlds:counting_agent"
    return ["run", str(SUITE), "--agent", agent, "--no-progress", *extra]


@pytest.mark.parametrize("store", [":memory:", ""])
def test_a_store_that_would_not_keep_the_trials_is_refused(tmp_path: Path, store: str) -> None:
    out = agentgauge(*_run_args(tmp_path, "--store", store), cwd=tmp_path)
    _one_line_exit_2(out, "--store", "name a file")
    assert list(tmp_path.iterdir()) == []


def test_a_store_string_of_memory_is_refused_from_python() -> None:
    with pytest.raises(InputError, match="--store"):
        run(str(SUITE), "agentgauge.testing.worlds:counting_agent", store=":memory:")


@pytest.mark.parametrize("run_id", ["v2#1", "#agent=x"])
def test_a_run_id_that_db_run_cannot_name_is_refused(tmp_path: Path, run_id: str) -> None:
    db = tmp_path / "s.db"
    out = agentgauge(*_run_args(tmp_path, "--store", str(db), "--run-id", run_id))
    _one_line_exit_2(out, "--run-id", "'#'")
    assert not db.exists()


def test_a_run_id_with_a_colon_still_reads_back(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    out = agentgauge(*_run_args(tmp_path, "--store", str(db), "--run-id", "v2:1"))
    assert out.returncode == 0, out.stderr
    shown = agentgauge("show", f"{db}:v2:1")
    assert shown.returncode == 0, shown.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--timeout", "-1"),
        ("--timeout", "nan"),
        ("--timeout", "inf"),
        ("--paraphrases", "-1"),
        ("--infra-retries", "-1"),
    ],
)
def test_bad_numbers_are_refused_naming_the_option(tmp_path: Path, option: str, value: str) -> None:
    db = tmp_path / "s.db"
    out = agentgauge(*_run_args(tmp_path, "--store", str(db), option, value))
    _one_line_exit_2(out, option)
    assert not db.exists()


def test_timeout_zero_still_means_none(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    out = agentgauge(*_run_args(tmp_path, "--store", str(db), "--timeout", "0"))
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:99999/run", "Port out of range"),
        ("http://[::1/run", "Invalid IPv6 URL"),
    ],
)
def test_an_http_agent_url_that_cannot_be_used_is_refused(
    tmp_path: Path, url: str, words: str
) -> None:
    db = tmp_path / "s.db"
    out = agentgauge("run", str(SUITE), "--agent", f"http:{url}", "--store", str(db))
    _one_line_exit_2(out, "agent", words)
    assert not db.exists()


# ---------------------------------------------------------------- KeyboardInterrupt


@pytest.mark.parametrize("fn", ["kbd", "akbd"])
def test_a_keyboard_interrupt_the_agent_raises_is_its_error(tmp_path: Path, fn: str) -> None:
    (tmp_path / "kbd_agent.py").write_text(
        "def kbd(session):\n"
        "    raise KeyboardInterrupt()\n"
        "async def akbd(session):\n"
        "    raise KeyboardInterrupt()\n"
    )
    db = tmp_path / "s.db"
    out = agentgauge(
        "run", str(SUITE), "--agent", f"kbd_agent:{fn}", "--store", str(db), "--no-progress",
        cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "never retrieved" not in out.stderr
    assert "3 agent errors" in out.stdout and "KeyboardInterrupt" in out.stdout
    trials = _stored(db)
    assert [t.error for t in trials] == ["KeyboardInterrupt"] * 3
    assert {t.error_kind for t in trials} == {"agent"}


# ---------------------------------------------------------------- demo --out


def test_demo_out_that_is_a_file_or_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for out_dir, words in ((afile, "is not a folder"), (afile / "sub", "cannot make")):
        for force in ([], ["--force"]):
            out = agentgauge("demo", "--out", str(out_dir), "--trials", "1", *force)
            _one_line_exit_2(out, "--out", words)
    assert afile.read_text() == "mine\n"


def test_demo_keeps_a_report_it_did_not_write(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("# my own report\n")
    out = agentgauge("demo", "--out", str(mine), "--trials", "1")
    _one_line_exit_2(out, "report.md", "--force")
    assert (mine / "report.md").read_text() == "# my own report\n"
    assert not (mine / "agentgauge.db").exists()


def test_demo_replaces_its_own_reports(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    out = tmp_path / "demo"
    out.mkdir()
    # What an earlier demo wrote: its title begins both reports.
    (out / "report.md").write_text("# agentgauge demo — old\n")
    (out / "report.html").write_text("<!doctype html><title>agentgauge demo — old</title>")
    result = run_demo(out, trials=1, console=Console(file=io.StringIO()), progress=False)
    assert "old" not in result.markdown.read_text()
    assert result.report.read_text().count("<title>agentgauge demo") == 1


def test_tool_arguments_with_a_lone_surrogate_reach_the_tool_replaced(tmp_path: Path) -> None:
    from agentgauge.testing.worlds import make_counter_env

    seen: list[object] = []

    async def agent(session: object) -> None:
        outcome = await session.call_tool("add", {"amount": 3, "note": f"n{BAD}"})  # type: ignore[attr-defined]
        seen.append(outcome)

    def factory(task: object, **kw: object) -> object:
        env = make_counter_env(task, **kw)  # type: ignore[arg-type]
        call = env.call_tool

        def spy(name: str, arguments: dict[str, object]) -> object:
            seen.append(arguments)
            return call(name, arguments)

        env.call_tool = spy  # type: ignore[method-assign]
        return env

    header = run(str(SUITE), agent, store=tmp_path / "s.db", env_factory=factory, progress=False)
    assert {"amount": 3, "note": f"n{FFFD}"} in seen
    with Store(tmp_path / "s.db", readonly=True) as db:
        trials = db.trials(header.run_id)
    assert len(trials) == 3
    calls = [e for t in trials for e in t.events if isinstance(e, ToolCallEvent)]
    assert calls and all(c.arguments["note"] == f"n{FFFD}" for c in calls)


def test_a_task_with_no_environment_is_refused_before_any_trial(tmp_path: Path) -> None:
    # Every trial of it used to be an infra error ("unknown environment None") and the
    # run stopped on the breaker; a world of one's own given in Python still runs it.
    suite = tmp_path / "s.yaml"
    suite.write_text(
        "name: s\ntasks:\n  - id: hello\n    instruction: say hi\n"
        "    expectations:\n      answer: {contains: [hi]}\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(suite), "--agent", "builtin:null",
         "--store", str(tmp_path / "s.db")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "task 'hello' names no environment" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "s.db").exists()
    with pytest.raises(InputError, match="names no environment"):
        run(str(suite), agent="builtin:null", store=str(tmp_path / "p.db"))
    assert not (tmp_path / "p.db").exists()


@pytest.mark.parametrize(
    ("variants", "extra", "why"),
    [
        ("paraphrase:3", (), "no task has 3 paraphrases (the most any task has is 2)"),
        ("paraphrase", ("--paraphrases", "0"), "--paraphrases 0 allows none"),
    ],
)
def test_variants_that_select_no_trial_are_refused_before_anything_is_written(
    tmp_path: Path, variants: str, extra: tuple[str, ...], why: str
) -> None:
    # It stored an empty run and exited 0 ("0 trials, success -"), which `runs` listed
    # and `metrics` then called a run with no trials yet.
    db = tmp_path / "s.db"
    out = agentgauge(
        "run", str(SUITE), "--agent", "agentgauge.testing.worlds:counting_agent",
        "--variants", variants, *extra, "--store", str(db), "--no-progress",
    )  # fmt: skip
    _one_line_exit_2(out, f"--variants: {variants} selects no trial: {why}")
    assert not db.exists()
    with pytest.raises(InputError, match="selects no trial"):
        run(
            str(SUITE),
            agent="agentgauge.testing.worlds:counting_agent",
            variants=[variants],
            max_paraphrases=int(extra[1]) if extra else None,
            store=str(tmp_path / "p.db"),
        )
    assert not (tmp_path / "p.db").exists()
