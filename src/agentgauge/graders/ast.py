"""Tool-call AST matching with BFCL semantics (SPEC 4; Patil et al., Berkeley
Function-Calling Leaderboard, ``bfcl_eval/eval_checker/ast_eval/ast_checker.py``).

A model's calls ``[{name: {arg: value}}]`` are checked against JSON-schema
function docs and a BFCL answer key ``[{name: {arg: [acceptable values]}}]``
(``""`` among the acceptable values means the argument may be omitted):

- the function name is exact (optionally ``.`` and ``_`` are equivalent);
- every required parameter is present; no parameter lies outside the schema
  *and* the answer key; a key parameter without ``""`` must be given;
- types are strict (``bool`` is never an ``int``), except that an ``int`` is
  accepted where a ``float`` is declared; a value whose JSON type is that of an
  acceptable value which itself contradicts the schema is compared against the
  key as is (BFCL's "variable" rule: the key's author accepted that type);
- strings compare after removing spaces and ``,./-_*^``, turning ``'`` into
  ``"`` and case-folding; lists compare in order; dicts key by key;
- parallel calls are paired by a maximum bipartite matching (augmenting paths,
  Kuhn 1955), so a valid pairing is always found; BFCL pairs greedily and can
  reject one (a deliberate divergence, see docs/graders.md);
- irrelevance passes only with no call; relevance only with at least one.

Model output is data: it is never passed to ``eval``. Java and JavaScript
literals (``"5L"``, ``"new int[]{1, 2}"``, ``"{a: 1}"``) are read by the small
parser in `agentgauge.graders._literals`.

Every failure has a namespaced error type (``wrong_func_name``,
``missing_required``, ``unexpected_param``, ``missing_optional``,
``type_error:simple``, ``type_error:nested``, ``value_error:string``,
``value_error:list``, ``value_error:dict_key``, ``value_error:dict_value``,
``value_error:others``, ``wrong_count``, ``irrelevance:called``,
``relevance:no_call``, ``malformed_call``).
"""

from __future__ import annotations

import importlib
import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from agentgauge.graders import _ast_spec, _ast_structured
from agentgauge.graders._ast_reference import Language as Language
from agentgauge.graders._ast_reference import (
    _acceptables,
    _check_param,
    _type_ok,
    literal_eq,
    normalize_string,
)
from agentgauge.graders._ast_spec import (
    DELETE,
    KIND,
    QUOTE,
    SLOW,
    Spec,
    build_spec,
    canon,
    direct,
    items_ok,
    tag_list,
)

__all__ = [
    "CATEGORIES",
    "AstResult",
    "CompiledKey",
    "ast_match",
    "check_call",
    "compile_key",
    "literal_eq",
    "max_bipartite_matching",
    "normalize_string",
]

Category = Literal[
    "simple", "multiple", "parallel", "parallel_multiple", "irrelevance", "relevance"
]
CATEGORIES: tuple[str, ...] = (
    "simple",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "relevance",
)

AstResult = tuple[bool, str | None, str]
"""``(valid, error_type, detail)``: ``error_type`` is ``None`` exactly when valid."""


def _names_equal(a: str, b: str, name_equivalence: bool) -> bool:
    if a == b:
        return True
    return name_equivalence and a.replace(".", "_") == b.replace(".", "_")


_SLOW: Any = SLOW  # a value only the full check can judge


def _native_module() -> Any:
    """The optional native path (``_ast_native.c``), or None where it is not built
    or ``AGENTGAUGE_PURE_PYTHON`` is set: the results are the same. A build that
    does not load is reported; with ``AGENTGAUGE_REQUIRE_NATIVE`` set (as CI
    sets it), a missing or broken build is an error."""
    if os.environ.get("AGENTGAUGE_PURE_PYTHON"):
        return None
    required = bool(os.environ.get("AGENTGAUGE_REQUIRE_NATIVE"))
    try:
        native = importlib.import_module("agentgauge.graders._ast_native")
    except ModuleNotFoundError as exc:
        if required or exc.name != "agentgauge.graders._ast_native":
            raise
        return None  # not built: no C compiler when installed
    except ImportError as exc:  # built, but it does not load
        if required:
            raise
        warnings.warn(
            f"agentgauge: the native AST matcher does not load ({exc}); using the pure-Python path",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return native


_native_mod = _native_module()
NATIVE = _native_mod is not None
"""Whether `CompiledKey.match` takes the native path (``_ast_native.c``)."""


def _structured_ok(spec: Spec, value: Any) -> bool:
    """A dict or list found by structure (what the full check does, read once)."""
    structured = spec.structured if spec.structured_built else spec.build_structured()
    return structured is not None and _type_ok(value, spec.schema) and structured.accepts(value)


class _Expected:
    """One key entry against its function's schema. Compiled (``compiled``, for
    `CompiledKey`), it keeps a `Spec` per parameter, built when the parameter is
    first given; else (`ast_match`, a key used once) it checks values directly."""

    __slots__ = (
        "compiled",
        "key",
        "key_name",
        "props",
        "required",
        "required_in_key",
        "specs",
        "strings",
    )

    def __init__(
        self, function: Mapping[str, Any], expected: Mapping[str, Any], compiled: bool = False
    ) -> None:
        if type(expected) is dict and len(expected) == 1:  # the usual shape, no list built
            for name in expected:
                self.key_name, self.key = name, expected[name]
        else:
            (self.key_name, self.key), *_ = expected.items()
        params = function.get("parameters") or {}
        self.props: Mapping[str, Any] = params.get("properties") or {}
        required = params.get("required") or ()
        self.required: Sequence[str] = required if type(required) is list else tuple(required)
        self.specs: dict[str, Spec] = {}
        self.compiled = compiled
        # Whether an output giving every key parameter gives every required
        # one (None: not yet known).
        self.required_in_key: bool | None = None
        # The native path's packed copy of the specs' acceptable strings as
        # written (_ast_native.c, `strings_table`), rebuilt when specs grow.
        self.strings: bytes | None = None

    def check(
        self,
        parsed: tuple[str, dict[str, Any]] | str,
        name_equivalence: bool,
        language: Language,
        explain: bool = True,
    ) -> AstResult:
        if isinstance(parsed, str):
            return False, "malformed_call", parsed
        name, args = parsed
        if name != self.key_name and not _names_equal(name, self.key_name, name_equivalence):
            return False, "wrong_func_name", f"expected {self.key_name!r}, got {name!r}"
        if self.compiled and language == "python":
            return self.check_compiled(args, explain)
        return _check_direct(self.key, self.props, self.required, args, language, explain)

    def check_compiled(self, args: dict[str, Any], explain: bool = True) -> AstResult:
        """The arguments of a Python-language call whose name matched, judged
        from each parameter's `Spec` (see _ast_spec): a value the sets cannot
        judge (a container that is not found, an unusual type) takes the full
        check, which also explains it."""
        # A missing required parameter is reported before any argument's error:
        # looked for when an argument fails, or when they all pass and some
        # parameter was left out (see the end).
        specs = self.specs
        for param, value in args.items():
            spec = specs.get(param)
            if spec is None:
                # Only parameters in both the schema and the key may be given.
                if param not in self.key or param not in self.props:
                    return self._reject(args, "unexpected_param", f"unexpected parameter {param!r}")
                spec = specs[param] = build_spec(
                    param, self.props[param] or {}, _acceptables(self.key[param])
                )
            t = type(value)
            if t is str:
                if value in spec.raw:
                    continue  # as written: acceptable whatever the type (Spec.raw)
                acc = spec.str_accept
                if acc is not None:
                    # ASCII text normalised in one pass; other text (whose bytes
                    # are never an ASCII normal form, so never found) case-folded.
                    if value.encode().translate(QUOTE, DELETE).lower() in acc or (
                        not value.isascii() and canon(value) in acc
                    ):
                        continue
                    return self._reject(
                        args, "value_error:string", spec.miss(value) if explain else ""
                    )
            else:
                acc = spec.accept.get(t)
                if acc is not None:
                    if t is list:
                        try:  # a list as written in the key (Spec.raw_lists)
                            types = spec.raw_lists.get(tuple(value))
                        except TypeError:  # an unhashable item: not a flat list
                            types = None
                        if types is not None and tuple(map(type, value)) in types:
                            continue
                        tagged = tag_list(value)
                        if tagged is not None and items_ok(value, spec.items_kind):
                            # A flat list of the declared item kinds: the sets
                            # are the verdict (no flat list equals a structured
                            # option, or one with a NaN).
                            if tagged in acc:
                                continue
                            return self._reject(
                                args, "value_error:list", spec.miss(value) if explain else ""
                            )
                    elif value in acc:
                        continue
                    else:
                        return self._reject(
                            args, "value_error:others", spec.miss(value) if explain else ""
                        )
            if acc is None:
                var = (spec.var_cache if spec.var_cache is not None else spec.variables).get(
                    t, _SLOW
                )
                if var is not _SLOW:
                    if var is None:
                        return self._reject(
                            args, "type_error:simple", spec.type_miss(value) if explain else ""
                        )
                    if value in var:
                        continue
                    return self._reject(
                        args, "value_error:others", spec.miss(value) if explain else ""
                    )
            if (t is dict or t is list) and _structured_ok(spec, value):
                continue
            err, why = _check_param(param, value, spec.schema, spec.options, "python", explain)
            if err is not None:
                return self._reject(args, err, why)
        if len(args) < len(self.key):
            return self._first_missing(args) or _omitted(self.key, args)
        if self.required_in_key is not True:  # a required parameter the key may lack
            key = self.key
            self.required_in_key = True
            for req in self.required:
                if req not in key:
                    self.required_in_key = False
                    return self._first_missing(args) or (True, None, "")
        return True, None, ""

    def _reject(self, args: Mapping[str, Any], error: str, detail: str) -> AstResult:
        """The failure for an argument, unless a required parameter is missing:
        that error comes first, as in the reference check."""
        return self._first_missing(args) or (False, error, detail)

    def _first_missing(self, args: Mapping[str, Any]) -> AstResult | None:
        """The error for the first required parameter ``args`` lacks, if any."""
        for req in self.required:
            if req not in args:
                return False, "missing_required", f"missing required parameter {req!r}"
        return None


def _check_direct(
    key: Mapping[str, Any],
    props: Mapping[str, Any],
    required: Sequence[str],
    args: dict[str, Any],
    language: Language,
    explain: bool = True,
) -> AstResult:
    """The arguments of a call whose name matched, read straight from the key
    and schema (a key used once, or Java / JavaScript source literals). A
    function, so that `ast_match` checks a simple call without an `_Expected`."""
    for req in required:
        if req not in args:
            return False, "missing_required", f"missing required parameter {req!r}"
    python = language == "python"
    for param, value in args.items():
        # Only parameters in both the schema and the key may be given.
        if param not in key or param not in props:
            return False, "unexpected_param", f"unexpected parameter {param!r}"
        schema, options = props[param] or {}, key[param]
        if type(options) is not list:
            options = _acceptables(options)
        if python:
            # The first equal option, if a plain string, is this very text:
            # acceptable whatever the type (as Spec.raw).
            if (
                type(value) is str
                and value
                and value in options
                and type(options[options.index(value)]) is str
            ):
                continue
            verdict = direct(param, value, schema, options, explain)
            if verdict is None:
                continue
            if verdict is not SLOW:
                return False, verdict[0], verdict[1]
        err, why = _check_param(param, value, schema, options, language, explain)
        if err is not None:
            return False, err, why
    if len(args) < len(key):
        return _omitted(key, args)
    return True, None, ""


def _omitted(key: Mapping[str, Any], args: Mapping[str, Any]) -> AstResult:
    """A key parameter left out that the key does not let be omitted."""
    for param, options in key.items():
        if param not in args and "" not in _acceptables(options):
            return False, "missing_optional", f"parameter {param!r} is not optional in the key"
    return True, None, ""


def check_call(
    function: Mapping[str, Any],
    call: Mapping[str, Any],
    expected: Mapping[str, Any],
    *,
    name_equivalence: bool = False,
    language: Language = "python",
) -> AstResult:
    """One call ``{name: {arg: value}}`` against one key entry ``{name: {arg: [..]}}``
    and the function's schema ``function`` (BFCL's simple function check)."""
    return _Expected(function, expected).check(_split_call(call), name_equivalence, language)


def _split_call(call: Any) -> tuple[str, dict[str, Any]] | str:
    if type(call) is dict and len(call) == 1:  # the common shape, without ABC checks
        for name in call:
            args = call[name]
            if type(args) is dict and type(name) is str:
                return name, args
    if not isinstance(call, Mapping) or len(call) != 1:
        return f"a call must be a one-key object {{name: {{arg: value}}}}, got {call!r}"
    ((name, args),) = call.items()
    if isinstance(args, str):  # arguments as a JSON text, as OpenAI sends them
        try:
            args = json.loads(args)
        except ValueError:
            return f"arguments of {name!r} are not valid JSON"
    if not isinstance(args, Mapping):
        return f"arguments of {name!r} must be an object"
    return str(name), args if type(args) is dict else dict(args)


def _find_function(functions: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
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
        # Try the call in the same position first: outputs usually follow the
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
    match = [-1] * n_exp
    for j, i in enumerate(owner):
        if i >= 0:
            match[i] = j
    return match


def max_bipartite_matching(ok: list[list[bool]]) -> list[int]:
    """Maximum bipartite matching by augmenting paths (Kuhn 1955).

    ``ok[i][j]``: expected call i can pair with actual call j. Returns, for each
    expected call, the actual call it is matched to, or -1. Exact (not greedy):
    an earlier pairing is undone whenever that frees a path for a later one.
    """
    n_act = len(ok[0]) if ok else 0
    return _kuhn(len(ok), n_act, lambda i, j: ok[i][j])


class CompiledKey:
    """An answer key compiled against its function docs, to match many outputs.

    `ast_match` reads the key afresh on every call; a grader that checks many
    trials of one task can compile once (``compile_key``) and call `match`,
    which returns exactly what `ast_match` returns. Each parameter's acceptable
    values are turned into lookup sets (`_ast_spec.Spec`) when an output first
    gives that parameter, so the key and docs must not be changed while the
    compiled key is in use.
    """

    __slots__ = ("expected", "first", "first_name", "language", "name_equivalence")

    def __init__(
        self,
        functions: Sequence[Mapping[str, Any]],
        answer: Sequence[Mapping[str, Any]],
        *,
        language: Language = "python",
        name_equivalence: bool = False,
        _compiled: bool = True,
    ) -> None:
        self.expected = [
            _Expected(_find_function(functions, next(iter(a))), a, compiled=_compiled)
            for a in answer
        ]
        self.language: Language = language
        self.name_equivalence = name_equivalence
        # The one expected call of a Python-language key, for match's shortcut
        # (taken for the category names in _ONE_CALL).
        single = len(self.expected) == 1 and _compiled and language == "python"
        self.first = self.expected[0] if single else None
        self.first_name = self.expected[0].key_name if single else None

    def match(self, calls: Sequence[Mapping[str, Any]], category: str = "simple") -> AstResult:
        """`ast_match` against the compiled key (see there)."""
        first = self.first
        if first is not None and category in _ONE_CALL and len(calls) == 1:
            # The common case: one call of a dict named as expected (its name is
            # the key found), without _match and _split_call.
            call = calls[0]
            if type(call) is dict:
                args = call.get(self.first_name)
                if type(args) is dict and len(call) == 1:
                    return first.check_compiled(args)
        return self._match(calls, *_resolve_category(category, self.language))

    def _match(
        self, calls: Sequence[Mapping[str, Any]], category: str, language: Language
    ) -> AstResult:
        if category == "irrelevance":
            if calls:
                return False, "irrelevance:called", f"{len(calls)} call(s) where none was due"
            return True, None, ""
        if category == "relevance":
            if not calls:
                return False, "relevance:no_call", "no call where one was due"
            return True, None, ""
        expected = self.expected
        if len(calls) != len(expected):
            return False, "wrong_count", f"expected {len(expected)} call(s), got {len(calls)}"
        equiv = self.name_equivalence
        if category == "simple" or category == "multiple":
            if not expected:
                return True, None, ""
            return expected[0].check(_split_call(calls[0]), equiv, language)
        if category not in ("parallel", "parallel_multiple"):
            raise ValueError(f"unknown category {category!r}; expected one of {CATEGORIES}")
        if not expected:
            return True, None, ""
        parsed: list[tuple[str, dict[str, Any]] | str] = []
        for c in calls:
            p: tuple[str, dict[str, Any]] | str | None = None
            if type(c) is dict and len(c) == 1:  # the common shape, read inline
                for name in c:
                    args = c[name]
                    if type(args) is dict and type(name) is str:
                        p = (name, args)
            parsed.append(_split_call(c) if p is None else p)
        # Python-language calls against a compiled key are judged by
        # check_compiled directly when their name is the expected one (what
        # _Expected.check would do, one call less per pair).
        fast = expected[0].compiled and language == "python"
        # Outputs usually follow the key's order: try that pairing first. At
        # most one of these checks fails; its explanation is the one most often
        # reported, so it is built here and kept.
        i = 0
        for i, exp in enumerate(expected):
            p = parsed[i]
            if fast and type(p) is tuple and p[0] == exp.key_name:
                failed = exp.check_compiled(p[1])
            else:
                failed = exp.check(p, equiv, language)
            if not failed[0]:
                break
        else:
            return True, None, ""
        # Expected calls before i fit the calls in their own positions. Does
        # any other call fit expected call i? (A call of another name does not,
        # unless names are compared with . and _ equated.)
        first = i
        exp = expected[first]
        name = exp.key_name
        row: dict[int, bool] = {}
        fits = False
        for j, p in enumerate(parsed):
            if j == first:
                continue
            if type(p) is tuple and p[0] == name:
                r = (
                    exp.check_compiled(p[1], False)
                    if fast
                    else exp.check(p, equiv, language, False)
                )
                fits = r[0]
            elif type(p) is str or not equiv:
                fits = False
            else:
                fits = exp.check(p, equiv, language, explain=False)[0]
            row[j] = fits
            if fits:
                break
        if not fits:
            # None does: Kuhn's algorithm (below) would leave exactly call i
            # unmatched, so say so without running it.
            return self._explain(calls, parsed, first, language, None, failed)
        ok = {(k, k): True for k in range(first)}
        ok.update(((first, j), v) for j, v in row.items())
        ok[first, first] = False

        def fit(i: int, j: int) -> bool:
            v = ok.get((i, j))
            if v is None:
                v = ok[i, j] = expected[i].check(parsed[j], equiv, language, explain=False)[0]
            return v

        match = _kuhn(len(expected), len(parsed), fit, perfect=True)
        if -1 not in match:
            return True, None, ""
        i = match.index(-1)
        # Some call does not fit it: when call i failed, fewer than n calls were
        # taken, so a call it fitted would still have been free.
        return self._explain(
            calls, parsed, i, language, lambda j: not fit(i, j), failed if i == first else None
        )

    def _explain(
        self,
        calls: Sequence[Mapping[str, Any]],
        parsed: list[tuple[str, dict[str, Any]] | str],
        i: int,
        language: Language,
        misfit: Callable[[int], bool] | None,
        own: AstResult | None = None,
    ) -> AstResult:
        """Why expected call ``i`` has no call: explained with the most telling
        call that does not fit it (``misfit``; ``None``: no call fits), one of
        the expected name first.
        ``own`` is call ``i``'s own verdict against it, when already explained."""
        exp = self.expected[i]
        exp_name = exp.key_name
        # The first misfit of the expected name, else the first misfit at all.
        j = other = -1
        for k, (p, c) in enumerate(zip(parsed, calls, strict=True)):
            if misfit is not None and not misfit(k):
                continue
            if (p[0] if type(p) is tuple else _call_name(c)) == exp_name:
                j = k
                break
            if other < 0:
                other = k
        if j < 0:
            j = other
        if j == i and own is not None:
            _, err, why = own
        else:
            _, err, why = exp.check(parsed[j], self.name_equivalence, language)
        return False, err, f"no call matches expected call {i} ({exp_name}): {why}"


def compile_key(
    functions: Sequence[Mapping[str, Any]],
    answer: Sequence[Mapping[str, Any]],
    *,
    language: Language = "python",
    name_equivalence: bool = False,
) -> CompiledKey:
    """Compile ``answer`` against ``functions`` once, to match many outputs."""
    return CompiledKey(functions, answer, language=language, name_equivalence=name_equivalence)


def ast_match(
    functions: Sequence[Mapping[str, Any]],
    calls: Sequence[Mapping[str, Any]],
    answer: Sequence[Mapping[str, Any]],
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
    category, language = _resolve_category(category, language)
    if category == "irrelevance" or category == "relevance":
        return CompiledKey((), (), language=language).match(calls, category)
    if len(calls) != len(answer):
        return False, "wrong_count", f"expected {len(answer)} call(s), got {len(calls)}"
    if (category == "simple" or category == "multiple") and answer:
        # One expected call: check it directly, without a CompiledKey.
        entry = answer[0]
        call = calls[0]
        if type(entry) is dict and len(entry) == 1 and type(call) is dict and len(call) == 1:
            for name in entry:
                args = call.get(name)  # found: the call has the expected name
                if type(args) is dict:
                    params = _find_function(functions, name).get("parameters") or {}
                    required = params.get("required") or ()
                    return _check_direct(
                        entry[name],
                        params.get("properties") or {},
                        required if type(required) is list else tuple(required),
                        args,
                        language,
                    )
        exp = _Expected(_find_function(functions, next(iter(entry))), entry)
        return exp.check(_split_call(call), name_equivalence, language)
    key = CompiledKey(
        functions, answer, language=language, name_equivalence=name_equivalence, _compiled=False
    )
    return key._match(calls, category, language)


def _call_name(call: Any) -> str | None:
    if (type(call) is dict or isinstance(call, Mapping)) and len(call) == 1:
        return str(next(iter(call)))
    return None


_CATEGORY_ALIASES: dict[str, tuple[str, str | None]] = {
    "simple_java": ("simple", "java"),
    "simple_javascript": ("simple", "javascript"),
    "simple_python": ("simple", None),
}


def _resolve_category(category: str, language: Language) -> tuple[str, Language]:
    by_name = _RESOLVED.get(language)
    if by_name is None:
        by_name = {}
        if len(_RESOLVED) < 8:  # three languages in practice; bounded all the same
            _RESOLVED[language] = by_name
    hit = by_name.get(category)
    if hit is not None:
        return hit
    cat = category[5:] if category.startswith("live_") else category
    alias = _CATEGORY_ALIASES.get(cat)
    if alias is None:
        out: tuple[str, Language] = (cat, language)
    else:
        lang = alias[1]
        out = (alias[0], language if lang is None else lang)  # type: ignore[assignment]
    if len(by_name) < 1024:  # a few dozen names in practice; bounded all the same
        by_name[category] = out
    return out


# The category names that resolve to simple or multiple and leave the language
# as it is (so a Python-language key stays one): BFCL's with and without live_.
_ONE_CALL = frozenset(
    f"{live}{name}"
    for live in ("", "live_")
    for name in (
        "simple",
        "multiple",
        *(
            a
            for a, (c, lang) in _CATEGORY_ALIASES.items()
            if lang is None and c in ("simple", "multiple")
        ),
    )
)

# language -> category name -> (category, language), resolved once per name
_RESOLVED: dict[str, dict[str, tuple[str, Language]]] = {}


# The category names a Python-language key takes as parallel calls.
_PARALLEL = frozenset(
    f"{live}{name}" for live in ("", "live_") for name in ("parallel", "parallel_multiple")
)

# The Python `match`: all of matching without the native path, what the native
# path leaves with it (see below).
_python_match = CompiledKey.match

if _native_mod is not None:
    # CompiledKey.match decided natively where the sets decide (the one-call
    # shortcut, and parallel calls in order or with an expected call no call
    # fits); the Python `match` for the rest.
    _NATIVE_HELPERS = (
        canon,
        _structured_ok,
        _ast_spec._TRUE,
        _ast_spec._FALSE,
        _ast_spec._NULL,
        KIND,
        _ast_structured.Alternatives,
        _ast_structured.DictPattern,
        _ast_structured._DICT,
        _ast_structured._UNKNOWN,
    )
    _native_mod.configure(
        _ONE_CALL, _PARALLEL, _python_match, CompiledKey, _Expected, Spec, _NATIVE_HELPERS
    )
    CompiledKey.match = _native_mod.match  # type: ignore[method-assign]
