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
        (gzip.compress, "gzip-compressed, not text; decompress it first: gunzip -k"),
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
