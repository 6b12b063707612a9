"""YAML files validated into pydantic models, with errors that name the line.

`load_yaml` is the one way agentgauge reads YAML (suites, gates, prices). It
parses once into a node tree, which keeps each node's position; after a
pydantic error we walk the tree along the error's location to the offending
node and report its line, so ``gates.yaml:12: gates.2.min: Input should be a
valid number`` points a user at the right place.

Aliases are allowed, within a budget. Suites use anchors to share function
docs between tasks (``x-`` keys, as in the built-in function-calling suite),
but the loader builds an alias as a shared reference, and everything after it
(validation, canonical JSON, the store) walks the expanded tree: a suite of
580 bytes with 8 levels of aliases ("billion laughs") took 28 s, 1.4 GB of
memory and wrote a 269 MB store before this check (nine aliases per level
expand a 500-byte file to about 900 million nodes). So
the node tree is measured before any data is built: aliases may add at most
`ALIAS_BUDGET` nodes and `ALIAS_TEXT_BUDGET` characters of scalars (one long
string referred to many times is a bomb of few nodes: a 240 KB suite naming a
200,000-character string 2,500 times took 19 s and 1 GB, and 10,000 times ran out of
memory), and an alias inside the node it names (``a: &a [*a]``,
an infinite structure) is refused, as is nesting deeper than
`agentgauge.textio.MAX_DEPTH` (as for JSON).

A key written twice in one mapping is refused at its second line, naming its path
(``gates.0.metric``), in every file (suites, gates, prices): YAML loaders keep the
last one silently, so a gates file with two ``gates:`` lists checked only the second.
Keys are compared as loaded, as the mapping would hold them: ``1`` and ``"1"`` are two
keys, ``1`` and ``0x1`` one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agentgauge.errors import InputError, first_error
from agentgauge.textio import MAX_DEPTH, read_text

__all__ = ["ALIAS_BUDGET", "ALIAS_TEXT_BUDGET", "line_of", "load_yaml", "validate_yaml"]

M = TypeVar("M", bound=BaseModel)

# libyaml's loader when present (about 20x faster), with the same marks and types.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """The safe loader, reading a number in exponent form without a dot (``5e-2``,
    ``1E3``) as the float YAML 1.2 and JSON make it. PyYAML resolves YAML 1.1, where
    such a scalar is a string, so ``max: 5e-2`` was refused as "the string '5e-2'
    (write it unquoted)" although it was unquoted."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)

#: Nodes that aliases may add to a document, beyond the nodes written out. Ample
#: for sharing (a 60-node function doc used by 1,000 tasks), and a few tenths of a
#: second to validate; a bomb needs millions.
ALIAS_BUDGET = 100_000

#: Characters of scalars (keys and values) that aliases may add to a document, beyond
#: those written out: 10 MB of text, ample for a 3 KB function doc shared by 1,000
#: tasks, and well under a second to validate and hash.
ALIAS_TEXT_BUDGET = 10_000_000


def load_yaml(path: str | Path) -> tuple[Any, yaml.Node | None]:
    """Parse a YAML file into plain data and its node tree (for line lookups).

    Raises `InputError` for a file that is not UTF-8 text, is not valid YAML,
    or whose aliases expand past `ALIAS_BUDGET` nodes or into themselves."""
    path = Path(path)
    text = read_text(path)
    try:
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
            if root is None:
                return None, None
            _check_tree(root, path, loader)
            data = loader.construct_document(root)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"invalid YAML: {exc.problem or exc}", file=path, line=line) from None
    except yaml.reader.ReaderError as exc:  # a character YAML forbids (NUL, other controls)
        line = text.count("\n", 0, exc.position) + 1
        char = exc.character  # libyaml gives its code, PyYAML the character
        code = char if isinstance(char, int) else ord(char) if char else 0
        raise InputError(
            f"invalid YAML: {exc.reason} (U+{code:04X})",
            file=path,
            line=line,
        ) from None
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"invalid YAML: {first}", file=path) from None
    except RecursionError:  # the pure-Python loader on deep nesting (libyaml stops at 1,000)
        raise InputError("invalid YAML: nested too deeply", file=path) from None
    return data, root


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _key_value(key: yaml.ScalarNode, loader: Any) -> Any:
    """A mapping key as loaded (``1`` an int, ``"1"`` a string), or, for a key that
    loads to no value of its own (a merge key ``<<``), its tag and text."""
    try:
        value = loader.construct_object(key)
        hash(value)
    except (yaml.YAMLError, TypeError):
        return (key.tag, key.value)
    return value


def _duplicate_key(node: yaml.Node, loader: Any) -> yaml.ScalarNode | None:
    """The first key written a second time in the mapping ``node``, if any: two keys
    whose loaded values are equal (the loaded mapping would keep one of them)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: set[Any] = set()
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode):
            value = _key_value(key, loader)
            if value in seen:
                return key
            seen.add(value)
    return None


#: A node's place in the document: ``(parent's place, key or index)``, ``None`` at the root.
_Place = tuple[Any, str] | None


def _dotted(place: _Place, last: str) -> str:
    parts = [last]
    while place is not None:
        place, part = place
        parts.append(part)
    return ".".join(reversed(parts))


def _child_places(node: yaml.Node, place: _Place) -> list[tuple[yaml.Node, _Place]]:
    """`_children` with each one's place: a value under its key's text, an item under
    its index, a key at its mapping's place."""
    if isinstance(node, yaml.MappingNode):
        out: list[tuple[yaml.Node, _Place]] = []
        for key, value in node.value:
            name = str(key.value) if isinstance(key, yaml.ScalarNode) else "?"
            out += [(key, place), (value, (place, name))]
        return out
    if isinstance(node, yaml.SequenceNode):
        return [(item, (place, str(i))) for i, item in enumerate(node.value)]
    return []


def _check_tree(root: yaml.Node, path: Path, loader: Any) -> None:
    """Refuse a node tree whose aliases expand past the budget, or into themselves,
    that nests deeper than `MAX_DEPTH`, or that writes a key twice in one mapping
    (named by its path, ``gates.0.metric``).

    One pass over the distinct nodes (iterative: nesting may be deep) computes
    each node's expanded size, in nodes and in characters of its scalars; an alias is
    the same node object reached twice."""
    size: dict[int, int] = {}
    text: dict[int, int] = {}
    written = 0  # characters of the distinct scalars: the text as written
    on_path: set[int] = set()
    shared: dict[int, yaml.Node] = {}
    # depth 0: all children are done
    stack: list[tuple[yaml.Node, int, _Place]] = [(root, 1, None)]
    while stack:
        node, depth, place = stack.pop()
        key = id(node)
        if depth == 0:
            on_path.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(child)] for child in children)
            if isinstance(node, yaml.ScalarNode):
                text[key] = len(node.value)
                written += text[key]
            else:
                text[key] = sum(text[id(child)] for child in children)
            continue
        if key in on_path:
            raise InputError(
                "an alias refers to the node that contains it (an infinite structure)",
                file=path,
                line=node.start_mark.line + 1,
            )
        if key in size:
            shared[key] = node
            continue
        if depth > MAX_DEPTH and not isinstance(node, yaml.ScalarNode):
            raise InputError(
                f"nested too deeply: more than {MAX_DEPTH} levels of mappings and lists",
                file=path,
                line=node.start_mark.line + 1,
            )
        duplicate = _duplicate_key(node, loader)
        if duplicate is not None:
            raise InputError(
                "key appears twice in the same mapping",
                file=path,
                line=duplicate.start_mark.line + 1,
                field=_dotted(place, str(duplicate.value)),
            )
        on_path.add(key)
        stack.append((node, 0, place))
        stack.extend(
            (child, depth + 1, where) for child, where in reversed(_child_places(node, place))
        )
    budgets: tuple[tuple[str, dict[int, int], int, int], ...] = (
        ("nodes", size, size[id(root)] - len(size), ALIAS_BUDGET),
        ("characters", text, text[id(root)] - written, ALIAS_TEXT_BUDGET),
    )
    for unit, weight, added, budget in budgets:
        if added > budget:
            worst = max(shared.values(), key=lambda n: weight[id(n)])
            raise InputError(
                f"aliases expand this document by {added:,} {unit}, past the limit of "
                f"{budget:,} (an alias bomb?); write the shared part out or refer to it "
                "fewer times",
                file=path,
                line=worst.start_mark.line + 1,
            )


def line_of(node: yaml.Node | None, loc: Sequence[str | int]) -> int | None:
    """1-based line of the deepest node reachable along ``loc``."""
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            found = None
            for key, value in node.value:
                if str(key.value) == str(part):
                    found = (key, value)
                    break
            if found is None:
                break
            key_node, node = found
            # An unknown key is best reported where the key is written.
            line = key_node.start_mark.line + 1
            if not isinstance(node, yaml.ScalarNode):
                continue
            line = node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            try:
                node = node.value[int(part)]
            except (ValueError, IndexError):
                break
            line = node.start_mark.line + 1
        else:
            break
    return line


def validate_yaml(
    model: type[M],
    data: Any,
    node: yaml.Node | None,
    *,
    file: str | Path | None,
    prefix: Sequence[str | int] = (),
) -> M:
    """Validate ``data`` as ``model``; on error raise `InputError` with the line."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, reason = first_error(exc, metadata_hint="metadata" in model.model_fields)
        loc = [*prefix, *exc.errors()[0].get("loc", ())]
        dotted = ".".join(str(p) for p in loc) if loc else field
        raise InputError(reason, file=file, line=line_of(node, loc), field=dotted) from None
