"""YAML files validated into pydantic models, with errors that name the line.

PyYAML's composed node tree keeps each node's position; after a pydantic error
we walk the tree along the error's location to the offending node and report
its line, so ``gates.yaml:12: gates.2.min: Input should be a valid number``
points a user at the right place.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agentgauge.errors import InputError, first_error

__all__ = ["line_of", "load_yaml", "validate_yaml"]

M = TypeVar("M", bound=BaseModel)


def load_yaml(path: str | Path) -> tuple[Any, yaml.Node | None]:
    """Parse a YAML file into plain data and its node tree (for line lookups)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", file=path) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"invalid YAML: {exc.problem or exc}", file=path, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", file=path) from None
    return data, node


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
    file: str | Path,
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
