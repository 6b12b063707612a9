"""Reading an Inspect AI log file: the header and each sample as plain JSON values.

Two containers (Inspect's ``inspect_ai/log/_recorders/``):

- ``.json``: one document, the whole ``EvalLog`` with its ``samples`` list.
- ``.eval``: a ZIP archive holding ``header.json`` (the log minus samples;
  ``_journal/start.json`` in a log still being written), ``summaries.json``,
  ``reductions.json`` and each sample (id × epoch) in one of two layouts,
  which one log may mix:

  - monolith: ``samples/{id}_epoch_{epoch}.json``, the whole ``EvalSample``;
  - chunked (``chunked/format.py``): ``samples/{id}_epoch_{epoch}/sample.json``,
    a shell without ``messages``/``events``/``attachments``, plus the sequences
    ``messages/{start}.json``, ``events/{start}.json`` and
    ``attachments/{start}.json`` (each chunk a JSON list, named by the index of
    its first item), ``metadata.json`` when the sample has metadata; the final
    conversation is ``message_refs``, half-open ``[start, end)`` ranges into
    the messages sequence.

Members may be deflated or, since Inspect writes them so by default,
zstd-compressed (ZIP method 93), which the ``zstandard`` package
(``agentgauge[inspect]``) reads; Python's own ``zipfile`` reads them only from 3.14,
and not when Inspect splits a large member into several zstd frames.

Long strings are stored once as attachments and referenced as
``attachment://KEY``: a content hash into the sample's ``attachments`` object
(monolith) or an index into the attachments sequence (chunked). `Sample.resolve`
turns a reference back into its text.

Inspect writes with pydantic's ``to_json``, which puts a float NaN (an unscored
sample's value, a metric of no scores) as the bare ``NaN``: it is read as ``null``
(`agentgauge.textio.loads_json`'s ``nan_is_null``), and ``Infinity`` refused.

Every member is checked as it is read: a bad archive, a missing member, a
member past `MAX_MEMBER_BYTES`, invalid UTF-8 or JSON is one `InputError`
naming the file and the member.

A ``.eval`` is a ZIP archive a few KB of which can inflate to gigabytes, so
what is inflated is counted as it is inflated: past `MAX_TOTAL_BYTES` over
the members read, or past `MAX_INFLATION` times their compressed size once
past `INFLATION_FLOOR_BYTES`, reading stops with an `InputError` naming the
file and the member it stopped in. Samples are read one at a time as the
caller iterates `InspectLog.samples`, so a caller that keeps only what it
makes of each holds one raw sample at a time.
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgauge.errors import InputError
from agentgauge.importers.shape import Shape, kind
from agentgauge.textio import (
    compressed_as,
    decode_utf8,
    loads_json,
    open_regular,
    read_text,
    unpack_command,
)

__all__ = [
    "INFLATION_FLOOR_BYTES",
    "MAX_INFLATION",
    "MAX_MEMBER_BYTES",
    "MAX_TOTAL_BYTES",
    "InspectLog",
    "Sample",
    "open_log",
]

#: The largest member we decompress. A ZIP entry's declared size can lie and a
#: zstd frame of a few KB can expand to gigabytes; Inspect itself splits
#: samples that large into the chunked layout.
MAX_MEMBER_BYTES = 512 * 1024 * 1024
#: The most we decompress from one log, over all the members read: what is kept of
#: the samples (their conversations) grows with it.
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
#: The most the members read may inflate, as a multiple of their compressed size,
#: once past `INFLATION_FLOOR_BYTES`: Inspect's JSON compresses some 5 to 20 times,
#: a ZIP bomb (the same byte over and over) about 1,000 times with deflate, more
#: with zstd.
MAX_INFLATION = 100
INFLATION_FLOOR_BYTES = 256 * 1024 * 1024
_CHUNK_BYTES = 1 << 20

_ZIP_ZSTANDARD = 93
_ATTACHMENT = "attachment://"
_MONOLITH = re.compile(r"samples/(?P<id>.+)_epoch_(?P<epoch>[0-9]+)\.json")
_SHELL = re.compile(r"samples/(?P<id>.+)_epoch_(?P<epoch>[0-9]+)/sample\.json")
_CHUNK = re.compile(
    r"(?P<prefix>samples/.+/)(?P<seq>messages|events|attachments)/(?P<start>[0-9]+)\.json"
)


@dataclass
class Sample:
    """One sample × epoch as Inspect wrote it, with where it came from."""

    data: dict[str, Any]
    """The ``EvalSample`` fields (for a chunked sample, reassembled)."""
    shape: Shape
    """Checks whose errors name this sample's file (and member)."""
    where: str
    """Element path of the sample in its file: ``samples[3]`` or ``""`` for a member."""
    attachments: dict[str, str] = field(default_factory=dict)
    """``attachment://`` keys -> their text."""

    def at(self, element: str) -> str:
        """The element path of ``element`` inside this sample."""
        return f"{self.where}.{element}" if self.where else element

    def resolve(self, value: Any) -> Any:
        """``value``, with an ``attachment://KEY`` string replaced by its text. An
        unknown key is left as it is, as Inspect's own reader does."""
        if isinstance(value, str) and value.startswith(_ATTACHMENT):
            return self.attachments.get(value[len(_ATTACHMENT) :], value)
        return value


@dataclass
class InspectLog:
    """A log's header (``EvalLog`` minus samples) and its samples."""

    header: dict[str, Any]
    header_shape: Shape
    """Checks whose errors name the header's file (and member)."""
    sample_count: int
    samples: Iterator[Sample]
    """Each sample, read (and checked) when the iteration reaches it, while the log
    is open; the log keeps none of them."""


@contextmanager
def open_log(path: Path) -> Iterator[InspectLog]:
    """Open an Inspect ``.eval`` or ``.json`` log, checking every member as it is read."""
    with open_regular(path) as fh:
        try:
            magic = fh.read(8)
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", file=path) from None
    if magic.startswith(b"PK"):
        with _open_eval(path) as log:
            yield log
        return
    packed = compressed_as(magic)
    if packed is not None:
        # Read as text, it was told "an Inspect log: agentgauge import inspect reads it".
        name = packed[0]
        # The command every reader suggests: it writes beside the file, wherever it is run.
        raise InputError(
            f"the file is {name}, but an Inspect log is a ZIP archive (.eval) or JSON text "
            f"(.json): decompress it ({unpack_command(packed[1], path)}) and import what "
            "it holds",
            file=path,
        )
    yield _read_json(path)


# --------------------------------------------------------------------------- .json


def _read_json(path: Path) -> InspectLog:
    data = loads_json(read_text(path), file=path, line=None, nan_is_null=True)
    shape = Shape(path)
    if not isinstance(data, dict):
        shape.fail("", f"expected an Inspect log (a JSON object), got {kind(data)}")
    if "eval" not in data:
        shape.fail("eval", "required field is missing (is this an Inspect log?)")
    header = {k: v for k, v in data.items() if k not in ("samples", "reductions")}
    raws = shape.items(data.get("samples"), "samples")
    return InspectLog(header, shape, len(raws), _json_samples(raws, shape))


def _json_samples(raws: list[Any], shape: Shape) -> Iterator[Sample]:
    for i in range(len(raws)):
        where = f"samples[{i}]"
        sample = shape.obj(raws[i], where)
        raws[i] = None  # the caller keeps what it makes of the sample, not the sample
        attachments = _attachment_map(sample.get("attachments"), shape, f"{where}.attachments")
        yield Sample(sample, shape, where, attachments)
        del sample, attachments


def _attachment_map(value: Any, shape: Shape, where: str) -> dict[str, str]:
    attachments = shape.obj(value, where)
    for key, text in attachments.items():
        shape.text(text, f"{where}.{key}", optional=False)
    return attachments


# --------------------------------------------------------------------------- .eval


@contextmanager
def _open_eval(path: Path) -> Iterator[InspectLog]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(f"not a readable .eval log (a ZIP archive): {exc}", file=path) from None
    with archive:
        members = {info.filename: info for info in archive.infolist()}
        reader = _Members(path, archive, members)
        header_name = next(
            (n for n in ("header.json", "_journal/start.json") if n in members), None
        )
        if header_name is None:
            raise InputError(
                "missing member header.json (is this an Inspect .eval log?)", file=path
            )
        header = reader.json(header_name)
        if not isinstance(header, dict):
            reader.shape(header_name).fail("", f"expected an object, got {kind(header)}")
        names = _sample_members(members)
        reader.check_declared([header_name, *names])
        yield InspectLog(
            header, reader.shape(header_name), len(names), (reader.sample(n) for n in names)
        )


def _sample_members(members: dict[str, zipfile.ZipInfo]) -> list[str]:
    found: list[tuple[str, int, str]] = []
    for name in members:
        match = _MONOLITH.fullmatch(name) or _SHELL.fullmatch(name)
        if match:
            found.append((match["id"], int(match["epoch"]), name))
    # Inspect's own order (``sort_samples``): by epoch, then id.
    return [name for _, _, name in sorted(found, key=lambda m: (m[1], m[0]))]


class _Members:
    """The members of one open archive, read and checked one at a time."""

    def __init__(self, path: Path, archive: zipfile.ZipFile, members: dict[str, Any]) -> None:
        self.path = path
        self.archive = archive
        self.members: dict[str, zipfile.ZipInfo] = members
        #: Bytes inflated so far over the members read, and those members' compressed
        #: size; no more than the file's (a hostile archive's entries may overlap or
        #: declare more than they hold).
        self.inflated = 0
        self.compressed = 0
        self.file_size = path.stat().st_size
        # (sample prefix, sequence) -> [(start, member)]: one pass over the names, not
        # one per sample (a log can hold tens of thousands of members).
        self.chunks: dict[tuple[str, str], list[tuple[int, str]]] = {}
        for name in members:
            match = _CHUNK.fullmatch(name)
            if match:
                key = (match["prefix"], match["seq"])
                self.chunks.setdefault(key, []).append((int(match["start"]), name))

    def label(self, name: str) -> str:
        return f"{self.path} [{name}]"

    def shape(self, name: str) -> Shape:
        return Shape(self.label(name))

    def json(self, name: str) -> Any:
        # The bytes go once decoded: one copy of the member besides what it parses to.
        text = decode_utf8(self.read(name), file=self.label(name))
        return loads_json(text, file=self.label(name), line=None, nan_is_null=True)

    def check_declared(self, names: list[str]) -> None:
        """Refuse up front a log whose members to read (``names``, and the chunks and
        metadata of the chunked samples among them) declare more than `MAX_TOTAL_BYTES`;
        what is inflated is counted as well, since declared sizes can lie."""
        shells = {n.removesuffix("sample.json") for n in names if n.endswith("/sample.json")}
        chunks = (
            n for (prefix, _), found in self.chunks.items() if prefix in shells for _, n in found
        )
        metadata = (p + "metadata.json" for p in shells if p + "metadata.json" in self.members)
        total = 0
        for name in (*names, *chunks, *metadata):
            total += self.members[name].file_size
            if total > MAX_TOTAL_BYTES:
                self._too_much(name, "its members declare")

    def count(self, name: str, size: int, more: int) -> None:
        """Count ``more`` bytes inflated from member ``name`` (``size`` so far, these
        included), and stop at a limit: the member's, the log's, the inflation ratio's."""
        self.inflated += more
        if size > MAX_MEMBER_BYTES:
            self._too_large(name)
        if self.inflated > MAX_TOTAL_BYTES:
            self._too_much(name, "it holds")
        if self.inflated > INFLATION_FLOOR_BYTES and self.inflated > MAX_INFLATION * min(
            self.compressed, self.file_size
        ):
            raise InputError(
                f"the log inflates more than {MAX_INFLATION} times its compressed size "
                f"({self.inflated >> 20} MiB from "
                f"{min(self.compressed, self.file_size) / 2**20:.1f} MiB so far), "
                "which Inspect's logs do not: refused as a ZIP bomb",
                file=self.label(name),
            )

    def _too_much(self, name: str, how: str) -> None:
        raise InputError(
            f"the log is larger than {_size(MAX_TOTAL_BYTES)} uncompressed ({how} more); "
            "agentgauge reads Inspect logs up to that size",
            file=self.label(name),
        )

    def read(self, name: str) -> bytes:
        info = self.members.get(name)
        if info is None:
            raise InputError(f"missing member {name}", file=self.path)
        if info.file_size > MAX_MEMBER_BYTES:
            self._too_large(name)
        self.compressed += info.compress_size
        try:
            if info.compress_type == _ZIP_ZSTANDARD and not _stdlib_zstd_only():
                data = self._zstd(info)
            else:
                data = self._inflate(info)
        except InputError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
            raise InputError(f"damaged member: {exc}", file=self.label(name)) from None
        except (NotImplementedError, RuntimeError) as exc:  # other methods, encryption
            raise InputError(f"cannot read member: {exc}", file=self.label(name)) from None
        return data

    def _inflate(self, info: zipfile.ZipInfo) -> bytes:
        """A member zipfile reads (stored, deflated, ...), counted a chunk at a time."""
        parts: list[bytes] = []
        size = 0
        with self.archive.open(info) as fh:
            while part := fh.read(_CHUNK_BYTES):
                size += len(part)
                self.count(info.filename, size, len(part))
                parts.append(part)
        return b"".join(parts)

    def _too_large(self, name: str) -> None:
        raise InputError(
            f"member is larger than {_size(MAX_MEMBER_BYTES)} uncompressed; "
            "agentgauge reads Inspect samples up to that size",
            file=self.label(name),
        )

    def _zstd(self, info: zipfile.ZipInfo) -> bytes:
        try:
            import zstandard
        except ImportError:
            raise InputError(
                "member is zstd-compressed, which needs the zstandard package: "
                "pip install 'agentgauge[inspect]'",
                file=self.label(info.filename),
            ) from None
        compressed = self._raw(info)
        # Inspect writes a member over 200 MiB as several frames (_util/zipfile.py).
        reader = zstandard.ZstdDecompressor().stream_reader(compressed, read_across_frames=True)
        parts: list[bytes] = []
        size = 0
        try:
            while part := reader.read(_CHUNK_BYTES):
                size += len(part)
                self.count(info.filename, size, len(part))
                parts.append(part)
        except zstandard.ZstdError as exc:
            raise InputError(
                f"damaged zstd member: {exc}", file=self.label(info.filename)
            ) from None
        data = b"".join(parts)
        if zlib.crc32(data) != info.CRC:
            raise InputError("damaged member: CRC-32 mismatch", file=self.label(info.filename))
        return data

    def _raw(self, info: zipfile.ZipInfo) -> bytes:
        """A member's compressed bytes, found through its local file header (APPNOTE
        4.3.7: 30 fixed bytes, then the name and the extra field)."""
        fp = self.archive.fp
        assert fp is not None
        fp.seek(info.header_offset)
        header = fp.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile("bad local file header")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        fp.seek(info.header_offset + 30 + name_length + extra_length)
        raw = fp.read(info.compress_size)
        if len(raw) != info.compress_size:
            raise zipfile.BadZipFile("truncated member")
        return raw

    def sample(self, name: str) -> Sample:
        shape = self.shape(name)
        data = self.json(name)
        if not isinstance(data, dict):
            shape.fail("", f"expected a sample (an object), got {kind(data)}")
        if not name.endswith("/sample.json"):
            attachments = _attachment_map(data.get("attachments"), shape, "attachments")
            return Sample(data, shape, "", attachments)
        return self._chunked(name.removesuffix("sample.json"), data, shape)

    def _chunked(self, prefix: str, shell: dict[str, Any], shape: Shape) -> Sample:
        sequences = {seq: list(self._sequence(prefix, seq)) for seq in _SEQUENCES}
        attachments: dict[str, str] = {}
        for i, text in enumerate(sequences["attachments"]):
            if not isinstance(text, str):
                self.shape(prefix + "attachments").fail(
                    f"[{i}]", f"expected a string, got {kind(text)}"
                )
            attachments[str(i)] = text
        data = dict(shell)
        data["events"] = sequences["events"]
        data["messages"] = _expand_refs(shell.get("message_refs"), sequences["messages"], shape)
        if prefix + "metadata.json" in self.members:
            data["metadata"] = self.json(prefix + "metadata.json")
        return Sample(data, shape, "", attachments)

    def _sequence(self, prefix: str, seq: str) -> Iterator[Any]:
        """The items of one chunked sequence, chunk by chunk in order of their start."""
        count = 0
        for start, name in sorted(self.chunks.get((prefix, seq), [])):
            if start != count:
                self.shape(name).fail(
                    "", f"chunk starts at item {start}, but the chunks before it hold {count}"
                )
            chunk = self.json(name)
            if not isinstance(chunk, list):
                self.shape(name).fail("", f"expected a list (a chunk), got {kind(chunk)}")
            count += len(chunk)
            yield from chunk


_SEQUENCES = ("messages", "events", "attachments")


def _expand_refs(refs: Any, pool: list[Any], shape: Shape) -> list[Any]:
    """``message_refs``: ``[start, end)`` ranges into the messages sequence."""
    out: list[Any] = []
    for i, ref in enumerate(shape.items(refs, "message_refs")):
        at = f"message_refs[{i}]"
        if not (isinstance(ref, list) and len(ref) == 2):
            shape.fail(at, f"expected a [start, end] pair, got {kind(ref)}")
        start = shape.integer(ref[0], f"{at}[0]")
        end = shape.integer(ref[1], f"{at}[1]")
        assert start is not None and end is not None
        if not start <= end <= len(pool):
            shape.fail(at, f"range [{start}, {end}) is outside the {len(pool)} messages stored")
        out.extend(pool[start:end])
    return out


def _size(n: int) -> str:
    """A byte count as a limit is spoken of: ``4 GiB``, ``512 MiB``, ``1.5 MiB``."""
    if n >= 1 << 30 and n % (1 << 30) == 0:
        return f"{n >> 30} GiB"
    return f"{n / 2**20:g} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def _stdlib_zstd_only() -> bool:
    """Python 3.14's zipfile reads zstd members, but not multi-frame ones (Inspect
    patches it for those): use ``zstandard`` whenever it is installed."""
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return hasattr(zipfile, "ZIP_ZSTANDARD")
    return False
