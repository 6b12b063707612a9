"""Options a command cannot use are one line and exit 2, not a traceback deep inside."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import Cli

from agentgauge.importers import import_file


def _run(tmp_path: Path) -> str:
    src = tmp_path / "t.jsonl"
    rows = [(i, k, "true" if (i + k) % 2 else "false") for i in range(4) for k in range(2)]
    src.write_text(
        "".join(f'{{"task_id": "t{i}", "trial": {k}, "success": {ok}}}\n' for i, k, ok in rows)
    )
    import_file("jsonl", src, tmp_path / "s.db", "r")
    return f"{tmp_path / 's.db'}:r"


@pytest.mark.parametrize(
    "args",
    [
        ["metrics", "{src}"],
        ["report", "{src}", "--markdown", "{tmp}/r.md"],
        ["compare", "{src}", "{src}"],
        ["horizon", "{src}"],
    ],
)
def test_a_negative_seed_is_refused_by_the_option(
    cli: Cli, tmp_path: Path, args: list[str]
) -> None:
    # numpy's SeedSequence refused it with a ValueError traceback (calibrate, horizon).
    src = _run(tmp_path)
    code, _, err = cli(*[a.format(src=src, tmp=tmp_path) for a in args], "--seed", "-1")
    assert code == 2 and "Traceback" not in err
    assert "--seed" in err


def test_a_grader_that_needs_more_than_its_name_is_one_line(cli: Cli, tmp_path: Path) -> None:
    # `grade --graders human` ended in "TypeError: HumanGrader.__init__() missing ...".
    code, _, err = cli("grade", _run(tmp_path), "--graders", "human")
    assert code == 2 and "Traceback" not in err
    assert "grader 'human' cannot be built from its name alone" in err


def test_grade_refuses_a_selector_it_would_ignore(cli: Cli, tmp_path: Path) -> None:
    # "DB:RUN#agent=nobody" re-graded all 8 trials of the run as version 2.
    src = _run(tmp_path)
    code, _, err = cli("grade", f"{src}#agent=nobody", "--graders", "state")
    assert code == 2 and "grade works on a whole stored run" in err
    code, out, _ = cli("grade", src, "--list", "--json")
    assert code == 0 and '"version": 2' not in out


def test_run_refuses_a_negative_show_errors(cli: Cli, tmp_path: Path) -> None:
    # `--show-errors -1` was taken as 0: the run went on and showed no messages.
    suite = Path(__file__).resolve().parents[2] / "examples" / "counter-suite.yaml"
    code, _, err = cli("run", str(suite), "--agent", "agentgauge.testing.worlds:counting_agent",
                       "--store", str(tmp_path / "s.db"), "--show-errors", "-1")  # fmt: skip
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "--show-errors" in err and not (tmp_path / "s.db").exists()


def test_calibrate_refuses_an_empty_against_as_its_twin_does(cli: Cli, tmp_path: Path) -> None:
    # `--against ''` (a shell variable that was not set) compared with every human rater.
    from agentgauge import calibrate
    from agentgauge.errors import InputError

    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(
            f'{{"task_id": "t{i}", "trial": 0, "criterion": "c", "label": "{x}", "rater": "{r}"}}\n'
            for i, (x, y) in enumerate([("pass", "pass"), ("fail", "pass")])
            for r, x in (("ann", x), ("judge", y))
        )
    )
    line = "--against: names no rater; leave --against out to compare the judge with every"
    for against in ("", " , "):
        code, out, err = cli("calibrate", str(labels), "--against", against)
        assert code == 2 and out == "" and err.startswith(f"agentgauge: error: {line}"), err
    with pytest.raises(InputError, match=f"^{line}"):
        calibrate(labels, against=[])
    code, out, _ = cli("calibrate", str(labels), "--against", "ann", "--bootstrap", "10")
    assert code == 0 and "vs humans ann" in out
