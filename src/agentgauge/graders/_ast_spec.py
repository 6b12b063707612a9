"""Per-parameter acceptance structures for `agentgauge.graders.ast` (its fast path).

`_ast_reference._check_param` is the reference: it reads a parameter's schema and its
acceptable values on every check. A `Spec` reads them once and turns them
into what a check needs, so that checking one scalar argument is one type
lookup, at most one string normalisation and one set lookup:

- ``accept``: for each Python type the schema admits (`ast._type_ok`), the
  set of canonical forms of the acceptable values a value of that type can
  equal (`ast.literal_eq`). Strings are normalised once (`canon`); ints and
  floats share one set, since ``1 == 1.0`` and both hash alike; bools are
  apart from numbers. For a scalar of an admitted type the lookup *is* the
  verdict, so failures are reported without the full check.
- ``variables``: for each scalar type the schema rejects, the acceptable
  values of that very type (BFCL's "variable" rule, exact equality), or
  ``None`` when there are none (a type error); lists and dicts of a rejected
  kind with no acceptable value of their kind are type errors too.
- flat lists: as written (``raw_lists``: the items and their types, no
  normalising), else as tuples of canonical forms (`tag_list`); a flat list
  of the declared item kinds that is not found is a ``value_error:list``.
- dicts, and lists holding dicts, by structure (`_ast_structured`: a dict
  against each acceptable dict key by key, each value against that key's own
  acceptable values), built on the first such value; one not found takes the
  full check, which explains it.

A parameter whose acceptable values are not plain JSON (another type, or a
NaN, which equals nothing yet is found in a set by identity) gets a spec with
no sets: the full check handles every value. Only Python-language values use
specs: Java and JavaScript values are source text the full check parses.
`tests/graders/test_ast_fast_paths.py` checks every path against the full
check (property tests: verdict, error type and detail).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentgauge.graders._ast_structured import Alternatives

__all__ = [
    "KIND",
    "SLOW",
    "Spec",
    "build_spec",
    "canon",
    "declared",
    "direct",
    "items_ok",
    "kind_of",
    "same_flat_list",
    "tag_list",
    "type_detail",
]

# BFCL's normalisation (drop " ,./-_*^", ' -> ", lower) for ASCII text as one
# bytes.translate call: str.translate with deletions costs ~50 ns a character.
QUOTE = bytes.maketrans(b"'", b'"')
DELETE = b" ,./-_*^"
_TABLE = str.maketrans({**dict.fromkeys(" ,./-_*^"), "'": '"'})
_NONE = type(None)
_PLAIN = frozenset((str, int, float, bool, _NONE, list, dict))
_SCALARS = (str, int, float, bool, _NONE)

# Declared type -> the JSON kind it must have. BFCL names, JSON-schema names,
# and the Java / JavaScript names used by BFCL's simple_java / simple_javascript.
KIND: dict[str, str] = {
    "string": "str",
    "String": "str",
    "char": "str",
    "integer": "int",
    "int": "int",
    "byte": "int",
    "short": "int",
    "long": "int",
    "Bigint": "int",
    "float": "float",
    "double": "float",
    "number": "float",
    "boolean": "bool",
    "bool": "bool",
    "Boolean": "bool",
    "array": "list",
    "list": "list",
    "tuple": "list",
    "Array": "list",
    "ArrayList": "list",
    "Queue": "list",
    "Stack": "list",
    "Set": "list",
    "dict": "dict",
    "object": "dict",
    "HashMap": "dict",
    "Hashtable": "dict",
    "null": "null",
    "any": "any",
    "Any": "any",
}

# The exact Python types a value of each declared kind may have (int for float).
_ADMITS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "null": (_NONE,),
    "any": _SCALARS,
    "list": (),
    "dict": (),
}
_KIND_OF_TYPE = {str: "str", int: "int", float: "float", bool: "bool", _NONE: "null"}


def kind_of(value: Any) -> str:
    """The JSON kind of ``value`` (``bool`` apart from ``int``, tuples are lists)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return type(value).__name__


def declared(schema: Mapping[str, Any] | None) -> str:
    """The kind a schema declares (``any`` when it declares none)."""
    if not schema:
        return "any"
    t = schema.get("type")
    if isinstance(t, list):  # JSON schema ["string", "null"]: take the first non-null
        t = next((x for x in t if x != "null"), "any")
    return KIND.get(str(t), "any") if t is not None else "any"


def canon(text: str) -> bytes | str:
    """A hashable form equal for two strings exactly when BFCL's normalisation
    (with case-folding) makes them equal: bytes when the normal form is ASCII,
    else the normal form itself (so ``"STRASSE"`` and ``"straße"`` meet)."""
    if text.isascii():
        return text.encode().translate(QUOTE, DELETE).lower()
    norm = text.translate(_TABLE).casefold()
    return norm.encode() if norm.isascii() else norm


_TRUE, _FALSE, _NULL = object(), object(), object()


def tag_list(values: list[Any]) -> tuple[Any, ...] | None:
    """A flat list as a hashable tuple equal exactly when `literal_eq` holds
    item by item (strings normalised, ints equal to floats, bools and null
    apart); ``None`` when an item is not a plain scalar or is a NaN."""
    out: list[Any] = []
    for v in values:
        t = type(v)
        if t is str:
            out.append(canon(v))
        elif t is int:
            out.append(v)
        elif t is float:
            if v != v:  # NaN: literal_eq never holds, a tuple compare would by identity
                return None
            out.append(v)
        elif t is bool:
            out.append(_TRUE if v else _FALSE)
        elif v is None:
            out.append(_NULL)
        else:
            return None
    return tuple(out)


_FLAT = frozenset(_SCALARS)
# The raw_lists of every spec not declared a list (shared, never filled: one
# dict fewer per parameter for the garbage collector to track).
_NO_LISTS: dict[tuple[Any, ...], set[tuple[type, ...]]] = {}


def same_flat_list(value: list[Any], option: list[Any]) -> bool:
    """``value`` is ``option`` as written: the same scalars of the same types,
    none a NaN. Then `literal_eq` holds item by item (and the item kinds are
    the option's), without normalising anything."""
    if value != option:  # == alone equates 1, 1.0 and True, and a NaN with itself
        return False
    types = list(map(type, value))
    if types != list(map(type, option)):
        return False
    if not _FLAT.issuperset(types):
        return False
    return float not in types or not any(type(v) is float and v != v for v in value)


def items_ok(values: list[Any], kind: str) -> bool:
    """Every item of a flat list has the declared item kind (int for float)."""
    if kind == "any":
        return True
    for v in values:
        k = _KIND_OF_TYPE.get(type(v))
        if k != kind and not (kind == "float" and k == "int"):
            return False
    return True


class Spec:
    """One parameter's schema and acceptable values, read once (module doc)."""

    __slots__ = (
        "accept",
        "full_only",
        "head",
        "items_kind",
        "kind",
        "non_empty",
        "options",
        "param",
        "post",
        "raw",
        "raw_lists",
        "schema",
        "str_accept",
        "structured",
        "structured_built",
        "type_head",
        "var_cache",
    )

    def __init__(
        self,
        param: str,
        schema: Any,
        options: list[Any],
        accept: dict[type, frozenset[Any]] | None,
        items_kind: str = "any",
        kind: str = "any",
    ) -> None:
        self.param = param
        self.schema = schema
        self.options = options
        self.non_empty = [o for o in options if o != ""]
        self.items_kind = items_kind
        self.head = ""  # f"{param!r}: ", written with post
        self.post: str | None = None
        self.type_head: str | None = None
        self.full_only = accept is None
        self.kind = kind  # the declared kind (`declared`)
        if accept is None:
            # No spec fits (see build_spec): no set answers, every value takes
            # the full check.
            self.accept: dict[type, frozenset[Any]] = {}
            self.raw: frozenset[Any] = frozenset()
            self.var_cache: dict[type, frozenset[Any] | None] | None = {}
        else:
            self.accept = accept
            # The non-empty acceptable strings as written: a string found here
            # passes whatever the schema says (literal_eq, or BFCL's variable
            # rule, which compares strings of a rejected type exactly), with no
            # normalising.
            self.raw = frozenset(o for o in self.non_empty if type(o) is str)
            self.var_cache = None
        self.str_accept = self.accept.get(str)
        # The flat acceptable lists as written (a tuple of their items) -> the
        # item types each was written with (filled by build_spec): a list with
        # the same items of the same types is found without normalising.
        self.raw_lists: dict[tuple[Any, ...], set[tuple[type, ...]]] = _NO_LISTS
        # Built on first use (see build_structured).
        self.structured: Alternatives | None = None
        self.structured_built = False

    def build_structured(self) -> Alternatives | None:
        """``structured``, built on the first dict or list the sets cannot
        judge: the acceptable values matched by structure (a dict against the
        acceptable dicts key by key), or None where only the full check can."""
        if not self.full_only and self.kind in ("dict", "list", "any"):
            # Imported here: _ast_structured builds on this module's canon.
            from agentgauge.graders._ast_structured import alternatives

            self.structured = alternatives(self.non_empty)
        self.structured_built = True
        return self.structured

    @property
    def variables(self) -> dict[type, frozenset[Any] | None]:
        """Per scalar type the schema rejects: the acceptable values of that type
        (BFCL's "variable" rule compares them exactly), ``None`` when there are
        none (a type error); ``None`` also for a list or dict the schema rejects
        when no acceptable value is one. Built on the first value of a rejected
        type."""
        found = self.var_cache
        if found is None:
            found = {}
            for t in _SCALARS:
                if t not in self.accept:
                    same = [o for o in self.non_empty if type(o) is t]
                    found[t] = frozenset(same) if same else None
            # A list or dict where the schema declares another kind, and no
            # acceptable value of its kind: a type error.
            kind = self.kind
            if kind != "any":
                has_list = has_dict = False  # as kind_of tells lists and dicts
                for o in self.non_empty:
                    if isinstance(o, list | tuple):
                        has_list = True
                    elif isinstance(o, dict):
                        has_dict = True
                if kind != "list" and not has_list:
                    found[list] = None
                if kind != "dict" and not has_dict:
                    found[dict] = None
            self.var_cache = found
        return found

    def miss(self, value: Any) -> str:
        """`_ast_reference._check_param`'s detail for a value not among the acceptable ones."""
        post = self.post
        if post is None:
            post = self.post = f" not in {self.non_empty!r}"
            self.head = f"{self.param!r}: "
        return f"{self.head}{value!r}{post}"

    def type_miss(self, value: Any) -> str:
        """`_ast_reference._check_param`'s detail for a value of the wrong type."""
        head = self.type_head
        if head is None:
            head = self.type_head = f"{self.param!r}: expected {self.schema.get('type')}, got "
        return f"{head}{kind_of(value)} ({value!r})"


def type_detail(param: str, schema: Mapping[str, Any], value: Any) -> str:
    """`_ast_reference._check_param`'s detail for a value of the wrong type."""
    return f"{param!r}: expected {schema.get('type')}, got {kind_of(value)} ({value!r})"


def build_spec(param: str, schema: Any, options: list[Any]) -> Spec:
    """The `Spec` of one parameter; one with no sets (every value takes the full
    check) when the schema is not a mapping or an option is not plain JSON."""
    if not isinstance(schema, Mapping):
        return Spec(param, schema, options, None)
    strs: list[Any] = []
    nums: list[Any] = []
    bools: list[Any] = []
    nones: list[Any] = []
    lists: list[Any] = []
    flat: list[list[Any]] = []  # flat acceptable lists, as written
    for o in options:
        t = type(o)
        if t is str:
            # A string value is compared with every option, "" included (as BFCL does).
            strs.append(canon(o))
        elif t is int or t is float:
            if o != o:  # NaN: equals nothing, yet a set finds it by identity
                return Spec(param, schema, options, None)
            nums.append(o)
        elif t is bool:
            bools.append(o)
        elif o is None:
            nones.append(o)
        elif t is list:
            tagged = tag_list(o)
            if tagged is not None:
                lists.append(tagged)
                flat.append(o)
        elif t is not dict:
            return Spec(param, schema, options, None)
    kind = declared(schema)
    items_kind = "any"
    accept: dict[type, frozenset[Any]]
    if kind == "str":
        accept = {str: frozenset(strs)}
    elif kind == "int":
        accept = {int: frozenset(nums)}
    elif kind == "float":
        accept = {int: frozenset(nums)}
        accept[float] = accept[int]
    elif kind == "bool":
        accept = {bool: frozenset(bools)}
    elif kind == "list":
        accept = {list: frozenset(lists)}
        items = schema.get("items")
        items_kind = declared(items) if isinstance(items, Mapping) else "any"
    elif kind == "any":
        accept = {str: frozenset(strs), int: frozenset(nums), bool: frozenset(bools)}
        accept[float] = accept[int]
        accept[_NONE] = frozenset(nones)
    elif kind == "null":
        accept = {_NONE: frozenset(nones)}
    else:  # dict
        accept = {}
    spec = Spec(param, schema, options, accept, items_kind, kind)
    if kind == "list":
        raw_lists = spec.raw_lists = {}
        for o in flat:
            if items_ok(o, items_kind):
                raw_lists.setdefault(tuple(o), set()).add(tuple(map(type, o)))
    return spec


def _miss(param: str, value: Any, options: list[Any]) -> str:
    return f"{param!r}: {value!r} not in {[o for o in options if o != '']!r}"


def direct(
    param: str, value: Any, schema: Mapping[str, Any], options: list[Any], explain: bool
) -> Any:
    """One scalar judged without building a `Spec` (a key used once): ``None``
    when accepted, ``(error_type, detail)`` when rejected, `SLOW` when only the
    full check can tell (another type, a container, an unusual option)."""
    t = type(value)
    declared_type = schema.get("type")
    kind = KIND.get(declared_type, "any") if type(declared_type) is str else declared(schema)
    if t is str:
        if kind != "str" and kind != "any":
            return SLOW
        for o in options:
            if type(o) is str and o == value:  # the very text: no need to normalise
                return None
        norm = value.encode().translate(QUOTE, DELETE).lower() if value.isascii() else canon(value)
        for o in options:
            to = type(o)
            if to is str:
                if (
                    o.encode().translate(QUOTE, DELETE).lower() if o.isascii() else canon(o)
                ) == norm:
                    return None
            elif to not in _PLAIN:
                return SLOW
        return "value_error:string", _miss(param, value, options) if explain else ""
    if t is int or t is float:
        if kind != "float" and kind != "any" and (kind != "int" or t is float):
            return SLOW
        for o in options:
            to = type(o)
            if to is int or to is float:
                if o == value:  # == (not a set): a NaN equals nothing, as literal_eq
                    return None
            elif to not in _PLAIN:
                return SLOW
        return "value_error:others", _miss(param, value, options) if explain else ""
    if t is bool:
        if kind != "bool" and kind != "any":
            return SLOW
        for o in options:
            if o is value:
                return None
            if type(o) not in _PLAIN:
                return SLOW
        return "value_error:others", _miss(param, value, options) if explain else ""
    if value is None:
        # In the schema's type (any, null) None must be among the options; out
        # of it, BFCL's variable rule accepts it when it is among them too.
        for o in options:
            if o is None:
                return None
            if type(o) not in _PLAIN:
                return SLOW
        if kind == "any" or kind == "null":
            return "value_error:others", _miss(param, value, options) if explain else ""
        return "type_error:simple", type_detail(param, schema, value) if explain else ""
    if t is list and kind == "list":
        items = schema.get("items")
        items_kind = declared(items) if isinstance(items, Mapping) else "any"
        for o in options:
            if type(o) is list and same_flat_list(value, o) and items_ok(o, items_kind):
                return None
        tagged = tag_list(value)
        if tagged is not None:
            items = schema.get("items")
            if items_ok(value, declared(items) if isinstance(items, Mapping) else "any"):
                for o in options:
                    if type(o) is list and tag_list(o) == tagged:
                        return None
    return SLOW


SLOW: Any = object()
