"""Canonical JSON: the text hashes and the store depend on, pinned."""

from __future__ import annotations

import hashlib
import json
from datetime import date

import pytest

from agentgauge.canonical import canonical_json
from agentgauge.graders.state import state_hash

VALUE = {"b": [1, 2.5, None, True], "a": "é", "c": {"z": {}, "y": "☃"}}


def test_sorted_compact_and_unicode_kept() -> None:
    assert canonical_json(VALUE) == '{"a":"é","b":[1,2.5,null,true],"c":{"y":"☃","z":{}}}'


def test_ascii_form_escapes_and_reads_back_the_same() -> None:
    text = canonical_json(VALUE, ascii=True)
    assert text == '{"a":"\\u00e9","b":[1,2.5,null,true],"c":{"y":"\\u2603","z":{}}}'
    assert json.loads(text) == VALUE
    # A lone surrogate has no UTF-8 form; escaped, SQLite can still store it.
    assert canonical_json({"x": "\ud800"}, ascii=True) == '{"x":"\\ud800"}'


def test_values_without_a_json_type_are_written_as_text() -> None:
    assert canonical_json({"d": date(2024, 6, 1)}) == '{"d":"2024-06-01"}'


def test_state_hash_is_sha256_of_the_unicode_text() -> None:
    # The hash tau2-bench-style state comparison relies on; stored grades carry it,
    # so it must never change: sha256 of the UTF-8 bytes of the text above.
    text = '{"a":"é","b":[1,2.5,null,true],"c":{"y":"☃","z":{}}}'
    assert state_hash(VALUE) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert state_hash({"a": "é", "b": [1, 2.5, None]}) == (
        "d764fee2563da33e3d57334755404e635da33c995824b0adfabc4b6e1af4f608"
    )


def test_a_float_that_is_not_finite_is_refused_naming_where_it_is() -> None:
    # Python's encoder wrote Infinity, which is no JSON: SQLite's JSON refused it, and
    # an import said the store was damaged.
    for bad, shown in ((float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan")):
        for ascii in (False, True):
            with pytest.raises(ValueError, match=rf"^metadata\.x\[1\]: is {shown}, "):
                canonical_json({"metadata": {"x": [1.0, bad]}}, ascii=ascii)
    assert canonical_json({"x": 1e308}) == '{"x":1e+308}'
