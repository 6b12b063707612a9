from collections.abc import Callable, Sequence
from typing import Any

def configure(
    one_call: frozenset[str],
    parallel: frozenset[str],
    python_match: Callable[..., tuple[bool, str | None, str]],
    compiled_key: type,
    expected: type,
    spec: type,
    /,
) -> None: ...
def check(
    args: dict[str, Any],
    specs: dict[str, Any],
    key: Any,
    required: Sequence[str],
    required_in_key: bool | None,
    explain: bool,
    /,
) -> tuple[bool, str | None, str] | None: ...

match: Any
