"""Reading files a user hands us: strict UTF-8 text and strict JSON, located errors.

Every input format agentgauge reads (trial records, tau-bench and METR
results, suites, gates, prices) is UTF-8 text holding JSON or YAML, and any
of them may be hostile: binary, UTF-16, nested 100,000 deep, or holding
numbers no float can hold. The rules for that live here, once, so each
reader fails the same way: one `InputError` naming the file, the line and
what to do, never a traceback (``UnicodeDecodeError``, ``RecursionError``,
``OverflowError``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from pathlib import Path
from typing import Any, BinaryIO

from agentgauge.errors import InputError

__all__ = [
    "MAX_DEPTH",
    "decode_utf8",
    "has_long_integer",
    "infinite_at",
    "loads_json",
    "may_overflow",
    "nests_deeper",
    "open_regular",
    "read_bytes",
    "read_text",
    "unpack_command",
]

_BOM = "\ufeff"

#: How deep arrays and objects may nest in an input. Python's parsers stop near
#: 1,000 levels, but what reads the value next (validation, canonical JSON, the
#: store) recurses too, and ran out of stack on a 990-deep file; no format
#: agentgauge reads needs more than a dozen levels.
MAX_DEPTH = 100


def is_digits(text: str) -> bool:
    """Whether ``text`` is a non-empty run of ASCII digits 0-9: what ``int()`` takes as
    a whole number of ours. ``str.isdigit`` also holds for ``"²"`` (which ``int`` then
    refuses with a traceback) and for other scripts' digits (``"١٢٣"``, which ``int``
    reads as 123), so no typed number is checked with it."""
    return text.isascii() and text.isdigit()


def decode_utf8(raw: bytes, *, file: str | Path, line: int | None = None, offset: int = 0) -> str:
    """``raw`` as UTF-8 text. ``raw`` is the whole file, or its line ``line`` that starts
    at byte ``offset``; the message names the line and the file's byte offset."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = offset + exc.start
        packed = compressed_as(raw) if offset == 0 else None
        if packed is not None:
            name, command = packed
            if str(file).endswith(".eval"):
                hint = "an Inspect log: agentgauge import inspect reads it"
            else:
                hint = f"decompress it first: {unpack_command(command, file)}"
            raise InputError(f"the file is {name}, not text; {hint}", file=file) from None
        raise InputError(
            f"not a UTF-8 text file: byte {at} (0x{raw[exc.start]:02x}) is not valid UTF-8 "
            "(save the file as UTF-8; UTF-16 and binary files cannot be read)",
            file=file,
            line=line if line is not None else raw.count(b"\n", 0, exc.start) + 1,
        ) from None
    if offset == 0 and text.startswith(_BOM):
        # A BOM is valid UTF-8 but not valid JSON, and YAML readers differ on it.
        raise InputError(
            "the file starts with a byte-order mark; save it as UTF-8 without BOM",
            file=file,
            line=1,
        )
    return text


#: Leading bytes of the compressed and archive formats a results file is often kept in,
#: with the program that unpacks it.
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "zstd"),
    (b"BZh", "bzip2-compressed", "bzip2"),
    (b"\xfd7zXZ\x00", "xz-compressed", "xz"),
    (b"PK\x03\x04", "a ZIP archive", "unzip"),
)
#: The name endings each program strips when it decompresses in place (``-dk``); a name
#: without one it refuses ("gzip: x.json: unknown suffix -- ignored").
_SUFFIXES = {"gzip": (".gz", ".tgz"), "zstd": (".zst",), "bzip2": (".bz2",), "xz": (".xz",)}


def unpack_command(tool: str, file: str | Path) -> str:
    """A shell command that unpacks ``file`` with ``tool`` whatever its name:
    ``gzip -dk r.jsonl.gz`` where the name ends as the tool expects, else
    ``gzip -dc x.json > decompressed-x.json`` (beside it)."""
    path = Path(file)
    if tool not in _SUFFIXES:
        return f"{tool} {shlex.quote(str(file))}"
    if path.suffix in _SUFFIXES[tool]:
        return f"{tool} -dk {shlex.quote(str(file))}"
    out = path.with_name(f"decompressed-{path.name}")
    return f"{tool} -dc {shlex.quote(str(file))} > {shlex.quote(str(out))}"


def compressed_as(raw: bytes) -> tuple[str, str] | None:
    """What compressed format ``raw`` (a file's first bytes) is in, and the program
    that unpacks it (gzip, zstd, bzip2, xz, unzip); ``None`` when it is none of those."""
    for magic, name, command in _MAGIC:
        if raw.startswith(magic):
            return name, command
    return None


#: Opening a FIFO for reading waits for a writer unless the open does not block; a
#: regular file reads the same either way.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _not_regular(mode: int) -> str:
    """Why a file of ``mode`` (``st_mode``) cannot be read as an input, in words."""
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    what = "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return f"is not a regular file ({what}): save the data to a file and give that"


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading in binary, refused unless it is a regular file.

    Every input is read whole, and some twice (the import's SHA-256): a FIFO, a
    device or a symlink to one (``/dev/zero``, ``/dev/urandom``) never ends, and
    reading it held the process forever while its memory grew. The check is made
    on the open file (``fstat``), so a file swapped after a first look is caught
    too; the open does not block, so a FIFO with no writer is refused rather than
    waited on."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except OSError as exc:
        # A socket cannot be opened at all; say what it is rather than ENXIO.
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise InputError(_not_regular(mode), file=path) from None
        raise InputError(f"cannot read file: {exc.strerror}", file=path) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(_not_regular(mode), file=path)
        return os.fdopen(fd, "rb")  # O_NONBLOCK changes nothing on a regular file
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | Path) -> bytes:
    """The whole of a regular file (`open_regular`), as bytes."""
    path = Path(path)
    with open_regular(path) as fh:
        try:
            return fh.read()
        except OSError as exc:
            raise InputError(f"cannot read file: {exc.strerror}", file=path) from None


def read_text(path: str | Path) -> str:
    """The whole of a regular file (`open_regular`) as UTF-8 text."""
    return decode_utf8(read_bytes(path), file=Path(path))


def loads_json(text: str, *, file: str | Path, line: int | None, nan_is_null: bool = False) -> Any:
    """Parse strict JSON: no ``NaN``/``Infinity``, no key twice in one object,
    nesting only as deep as Python's parser can go, no number past a double's range
    (``1e400``, which Python reads as infinity: in free-form metadata it reached the
    store's JSON, which cannot hold it). That one is found by a test of the text
    (`may_overflow`) and then a walk of the value: a parse hook would cost a Python
    call per float.

    A repeated key is refused because which of its values counts is not said by
    JSON (RFC 8259, section 4: names "SHOULD be unique"; parsers differ): Python's
    and most readers keep the last, so ``{"success": true, ..., "success": false}``
    read as a failure here and as a success elsewhere.

    With ``line`` (one line of a JSONL file), the line's ending is not part of the
    text: with it, a truncated line's error was placed on the next line and reported
    as "column 1" of this one.

    ``nan_is_null`` reads the files of a writer that puts ``NaN`` for a number it does
    not have (pydantic's ``to_json``, with which Inspect AI writes its logs: an
    unscored sample's score, the mean of no scores): ``NaN`` is read as ``null``, no
    value. ``Infinity`` is still refused: it is a value, not its absence, and one in
    free-form metadata would reach the store's JSON, which cannot hold it."""
    if line is not None:
        text = text.rstrip("\r\n")
    try:
        value = json.loads(
            text,
            parse_constant=_nan_as_null if nan_is_null else _reject_constant,
            object_pairs_hook=_unique_keys,
        )
    except _RepeatedKey as exc:
        # The hook sees one object at a time, not where it sits: the key is named, not
        # given as a field path it might not be.
        raise InputError(
            f"invalid JSON: key {exc.key!r} appears twice in one object, and which of its "
            "values counts is not clear: keep one",
            file=file,
            line=line,
        ) from None
    except json.JSONDecodeError as exc:
        at = exc.lineno if line is None else line
        # Some messages end in "at" already ("Unterminated string starting at").
        where = "column" if exc.msg.endswith(" at") else "at column"
        raise InputError(
            f"invalid JSON: {exc.msg} {where} {exc.colno}", file=file, line=at
        ) from None
    except RecursionError:
        raise InputError(
            f"nested too deeply: more than {MAX_DEPTH} levels of arrays and objects",
            file=file,
            line=line,
        ) from None
    except ValueError as exc:  # NaN/Infinity, and ints past Python's 4,300-digit limit
        raise InputError(f"invalid JSON: {exc}", file=file, line=line) from None
    # Only a text with that many brackets can nest that deep; most lines skip the check.
    if text.count("[") + text.count("{") > MAX_DEPTH and nests_deeper(text, MAX_DEPTH):
        raise InputError(
            f"nested too deeply: more than {MAX_DEPTH} levels of arrays and objects",
            file=file,
            line=line,
        )
    if may_overflow(text) and (field := infinite_at(value)) is not None:
        raise InputError(
            "must be a finite number: this one is past a double's range (about 1.8e308) "
            "and reads as infinity, which JSON cannot hold",
            file=file,
            line=line,
            field=field or None,
        )
    return value


#: Digit runs and exponents as the bytes ``0`` and ``e``: a number past a double's range
#: has an exponent of three digits or more (``1e400``, ``2.5E+309``), or 309 digits.
_NUMBER_SHAPE = bytes.maketrans(b"123456789E", b"000000000e")
_BIG_EXPONENT = re.compile(rb"e\+?000")
_MANTISSA = frozenset(b"0.-")
_BEFORE_NUMBER = frozenset(b":[, \t\r\n")


def may_overflow(text: str) -> bool:
    """Whether JSON ``text`` may hold a number literal that reads as infinity: the cheap
    test before `infinite_at` walks the value. The text's shape (digits as ``0``) is
    searched in C; an exponent found is taken as a number's only if what precedes it
    reads as one (digits after ``:``, ``[`` or ``,``), so a hex digest in a string
    (``"…de123…"``) rarely costs that walk."""
    shape = text.encode("utf-8", "surrogatepass").translate(_NUMBER_SHAPE)
    if b"0" * 309 in shape:
        return True
    if b"e000" not in shape and b"e+000" not in shape:
        return False
    for found in _BIG_EXPONENT.finditer(shape):
        at = found.start() - 1
        while at >= 0 and shape[at] in _MANTISSA:
            at -= 1
        if at < found.start() - 1 and (at < 0 or shape[at] in _BEFORE_NUMBER):
            return True
    return False


def infinite_at(value: Any) -> str | None:
    """The field path (``metadata.x``, ``[2].scores``; ``""`` for the value itself) of
    the first float in ``value`` that is not finite, or None if there is none."""
    kind = type(value)
    if kind is float:
        return "" if value - value != 0.0 else None  # inf - inf is nan
    if kind is dict:
        for key, item in value.items():
            if (inner := infinite_at(item)) is not None:
                return f"{key}.{inner}" if inner and inner[0] != "[" else f"{key}{inner}"
        return None
    if kind is list:
        for index, item in enumerate(value):
            if (inner := infinite_at(item)) is not None:
                return f"[{index}].{inner}" if inner and inner[0] != "[" else f"[{index}]{inner}"
        return None
    return None


#: A number of 19 or more digits where JSON puts a value (first, or after ``:``, ``[``
#: or ``,``):
#: orjson reads an integer past 64 bits as a float, silently (``2**70 + 1`` comes back
#: ``1.1805916207174113e+21``), so text holding one is left to Python's reader. Digits
#: inside a string (a hex id) are not after one of those: they cost nothing.
_LONG_NUMBER = re.compile(r"(?:^|[:\[,])\s*-?\d{19}")


#: Every digit as ``0``: nineteen zeros in a row in the result are nineteen digits.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_DIGITS = b"0" * 19


def has_long_integer(text: str) -> bool:
    """Whether JSON ``text`` may hold an integer orjson would not read exactly."""
    # Most text holds no 19 digits in a row at all: seen by bytes.translate and a
    # substring search, ten times faster than the pattern, which is asked only then.
    digits = text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO)
    return _NINETEEN_DIGITS in digits and _LONG_NUMBER.search(text) is not None


_ESCAPE = re.compile(rb"\\.")
#: Brackets (curly ones as square: only the depth matters) and quotes; all else goes.
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(c for c in range(256) if c not in b'[]{}"')
_QUOTED = re.compile(rb'"[^"]*"')


def nests_deeper(text: str, limit: int) -> bool:
    """Whether valid JSON ``text`` nests arrays and objects deeper than ``limit``.

    Strings are dropped and only brackets kept, then each pass removes the innermost
    ``[]`` pairs, one level per pass: all in C, where a walk over the parsed value in
    Python cost several times the parse itself on transcript-sized lines."""
    raw = text.encode("utf-8", "surrogatepass")
    if b"\\" in raw:
        raw = _ESCAPE.sub(b"", raw)  # an escaped quote must not end its string
    raw = raw.translate(_BRACKETS, _NOT_BRACKET).replace(b'""', b"")
    if b'"' in raw:  # strings that hold brackets
        raw = _QUOTED.sub(b"", raw)
    for _ in range(limit):
        raw = raw.replace(b"[]", b"")
        if not raw:
            return False
    return True


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return obj


def _nan_as_null(name: str) -> None:
    if name != "NaN":
        _reject_constant(name)


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN/Infinity, which are not JSON and not scores.
    raise ValueError(f"{name} is not allowed (not valid JSON, and not a number we can score)")
