"""Suites: loading tasks from YAML or JSONL, with located errors and a content hash.

A suite spec is ``builtin:retail``, ``builtin:functions``, a YAML file, a JSONL
file, or a directory of them (read recursively, in sorted order). A YAML file
holds either a list of tasks or a mapping::

    name: my-suite            # optional: the suite's name in the store (else its path)
    defaults: {environment: retail, family: returns}   # merged into every task
    x-shared: &anchor {...}   # keys starting with x- are ignored (anchors live here)
    tasks: [...]

Errors name the file and line (``FILE:LINE: field: reason``): the YAML is
composed into a node tree whose marks locate the key a validation error points
at. A suite's version is the SHA-256 of its normalised content (every task as
canonical JSON, sorted by id, plus the text of each built-in environment's policy),
so it changes when something that could change a score changes (a world of the user's
own counts by its name: its code is not run to load a suite).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml
from pydantic import BaseModel, ValidationError

from agentgauge.canonical import canonical_json
from agentgauge.envs.builtin import (
    BUILTIN_ENVIRONMENTS,
    BuiltinEnvironment,
    TaskDefect,
    builtin_environment,
)
from agentgauge.errors import InputError, first_error, value_kind
from agentgauge.schema import StateAssertion, Task
from agentgauge.sources import read_jsonl
from agentgauge.spelling import lookalike_key, quoted, spelling_difference
from agentgauge.yamlio import line_of, load_yaml

__all__ = [
    "BUILTIN_SUITES",
    "Suite",
    "SuiteLike",
    "as_suite",
    "load_suite",
    "suite_version",
    "task_place",
]

#: ``builtin:NAME`` -> package directory holding its task files.
BUILTIN_SUITES = {"retail": "envs/retail/tasks", "functions": "envs/functions/tasks"}


@dataclass(frozen=True)
class Suite:
    """A named, versioned list of tasks."""

    name: str
    """What runs record as their suite: ``builtin:retail``, the ``name`` its file
    declares, or else the path it was loaded from (`load_suite`)."""
    version: str
    """SHA-256 (hex) of the normalised content of all tasks, held-out ones included."""
    tasks: list[Task]
    """The tasks to run (held-out tasks only when asked for)."""
    heldout_excluded: list[str] = field(default_factory=list)
    """Ids of held-out tasks left out of ``tasks``."""
    path: str | None = None
    """The spec or path it was loaded from (``None`` for a suite built in Python)."""
    places: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)
    """Where each task is written, ``id -> (file, line)`` (`load_suite`), so that a check
    made after loading (``agentgauge run``'s) names the file and line too."""
    field_lines: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per task id, the line of each field a check made after loading may name
    (``environment``, ``user_scenario`` and the keys under it, dotted:
    ``user_scenario.known.email``), where a YAML file writes it (in ``defaults`` when
    the task takes it from there); see `task_place`."""

    def task(self, task_id: str) -> Task:
        """The task with this id (`KeyError` when absent)."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)

    @property
    def families(self) -> list[str]:
        return sorted({t.family for t in self.tasks if t.family})


def task_place(
    suite: SuiteLike, task_id: str, field: str | None = None
) -> tuple[str | None, int | None]:
    """``(file, line)`` where ``suite`` writes task ``task_id``; ``(None, None)`` when it
    does not say (a suite built in Python). With ``field`` (dotted, as an error names
    it: ``user_scenario.replys``), the line of that field, or of the nearest field above
    it that the file writes, when the suite knows it (`Suite.field_lines`); else the
    task's line. An error about a task's ``environment`` pointed at the task's first
    line, some lines above the field."""
    if not isinstance(suite, Suite):
        return None, None
    file, line = suite.places.get(task_id, (None, None))
    lines = suite.field_lines.get(task_id, {})
    parts = field.split(".") if field else []
    while parts:
        found = lines.get(".".join(parts))
        if found is not None:
            return file, found
        parts.pop()
    return file, line


def load_suite(spec: str | Path, *, include_heldout: bool = False) -> Suite:
    """Load, validate and version a suite.

    Raises `InputError` (exit 2) for a missing path, bad YAML/JSON, an invalid
    task (with its file and line), a duplicate task id, or a suite with no task to
    run (none at all, or only held-out ones when they are left out). Each task's world
    fills in what it can compute (`agentgauge.envs.builtin`): a retail task
    that declares no final state or state assertions gets
    ``expectations.final_state`` by replaying ``reference_calls`` on a fresh
    environment.

    The suite is named by its spec for a built-in one, else by the ``name`` its YAML
    file declares (a directory: the one name its files declare, when they agree), else
    by its path, normalised (``./my-suite.yaml`` is ``my-suite.yaml``). A run records
    that name: the same file run from another directory, or spelt another way, is the
    same suite (docs/writing-tasks.md).
    """
    text = str(spec)
    declared: dict[str, str] = {}
    if text.startswith("builtin:"):
        key = text.removeprefix("builtin:")
        if key not in BUILTIN_SUITES:
            known = ", ".join(f"builtin:{k}" for k in BUILTIN_SUITES)
            raise InputError(f"unknown built-in suite {text!r} (known: {known})", field="suite")
        root = resources.files("agentgauge").joinpath(BUILTIN_SUITES[key])
        located, name = _load_path(Path(str(root)), declared), text
        # Built-in files are shown by package path, not by wherever pip put them.
        located = [(t, replace(p, file=f"{text}/{Path(str(p.file)).name}")) for t, p in located]
    else:
        path = Path(text)
        if not path.exists():
            raise InputError("no such file or directory", file=path)
        located = _load_path(path, declared)
        name = _suite_name(declared) or os.path.normpath(text)
    if not located:
        # A run of it "succeeded" with 0 trials (exit 0, an empty run in the store).
        raise InputError("holds no tasks: a suite needs at least one", file=text)
    tasks = _finish(located)
    version = suite_version(tasks)
    kept = [t for t in tasks if include_heldout or t.split != "heldout"]
    excluded = [t.id for t in tasks if t.split == "heldout" and not include_heldout]
    if not kept:
        which = "its one task is" if len(tasks) == 1 else f"all {len(tasks)} of its tasks are"
        raise InputError(
            f"{which} held out (split: heldout), so nothing would run: include held-out "
            "tasks (agentgauge run --include-heldout) or mark some split: dev",
            file=text,
        )
    places = {t.id: (str(p.file), p.line) for t, p in located}  # files: never None
    lines = {t.id: p.field_lines(_LATE_FIELDS) for t, p in located}
    return Suite(name=name, version=version, tasks=kept, heldout_excluded=excluded, path=text,
                 places=places, field_lines=lines)  # fmt: skip


@runtime_checkable
class SuiteLike(Protocol):
    """What the harness needs of a suite: a name, a version and tasks."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def tasks(self) -> Sequence[Task]: ...


def as_suite(obj: SuiteLike | str | Path | Sequence[Any]) -> SuiteLike:
    """The suite ``obj`` stands for: a `SuiteLike` as it is, a list of tasks (or
    task dicts) versioned by `suite_version` (the hash a loaded suite gets), or
    a spec or path, which `load_suite` reads."""
    if isinstance(obj, str | Path):
        return load_suite(obj)
    if isinstance(obj, SuiteLike):
        suite = obj
    else:
        # Checked as a file's tasks are (the world's checks, its derived expectations),
        # each error naming ``tasks[i]`` and the field: a Python list skipped them all.
        located = [(_task_of(t, i), _Place(None, None, index=i)) for i, t in enumerate(obj)]
        tasks = _finish(located)
        suite = Suite(name="python", version=suite_version(tasks), tasks=tasks)
    if not suite.tasks:
        # As `load_suite` refuses an empty file: a run of it stored an empty run.
        raise InputError("holds no tasks: a suite needs at least one", field="suite")
    return suite


def _task_of(obj: Any, i: int) -> Task:
    """Task ``i`` of a list given in Python (a `Task` or a dict), checked as the loader
    checks a file's (`_validate`), or `InputError` naming its first defect as the loader
    names one in a file, with ``tasks[i]`` for the file and line
    (``tasks[0].instrction: task 'a': unknown key ...``): pydantic's own error spans
    lines, one per defect."""
    task_id = obj.id if isinstance(obj, Task) else obj.get("id") if isinstance(obj, dict) else None
    prefix = f"task {task_id!r}: " if isinstance(task_id, str) else f"task {i}: "
    place = _Place(None, None, index=i)
    if isinstance(obj, Task):
        return _checked(obj, place, prefix)
    return _validate(obj, place, prefix)


def suite_version(tasks: Sequence[Task]) -> str:
    """SHA-256 of the tasks' canonical JSON (sorted by id) and their built-in
    environments' policies. A world of the user's own counts by its name alone: building
    it to read its policy would run the user's code when a suite loads
    (docs/writing-tasks.md, "Versions")."""
    digest = hashlib.sha256()
    for task in sorted(tasks, key=lambda t: t.id):
        digest.update(canonical_json(task.model_dump(mode="json")).encode())
        digest.update(b"\n")
    for env in sorted({t.environment for t in tasks if t.environment}):
        digest.update(f"env:{env}\n".encode())
        world = builtin_environment(env)
        digest.update((world.fingerprint() if world is not None else "").encode())
    return digest.hexdigest()


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Place:
    """Where a task is written, so that an error found in it names the line of the key
    it is about: in the task, or in the file's ``defaults`` when the key came from there
    (a typo in ``defaults`` used to be reported at the first task's line)."""

    file: str | None
    """``None`` for a task given in Python (a list of tasks), which ``index`` names."""
    line: int | None
    """The task's first line (a JSONL task's line)."""
    node: yaml.Node | None = None
    """The task's YAML mapping; ``None`` for JSONL."""
    defaults: yaml.Node | None = None
    """The file's ``defaults`` mapping."""
    inherited: frozenset[str] = frozenset()
    """Top-level keys the task takes from ``defaults`` (it does not set them itself)."""
    index: int | None = None
    """The task's index in a list given in Python (``tasks[0]``)."""

    @property
    def where(self) -> str:
        """The place in words: ``FILE:LINE``, ``FILE`` or ``tasks[0]``."""
        if self.file is None:
            return f"tasks[{self.index}]"
        return f"{self.file}:{self.line}" if self.line else self.file

    def field_lines(self, keys: Sequence[str]) -> dict[str, int]:
        """The line of each field at or below the top-level ``keys``, dotted
        (``user_scenario.known.email``), where the YAML writes it (up to 1,000 fields a
        task)."""
        out: dict[str, int] = {}
        for key in keys:
            node = self.defaults if key in self.inherited else self.node
            _node_lines(_child(node, key), [key], out, 0)
        return out

    def error(self, reason: str, loc: Sequence[str | int], prefix: str = "") -> InputError:
        dotted = ".".join(str(part) for part in loc) or None
        if self.file is None:  # a task given in Python: no file, no line
            field = f"tasks[{self.index}]" + (f".{dotted}" if dotted else "")
            return InputError(prefix + reason, field=field)
        if loc and str(loc[0]) in self.inherited:
            return InputError(prefix + reason, file=self.file, field=f"defaults.{dotted}",
                              line=line_of(self.defaults, loc))  # fmt: skip
        line = line_of(self.node, loc) if self.node is not None else self.line
        return InputError(prefix + reason, file=self.file, line=line, field=dotted)


Located = list[tuple[Task, _Place]]


def _suite_name(declared: Mapping[str, str]) -> str | None:
    """The name the suite's files declare; ``None`` when none does, or when the files
    of a directory declare different ones (each names a part: the directory's path
    names the whole)."""
    names = set(declared.values())
    return names.pop() if len(names) == 1 else None


def _load_path(path: Path, declared: dict[str, str]) -> Located:
    """The tasks under ``path``; each YAML file's ``name`` goes into ``declared``."""
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".jsonl") and p.is_file()
        )
        if not files:
            raise InputError("directory holds no .yaml, .yml or .jsonl task files", file=path)
        out: Located = []
        for f in files:
            out.extend(_load_file(f, declared))
        return out
    return _load_file(path, declared)


def _load_file(path: Path, declared: dict[str, str]) -> Located:
    if path.suffix == ".jsonl":
        located: Located = []
        for line, obj in read_jsonl(path):
            place = _Place(str(path), line)
            located.append((_validate(obj, place), place))
        return located
    if path.suffix in (".yaml", ".yml"):
        return list(_load_yaml(path, declared))
    raise InputError("expected a .yaml, .yml or .jsonl file", file=path)


def _load_yaml(path: Path, declared: dict[str, str]) -> Iterator[tuple[Task, _Place]]:
    # One parse gives both the node tree (for line numbers) and the data.
    data, root = load_yaml(path)
    if data is None:
        return
    defaults: dict[str, Any] = {}
    defaults_node: yaml.Node | None = None
    if isinstance(data, dict):
        # ``x-`` keys hold YAML anchors shared by tasks (as in docker-compose files).
        unknown = {k for k in data if not str(k).startswith("x-")} - {"name", "defaults", "tasks"}
        if unknown:
            # By text: YAML keys may be numbers too (`1.5:`), which no str sorts beside.
            key = min(unknown, key=str)
            raise InputError(
                "unknown key (a suite file has name, defaults and tasks)",
                file=path,
                line=line_of(root, [key]),
                field=str(key),
            )
        name = data.get("name")
        if name is not None:
            if not isinstance(name, str) or not name.strip() or not name.isprintable():
                raise InputError(
                    "expected the suite's name: one line of text (runs record it as their suite)",
                    file=path,
                    line=line_of(root, ["name"]),
                    field="name",
                )
            if name.strip().startswith("builtin:"):
                # Reports would show it as the built-in suite of that name.
                raise InputError(
                    f"{name.strip()!r} names a built-in suite; give this suite a name of its "
                    "own (or leave name out: the file's path names it)",
                    file=path,
                    line=line_of(root, ["name"]),
                    field="name",
                )
            declared[str(path)] = name.strip()
        # Only an absent or empty value (``defaults:``) stands for none: ``defaults: 0``
        # (or false, "", []) was read as no defaults without a word.
        defaults = {} if data.get("defaults") is None else data["defaults"]
        if not isinstance(defaults, dict):
            raise InputError("expected a mapping", file=path, field="defaults",
                             line=line_of(root, ["defaults"]))  # fmt: skip
        defaults_node = _child(root, "defaults")
        _check_defaults(defaults, _Place(str(path), None, defaults=defaults_node,
                                         inherited=frozenset(map(str, defaults))))  # fmt: skip
        root = _child(root, "tasks")
        # As for defaults: ``tasks: 0`` said "holds no tasks", without its line.
        data = [] if data.get("tasks") is None else data["tasks"]
    if not isinstance(data, list):
        raise InputError("expected a list of tasks", file=path, line=line_of(root, ()),
                         field="tasks")  # fmt: skip
    for i, obj in enumerate(data):
        node = root.value[i] if isinstance(root, yaml.SequenceNode) else None
        if not isinstance(obj, dict):
            raise InputError(f"task {i}: expected a mapping", file=path, line=line_of(node, ()))
        inherited = frozenset(str(k) for k in defaults if k not in obj)
        place = _Place(str(path), line_of(node, ()), node, defaults_node, inherited)
        task_id = obj.get("id")
        prefix = f"task {task_id!r}: " if isinstance(task_id, str) else f"task {i}: "
        yield _validate({**defaults, **obj}, place, prefix), place


#: Fields a run checks once the suite is loaded (an own world's import and its
#: ``user_scenario`` model), whose lines `Suite.field_lines` keeps.
_LATE_FIELDS = ("environment", "user_scenario")


def _node_lines(node: yaml.Node | None, path: list[str], out: dict[str, int], depth: int) -> None:
    """Record in ``out`` the line of ``node`` (at dotted ``path``) and of every node
    below it, a mapping's entries at their key's line."""
    if node is None or len(out) >= 1000 or depth > 50:
        return
    out.setdefault(".".join(path), node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out.setdefault(".".join([*path, str(key.value)]), key.start_mark.line + 1)
                _node_lines(value, [*path, str(key.value)], out, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _node_lines(item, [*path, str(i)], out, depth + 1)


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                child: yaml.Node = v
                return child
    return None


def _validate(obj: dict[str, Any], place: _Place, prefix: str = "") -> Task:
    """The task ``obj`` stands for, checked as far as it can be before its world fills
    in what it computes (`_finish`)."""
    try:
        task = Task.model_validate(obj)
    except ValidationError as exc:
        err = _pick(exc)
        reason = _describe(exc, err)[1]
        raise place.error(reason, tuple(err.get("loc", ())), prefix) from None
    return _checked(task, place, prefix)


def _checked(task: Task, place: _Place, prefix: str = "") -> Task:
    """``task`` once it passes the checks made before its world fills it in, or the
    `InputError` of the first it fails, at ``place``."""
    defect = (
        _label_defect(task)
        or _assertion_defect(task)
        or _function_defect(task)
        or _world_defect(task)
        or _callable_defect(task)
        or _expectation_defect(task)
    )
    if defect is not None:
        loc, reason = defect
        raise place.error(reason, loc, prefix)
    return task


def _label_defect(task: Task) -> tuple[tuple[str | int, ...], str] | None:
    """A blank ``id``, ``family`` or ``capability``, as ``(location, reason)``: tasks
    with ``family: ""`` formed one cluster named "" in the standard errors, while
    `Suite.families` left it out; an id of spaces alone was taken (an empty one is
    refused) and named a task no one could tell apart in a report. Checked on the
    suite as written (a run's stored tasks stay readable)."""
    if not task.id.strip():
        return ("id",), f"blank ({task.id!r}): give the task an id that is not only spaces"
    if task.id != task.id.strip():
        return ("id",), (
            f"{task.id!r} begins or ends with whitespace, which no table shows; "
            "write the id without it"
        )
    for key in ("family", "capability"):
        value = getattr(task, key)
        if value is not None and not value.strip():
            return (key,), (
                f"blank ({value!r}): name it, or leave the key out (tasks with the same "
                f"{key} are grouped in reports)"
            )
    return None


def _assertion_defect(task: Task) -> tuple[tuple[str | int, ...], str] | None:
    """A state assertion that asserts nothing, as ``(location, reason)``: one with a
    ``path`` alone read as ``equals: null`` and failed every trial whose state has a
    value there ("counter: expected None, got 3"). ``equals: null`` written out still
    asserts null. Checked on the suite as written, since a stored task keeps no trace
    of whether a null was written (a run's stored tasks stay readable)."""
    exp = task.expectations
    lists: list[tuple[tuple[str | int, ...], list[StateAssertion]]] = [
        (("expectations", "state_assertions"), exp.state_assertions)
    ]
    lists += [
        (("expectations", "checkpoints", i, "state_assertions"), c.state_assertions)
        for i, c in enumerate(exp.checkpoints)
    ]
    for loc, assertions in lists:
        for j, a in enumerate(assertions):
            if "equals" not in a.model_fields_set and a.exists is None:
                return (*loc, j), (
                    f"the assertion on {a.path!r} says neither equals: (a value, or null) "
                    "nor exists: true/false, so it asserts nothing"
                )
    return None


def _function_defect(task: Task) -> tuple[tuple[str | int, ...], str] | None:
    """A function doc or answer key entry not in BFCL's form, as ``(location, reason)``.

    The task model leaves both open (``list[dict]``), and a malformed one loaded: an
    answer key value ``"Paris"`` for ``["Paris"]`` was played by the reference agent as
    ``"P"`` and read by the grader as ``["Paris"]``, an entry naming two functions
    stopped the agent, and ``parameters: "city: string"`` or ``required: [cty]`` (no
    such property) failed every trial. Every BFCL v4 entry has the form checked here:
    one function name per answer key entry, a list of acceptable values per parameter,
    and an object schema whose ``required`` names its properties."""
    exp = task.expectations
    for i, doc in enumerate(exp.functions):
        loc: tuple[str | int, ...] = ("expectations", "functions", i)
        name = doc.get("name")
        if not isinstance(name, str) or not name:
            return (*loc, "name"), "expected the function's name (text)"
        if "parameters" not in doc:
            continue  # a function without parameters
        params = doc["parameters"]
        loc = (*loc, "parameters")
        if not isinstance(params, Mapping):
            return loc, (
                f"{name}: expected a JSON schema object, {{type: object, properties: "
                f"{{PARAMETER: {{type: ...}}}}, required: [...]}}, got {value_kind(params)}"
            )
        kind = params.get("type", "object")
        if kind not in ("object", "dict"):  # "dict" is BFCL's name for it
            return (*loc, "type"), (
                f"{name}: expected type: object (a function's parameters are an object "
                f"schema), got {kind!r}"
            )
        props = params.get("properties", {})
        if not isinstance(props, Mapping):
            return (*loc, "properties"), (
                f"{name}: expected a mapping of parameter to its schema, got {value_kind(props)}"
            )
        for prop, schema in props.items():
            if not isinstance(schema, Mapping):
                return (*loc, "properties", prop), (
                    f"{name}: expected the parameter's JSON schema ({{type: string}}, say), "
                    f"got {value_kind(schema)}"
                )
            found = _type_name_defect(schema, (*loc, "properties", prop), f"{name}.{prop}")
            if found is not None:
                return found
        required = params.get("required", [])
        if not isinstance(required, list):
            return (*loc, "required"), (
                f"{name}: expected a list of parameter names, got {value_kind(required)}"
            )
        names = sorted(str(p) for p in props)
        for j, req in enumerate(required):
            if req not in props:
                return (*loc, "required", j), (
                    f"{name} requires {req!r}, which is none of its properties"
                    f"{_nearest(str(req), names)} (its properties: {', '.join(names) or 'none'})"
                )
    for i, entry in enumerate(exp.answer_key or []):
        loc = ("expectations", "answer_key", i)
        if len(entry) != 1:
            named = (
                f"{len(entry)} functions ({', '.join(map(str, entry))}); parallel calls are "
                "entries of their own"
                if entry
                else "none"
            )
            return loc, (
                f"expected one call, {{FUNCTION: {{PARAMETER: [acceptable values]}}}}, got {named}"
            )
        ((name, args),) = entry.items()
        if not isinstance(args, Mapping):
            return (*loc, name), (
                f"expected the call's parameters, {{PARAMETER: [acceptable values]}}, "
                f"got {value_kind(args)}"
            )
        for param, values in args.items():
            if not isinstance(values, list):
                alone = json.dumps([values], ensure_ascii=False, default=str)
                alone = alone if len(alone) <= 60 else "[VALUE]"
                return (*loc, name, param), (
                    f"expected a list of acceptable values ({alone} for this one alone; "
                    f'"" in the list lets the parameter be left out), got {value_kind(values)}'
                )
    return _category_defect(exp.call_category, exp.answer_key)


def _type_name_defect(
    schema: Mapping[str, Any], loc: tuple[str | int, ...], what: str, depth: int = 0
) -> tuple[tuple[str | int, ...], str] | None:
    """A ``type`` in a parameter's schema (or in the schemas of its ``items`` and
    ``properties``, as deep as they go) that no grader knows, as ``(location, reason)``:
    ``type: strng`` read as "any value", so the AST grader passed a number for it, and
    the agent was shown a schema its API may refuse. The names known are JSON schema's,
    BFCL's (``dict``, ``float``, ``tuple``, ``any``) and the Java and JavaScript ones
    of BFCL's data (`agentgauge.graders.ast.TYPE_NAMES`); ``""`` declares no type."""
    from agentgauge.graders.ast import TYPE_NAMES

    if depth > 100:  # a YAML alias may nest a schema in itself
        return None
    kind = schema.get("type")
    names = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for j, t in enumerate(names):
        at = (*loc, "type", j) if isinstance(kind, list) else (*loc, "type")
        if not isinstance(t, str):
            return at, f"{what}: expected a type name (string, integer, ...), got {value_kind(t)}"
        if t not in TYPE_NAMES:
            known = sorted(n for n in TYPE_NAMES if n)
            return at, (
                f"{what}: unknown type {t!r}{_nearest(t, known)} (JSON schema's: string, "
                "integer, number, boolean, array, object, null; BFCL's: dict, float, tuple, "
                'any and its Java and JavaScript names; "" for any value)'
            )
    items = schema.get("items")
    if isinstance(items, Mapping):
        found = _type_name_defect(items, (*loc, "items"), f"{what}[]", depth + 1)
        if found is not None:
            return found
    props = schema.get("properties")
    for prop, sub in props.items() if isinstance(props, Mapping) else ():
        if isinstance(sub, Mapping):
            found = _type_name_defect(sub, (*loc, "properties", prop), f"{what}.{prop}", depth + 1)
            if found is not None:
                return found
    return None


#: What each call category expects of the answer key's length, and the words for it.
_CATEGORY_CALLS = {
    "simple": ((1, 1), "one call"),
    "multiple": ((1, 1), "one call (of one of several functions)"),
    "parallel": ((2, None), "two calls or more"),
    "parallel_multiple": ((2, None), "two calls or more"),
    "irrelevance": ((0, 0), "no call"),
}


def _category_defect(
    category: str | None, answer_key: list[dict[str, Any]] | None
) -> tuple[tuple[str | int, ...], str] | None:
    """A ``call_category`` the answer key contradicts, as ``(location, reason)``. The
    grader matches by the category: ``simple`` beside a key of two entries checked the
    first alone, and ``irrelevance`` beside a key passed whoever called nothing."""
    if category is None or answer_key is None or category not in _CATEGORY_CALLS:
        return None
    (low, high), expects = _CATEGORY_CALLS[category]
    n = len(answer_key)
    if n >= low and (high is None or n <= high):
        return None
    fits = "irrelevance" if n == 0 else "simple or multiple" if n == 1 else "parallel"
    fits += " or parallel_multiple" if n > 1 else ""
    entries = f"{n} entr{'y' if n == 1 else 'ies'}"
    return ("expectations", "call_category"), (
        f"{category} expects {expects}, but answer_key has {entries} (call_category: "
        f"{fits} fits it; or leave call_category out to have it read from the key)"
    )


def _check_defaults(defaults: dict[str, Any], place: _Place) -> None:
    """Validate ``defaults`` on their own, as a task would take them: a typo there
    (``famly``, ``expectations.anwser``) is reported at its line, even when every task
    sets the key itself and so never takes the misspelt default."""
    probe = {"id": "defaults", "instruction": "", **defaults}
    try:
        task = Task.model_validate(probe)
    except ValidationError as exc:
        err = _pick(exc)
        raise place.error(_describe(exc, err)[1], tuple(err.get("loc", ()))) from None
    # What the world checks too (``environment: retial``, ``user_scenario: {knwon: ...}``,
    # ``initial_state: {ordrs: ...}``): these went unreported when every task set its own.
    defect = _label_defect(task) or _world_defect(task, alone=True)
    if defect is not None:
        raise place.error(defect[1], defect[0])


def _expectation_defect(task: Task) -> tuple[tuple[str | int, ...], str] | None:
    """An expectation no grader can apply, as ``(location, reason)``: a regular
    expression that does not compile, or milestones whose ``after`` names an unknown
    milestone, repeats an id or loops. Caught when the suite loads, rather than as the
    same unknown grade in every trial."""
    exp = task.expectations
    if exp.answer is not None and exp.answer.regex is not None:
        try:
            re.compile(exp.answer.regex)
        except re.error as exc:
            return ("expectations", "answer", "regex"), f"not a valid regular expression: {exc}"
    ids: dict[str, int] = {}
    for i, m in enumerate(exp.milestones):
        if m.id in ids:
            return ("expectations", "milestones", i, "id"), (
                f"milestone id {m.id!r} is used twice (first at milestones[{ids[m.id]}])"
            )
        ids[m.id] = i
    for i, m in enumerate(exp.milestones):
        for j, dep in enumerate(m.after):
            if dep not in ids:
                return ("expectations", "milestones", i, "after", j), (
                    f"milestone {m.id!r} comes after {dep!r}, which is no milestone of the task"
                )
    after = {m.id: m.after for m in exp.milestones}
    for m in exp.milestones:  # a cycle: m reachable from itself through 'after'
        seen, stack = set(), list(after[m.id])
        while stack:
            dep = stack.pop()
            if dep == m.id:
                return ("expectations", "milestones", ids[m.id], "after"), (
                    f"milestone {m.id!r} comes, through 'after', after itself"
                )
            if dep not in seen:
                seen.add(dep)
                stack.extend(after[dep])
    return None


def _callable_defect(task: Task) -> tuple[tuple[str | int, ...], str] | None:
    """An executable function whose module cannot be found, as ``(location, reason)``.

    The executable grader runs the callables in a worker process; a module that is
    not there would make every trial's grade unknown, so it fails here, when the suite
    loads. Finding the module runs no code of it (its parent packages are imported)."""
    spec = task.expectations.executable
    if spec is None:
        return None
    for name, ref in spec.functions.items():
        module = ref.split(":", 1)[0]
        if not _module_found(module):
            return ("expectations", "executable", "functions", name), (
                f"cannot find module {module!r} for {ref!r} (installed? on PYTHONPATH? "
                "in the current folder?)"
            )
    return None


def _module_found(module: str) -> bool:
    """Whether ``module`` can be imported, running none of its code (its parent packages
    are imported). Looked for where a user's code is looked for when it runs: the
    import path and then the current folder (`agentgauge.agents.resolve`; a module
    next to the suite was refused, though the grader would have run it)."""
    from agentgauge.graders.exec_runner import import_path

    saved = sys.path[:]
    sys.path[:] = import_path()
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
    finally:
        sys.path[:] = saved


def _world_defect(task: Task, *, alone: bool = False) -> tuple[tuple[str | int, ...], str] | None:
    """What the task's world rejects, as ``(location, reason)``, or ``None``.

    The task model leaves ``environment``, ``user_scenario`` and ``initial_state``
    open, since each world defines them; here the world checks them, so a typo fails
    when the suite loads rather than as an infra error in every trial (or, worse,
    not at all: an unknown ``user_scenario`` key used to be ignored).
    A ``package.module:factory`` environment is the user's own: its module must be
    found (running none of its code), and the rest is checked when the run loads it.

    ``alone``: ``task`` is a file's ``defaults`` on their own, whose tools may be the
    tasks' (a function-calling task's ``functions``): tools are checked only when the
    world offers some to the defaults alone."""
    name = task.environment
    if name is not None and ":" not in name and name not in BUILTIN_ENVIRONMENTS:
        known = ", ".join(BUILTIN_ENVIRONMENTS)
        return ("environment",), (
            f"unknown environment {name!r} (built-in: {known}; "
            "or package.module:factory for your own)"
        )
    if name is not None and ":" in name:
        module = name.split(":", 1)[0]
        if not _module_found(module):
            # The run said so too, without the file and line of the task.
            return ("environment",), (
                f"cannot find module {module!r} for environment {name!r} (installed? on "
                f"PYTHONPATH? in the current folder {Path.cwd()}?)"
            )
    world = builtin_environment(task)
    if world is None:
        return None
    defect = scenario_defect(world.scenario, task.user_scenario, f"a {world.name}")
    if defect is not None:
        return defect
    try:
        world.check_state(task)
    except TaskDefect as exc:
        return exc.loc, exc.reason
    except ValueError as exc:
        return ("initial_state",), str(exc)
    found = _state_path_defect(task, world)
    if found is None and not (alone and world.tools is not None and not world.tools(task)):
        found = _tool_defect(task, world)
    return found


def _state_path_defect(
    task: Task, world: BuiltinEnvironment
) -> tuple[tuple[str | int, ...], str] | None:
    """A state assertion path, or a table of ``final_state`` or a checkpoint's ``state``,
    that the world's state never has, as ``(location, reason)``: ``orderz.W1001.status``
    failed every trial
    with ``equals``, and with ``exists: false`` passed every one, the agent's included.
    Checked against the world's `BuiltinEnvironment.state_shape`, as far as it says."""
    if world.state_shape is None:
        return None
    exp = task.expectations
    where: tuple[str | int, ...] = ("expectations",)
    paths = [((*where, "state_assertions", j, "path"), a.path)
             for j, a in enumerate(exp.state_assertions)]  # fmt: skip
    # The final state's tables as a checkpoint's: `orderz:` failed every trial.
    paths += [((*where, "final_state", table), table) for table in exp.final_state or {}]
    for i, cp in enumerate(exp.checkpoints):
        at = (*where, "checkpoints", i)
        paths += [((*at, "state_assertions", j, "path"), a.path)
                  for j, a in enumerate(cp.state_assertions)]  # fmt: skip
        paths += [((*at, "state", table), table) for table in cp.state or {}]
    for loc, path in paths:
        shape: Mapping[str, Any] | None = world.state_shape
        parts = path.split(".") if path else []
        for depth, part in enumerate(parts):
            if shape is None:
                break
            if "*" in shape:
                shape = shape["*"]
                continue
            if part not in shape:
                known = sorted(shape)
                within = ".".join(parts[:depth]) or f"the {world.name} world's state"
                return loc, (
                    f"{within} has no {part!r}{_nearest(part, known)} (it has: "
                    f"{', '.join(known)}), so no trial's state has this path"
                )
            shape = shape[part]
    return None


def _tool_defect(task: Task, world: BuiltinEnvironment) -> tuple[tuple[str | int, ...], str] | None:
    """A tool, or an argument of one, that an expectation names but the world does not
    offer, as ``(location, reason)``: a minefield on ``cancel_pendng_order`` (or on an
    argument ``ordr_id``) can never fire, so safety read 100%. A retail reference call
    to an unknown tool was refused by its replay; it is now refused here, at its line,
    as are milestones, checkpoint calls, answer key entries and executable tools and
    functions."""
    if world.tools is None:
        return None
    docs = {d.get("name"): d for d in world.tools(task) if isinstance(d, Mapping)}
    exp = task.expectations
    named: list[tuple[tuple[str | int, ...], str | None, Mapping[str, Any] | None]] = []
    named += [(("reference_calls", i, "name"), c.name, c.arguments)
              for i, c in enumerate(exp.reference_calls)]  # fmt: skip
    named += [(("checkpoints", i, "calls", j, "name"), c.name, c.arguments)
              for i, cp in enumerate(exp.checkpoints) for j, c in enumerate(cp.calls)]  # fmt: skip
    named += [
        (("milestones", i, "tool"), m.tool, m.arguments) for i, m in enumerate(exp.milestones)
    ]
    named += [
        (("minefields", i, "tool"), m.tool, m.arguments) for i, m in enumerate(exp.minefields)
    ]
    # An answer key's arguments are BFCL's, which may list one the schema lacks and
    # still pass by omitting it (docs/graders.md): only its function names are checked.
    named += [(("answer_key", i), str(next(iter(e), "")), None)
              for i, e in enumerate(exp.answer_key or []) if e]  # fmt: skip
    if exp.executable is not None:
        named += [(("executable", "tools", i), t, None) for i, t in enumerate(exp.executable.tools)]
    where = (
        f"the {world.name} world's tools" if world.name != "functions" else "the task's functions"
    )
    for loc, name, arguments in named:
        if name is None:
            continue
        if name not in docs:
            known = sorted(str(n) for n in docs)
            return ("expectations", *loc), (
                f"unknown tool {name!r}{_nearest(name, known)} ({where}: "
                f"{', '.join(known) or 'none'})"
            )
        params = docs[name].get("parameters")
        props = params.get("properties") if isinstance(params, Mapping) else None
        if not isinstance(props, Mapping) or arguments is None:
            continue
        for arg in arguments:
            if arg not in props:
                names = sorted(str(p) for p in props)
                return ("expectations", *loc[:-1], "arguments", arg), (
                    f"{name} has no argument {arg!r}{_nearest(arg, names)} (its arguments: "
                    f"{', '.join(names) or 'none'})"
                )
    return _implementation_defect(task, sorted(str(n) for n in docs), where)


def _implementation_defect(
    task: Task, offered: Sequence[str], where: str
) -> tuple[tuple[str | int, ...], str] | None:
    """An ``executable.functions`` that leaves a due call without its implementation,
    as ``(location, reason)``. With any function there, the grader fails every call
    to a function it lacks as the agent's (``exec:wrong_func_name``): a misspelt name
    (``convert_lenght``) failed every trial. A name the task does not offer is
    otherwise allowed (one mapping may serve several tasks through a YAML anchor)."""
    spec = task.expectations.executable
    if spec is None or not spec.functions:
        return None
    have = set(spec.functions) | set(spec.tools)
    missing = [f for f in offered if f not in have]
    strays = [f for f in spec.functions if f not in offered]
    for name in strays:  # a name written for a function that lacks one: a typo
        near = difflib.get_close_matches(name, missing, n=1)
        if near:
            return ("expectations", "executable", "functions", name), (
                f"{name!r} is none of {where}; did you mean {near[0]!r}? ({where}: "
                f"{', '.join(offered) or 'none'})"
            )
    due = [str(next(iter(e))) for e in task.expectations.answer_key or [] if e]
    for name in dict.fromkeys(due):
        if name not in have:
            return ("expectations", "executable", "functions"), (
                f"no implementation of {name!r}, which the answer key calls: the executable "
                f"grader would fail that call as the agent's (exec:wrong_func_name); add "
                f"{name}: package.module:function"
            )
    return None


def _nearest(word: str, known: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known``, or nothing."""
    near = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


def scenario_defect(
    scenario: type[BaseModel], user_scenario: Mapping[str, Any], world: str
) -> tuple[tuple[str | int, ...], str] | None:
    """What ``scenario`` (a world's model of its ``user_scenario``) rejects in
    ``user_scenario``, as ``(location, reason)``; ``world`` names it in the reason
    (``a retail``)."""
    try:
        scenario.model_validate(user_scenario)
    except ValidationError as exc:
        err = _pick(exc)
        where = tuple(err.get("loc", ()))
        if err.get("type") == "extra_forbidden":
            fields = ", ".join(scenario.model_fields) or "none"
            reason = f"unknown key in {world} user_scenario (its fields: {fields})"
        else:
            reason = first_error(exc, metadata_hint=False)[1]
        return ("user_scenario", *where), reason
    return None


def _pick(exc: ValidationError) -> Any:
    """The error to report: an unknown key first, since a typo also causes a 'missing'."""
    errors = exc.errors()
    return next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])


def _describe(exc: ValidationError, err: Any) -> tuple[str | None, str]:
    if err.get("type") != "extra_forbidden":
        return first_error(exc)
    loc = [str(part) for part in err.get("loc", ())]
    return ".".join(loc) or None, "unknown key (put free-form data under 'metadata')"


# --------------------------------------------------------------------------- finishing


def _finish(located: Located) -> list[Task]:
    seen: dict[str, tuple[str, str]] = {}
    tasks: list[Task] = []
    for task, place in located:
        # Ids that print the same (é as one code point or as e and a combining accent,
        # a zero-width space inside) look the same in every table: one id, written twice.
        key = lookalike_key(task.id)
        if key in seen:
            first_id, where = seen[key]
            first_shown, shown = quoted((first_id, task.id))
            how = (
                ""
                if first_id == task.id
                else f" ({first_shown} and {shown} differ only in "
                f"{spelling_difference(first_id, task.id)})"
            )
            raise place.error(
                f"duplicate task id {task.id!r}{how} (first defined at {where})", ("id",)
            )
        seen[key] = (task.id, place.where)
        prefix = f"task {task.id!r}: "
        try:
            task = _derive(task)
        except TaskDefect as exc:
            raise place.error(exc.reason, exc.loc, prefix) from None
        except ValueError as exc:
            raise place.error(str(exc), (), prefix) from None
        defect = _grader_defect(task)
        if defect is not None:
            raise place.error(defect[1], defect[0], prefix)
        tasks.append(task)
    return tasks


def _grader_defect(task: Task) -> tuple[tuple[str | int, ...], str] | None:
    """A name in ``required`` or ``partial_credit`` that can never grade the task (a
    typo, or a grader its expectations do not enable), as ``(location, reason)``.
    Checked once the world has filled the task in: a retail task's ``state`` grader is
    enabled by the final state derived from its reference calls."""
    # The graders' registry decides what a name means; imported here, as the graders
    # are needed only once a suite's tasks are read.
    from agentgauge.graders.base import grader_name_defect

    exp = task.expectations
    for key, names in (("required", exp.required or []), ("partial_credit", exp.partial_credit)):
        found = grader_name_defect(task, names)
        if found is not None:
            return ("expectations", key, found[0]), found[1]
    return None


def _derive(task: Task) -> Task:
    """Fill in what the task's world can compute (`BuiltinEnvironment.complete`)."""
    world = builtin_environment(task)
    return task if world is None else world.complete(task)
