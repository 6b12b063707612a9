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


def test_a_count_of_one_reads_in_the_singular() -> None:
    # "stored 1 trials from 1 spans": every count a user reads goes through one helper.
    from agentgauge.report.formats import clusters_text, counted, plural

    assert [counted(n, "trial") for n in (0, 1, 2)] == ["0 trials", "1 trial", "2 trials"]
    assert counted(1, "family", "families") == "1 family"
    assert counted(3, "family", "families") == "3 families"
    assert f"{1234:,} {plural(1234, 'span')}" == "1,234 spans"
    assert clusters_text(3, 1, "family") == "1 family and 2 tasks without a family"


def test_a_huge_figure_is_written_in_scientific_notation() -> None:
    from agentgauge.report.formats import money, number

    assert number(1234.5) == "1,234.5"
    assert number(1e308) == "1.00e+308"
    assert number(10**400, 0) == "1.00e+400"  # an int past the largest float
    assert number(float("inf")) == "inf"
    assert money(1e308) == "$1.00e+308"
