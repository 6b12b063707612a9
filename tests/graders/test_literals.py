"""Java and JavaScript literals read as JSON values, never evaluated."""

from __future__ import annotations

from typing import Any

import pytest

from agentgauge.graders._literals import parse_literal


@pytest.mark.parametrize(
    ("text", "language", "value"),
    [
        ("5L", "java", 5),
        ("-3.5f", "java", -3.5),
        ("2e3", "java", 2000.0),
        ("true", "java", True),
        ("null", "java", None),
        ('"a, b"', "java", "a, b"),
        ("'x'", "java", "x"),
        ("new int[]{1, 2, 3}", "java", [1, 2, 3]),
        ('new String[] {"a", "b"}', "java", ["a", "b"]),
        ("new ArrayList<>(Arrays.asList(1L, 2L))", "java", [1, 2]),
        ('new ArrayList<String>() {{ add("x"); add("y"); }}', "java", ["x", "y"]),
        ("List.of(1, 2)", "java", [1, 2]),
        (
            'new HashMap<String, List<Integer>>() {{ put("k", Arrays.asList(1)); }}',
            "java",
            {"k": [1]},
        ),
        ('Map.of("a", 1, "b", true)', "java", {"a": 1, "b": True}),
        ("new HashMap<>()", "java", {}),
        ("mapController", "java", "mapController"),
        ("ResultSet.TYPE_SCROLL_INSENSITIVE", "java", "ResultSet.TYPE_SCROLL_INSENSITIVE"),
        ("new Path('/tmp/a')", "java", "new Path('/tmp/a')"),  # an object: kept as text
        ("[1, 'two', [3.5]]", "javascript", [1, "two", [3.5]]),
        ("{a: 1, 'b c': {d: [true]}}", "javascript", {"a": 1, "b c": {"d": [True]}}),
        ("new Array(4, 5)", "javascript", [4, 5]),
        ("12n", "javascript", 12),
        ("undefined", "javascript", None),
        ("[]", "javascript", []),
        ("'it\\'s'", "javascript", "it's"),
        ("applyMiddleware('x')", "javascript", "applyMiddleware('x')"),
        ("[1, 2", "javascript", "[1, 2"),  # unbalanced: text
        ("1 2", "javascript", "1 2"),  # two values: text
        ("__import__('os').system('x')", "javascript", "__import__('os').system('x')"),
    ],
)
def test_parse(text: str, language: str, value: Any) -> None:
    assert parse_literal(text, language) == value
