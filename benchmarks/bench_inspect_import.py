"""How fast an Inspect log is read: agentgauge's reader beside Inspect's own.

Run by hand: ``python benchmarks/bench_inspect_import.py [N] [--smoke]`` (``--smoke``:
30 samples). Builds a ``.eval``
of N samples (default 3,000) by repeating the test log's samples under new ids,
zstd-compressed as Inspect writes them, then times ``read_import("inspect", ...)``
and, when Inspect's environment exists (``INSPECT_PYTHON``, default
/tmp/inspect-venv/bin/python), Inspect's ``read_eval_log`` on the same file, best
of 3 runs each. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import zstandard

from _report import Row, emit, row, smoke_flag
from agentgauge.importers import read_import

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "inspect" / "tiny.json"
NAME = "bench_inspect_import"
INSPECT_PYTHON = Path(os.environ.get("INSPECT_PYTHON", "/tmp/inspect-venv/bin/python"))


def _zstd_member(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    """Write a zstd member (method 93) by hand: Python's zipfile cannot before 3.14."""
    info = zipfile.ZipInfo(name, date_time=(2026, 12, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    compressed = zstandard.ZstdCompressor().compress(data)
    # Write as stored, then patch the method and sizes in both headers (offsets per APPNOTE).
    archive.writestr(info, compressed)
    written = archive.getinfo(name)
    written.compress_type = 93
    written.file_size = len(data)
    written.CRC = zlib.crc32(data)
    fp = archive.fp
    assert fp is not None
    end = fp.tell()
    fp.seek(written.header_offset + 8)
    fp.write((93).to_bytes(2, "little"))
    fp.seek(written.header_offset + 14)
    fp.write(written.CRC.to_bytes(4, "little"))
    fp.seek(written.header_offset + 22)
    fp.write(len(data).to_bytes(4, "little"))
    fp.seek(end)


def build(path: Path, n: int) -> int:
    log: dict[str, Any] = json.loads(LOG.read_text())
    header = {k: v for k, v in log.items() if k != "samples"}
    samples = log["samples"]
    size = 0
    with zipfile.ZipFile(path, "w") as archive:
        _zstd_member(archive, "header.json", json.dumps(header).encode())
        for i in range(n):
            sample = dict(samples[i % len(samples)])
            sample["id"] = f"s{i // 3}"
            sample["epoch"] = i % 3 + 1
            data = json.dumps(sample).encode()
            size += len(data)
            _zstd_member(archive, f"samples/{sample['id']}_epoch_{sample['epoch']}.json", data)
    return size


_INSPECT = """
import sys, time
from inspect_ai.log import read_eval_log
best = float("inf")
for _ in range(3):
    start = time.perf_counter()
    log = read_eval_log(sys.argv[1])
    best = min(best, time.perf_counter() - start)
assert len(log.samples) == int(sys.argv[2])
print(best)
"""


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=3000, help="samples (3,000)")
    smoke_flag(parser)
    args = parser.parse_args(argv)
    n = 30 if args.smoke else args.n
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.eval"
        size = build(path, n)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            run = read_import("inspect", path)
            best = min(best, time.perf_counter() - start)
        assert len(run.trials) == n
        mb = size / 1e6
        print(
            f"agentgauge read_import: {n} samples, {mb:.1f} MB of JSON "
            f"({path.stat().st_size / 1e6:.1f} MB zstd): {best:.2f} s, {mb / best:.1f} MB/s"
        )
        figure = f"read_import inspect, {n:,}-sample .eval ({mb:.1f} MB of JSON)"
        if not INSPECT_PYTHON.exists():
            print(f"Inspect's read_eval_log: skipped (no {INSPECT_PYTHON})")
            return [
                row(
                    NAME,
                    figure,
                    best,
                    "s",
                    reference_name="Inspect's read_eval_log: not installed (INSPECT_PYTHON)",
                )
            ]
        out = subprocess.run(
            [str(INSPECT_PYTHON), "-c", _INSPECT, str(path), str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        theirs = float(out.stdout.strip().splitlines()[-1])
        print(f"Inspect read_eval_log:  {theirs:.2f} s ({mb / theirs:.1f} MB/s)")
        print(f"ratio (Inspect / agentgauge): {theirs / best:.2f}")
    return [
        row(NAME, figure, best, "s", reference=theirs, reference_name="Inspect's read_eval_log")
    ]


if __name__ == "__main__":
    emit(main())
