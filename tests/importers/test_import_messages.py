"""What `import` says of a path that is no file of its format, and of a cut JSON line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.importers import read_import


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
