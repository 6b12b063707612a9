"""Tool-call AST matching with BFCL semantics (Patil et al., Berkeley
Function-Calling Leaderboard, ``bfcl_eval/eval_checker/ast_eval/ast_checker.py``).

A model's calls ``[{name: {arg: value}}]`` are checked against JSON-schema
function docs and a BFCL answer key ``[{name: {arg: [acceptable values]}}]``
(``""`` among the acceptable values means the argument may be omitted):

- the function name is exact (optionally ``.`` and ``_`` are equivalent);
- every required parameter is present; no parameter lies outside the schema
  *and* the key; a key parameter without ``""`` must be given;
- types are strict (``bool`` is never an ``int``), but an ``int`` is accepted
  where a ``float`` is declared, at every depth; a value of the type of an
  acceptable value that itself contradicts the schema is compared with the key
  as written (BFCL's "variable" rule);
- strings compare after removing spaces and ``,./-_*^``, turning ``'`` into
  ``"`` and case-folding; lists in order; dicts key by key, each value against
  that key's own acceptable values;
- parallel calls are paired by a maximum bipartite matching (augmenting paths,
  Kuhn 1955); BFCL pairs greedily and can reject a valid pairing (a deliberate
  divergence, see docs/graders.md);
- irrelevance passes only with no call; relevance only with at least one.

Each rule is written once. A value is read once into a canonical form
(`_canonical`), equal for two values exactly when BFCL's comparison holds; a
key parameter's acceptable values become a set of such forms (and patterns for
dicts) when an output first needs them, kept by `CompiledKey` for the next
output; `ast_match` is a key compiled and used once. Model output is data,
never passed to ``eval``: Java/JavaScript literals are read by
`agentgauge.graders._literals`, a value nested deeper than 100 levels (or
cyclic) or holding over 100,000 items is a ``malformed_call``, and an
explanation shows at most 1,000 characters of a value.

Every failure has a namespaced error type (``missing_required``,
``value_error:string``, ...; the list is in docs/graders.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal

from agentgauge.graders._literals import parse_literal

__all__ = [
    "CATEGORIES",
    "TYPE_NAMES",
    "AstResult",
    "CompiledKey",
    "Language",
    "ast_match",
    "check_call",
    "compile_key",
    "literal_eq",
    "max_bipartite_matching",
    "normalize_string",
]

Language = Literal["python", "java", "javascript"]
CATEGORIES: tuple[str, ...] = tuple(
    ["simple", "multiple", "parallel", "parallel_multiple", "irrelevance", "relevance"]
)

AstResult = tuple[bool, str | None, str]
"""``(valid, error_type, detail)``: ``error_type`` is ``None`` exactly when valid."""
Docs = Sequence[Mapping[str, Any]]  # [{name, parameters: {type, properties, required}}]
Key = Sequence[Mapping[str, Any]]  # [{name: {arg: [acceptable values]}}]

_MAX_DEPTH = 100
_MAX_ITEMS = 100_000
_SHOW = 1000  # characters of a value an explanation shows (BFCL's longest: 341)

# Declared type -> the JSON kind it asks for: BFCL's names, JSON schema's, and
# the Java / JavaScript names of BFCL's simple_java and simple_javascript.
_KIND: dict[str, str] = {
    **dict.fromkeys(("string", "String", "char"), "str"),
    **dict.fromkeys(("integer", "int", "byte", "short", "long", "Bigint"), "int"),
    **dict.fromkeys(("float", "double", "number"), "float"),
    **dict.fromkeys(("boolean", "bool", "Boolean"), "bool"),
    **dict.fromkeys(("array", "list", "tuple", "Array", "ArrayList"), "list"),
    **dict.fromkeys(("Queue", "Stack", "Set"), "list"),
    **dict.fromkeys(("dict", "object", "HashMap", "Hashtable"), "dict"),
    **{"null": "null", "any": "any", "Any": "any"},
}
#: The type names a parameter's schema may declare (`_KIND`), and ``""``: no type, any
#: value (BFCL's simple_javascript data declares one so, a nested property). The suite
#: loader refuses any other name (``strng`` read as any value without a word).
TYPE_NAMES = frozenset({*_KIND, ""})
_KIND_OF_TYPE: dict[type, str] = {str: "str", int: "int", float: "float", bool: "bool"}
_KIND_OF_TYPE |= {type(None): "null", list: "list", tuple: "list", dict: "dict"}
# Per declared kind, the exact types of the values it admits.
_ADMITS: dict[str, frozenset[type]] = {
    **{k: frozenset((t,)) for t, k in _KIND_OF_TYPE.items()},
    "any": frozenset(_KIND_OF_TYPE),
    "float": frozenset((int, float)),
    "list": frozenset((list, tuple)),
}
_SUBCLASSES = (
    (int, "int"),
    (float, "float"),
    (str, "str"),
    ((list, tuple), "list"),
    (dict, "dict"),
)


def _kind_of(value: Any) -> str:
    """The JSON kind of ``value`` (``bool`` apart from ``int``, tuples are lists);
    the type's name for anything else."""
    kind = _KIND_OF_TYPE.get(type(value))
    if kind is None:  # a subclass (IntEnum, OrderedDict, ...), or a type outside JSON
        subclass = (k for c, k in _SUBCLASSES if isinstance(value, c))
        kind = next(subclass, type(value).__name__)
    return kind


def _is_mapping(value: Any) -> bool:
    # An ABC check costs ~0.3 µs: JSON's other types are told apart by type.
    return type(value) is dict or (type(value) not in _KIND_OF_TYPE and isinstance(value, Mapping))


def _declared(schema: Any) -> str:
    """The kind a schema declares (``any`` when it declares none)."""
    if not schema or (type(schema) is not dict and not isinstance(schema, Mapping)):
        return "any"
    t = schema.get("type")
    if isinstance(t, list):  # JSON schema ["string", "null"]: the first non-null
        t = next((x for x in t if x != "null"), "any")
    return "any" if t is None else _KIND.get(t if type(t) is str else str(t), "any")


def _type_ok(value: Any, schema: Any) -> bool:
    """Strict JSON typing, recursive through ``items``; int is accepted for float
    at every depth (BFCL only does so at the top level)."""
    want = _declared(schema)
    if want == "any":
        return True
    got = _kind_of(value)
    if got != want:
        return want == "float" and got == "int"
    items = schema.get("items") if want == "list" else None
    if not _is_mapping(items):
        return True
    admits = _admits(items)
    return all([type(v) in admits or _type_ok(v, items) for v in value])  # [..]: faster


def _admits(schema: Any) -> frozenset[type]:
    """The exact types whose values ``schema`` admits without a look inside
    (a list with an ``items`` schema needs one: none)."""
    want = _declared(schema)
    return frozenset() if want == "list" and _is_mapping(schema.get("items")) else _ADMITS[want]


# BFCL's normalisation: drop " ,./-_*^", ' -> ", lower (we case-fold). ASCII
# text takes one bytes.translate, other text a regular expression: str.translate
# deletes at ~100 ns a character (a second for 10 MB).
_QUOTE = bytes.maketrans(b"'", b'"')
_DELETE = b" ,./-_*^"
_DELETE_RE = re.compile(r"[ ,./\-_*^]")


def normalize_string(text: str) -> str:
    """BFCL's string standardisation: drop spaces and ``,./-_*^``, ``'`` -> ``"``,
    case-fold (BFCL lowers; case-folding also equates e.g. ``ß`` and ``ss``)."""
    norm = _canonical(str.__str__(text))
    return norm.decode() if isinstance(norm, bytes) else str(norm)


class _Unreadable(ValueError):
    """A value nested too deep (or cyclic), or too large, to be read."""


class _Other:
    """A value of a type outside JSON: equal to one of the same kind that ``==`` it."""

    __slots__ = ("kind", "value")

    def __init__(self, value: Any) -> None:
        self.kind = type(value).__name__
        self.value = value

    def __eq__(self, other: object) -> bool:
        return type(other) is _Other and self.kind == other.kind and bool(self.value == other.value)

    def __hash__(self) -> int:
        return hash(self.kind)


_TRUE, _FALSE, _NULL, _DICT = object(), object(), object(), object()
_SCALARS = frozenset((str, int, float, bool, type(None)))


def _canonical(value: Any, depth: int = 0, budget: list[int] | None = None) -> Hashable:
    """A hashable form equal for two values exactly when BFCL's comparison holds:
    strings normalised, ints equal to floats of the same value, bools and null
    apart, lists (and tuples) item by item, dicts key by key; a NaN equals
    nothing. Raises `_Unreadable` past `_MAX_DEPTH` levels or `_MAX_ITEMS` items,
    so that nothing after it walks an unbounded value."""
    t = type(value)
    if t is str:  # bytes when the normal form is ASCII, so "STRASSE" and "straße" meet
        text: str = value
        if text.isascii():
            return text.encode().translate(_QUOTE, _DELETE).lower()
        norm = _DELETE_RE.sub("", text).replace("'", '"').casefold()
        return norm.encode() if norm.isascii() else norm
    if t is int:
        return value  # type: ignore[no-any-return]
    if t is float:
        return value if value == value else object()
    if t is bool:
        return _TRUE if value else _FALSE
    if value is None:
        return _NULL
    if isinstance(value, list | tuple | dict):
        if depth >= _MAX_DEPTH:
            raise _Unreadable(f"nested deeper than {_MAX_DEPTH} levels, or cyclic")
        if budget is None:
            budget = [_MAX_ITEMS]
        budget[0] -= len(value)
        if budget[0] < 0:
            raise _Unreadable(f"more than {_MAX_ITEMS:,} items")
        depth += 1
        if isinstance(value, dict):
            return _DICT, frozenset((k, _canonical(v, depth, budget)) for k, v in value.items())
        return tuple([_canonical(v, depth, budget) for v in value])
    if isinstance(value, str):  # bool is final: its subclasses are ints
        return _canonical(str.__str__(value))
    if isinstance(value, int | float):  # IntEnum, numpy.float64, ...
        return value if value == value else object()
    return _Other(value)


def literal_eq(value: Any, expected: Any) -> bool:
    """Equality with BFCL's string normalisation, strict bools, and ints equal to
    floats of the same value (JSON does not tell ``1`` from ``1.0``). A value too
    deep or too large to read equals nothing."""
    try:
        return _canonical(value) == _canonical(expected)
    except _Unreadable:
        return False


def _show(value: Any) -> str:
    """``repr(value)`` for an explanation, cut to `_SHOW` characters."""
    try:
        if type(value) not in _SCALARS:
            _canonical(value)  # a value that cannot be read cannot be printed either
        text = repr(value)
    except Exception:  # also a failing __repr__, or an int too long to print
        text = f"<{type(value).__name__} that cannot be shown>"
    return text if len(text) <= _SHOW else f"{text[:_SHOW]}… ({len(text):,} characters)"


def _acceptables(options: Any) -> list[Any]:
    return options if type(options) is list else [options]


class _Acceptable:
    """A list of acceptable values of an answer key, read on first use: the
    literal ones into a set of canonical forms, each acceptable dict into a
    `_DictPattern`, and each acceptable list that holds a dict into its items'
    patterns (BFCL compares such a list item by item, and its dicts key by
    key). ``""`` stays among the literals: only a string can equal it."""

    __slots__ = ("dicts", "lists", "literals", "options")

    def __init__(self, options: list[Any]) -> None:
        self.options = options
        self.literals: frozenset[Hashable] | None = None

    def _read(self) -> frozenset[Hashable]:
        self.dicts: list[_DictPattern] = []
        self.lists: list[list[Any]] = []
        literals = []
        for o in self.options:
            if type(o) is dict:
                self.dicts.append(_DictPattern(o))
            elif type(o) is list and dict in map(type, o):
                self.lists.append(
                    [_DictPattern(a) if type(a) is dict else _canonical(a) for a in o]
                )
            else:
                literals.append(_canonical(o))
        self.literals = frozenset(literals)
        return self.literals

    def accepts(self, value: Any, canonical: Hashable) -> bool:
        """``canonical`` is ``value``'s canonical form."""
        if canonical in (self.literals if self.literals is not None else self._read()):
            return True
        if self.dicts and isinstance(value, dict):
            return any(d.mismatch(value) is None for d in self.dicts)
        if self.lists and isinstance(value, list | tuple):
            return any(
                len(items) == len(value) and all(map(_item_fits, value, items))
                for items in self.lists
            )
        return False


def _item_fits(value: Any, item: Any) -> bool:
    if type(item) is _DictPattern:
        return isinstance(value, dict) and item.mismatch(value) is None
    return bool(_canonical(value) == item)


class _DictPattern:
    """One acceptable dict: each key's own acceptable values, a key optional
    when ``""`` is among them."""

    __slots__ = ("keys", "needed")

    def __init__(self, option: dict[str, Any]) -> None:
        self.keys = {k: _Acceptable(_acceptables(v)) for k, v in option.items()}
        self.needed = [k for k, a in self.keys.items() if "" not in a.options]

    def mismatch(self, value: Mapping[Any, Any]) -> tuple[str, str] | None:
        """``None`` when ``value`` fits, else (error type, detail)."""
        for k, v in value.items():
            acceptable = self.keys.get(k)
            if acceptable is None:
                return "value_error:dict_key", f"unexpected dict key {_show(k)}"
            if not acceptable.accepts(v, _canonical(v)):
                shown = f"{_show(v)} not in {acceptable.options!r}"
                return "value_error:dict_value", f"dict key {_show(k)}: {shown}"
        for k in self.needed:
            if k not in value:
                return "value_error:dict_key", f"missing dict key {k!r}"
        return None


_VALUE_ERROR = {"str": "value_error:string", "list": "value_error:list"}


class _Param(_Acceptable):
    """One parameter of an expected call: its schema and acceptable values."""

    __slots__ = ("admits", "items", "name", "schema", "tail", "variables", "want")

    def __init__(self, name: Any, schema: Any, options: list[Any]) -> None:
        self.options = options
        self.literals = None
        self.name = name
        self.schema: Mapping[str, Any] = schema if _is_mapping(schema) else {}
        self.want = want = _declared(self.schema)
        self.admits = _ADMITS[want] if want != "list" else _admits(self.schema)
        items = self.schema.get("items") if want == "list" else None
        self.items = _admits(items) if _is_mapping(items) else None  # item types at once
        # Per JSON kind, the acceptable values of that kind the schema rejects
        # (BFCL's variable rule); built on the first value of a rejected type.
        self.variables: dict[str, list[Any]] | None = None
        self.tail: str | None = None  # " not in [...]", written on the first miss

    def source(self, value: Any, language: Language) -> Any:
        """A Java/JS value: source literals read (``any`` keeps the text, as BFCL does)."""
        if not isinstance(value, str) or self.want == "any":
            return value
        if self.want != "str":
            return parse_literal(value, language)
        s = value.strip()  # a string literal loses its quotes
        return s[1:-1] if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'" else value

    def check(self, value: Any) -> tuple[str, str] | None:
        """``None`` when ``value`` is acceptable, else (error type, detail).
        Raises `_Unreadable` for a value that cannot be read."""
        canonical = _canonical(value)  # read first: nothing after walks an unbounded value
        t, items = type(value), self.items
        if (
            t not in self.admits
            and not (items and (t is list or t is tuple) and all([type(v) in items for v in value]))
            and not _type_ok(value, self.schema)
        ):
            return self._type_error(value)
        if canonical in (self.literals if self.literals is not None else self._read()):
            return None
        if (self.dicts or self.lists) and self.accepts(value, canonical):
            return None
        kind = _KIND_OF_TYPE.get(type(value)) or _kind_of(value)
        if kind == "dict":
            why = self.dicts[0].mismatch(value) if self.dicts else None
            err, detail = why or ("value_error:dict_value", "no acceptable dict")
            return err, f"{self.name!r}: {detail}"
        return _VALUE_ERROR.get(kind, "value_error:others"), self._miss(value)

    def _miss(self, value: Any) -> str:
        if self.tail is None:
            self.tail = f" not in {[o for o in self.options if o != '']!r}"
        return f"{self.name!r}: {_show(value)}{self.tail}"

    def _type_error(self, value: Any) -> tuple[str, str] | None:
        kind = _KIND_OF_TYPE.get(type(value)) or _kind_of(value)
        if self.variables is None:
            self.variables = {}
            for o in self.options:
                if o != "" and not _type_ok(o, self.schema):
                    self.variables.setdefault(_kind_of(o), []).append(o)
        same = self.variables.get(kind)
        if same:  # the variable rule: compared as written, exactly
            if any(bool(value == o) for o in same):
                return None
            return "value_error:others", self._miss(value)
        err = "type_error:nested" if self.want == "list" and kind == "list" else "type_error:simple"
        why = f"expected {self.schema.get('type')}, got {kind} ({_show(value)})"
        return err, f"{self.name!r}: {why}"


_Parsed = tuple[str, dict[Any, Any]] | str  # (name, arguments), or why the call is malformed


def _parse_call(call: Any) -> _Parsed:
    """A call of another shape than ``{str: dict}``, read (`_Expected.check`)."""
    if not isinstance(call, Mapping) or len(call) != 1:
        return f"a call must be a one-key object {{name: {{arg: value}}}}, got {_show(call)}"
    ((name, args),) = call.items()
    if isinstance(args, str):  # arguments as a JSON text, as OpenAI sends them
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            return f"arguments of {_show(name)} are not valid JSON"
    if not isinstance(args, Mapping):
        return f"arguments of {_show(name)} must be an object"
    return str(name), args if type(args) is dict else dict(args)


def _call_name(call: Any) -> str | None:
    if _is_mapping(call) and len(call) == 1:
        return str(next(iter(call)))
    return None


class _Expected:
    """One expected call of a key, against its function's schema; each
    parameter is read on first use."""

    __slots__ = ("key", "name", "options", "params", "props", "required", "required_in_key")

    def __init__(self, function: Mapping[str, Any], entry: Mapping[str, Any]) -> None:
        self.name = next(iter(entry))
        self.key = entry[self.name]
        params = function.get("parameters") or {}
        self.props: Mapping[Any, Any] = params.get("properties") or {}
        self.required: Sequence[Any] = params.get("required") or ()
        self.required_in_key = all(map(self.key.__contains__, self.required))
        self.options: dict[Any, list[Any]] = {}  # a key parameter's acceptable values
        self.params: dict[Any, _Param] = {}  # read, on the first value not written as one

    def check(self, call: Any, language: Language, name_equivalence: bool) -> AstResult:
        # The usual shape, {expected name: {...}}, is read without ABC checks.
        args = call.get(self.name) if type(call) is dict and len(call) == 1 else None
        if type(args) is not dict:  # another name, or another shape
            parsed = _parse_call(call)
            if isinstance(parsed, str):
                return False, "malformed_call", parsed
            name, args = parsed
            if name != self.name and not (
                name_equivalence and name.replace(".", "_") == self.name.replace(".", "_")
            ):
                return False, "wrong_func_name", f"expected {self.name!r}, got {_show(name)}"
        params, known = self.params, self.options.get
        python = language == "python"
        for param, value in args.items():
            options = known(param)
            if options is None:
                # Only parameters in both the schema and the key may be given.
                if param not in self.key or param not in self.props:
                    why = f"unexpected parameter {_show(param)}"
                    return self._missing(args) or (False, "unexpected_param", why)
                options = self.options[param] = _acceptables(self.key[param])
            # A scalar (not "") written exactly as an acceptable value passes
            # whatever the schema says (equal, or under the variable rule equal
            # as written), without being read. 1 == 1.0 == True: the first equal
            # option must have the value's type (else the full check decides).
            t = type(value)
            if t is str:  # only a string equals a string
                if value and python and value in options:
                    continue
            elif (
                t in _SCALARS
                and python
                and value in options
                and type(found := options[options.index(value)]) is t
                and found == value  # not a NaN found by identity
            ):
                continue
            p = params.get(param)
            if p is None:
                p = params[param] = _Param(param, self.props[param] or {}, options)
            try:
                error = p.check(value if python else p.source(value, language))
            except _Unreadable as exc:
                error = "malformed_call", f"{_show(param)}: {exc}"
            if error is not None:
                return (self._missing(args) if self.required else None) or (False, *error)
        # Required parameters are looked for when something fails, or when the
        # output left out a key parameter or the key some required one.
        if len(args) < len(self.key) or not self.required_in_key:
            missing = self._missing(args)
            if missing is not None:
                return missing
            for param, options in self.key.items():
                if param not in args and "" not in _acceptables(options):
                    why = f"parameter {param!r} is not optional in the key"
                    return False, "missing_optional", why
        return True, None, ""

    def _missing(self, args: Mapping[Any, Any]) -> AstResult | None:
        """A missing required parameter: reported before any other error."""
        for req in self.required:
            if req not in args:
                return False, "missing_required", f"missing required parameter {req!r}"
        return None


def check_call(
    function: Mapping[str, Any],
    call: Any,
    expected: Mapping[str, Any],
    *,
    name_equivalence: bool = False,
    language: Language = "python",
) -> AstResult:
    """One call ``{name: {arg: value}}`` against one key entry ``{name: {arg: [..]}}``
    and the function's schema ``function`` (BFCL's simple function check)."""
    return _Expected(function, expected).check(call, language, name_equivalence)


def _find_function(functions: Docs, name: str) -> Mapping[str, Any]:
    for f in functions:
        if f.get("name") == name:
            return f
    # A key naming a function absent from the docs is a defective task: check
    # against an empty schema, which reports every argument as unexpected.
    return {"name": name, "parameters": {"properties": {}, "required": []}}


def _kuhn(
    n_exp: int, n_act: int, ok: Callable[[int, int], bool], *, perfect: bool = False
) -> list[int]:
    """Augmenting-path matching. With ``perfect``, stop at the first expected call
    that cannot be matched: in Kuhn's algorithm a vertex that finds no augmenting
    path on its turn is never matched later, so no perfect matching exists."""
    owner = [-1] * n_act

    def augment(i: int, seen: list[bool]) -> bool:
        # The call in the same position first: outputs usually follow the
        # key's order. The order of trials does not change the matching's size.
        for j in (*range(i, n_act), *range(min(i, n_act))):
            if not seen[j] and ok(i, j):
                seen[j] = True
                if owner[j] == -1 or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(n_exp):
        if not augment(i, [False] * n_act) and perfect:
            break
    return [owner.index(i) if i in owner else -1 for i in range(n_exp)]


def max_bipartite_matching(ok: list[list[bool]]) -> list[int]:
    """Maximum bipartite matching by augmenting paths (Kuhn 1955).

    ``ok[i][j]``: expected call i can pair with actual call j. Returns, for each
    expected call, the actual call it is matched to, or -1. Exact (not greedy):
    an earlier pairing is undone whenever that frees a path for a later one.
    """
    n_act = len(ok[0]) if ok else 0
    return _kuhn(len(ok), n_act, lambda i, j: ok[i][j])


# BFCL's category names: ``live_`` dropped, ``simple_java`` -> simple in Java
# (a language of None: the key's own).
_CATEGORY_NAMES: dict[str, tuple[str, Language | None]] = {c: (c, None) for c in CATEGORIES}
_CATEGORY_NAMES |= {"simple_python": ("simple", None), "simple_java": ("simple", "java")}
_CATEGORY_NAMES |= {"simple_javascript": ("simple", "javascript")}
_CATEGORY_NAMES |= {f"live_{name}": v for name, v in _CATEGORY_NAMES.items()}


class CompiledKey:
    """An answer key compiled against its function docs, to match many outputs:
    `match` returns exactly what `ast_match` returns. A parameter's acceptable
    values are read on first use and kept, so the key and docs must not change
    while the compiled key is in use."""

    __slots__ = ("expected", "language", "name_equivalence")

    def __init__(
        self,
        functions: Docs,
        answer: Key,
        *,
        language: Language = "python",
        name_equivalence: bool = False,
    ) -> None:
        self.expected = [_Expected(_find_function(functions, next(iter(a))), a) for a in answer]
        self.language: Language = language
        self.name_equivalence = name_equivalence

    def match(self, calls: Sequence[Any], category: str = "simple") -> AstResult:
        """`ast_match` against the compiled key (see there)."""
        category, lang = _CATEGORY_NAMES.get(category) or (category.removeprefix("live_"), None)
        language = lang or self.language
        expected = self.expected
        one = category == "simple" or category == "multiple"
        if one and len(calls) == len(expected) and expected:  # the usual case first
            return expected[0].check(calls[0], language, self.name_equivalence)
        if category == "irrelevance":
            why = f"{len(calls)} call(s) where none was due"
            return (False, "irrelevance:called", why) if calls else (True, None, "")
        if category == "relevance":
            why = "no call where one was due"
            return (True, None, "") if calls else (False, "relevance:no_call", why)
        if len(calls) != len(expected):
            return False, "wrong_count", f"expected {len(expected)} call(s), got {len(calls)}"
        if category not in CATEGORIES:
            raise ValueError(f"unknown category {category!r}; expected one of {CATEGORIES}")
        if not expected or one:
            return True, None, ""
        return self._parallel(calls, language)

    def _parallel(self, calls: Sequence[Any], language: Language) -> AstResult:
        expected, n, equiv = self.expected, len(self.expected), self.name_equivalence
        for first, exp in enumerate(expected):  # the key's order first, the usual case
            own = exp.check(calls[first], language, equiv)
            if not own[0]:
                break
        else:
            return True, None, ""
        # The calls that fit expected call `first` (the ones before it fit their
        # own). When none does, Kuhn's algorithm would leave exactly it unmatched.
        row = [j != first and exp.check(calls[j], language, equiv)[0] for j in range(n)]
        i, misfits = first, [j for j in range(n) if not row[j]]
        if len(misfits) < n:
            fits = {(first, j): v for j, v in enumerate(row)} | {(k, k): True for k in range(first)}

            def fit(i: int, j: int) -> bool:
                v = fits.get((i, j))
                if v is None:
                    v = fits[i, j] = expected[i].check(calls[j], language, equiv)[0]
                return v

            match = _kuhn(n, n, fit, perfect=True)
            if -1 not in match:
                return True, None, ""
            i = match.index(-1)
            misfits = [j for j in range(n) if not fit(i, j)]
        # Explained with a call that does not fit it, one of the expected name
        # first. Some call does not fit: were they all to fit, a free one would.
        name = expected[i].name
        j = next((j for j in misfits if _call_name(calls[j]) == name), misfits[0])
        if (i, j) != (first, first):
            own = expected[i].check(calls[j], language, equiv)
        _, err, why = own
        return False, err, f"no call matches expected call {i} ({name}): {why}"


def compile_key(
    functions: Docs, answer: Key, *, language: Language = "python", name_equivalence: bool = False
) -> CompiledKey:
    """Compile ``answer`` against ``functions`` once, to match many outputs."""
    return CompiledKey(functions, answer, language=language, name_equivalence=name_equivalence)


def ast_match(
    functions: Docs,
    calls: Sequence[Any],
    answer: Key,
    category: str = "simple",
    *,
    name_equivalence: bool = False,
    language: Language = "python",
) -> AstResult:
    """Whether ``calls`` match the BFCL answer key ``answer`` (see module doc).

    ``functions`` are JSON-schema function docs (``{name, parameters: {type,
    properties, required}}``), ``calls`` a list of ``{name: {arg: value}}``,
    ``answer`` a list of ``{name: {arg: [acceptable values]}}``. ``category`` is
    one of `CATEGORIES` (BFCL's ``live_*`` and language prefixes are accepted and
    mapped, e.g. ``live_parallel`` -> ``parallel``, ``simple_java`` -> ``simple``
    with ``language="java"``). Returns ``(valid, error_type, detail)``.
    """
    if category.removeprefix("live_") in ("irrelevance", "relevance"):
        answer = ()  # no key to read
    key = CompiledKey(functions, answer, language=language, name_equivalence=name_equivalence)
    return key.match(calls, category)
