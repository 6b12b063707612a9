"""A results file kept compressed (gzip, bzip2, xz, zstd) or an archive is named as
such, with the command that unpacks it, instead of "not a UTF-8 text file: byte 1
(0x8b)", which left the user to guess; an Inspect ``.eval`` (a ZIP) given to another
reader is pointed to ``import inspect``."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path
from typing import Any

import pytest
import zstandard

from agentgauge.errors import InputError
from agentgauge.textio import decode_utf8


@pytest.mark.parametrize(
    ("pack", "said"),
    [
        (gzip.compress, "gzip-compressed, not text; decompress it first: gzip -dc"),
        (bz2.compress, "bzip2-compressed"),
        (lzma.compress, "xz-compressed"),
        (lambda b: zstandard.ZstdCompressor().compress(b), "zstd-compressed"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("fmt", ["jsonl", "otel", "tau2", "openinference"])
def test_a_compressed_results_file_is_named_as_such(
    tmp_path: Path, pack: Any, said: str, fmt: str
) -> None:
    # Before: "not a UTF-8 text file: byte 1 (0x8b) is not valid UTF-8".
    from agentgauge.importers import read_import

    path = tmp_path / "results.jsonl.z"
    path.write_bytes(pack(b'{"task_id": "t", "trial": 0, "success": true}\n'))
    with pytest.raises(InputError) as err:
        read_import(fmt, path)
    assert said in err.value.reason and err.value.file == str(path)


def test_an_inspect_log_given_to_another_reader_says_which_reads_it(tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "run.eval"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("header.json", "{}")
    with pytest.raises(InputError, match="an Inspect log: agentgauge import inspect reads it"):
        decode_utf8(path.read_bytes(), file=path)


@pytest.mark.parametrize(
    ("pack", "tool"),
    [
        (gzip.compress, "gzip"),
        (bz2.compress, "bzip2"),
        (lzma.compress, "xz"),
        (lambda b: zstandard.ZstdCompressor().compress(b), "zstd"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("name", ["x.json", "my results.jsonl", "r.jsonl.gz", "r.jsonl.xz"])
def test_the_command_suggested_unpacks_a_file_of_any_name(
    tmp_path: Path, pack: Any, tool: str, name: str
) -> None:
    # Before: "gunzip -k x.json", which gunzip refuses ("unknown suffix -- ignored"),
    # as unxz and zstd do a name without their suffix.
    import re
    import shutil
    import subprocess

    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    text = b'{"task_id": "t", "trial": 0, "success": true}\n'
    path = tmp_path / name
    path.write_bytes(pack(text))
    with pytest.raises(InputError) as err:
        decode_utf8(path.read_bytes(), file=name)
    command = re.sub(r"^.*decompress it first: ", "", err.value.reason)
    done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, (command, done.stderr)
    unpacked = [p for p in tmp_path.iterdir() if p.name != name]
    assert [p.read_bytes() for p in unpacked] == [text], command
