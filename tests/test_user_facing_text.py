"""What users read cites papers and docs pages, never the internal specification.

Users of the package do not have the project's specification, so a docstring,
message, report heading or docs page that says "SPEC 5.5" points nowhere.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_CITATION = re.compile(r"\bSPEC ?\d")


def test_package_docs_and_readme_do_not_cite_the_spec() -> None:
    shipped = [*(ROOT / "src" / "agentgauge").rglob("*"), *(ROOT / "docs").rglob("*.md")]
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in [*shipped, ROOT / "README.md"]
        if path.is_file() and path.suffix in (".py", ".md", ".j2", ".yaml", ".html")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _CITATION.search(line)
    ]
    assert found == []
