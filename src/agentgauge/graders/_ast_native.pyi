from collections.abc import Callable
from typing import Any

def configure(
    one_call: frozenset[str],
    parallel: frozenset[str],
    python_match: Callable[..., tuple[bool, str | None, str]],
    compiled_key: type,
    expected: type,
    spec: type,
    helpers: tuple[Any, ...],
    /,
) -> None: ...

match: Any
