"""The worker process of the executable grader: runs suite-named callables.

Started by `agentgauge.graders.exec_runner` as ``python -I THIS_FILE`` so that
nothing of agentgauge is imported here (only the standard library) and the
folder of this file is not put on the import path (it holds a module named
``ast``). The parent sends one JSON line with its import path, then one JSON
line per call, ``{"ref": "pkg.mod:fn", "arguments": {...}}`` (with ``"path"``
when the parent's import path changed); the worker
answers each with one JSON line ``{"outcome": ..., ...}``.

A callable's own output cannot corrupt the protocol: the protocol keeps
duplicates of file descriptors 0 and 1, and the callable's ``stdin``/``stdout``
are ``/dev/null`` and ``stderr``. A runaway call is the parent's to stop (it
kills this process after its deadline); a memory bomb meets an address-space
limit and raises `MemoryError` here; a worker whose parent died exits.
"""

import sys


def main() -> None:
    import importlib
    import json
    import os
    import threading
    import time

    proto_in = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace")
    proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr

    header = json.loads(proto_in.readline() or "{}")
    sys.path[:] = [p for p in header.get("path", []) if isinstance(p, str)]
    max_output = int(header.get("max_output", 1_000_000))
    memory = header.get("memory_bytes")
    if isinstance(memory, int):
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        except (ImportError, ValueError, OSError):
            pass  # not on this platform: the deadline still bounds a runaway call

    parent = os.getppid()

    def orphaned() -> None:
        # A parent killed mid-call leaves no one to stop a runaway callable.
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=orphaned, daemon=True).start()

    cache: dict[str, object] = {}

    def describe(exc: BaseException) -> str:
        try:
            text = str(exc)
        except BaseException:  # a hostile __str__
            text = "<message could not be read>"
        return text[:2000]

    def resolve(ref: str) -> object:
        if ref not in cache:
            module_name, _, attr = ref.partition(":")
            obj: object = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            if not callable(obj):
                raise TypeError(f"{ref} is not callable")
            cache[ref] = obj
        return cache[ref]

    def run(request: dict[str, object]) -> dict[str, object]:
        ref = str(request.get("ref"))
        arguments = request.get("arguments")
        if not isinstance(arguments, dict):
            arguments = {}
        try:
            fn = resolve(ref)
        except BaseException as exc:  # importing user code may raise anything
            return {"outcome": "unresolvable", "type": type(exc).__name__, "message": describe(exc)}
        try:
            value = fn(**arguments)  # type: ignore[operator]
        except BaseException as exc:  # SystemExit too: the callable's, not ours
            return {"outcome": "raised", "type": type(exc).__name__, "message": describe(exc)}
        try:
            text = json.dumps(value, allow_nan=False)
        except BaseException as exc:  # TypeError, ValueError, RecursionError...
            return {
                "outcome": "unserialisable",
                "type": type(value).__name__,
                "message": describe(exc),
            }
        if len(text) > max_output:
            return {"outcome": "too_large", "size": len(text)}
        return {"outcome": "returned", "result": json.loads(text)}

    for line in proto_in:
        try:
            request = json.loads(line)
        except ValueError:
            request = {}
        if not isinstance(request, dict):
            request = {}
        path = request.get("path")
        if isinstance(path, list):
            sys.path[:] = [p for p in path if isinstance(p, str)]
        reply = run(request)
        proto_out.write(json.dumps(reply) + "\n")
        proto_out.flush()


if __name__ == "__main__":
    main()
