"""Names that print the same but are stored differently.

A task id, a run id, an agent or a model name is compared as the text it is, but a
person reads it as it prints: ``café`` written with one code point and with ``e`` and
a combining accent (Unicode normalization forms NFC and NFD, Unicode Standard Annex
#15), ``base`` with a zero-width space inside or a space at its end, all print as the
same word in a table. Two such spellings in one place would count as two tasks, two
runs or two systems no one can tell apart. The readers refuse the second spelling
(`lookalike_key` says when two are one), and every message that names them shows
each so that the difference is visible (`quoted`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["lookalike_key", "quoted", "spelling_difference"]


def _invisible(c: str) -> bool:
    """A format character (Unicode category Cf: zero-width space and joiners, the byte
    order mark, the soft hyphen, bidirectional controls), which prints as nothing."""
    return not c.isascii() and unicodedata.category(c) == "Cf"


def _shown(text: str) -> str:
    return "".join(c for c in text if not _invisible(c))


def lookalike_key(text: str) -> str:
    """What ``text`` prints as: its NFC form without format characters (zero-width
    ones among them) and whitespace at its ends. Two names with one key and different
    texts print the same but would count as two."""
    if text.isascii():
        return text.strip()
    return _shown(unicodedata.normalize("NFC", text)).strip()


def spelling_difference(first: str, second: str) -> str:
    """How two different texts with one `lookalike_key` differ: in ``Unicode
    normalization``, ``invisible characters`` or ``whitespace at the ends`` (joined by
    ``and`` when in several)."""
    a, b = first.strip(), second.strip()
    how = []
    if _shown(a) != _shown(b):
        how.append("Unicode normalization")
    if unicodedata.normalize("NFC", a) != unicodedata.normalize("NFC", b):
        how.append("invisible characters")
    if (first[: len(first) - len(first.lstrip())], first[len(first.rstrip()) :]) != (
        second[: len(second) - len(second.lstrip())],
        second[len(second.rstrip()) :],
    ):
        how.append("whitespace at the ends")
    return " and ".join(how) or "Unicode normalization"


def quoted(names: Iterable[str]) -> list[str]:
    """Each of ``names`` as Python writes a string (``'base '``, ``'ba\\u200bse'``:
    controls and invisible characters as escapes), and with every non-ASCII character
    escaped where two would otherwise read the same (``'na\\xefve'``, ``'nai\\u0308ve'``,
    the NFC and NFD spellings of one word)."""
    names = list(names)
    reads: dict[str, set[str]] = {}  # what a repr reads as, and the names that read so
    for name in names:
        reads.setdefault(lookalike_key(repr(name)), set()).add(name)
    return [ascii(n) if len(reads[lookalike_key(repr(n))]) > 1 else repr(n) for n in names]
