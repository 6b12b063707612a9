"""Reading Java and JavaScript literals as JSON values, without ``eval``.

BFCL's ``simple_java`` and ``simple_javascript`` categories ask models to pass
arguments as source-code literals (``"5L"``, ``"new int[]{1, 2}"``,
``"new HashMap<>() {{ put(\\"a\\", 1); }}"``, ``"{a: 1, b: [2]}"``). BFCL reads
them with per-type regular expressions; this is a small recursive-descent
parser instead, so nested collections and strings holding commas or brackets
read correctly. Anything it cannot read whole, and text longer than 100,000
characters or nested deeper than 100 levels, is returned unchanged as text
(then compared as a string, as BFCL does for unparseable values).
"""

from __future__ import annotations

import re
from typing import Any, Literal

__all__ = ["parse_literal"]

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`)
    | (?P<num>-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFdDlLn]?)
    | (?P<name>[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)*)
    | (?P<punct>\[\]|[\[\](){}<>,:;?=])
    )""",
    re.VERBOSE | re.DOTALL,
)
_COLLECTIONS = {"Array", "ArrayList", "LinkedList", "List", "Vector", "Stack", "ArrayDeque"}
_COLLECTIONS |= {"Queue", "HashSet", "LinkedHashSet", "TreeSet", "Set", "HashMap", "TreeMap"}
_COLLECTIONS |= {"LinkedHashMap", "Hashtable", "Map", "ConcurrentHashMap"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_END = re.compile(r"\s*\Z")
# BFCL's literals are short; a model's megabytes must not stall a check.
_MAX_TEXT = 100_000
_MAX_DEPTH = 100


class _Fail(Exception):
    pass


def _tokenize(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while not _END.match(text, pos):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _Fail
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _unescape(m: re.Match[str]) -> str:
    code = m.group(1)
    return chr(int(code[1:], 16)) if len(code) == 5 else _ESCAPES.get(code, code)


def _number(tok: str) -> int | float:
    suffix = tok[-1] if tok[-1] in "fFdDlLn" else ""
    body = tok[:-1] if suffix else tok
    if suffix in ("f", "F", "d", "D") or any(c in body for c in ".eE"):
        return float(body)
    return int(body)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], language: str) -> None:
        self.toks = tokens
        self.i = 0
        self.js = language == "javascript"
        self.depth = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok[0] == "eof" or (value is not None and tok[1] != value):
            raise _Fail
        self.i += 1
        return tok

    def accept(self, value: str) -> bool:
        if self.peek()[1] == value and self.peek()[0] == "punct":
            self.i += 1
            return True
        return False

    def items(self, close: str) -> list[Any]:
        out: list[Any] = []
        while not self.accept(close):
            out.append(self.value())
            if not self.accept(","):
                self.take(close)
                break
        return out

    def generics(self) -> None:
        # Skip ``<String, List<Integer>>`` after a type name.
        if not self.accept("<"):
            return
        depth = 1
        while depth:
            kind, tok = self.take()
            if kind == "punct" and tok == "<":
                depth += 1
            elif kind == "punct" and tok == ">":
                depth -= 1

    def value(self) -> Any:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Fail
        out = self._value()
        self.depth -= 1
        return out

    def _value(self) -> Any:
        kind, tok = self.peek()
        if kind == "name":
            return self.name()
        self.i += 1
        if kind == "str":
            return _ESCAPE.sub(_unescape, tok[1:-1])
        if kind == "num":
            return _number(tok)
        if tok == "[":  # a str or num token is never bare punctuation
            return self.items("]")
        if tok == "[]":
            return []
        if tok == "{":
            return self.obj() if self.js else self.items("}")
        raise _Fail

    def obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while not self.accept("}"):
            kind, tok = self.take()
            if kind == "str":
                key = _ESCAPE.sub(_unescape, tok[1:-1])
            elif kind in ("name", "num"):
                key = tok
            else:
                raise _Fail
            self.take(":")
            out[key] = self.value()
            if not self.accept(","):
                self.take("}")
                break
        return out

    def name(self) -> Any:
        _, tok = self.take()
        word = re.sub(r"\s+", "", tok)
        if word in ("true", "false"):
            return word == "true"
        if word in ("null", "undefined"):
            return None
        if word == "new":
            return self.constructed()
        if word in ("Arrays.asList", "List.of", "Set.of", "Stream.of") and self.accept("("):
            return self.items(")")
        if word == "Map.of" and self.accept("("):
            flat = self.items(")")
            if len(flat) % 2:
                raise _Fail
            return {str(flat[k]): flat[k + 1] for k in range(0, len(flat), 2)}
        return word  # a variable or constant: kept as its name

    def constructed(self) -> Any:
        _, type_name = self.take()
        self.generics()
        if self.accept("[]"):  # new int[]{1, 2}
            while self.accept("[]"):
                pass
            self.take("{")
            return self.items("}")
        if type_name not in _COLLECTIONS:
            raise _Fail  # new Path(...), new QName(...): an object, kept as its source text
        self.take("(")
        args = self.items(")")
        if type_name == "Array" and self.js:
            return args
        body: list[tuple[str, list[Any]]] = []
        if self.accept("{"):  # double-brace initialisation: {{ add(x); put(k, v); }}
            self.take("{")
            while not self.accept("}"):
                _, method = self.take()
                self.take("(")
                body.append((method, self.items(")")))
                self.accept(";")
            self.take("}")
        if "Map" in type_name or type_name == "Hashtable":
            out: dict[str, Any] = dict(args[0]) if args and isinstance(args[0], dict) else {}
            for method, call_args in body:
                if method != "put" or len(call_args) != 2:
                    raise _Fail
                out[str(call_args[0])] = call_args[1]
            return out
        items: list[Any] = list(args[0]) if args and isinstance(args[0], list) else []
        for method, call_args in body:
            if method not in ("add", "push", "offer") or len(call_args) != 1:
                raise _Fail
            items.append(call_args[0])
        return items


def parse_literal(text: str, language: Literal["java", "javascript"] | str) -> Any:
    """The JSON value a Java/JavaScript literal denotes, or ``text`` unchanged when
    it is not one literal (a bare identifier such as ``mapController`` stays text)."""
    if len(text) > _MAX_TEXT:
        return text
    try:
        tokens = _tokenize(text)
        if not tokens:
            return text
        parser = _Parser(tokens, language)
        value = parser.value()
        if parser.i != len(tokens):
            return text
    except (_Fail, ValueError, RecursionError):
        return text
    return value
