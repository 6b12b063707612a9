"""Paths and run ids that look like Rich markup are printed as they are. Before, the
console read "[/]" in `export`'s closing line as a closing tag and ended with a
``MarkupError`` traceback after the file was written, and a store in a folder whose name
holds "[" could not be named as DB:RUN at all: the source was taken for a glob."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import Cli

RUN = "[bold]r[/]"


@pytest.fixture
def store(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "400")  # one message, one line
    folder = tmp_path / "w[red]x"  # a style tag: read as markup, it vanished silently
    folder.mkdir()
    trials = folder / "t.jsonl"
    rows = [
        {"task_id": f"[/]t{i}", "trial": k, "success": (i + k) % 2 == 0}
        for i in range(4)
        for k in range(2)
    ]
    trials.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = folder / "s.db"
    code, out, err = cli("import", "jsonl", str(trials), "--store", str(db), "--run-id", RUN)
    assert code == 0, err
    assert f"as run {RUN} in {db}" in out
    return db


def test_export_prints_a_markup_like_source_as_it_is(cli: Cli, store: Path) -> None:
    out_file = store.parent / "[bold]out.jsonl"
    code, out, err = cli("export", f"{store}:{RUN}", "--jsonl", str(out_file))
    assert code == 0, err
    assert f"exported 8 trials of {store}:{RUN} to {out_file} (jsonl)" in out
    assert out_file.read_text().count("\n") == 8


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["runs", "--store", "{db}"], RUN),
        (["metrics", "{db}:" + RUN], f"metrics for {{db}}:{RUN}"),
        (["show", "{db}:" + RUN], "[/]t1"),
        (["compare", "{db}:" + RUN, "{db}:" + RUN], f"B = {{db}}:{RUN}"),
    ],
)
def test_commands_name_a_store_in_a_bracketed_folder_as_db_run(
    cli: Cli, store: Path, args: list[str], shown: str
) -> None:
    code, out, err = cli(*(a.replace("{db}", str(store)) for a in args))
    assert code == 0, err
    # A table's title wraps at the table's width, even inside a long path.
    assert "".join(shown.replace("{db}", str(store)).split()) in "".join(out.split())


def test_an_error_naming_a_markup_like_run_is_one_line(cli: Cli, store: Path) -> None:
    code, _, err = cli("grade", f"{store}:{RUN}", "--graders", "state")
    assert code == 2 and f"run {RUN!r} has no stored tasks" in err
    assert err.count("\n") == 1


def test_the_console_prints_a_string_as_text() -> None:
    import io

    from agentgauge.cli.common import TextConsole

    buffer = io.StringIO()
    out = TextConsole(file=buffer, width=200, highlight=False, color_system=None)
    out.print("run [bold]r[/] task t\x1b[31mred :thumbs_up:\nnext line")
    shown = buffer.getvalue()
    # Markup and emoji codes as written; the ESC shown, not sent; the line break kept.
    assert shown == "run [bold]r[/] task t\\x1b[31mred :thumbs_up:\nnext line\n"
