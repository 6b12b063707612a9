"""The pytest plugin, exercised by running real inner test files with pytester."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentgauge.api
import agentgauge.harness.runner
import agentgauge.testing.pytest_eval
import agentgauge.testing.worlds  # noqa: F401
from agentgauge.graders import available_graders

pytest_plugins = ["pytester"]

# Inner sessions run in this process, and pytester drops the modules they import when
# each ends; extension modules (numpy's, scipy's) cannot be loaded twice in a process.
# Import what the inner sessions use here, before pytester's snapshot of sys.modules,
# so it persists (agentgauge itself loads its engine lazily).
available_graders()

ROOT = Path(__file__).resolve().parents[1]

# Inner test files start with this: two counter tasks and agents whose outcomes are
# known exactly, so every figure below is computed by hand.
PRELUDE = '''
import re
import threading

import pytest

from agentgauge.testing.worlds import counting_agent

ENV = "agentgauge.testing.worlds:make_counter_env"
TASKS = [
    {"id": "a", "environment": ENV, "instruction": "add 3",
     "expectations": {"final_state": {"counter": 3}}},
    {"id": "b", "environment": ENV, "instruction": "add 4",
     "expectations": {"final_state": {"counter": 4}}},
]
# Six tasks: the fewest with which a paired comparison can tell anything at α = 0.05
# (the exact sign test over n tasks cannot go below p = 2 · 0.5^n).
SIX = TASKS + [
    {"id": f"c{n}", "environment": ENV, "instruction": f"add {n}",
     "expectations": {"final_state": {"counter": n}}}
    for n in (5, 6, 7, 8)
]

def fails_b(session):
    """Solves every task but b."""
    if session.task_id != "b":
        session.call_tool("add", {"amount": int(re.findall(r"\\d+", session.instruction)[-1])})

_calls = {}
_lock = threading.Lock()

def fails_first_b(session):
    """Fails only the first trial of task b that it is given."""
    with _lock:
        _calls[session.task_id] = n = _calls.get(session.task_id, 0) + 1
    amount = int(re.findall(r"\\d+", session.instruction)[-1])
    if session.task_id == "b" and n == 1:
        amount += 1
    session.call_tool("add", {"amount": amount})
'''


def _inner(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_inner=PRELUDE + textwrap.dedent(body))


def test_passing_gates_and_the_summary(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        @pytest.mark.agentgauge(trials=3, min_success_rate=0.6, bound="ci_lower",
                                pass_hat_k={2: 0.9}, max_cost_of_pass=0.01)
        def test_counting(agentgauge_eval):
            result = agentgauge_eval.run(TASKS, counting_agent)
            assert result.metrics["groups"][0]["n_trials"] == 6  # 2 tasks x 3 trials
            assert len(result.trials) == 6
            assert result.source == f"{result.store}:{result.run_id}"
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=1)
    # Every trial succeeds: rate 6/6 = 1, SE 0, pass^1 = pass^2 = 1; pass^4 is not
    # listed (k = 4 > 3 trials: it read "pass^4 -", no reason given). The CI is Wilson
    # on the 6 trials (design effect 1 when all pass): [6/(6 + 1.96²), 1] = [0.6097, 1]
    # (it was [1, 1] under the old bootstrap).
    out.stdout.fnmatch_lines(
        [
            "*= agentgauge =*",
            "test_inner.py::test_counting  *agentgauge.db:test_counting-*",
            "*variant=base: success 1.000 (6/6) (95% CI 0.610–1.000; 2 tasks, 6 trials)"
            "  pass^1 1.00 (2/2 tasks)  pass^2 1.00 (2/2 tasks)",
            "  PASS success_rate [[]ci_lower[]] >= 0.6 — agent=python:agentgauge.testing.worlds"
            ".counting_agent, variant=base: success_rate ci_lower = 0.6097",
            "  PASS pass_hat_k.2 >= 0.9 — *: pass_hat_k.2 = 1",
            "  PASS cost.cost_of_pass <= 0.01 — *: cost.cost_of_pass = 0",
        ]
    )


def test_failing_gate_names_each_failed_gate(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        @pytest.mark.agentgauge(trials=2, min_success_rate=0.9, pass_hat_k={2: 0.4})
        def test_half(agentgauge_eval):
            agentgauge_eval.run(TASKS, fails_b)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    # Task a 2/2, task b 0/2: success 2/4 = 0.5 < 0.9 fails; pass^2 = (1 + 0)/2 = 0.5 >= 0.4
    # passes, so exactly one line follows the header. pass^1 and pass^2 are both (1 + 0)/2,
    # as is success (task means 1 and 0), SE = sd(1, 0)/sqrt(2) = 0.7071/1.4142 = 0.5.
    out.stdout.fnmatch_lines(
        [
            "*1 of 2 gate checks failed",
            "gate failed: success_rate >= 0.9 (agent=python:test_inner.fails_b, variant=base): "
            "success_rate = 0.5",
            "*success 0.500 ± 0.500 *pass^1 0.50 ± 0.50  pass^2 0.50 ± 0.50",
        ]
    )
    out.stdout.no_fnmatch_line("gate failed: pass_hat_k*")
    out.stdout.no_fnmatch_line("*pass^4*")


def test_a_pass_hat_k_beyond_the_trials_says_why(pytester: pytest.Pytester) -> None:
    # Asked for by the marker, pass^3 of 2 trials is listed, null, with the reason.
    _inner(
        pytester,
        """
        @pytest.mark.agentgauge(trials=2, pass_hat_k={3: 0.5})
        def test_three(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    out.stdout.fnmatch_lines(
        [
            "*  pass^1 1.00 (2/2 tasks)  pass^2 1.00 (2/2 tasks)  pass^3 - (k=3 exceeds the "
            "trials of 2 of 2 tasks (fewest: 2))",
            "  FAIL pass_hat_k.3 >= 0.5 — *: cannot check: k=3 exceeds the trials*",
        ]
    )


def test_the_summary_line_reads_a_run_without_spread_as_the_terminal_does(
    pytester: pytest.Pytester,
) -> None:
    # One task failed 4 times: no SE and no interval can be estimated (one task). The
    # line read "success 0.000 ± - (95% CI -–-; 1 tasks, 4 trials)"; two tasks passed
    # every time: SE 0, so the count of trials stands in for "± 0".
    _inner(
        pytester,
        """
        def test_one_task(agentgauge_eval):
            agentgauge_eval.run(TASKS[1:], fails_b, trials=4)

        def test_all_pass(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=2)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=2)
    out.stdout.fnmatch_lines(
        [
            "*variant=base: success 0.000 (no 95% CI: fewer than 2 clusters: no interval "
            "can be estimated; 1 task, 4 trials)  pass^1 0.00  pass^2 0.00  pass^4 0.00",
            "*variant=base: success 1.000 (4/4) (95% CI *; 2 tasks, 4 trials)  pass^1 1.00 *",
        ]
    )
    out.stdout.no_fnmatch_line("*± -*")
    out.stdout.no_fnmatch_line("*-–-*")


def test_hand_computed_pass_hat_k_and_explicit_checks(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        def test_checks(agentgauge_eval):
            r = agentgauge_eval.run(TASKS, fails_first_b, trials=4, concurrency=1)
            g = r.metrics["groups"][0]
            # a: 4/4; b: 3/4. success = 7/8 = 0.875.
            assert g["success_rate"]["value"] == 0.875
            # pass^2 = mean(C(4,2)/C(4,2), C(3,2)/C(4,2)) = (1 + 3/6)/2 = 0.75
            assert g["pass_hat_k"]["2"] == 0.75
            r.check("success_rate", min=0.875).check("pass_hat_k", k=2, min=0.75, max=0.75)
            # pass^3 was not computed at run time: the check adds it.
            # pass^3 = (1 + C(3,3)/C(4,3))/2 = (1 + 1/4)/2 = 0.625
            r.check("pass_hat_k", k=3, min=0.7)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    out.stdout.fnmatch_lines(["gate failed: pass_hat_k.3 >= 0.7 (*): pass_hat_k.3 = 0.625"])


def test_a_cost_gate_at_its_boundary_reads_the_exact_cost(pytester: pytest.Pytester) -> None:
    # 4 tasks × 5 trials at $0.03 failed `max=0.03`: "cost.per_trial = 0.03000000000000001".
    _inner(
        pytester,
        """
        async def priced(session):
            session.record_cost(0.03)
            await counting_agent(session)

        def test_priced(agentgauge_eval):
            four = SIX[:4]
            result = agentgauge_eval.run(four, priced, trials=5)
            result.check("cost.per_trial", max=0.03).check("cost.cost_of_pass", max=0.03)
            assert result.metrics["groups"][0]["cost"]["total"] == 0.6
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=1)


def test_null_metric_fails_closed(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        def test_k_too_large(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=2).check("pass_hat_k", k=4, min=0)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    out.stdout.fnmatch_lines(
        ["gate failed: pass_hat_k.4 >= 0 (*): cannot check: k=4 exceeds the trials*"]
    )


def test_check_mistakes_are_named(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        def test_no_limits(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1).check("success_rate")

        def test_unknown_metric(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1).check("sucess_rate", min=0)

        def test_bad_k(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1).check("pass_hat_k", k=0, min=0)

        def test_k_on_a_rate(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1).check("success_rate", k=2, min=0)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=4)
    out.stdout.fnmatch_lines_random(
        [
            "*agentgauge: error: a threshold gate needs 'min' or 'max'",
            # One line with the hint `agentgauge gate` gives, not a chained-exception dump.
            "*agentgauge: error: metric: unknown metric 'sucess_rate'; did you mean "
            "'success_rate'?",
            "*agentgauge: error: k: k must be a positive integer, got 0",
            "*agentgauge: error: k applies to pass_hat_k and pass_at_k (and their _se), "
            "not 'success_rate'",
        ]
    )
    out.stdout.no_fnmatch_line("*During handling of the above exception*")


def test_mistakes_in_the_calls_name_the_arguments_passed(pytester: pytest.Pytester) -> None:
    # They named the command's options, which the test never typed: "--trials: must
    # be a positive integer", "--baseline: no such file".
    _inner(
        pytester,
        """
        def test_trials(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=0)

        def test_seed(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1, seed=-1)

        def test_variants(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1, variants=("paraphrse",))

        def test_run_id(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1, run_id="a#b")

        def test_no_such_baseline(agentgauge_eval):
            r = agentgauge_eval.run(TASKS, counting_agent, trials=1)
            r.assert_not_worse_than("nosuch.db:x")

        def test_baseline_for_nothing(agentgauge_eval):
            r = agentgauge_eval.run(TASKS, counting_agent, trials=1)
            r.check_gates({"gates": [{"metric": "success_rate", "min": 0}]}, baseline=r)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=6)
    out.stdout.fnmatch_lines_random(
        [
            "agentgauge: error: trials: must be a positive integer, got 0",
            "agentgauge: error: seed: must be a whole number >= 0, got -1",
            "agentgauge: error: variants: unknown variant 'paraphrse'; *",
            "agentgauge: error: run_id: 'a#b' holds '#', *",
            "agentgauge: error: nosuch.db:x: baseline: no such file; *",
            "agentgauge: error: baseline: a baseline is for non_inferiority gates, *",
        ]
    )
    out.stdout.no_fnmatch_line("*agentgauge: error:*--*")


def test_malformed_gate_file_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        gates="""\
        gates:
          - metric: success_rate
            min: 0.5
          - metric: pass_hat_k.2
            minimum: 0.5
        """.replace("        ", ""),
    )
    _inner(
        pytester,
        """
        @pytest.mark.agentgauge(trials=1, gates="gates.yaml")
        def test_marked(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)

        def test_explicit(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1).check_gates("gates.yaml")
        """,
    )
    out = pytester.runpytest()
    # The marker's config is read when the fixture is set up (an error, before any
    # run); the explicit call fails the test. Both name file, line 5 and the field;
    # the marker's path is read from where pytest runs, and named so.
    out.assert_outcomes(errors=1, failed=1)
    out.stdout.fnmatch_lines_random(
        [
            f"agentgauge: error: {pytester.path / 'gates.yaml'}:5: gates.1.minimum: *",
            "agentgauge: error: gates.yaml:5: gates.1.minimum: *",
        ]
    )


def test_marker_mistakes_are_named(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        @pytest.mark.agentgauge(min_sucess_rate=0.5)
        def test_typo(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)

        @pytest.mark.agentgauge(min_success_rate=0.5)
        def test_forgot_to_run():
            pass

        @pytest.mark.agentgauge(min_success_rate=0.5, bound="ci_low")
        def test_bad_bound(agentgauge_eval):
            pass

        # A mistake of the whole gate named no argument: "agentgauge: error: a
        # threshold gate needs 'min' or 'max'".
        @pytest.mark.agentgauge(pass_hat_k={2: None})
        def test_no_minimum(agentgauge_eval):
            pass
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(errors=3, failed=1)
    out.stdout.fnmatch_lines_random(
        [
            "*agentgauge: error: @pytest.mark.agentgauge: unknown argument 'min_sucess_rate' "
            "(known: trials, *",
            "*agentgauge: error: marked @pytest.mark.agentgauge but ran no evaluation*",
            "*agentgauge: error: bound: *",
            "agentgauge: error: pass_hat_k[[]2[]]: a threshold gate needs 'min' or 'max'",
        ]
    )


def test_trials_option_and_kept_store(pytester: pytest.Pytester, tmp_path: Path) -> None:
    _inner(
        pytester,
        """
        @pytest.mark.agentgauge(trials=5, min_success_rate=0.5)
        def test_one(agentgauge_eval):
            r = agentgauge_eval.run(TASKS, counting_agent)
            assert r.metrics["groups"][0]["n_trials"] == 4  # 2 tasks x 2, not 5

        def test_two(agentgauge_eval):
            r = agentgauge_eval.run(TASKS, fails_b, trials=7)
            assert r.metrics["groups"][0]["n_trials"] == 4
        """,
    )
    store = tmp_path / "kept.db"
    out = pytester.runpytest("--agentgauge-trials", "2", "--agentgauge-store", str(store))
    out.assert_outcomes(passed=2)

    import agentgauge
    from agentgauge.store import Store

    with Store(store, create=False) as db:
        runs = db.list_runs()
    assert sorted(r.run_id.split("-")[0] for r in runs) == ["test_one", "test_two"]
    assert {r.suite for r in runs} == {"test_one", "test_two"}
    # The kept runs are ordinary sources for the CLI and the API later.
    by_name = {r.run_id.split("-")[0]: r.run_id for r in runs}
    rate = agentgauge.metrics(f"{store}:{by_name['test_two']}").to_dict()["groups"][0]
    assert rate["success_rate"]["value"] == 0.5  # a 2/2, b 0/2


def test_trials_option_rejects_zero(pytester: pytest.Pytester) -> None:
    _inner(pytester, "def test_x():\n    pass\n")
    out = pytester.runpytest("--agentgauge-trials", "0")
    assert out.ret == pytest.ExitCode.USAGE_ERROR
    out.stderr.fnmatch_lines(["*--agentgauge-trials must be at least 1, got 0*"])


def test_non_inferiority_and_gates_dict(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        GATES = {"deployment_k": 2, "gates": [
            {"metric": "pass_hat_k", "min": 0.4},
            {"type": "non_inferiority", "margin": 0.1},
        ]}

        # Both runs pass everything, but 6 tasks cannot show "within 5 points": the
        # interval is about [-0.24, +0.24] (the score interval; a paired t on d = 0
        # everywhere would claim [0, 0]), so the same agent is only shown not worse
        # by more than 60 points. 2 tasks cannot show even that: the gate fails.
        WIDE = {"gates": [{"type": "non_inferiority", "margin": 0.6}]}

        def test_same_agent_is_not_worse(agentgauge_eval):
            base = agentgauge_eval.run(SIX, counting_agent, trials=2)
            new = agentgauge_eval.run(SIX, counting_agent, trials=2, seed=1)
            new.assert_not_worse_than(base, margin=0.6)
            new.check_gates(WIDE, baseline=base.source)
            narrow = {"gates": [{"type": "non_inferiority", "margin": 0.05}]}
            (result,) = new.evaluate(narrow, baseline=base)
            assert not result.passed and "lower bound -0.2" in result.detail
            two = agentgauge_eval.run(TASKS, counting_agent, trials=2, seed=2)
            (result,) = two.evaluate(WIDE, baseline=base)
            assert not result.passed and "too few tasks to tell" in result.detail

        def test_worse_agent_fails(agentgauge_eval):
            base = agentgauge_eval.run(SIX, counting_agent, trials=2)
            new = agentgauge_eval.run(SIX, fails_b, trials=2)
            new.check_gates(GATES, baseline=base)

        def test_non_inferiority_needs_a_baseline(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1).check_gates(GATES)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=1, failed=2)
    # Paired over 6 tasks: differences -1 (b) and 0 (the others), mean -1/6. pass^2 = 5/6
    # passes 0.4.
    out.stdout.fnmatch_lines_random(
        [
            "*1 of 2 gate checks failed",
            "gate failed: non-inferiority (margin 0.1) (B vs baseline): "
            "paired difference -0.167, *",
            "*a non_inferiority gate needs a baseline: pass baseline=... (a result or a SOURCE)",
        ]
    )


# Each used to pass in pytest while `agentgauge gate` refused it (or, for the marker, was
# never range-checked): the plugin checks its gates by the function that checks a gates
# file, so the reason is the CLI's, word for word.
_REFUSED = [
    ('.check("success_rate", max=1.5)', "metric: success_rate\n    max: 1.5", "max"),
    ('.check_gates({"gates": [{"metric": "success_rate", "min": -0.5}]})',
     "metric: success_rate\n    min: -0.5", "<gates>: gates.0.min"),
    ('.check("success_rate", min=0.9, max=0.1)', "metric: success_rate\n    min: 0.9\n"
     "    max: 0.1", "min"),
    ('.check("latency_s.p95", max=float("nan"))', "metric: latency_s.p95\n    max: .nan", "max"),
    ('.check("success_rate", min=True)', "metric: success_rate\n    min: true", "min"),
    ('.check("calls.modle", max=10)', "metric: calls.modle\n    max: 10", "metric"),
]  # fmt: skip


def test_the_plugin_refuses_what_gate_refuses_with_its_words(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    from agentgauge.errors import InputError
    from agentgauge.report.gates import load_gate_config

    reasons = []
    for i, (_, gate, _) in enumerate(_REFUSED):
        path = tmp_path / f"g{i}.yaml"
        path.write_text(f"gates:\n  - {gate}\n")
        with pytest.raises(InputError) as err:
            load_gate_config(path)
        reasons.append(err.value.reason)
    tests = "".join(
        f"def test_{i}(agentgauge_eval):\n"
        f"    agentgauge_eval.run(TASKS, counting_agent, trials=1){call}\n\n"
        for i, (call, _, _) in enumerate(_REFUSED)
    )
    _inner(
        pytester,
        tests
        + textwrap.dedent("""
        @pytest.mark.agentgauge(trials=1, min_success_rate=1.2)
        def test_marker_rate(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)

        @pytest.mark.agentgauge(trials=1, pass_hat_k={2: -1})
        def test_marker_pass_hat_k(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)

        @pytest.mark.agentgauge(trials=1, max_cost_of_pass=-1)
        def test_marker_cost(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)

        def test_a_documented_metric_is_read(agentgauge_eval):
            # Refused before: "unknown metric 'calls.model'; did you mean 'calls.tool'?".
            agentgauge_eval.run(TASKS, counting_agent, trials=1).check("calls.model", max=10)
        """),
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=1, failed=len(_REFUSED), errors=3)
    out.stdout.fnmatch_lines_random(
        [
            *(f"agentgauge: error: {field}: {reason}" for (_, _, field), reason in
              zip(_REFUSED, reasons, strict=True)),
            "agentgauge: error: min_success_rate: success_rate is a rate in [0, 1]; a min of 1.2 "
            "cannot be meant",
            "agentgauge: error: pass_hat_k[2]: pass_hat_k is a rate in [0, 1]; a min of -1 "
            "cannot be meant",
            "agentgauge: error: max_cost_of_pass: cost.cost_of_pass is at least 0; a max of -1: "
            "no value can pass",
        ]
    )  # fmt: skip
    assert "did you mean 'calls.model'?" in reasons[-1]


def test_the_marker_takes_the_baseline_of_its_non_inferiority_gates(
    pytester: pytest.Pytester,
) -> None:
    # The baseline solved all six tasks in both trials; fails_b solves all but b.
    ids = ["a", "b", "c5", "c6", "c7", "c8"]
    rows = [f'{{"task_id": "{t}", "trial": {k}, "success": true}}' for t in ids for k in (0, 1)]
    pytester.makefile(".jsonl", base="\n".join(rows) + "\n")
    _inner(
        pytester,
        """
        WIDE = {"gates": [{"type": "non_inferiority", "margin": 0.6}]}
        NARROW = {"gates": [{"type": "non_inferiority", "margin": 0.1}]}

        @pytest.mark.agentgauge(trials=2, gates=WIDE, baseline="base.jsonl")
        def test_not_worse(agentgauge_eval):
            agentgauge_eval.run(SIX, counting_agent)

        @pytest.mark.agentgauge(trials=2, gates=NARROW, baseline="base.jsonl")
        def test_worse(agentgauge_eval):
            agentgauge_eval.run(SIX, fails_b)

        @pytest.mark.agentgauge(trials=2, gates=NARROW)
        def test_no_baseline(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)

        @pytest.mark.agentgauge(trials=2, min_success_rate=0.5, baseline="base.jsonl")
        def test_baseline_for_nothing(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=1, failed=1, errors=2)
    # Paired over 6 tasks: differences -1 (b) and 0 (the others), mean -1/6.
    out.stdout.fnmatch_lines_random(
        [
            "gate failed: non-inferiority (margin 0.1) (B vs baseline): "
            "paired difference -0.167, *",
            # It used to say "pass baseline=...", which the marker did not take.
            "*@pytest.mark.agentgauge: a non_inferiority gate needs a baseline: "
            "add baseline=SOURCE (a trials file or DB:RUN_ID) to the marker",
            "*@pytest.mark.agentgauge: baseline is for non_inferiority gates, and gates= has none",
        ]
    )


def test_a_module_marker_holds_for_a_test_with_its_own(pytester: pytest.Pytester) -> None:
    # The test's own marker (trials=2) hid the module's threshold: only the closest
    # marker was read, and the test passed with no gate checked at all.
    _inner(
        pytester,
        """
        pytestmark = pytest.mark.agentgauge(min_success_rate=0.9)

        @pytest.mark.agentgauge(trials=2)
        def test_own_marker(agentgauge_eval):
            agentgauge_eval.run(TASKS, fails_b)

        @pytest.mark.agentgauge(pass_hat_k={2: 0.9})
        class TestClass:
            @pytest.mark.agentgauge(trials=2)
            def test_three_levels(self, agentgauge_eval):
                agentgauge_eval.run(TASKS, fails_b)

        @pytest.mark.agentgauge(trials=2, min_success_rate=0.4)
        def test_closest_wins(agentgauge_eval):
            agentgauge_eval.run(TASKS, fails_b)
        """,
    )
    out = pytester.runpytest()
    # fails_b: a 2/2, b 0/2, so success 0.5 and pass^2 (1 + 0)/2 = 0.5.
    out.assert_outcomes(passed=1, failed=2)
    out.stdout.fnmatch_lines_random(
        [
            "*1 of 1 gate checks failed",
            "*2 of 2 gate checks failed",
            "gate failed: success_rate >= 0.9 (*): success_rate = 0.5",
            "gate failed: pass_hat_k.2 >= 0.9 (*): pass_hat_k.2 = 0.5",
            "  PASS success_rate >= 0.4 — *: success_rate = 0.5",
        ]
    )
    out.stdout.no_fnmatch_line("*FAILED*test_closest_wins*")


def test_the_markers_relative_paths_are_read_from_where_pytest_runs(
    pytester: pytest.Pytester,
) -> None:
    # They were read from the working directory when checked: a test that moved it
    # (monkeypatch.chdir) failed with "gates.yaml: cannot read file" and
    # "base.db:base: --baseline: no such file".
    from agentgauge import run
    from agentgauge.testing.worlds import counting_agent

    six = [
        {"id": t, "environment": "agentgauge.testing.worlds:make_counter_env",
         "instruction": f"add {n}", "expectations": {"final_state": {"counter": n}}}
        for t, n in zip(["a", "b", "c5", "c6", "c7", "c8"], [3, 4, 5, 6, 7, 8], strict=True)
    ]  # fmt: skip
    run(six, counting_agent, trials=2, store=pytester.path / "base.db", run_id="base")
    pytester.makefile(".yaml", gates="gates:\n  - metric: success_rate\n    min: 0.9\n")
    pytester.makefile(".yaml", ni="gates:\n  - type: non_inferiority\n    margin: 0.6\n")
    _inner(
        pytester,
        """
        @pytest.fixture
        def elsewhere(tmp_path, monkeypatch):
            monkeypatch.chdir(tmp_path)

        @pytest.mark.agentgauge(trials=2, gates="gates.yaml")
        def test_gates(elsewhere, agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)

        BASE = "base.db:base#agent=python:agentgauge.testing.worlds.counting_agent"

        @pytest.mark.agentgauge(trials=2, gates="ni.yaml", baseline=BASE)
        def test_baseline(agentgauge_eval, monkeypatch, tmp_path):
            monkeypatch.chdir(tmp_path)
            agentgauge_eval.run(SIX, counting_agent)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=2)
    out.stdout.fnmatch_lines(["  PASS non-inferiority (margin 0.6) — B vs baseline: *"])


def test_gates_read_the_base_variant_unless_told(pytester: pytest.Pytester) -> None:
    _inner(
        pytester,
        """
        WORDED = [dict(t, paraphrases=["plus some"]) for t in TASKS]
        VARIANTS = ("base", "paraphrase:1")

        # counting_agent needs a number in the instruction: it errors on every paraphrase.
        # base: 2/2 = 1.0; all trials: 2/4 = 0.5.
        @pytest.mark.agentgauge(trials=1, min_success_rate=0.9)
        def test_base_only(agentgauge_eval):
            agentgauge_eval.run(WORDED, counting_agent, variants=VARIANTS)

        @pytest.mark.agentgauge(
            trials=1,
            gates={"variants": ["all"], "gates": [{"metric": "success_rate", "min": 0.9}]},
        )
        def test_all_variants(agentgauge_eval):
            agentgauge_eval.run(WORDED, counting_agent, variants=VARIANTS)

        # The marker's own threshold reads the base variant, the file's gates all of
        # them: the file's `variants: [all]` made min_success_rate read 0.5 as well.
        @pytest.mark.agentgauge(
            trials=1,
            min_success_rate=0.9,
            gates={"variants": ["all"], "gates": [{"metric": "success_rate", "max": 0.6}]},
        )
        def test_marker_and_file(agentgauge_eval):
            agentgauge_eval.run(WORDED, counting_agent, variants=VARIANTS)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=2, failed=1)
    out.stdout.fnmatch_lines(["gate failed: success_rate >= 0.9 (*): success_rate = 0.5"])
    out.stdout.fnmatch_lines(
        [
            "test_inner.py::test_marker_and_file *",
            "*",
            "*",
            "  PASS success_rate >= 0.9 — *, variant=base: success_rate = 1",
            "  PASS success_rate <= 0.6 — *, all variants: success_rate = 0.5",
        ]
    )


def test_a_where_no_group_matches_fails_as_agentgauge_gate_fails_it(
    pytester: pytest.Pytester,
) -> None:
    # A paraphrase the gates do not read (they read the base variant) and an agent's
    # name without its prefix: the failure named neither what the `where` asked for
    # nor the variants read, so the typo did not show. The plugin's line and the
    # command's are one function's.
    _inner(
        pytester,
        """
        from pathlib import Path

        WORDED = [dict(t, paraphrases=["plus some"]) for t in TASKS]

        def test_where(agentgauge_eval):
            result = agentgauge_eval.run(
                WORDED, counting_agent, trials=1, variants=("base", "paraphrase:1")
            )
            Path("source.txt").write_text(result.source)
            result.check_gates({"gates": [
                {"metric": "success_rate", "min": 0, "where": {"variant": "paraphrase:1"}},
                {"metric": "success_rate", "min": 0, "where": {"agent": "counting_agent"}},
            ]})
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    agent = "python:agentgauge.testing.worlds.counting_agent"
    read = "the gates read the base variant only (the config's 'variants'; [all] reads every one)"
    lines = [
        "gate failed: success_rate >= 0 (variant=paraphrase:1): no group matches 'where' "
        f"(variant 'paraphrase:1'): no group has that variant (they have 'base'); {read}",
        f"gate failed: success_rate >= 0 (agent=counting_agent): no group matches 'where' "
        f"(agent 'counting_agent'): no group has that agent (they have '{agent}'); {read}",
    ]
    out.stdout.fnmatch_lines(["*2 of 2 gate checks failed", *lines])
    config = pytester.path / "gates.yaml"
    config.write_text(
        "gates:\n"
        "  - {metric: success_rate, min: 0, where: {variant: 'paraphrase:1'}}\n"
        "  - {metric: success_rate, min: 0, where: {agent: counting_agent}}\n"
    )
    source = (pytester.path / "source.txt").read_text()
    cli = subprocess.run(
        [sys.executable, "-m", "agentgauge", "gate", source, "--config", str(config)],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 1, cli.stderr
    assert [line for line in cli.stderr.splitlines() if line.startswith("gate failed")] == lines


def test_the_example_file_runs(pytester: pytest.Pytester) -> None:
    example = ROOT / "examples" / "test_agent_with_pytest.py"
    pytester.makepyfile(test_agent_with_pytest=example.read_text(encoding="utf-8"))
    # The example's regression test xfailed for "too few tasks to tell" (4 tasks), as
    # it would have with no regression at all: its agent against itself must pass it.
    pytester.makepyfile(
        test_control="""
        from test_agent_with_pytest import REGRESSION_TASKS, my_agent

        def test_same_version_is_not_worse(agentgauge_eval):
            current = agentgauge_eval.run(REGRESSION_TASKS, my_agent, trials=4)
            again = agentgauge_eval.run(REGRESSION_TASKS, my_agent, trials=4, seed=1)
            again.assert_not_worse_than(current, margin=0.10)
        """
    )
    out = pytester.runpytest("test_agent_with_pytest.py", "test_control.py")
    out.assert_outcomes(passed=3, xfailed=1)
    out.stdout.fnmatch_lines(["*= agentgauge =*", "*PASS success_rate [[]ci_lower[]] >= 0.5*"])
    out.stdout.fnmatch_lines(
        [
            "  FAIL non-inferiority (margin 0.1) — B vs baseline: paired difference -0.338, "
            "95% CI lower bound * <= -0.1",
            "  PASS non-inferiority (margin 0.1) — B vs baseline: *",
        ]
    )
    out.stdout.no_fnmatch_line("*too few tasks*")


def test_plugin_module_imports_no_engine() -> None:
    # pytest imports the plugin in every session: it must add nothing of agentgauge's
    # engine (numpy, the harness, metrics) beyond what the package itself imports.
    code = (
        "import sys, agentgauge; before = set(sys.modules);"
        "import agentgauge.pytest_plugin;"
        "print(sorted(m for m in set(sys.modules) - before if m.startswith('agentgauge')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "['agentgauge.pytest_plugin']"


def test_a_run_the_circuit_breaker_stops_names_the_errors_and_the_stored_run(
    pytester: pytest.Pytester,
) -> None:
    # The test failed with the stop alone ("the first 10 trials were all infra errors"):
    # no error message, no run to look at, where `agentgauge run` prints both.
    _inner(
        pytester,
        """
        def broken_env(*_, **__):
            raise ConnectionError("environment service at 10.0.0.5\\nrefused the connection")

        BROKEN = [{"id": f"t{n}", "environment": "test_inner:broken_env",
                   "instruction": f"add {n}", "expectations": {"final_state": {"counter": n}}}
                  for n in range(3)]

        def test_infra(agentgauge_eval):
            agentgauge_eval.run(BROKEN, counting_agent, trials=4)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    out.stdout.fnmatch_lines(
        [
            "*agentgauge: error: stopped: the first 10 trials were all infra errors*",
            "*  12 infra errors:",
            "*    12 x *ConnectionError*environment service at 10.0.0.5 refused the connection"
            "  (e.g. t0 trial 0)",
            "*  the run is stored: agentgauge show *agentgauge.db:test_infra-* --failed",
        ]
    )


def test_ctrl_c_ends_the_session_after_saying_what_was_saved(pytester: pytest.Pytester) -> None:
    # Ctrl-C failed the current test ("FAILED test_1 - agentgauge: error: interrupted:
    # ...") and pytest went on to run every evaluation left: "1 failed, 2 passed".
    _inner(
        pytester,
        """
        import asyncio
        import os
        import signal

        async def interrupts(session):
            if session.task_id == "a" and session.trial == 2:
                os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, mid-run
                await asyncio.sleep(1)
            await counting_agent(session)

        def test_1(agentgauge_eval):
            agentgauge_eval.run(TASKS, interrupts, trials=3, concurrency=1)

        def test_2(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=1)
        """,
    )
    out = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert out.ret == pytest.ExitCode.INTERRUPTED
    text = out.stdout.str()
    assert "KeyboardInterrupt: agentgauge: error: interrupted: 4 trials saved" in text
    assert "the run is stored: agentgauge show " in text
    assert "test_2" not in text and "no tests ran" in text  # test_1 did not fail, nor run on


def test_a_marked_test_with_only_trials_that_runs_nothing_fails(pytester: pytest.Pytester) -> None:
    # It passed: the check for a marked test that ran no evaluation came after the
    # return for a marker without thresholds.
    _inner(
        pytester,
        """
        @pytest.mark.agentgauge(trials=2)
        def test_forgot_to_run(agentgauge_eval):
            pass

        @pytest.mark.agentgauge(trials=2)
        def test_ran(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(passed=1, failed=1)
    out.stdout.fnmatch_lines(
        ["*agentgauge: error: marked @pytest.mark.agentgauge but ran no evaluation: call *"]
    )


def test_a_failing_gate_on_a_run_whose_agent_raised_names_the_errors(
    pytester: pytest.Pytester,
) -> None:
    # The failure read "gate failed: success_rate >= 0.5 (...): success_rate = 0" and
    # nothing else: the agent's exception, on every trial, was not named.
    _inner(
        pytester,
        """
        def boom(session):
            raise RuntimeError("the model client\\nis not configured")

        @pytest.mark.agentgauge(min_success_rate=0.5, trials=2)
        def test_marked(agentgauge_eval):
            agentgauge_eval.run(TASKS, boom)

        def test_checked(agentgauge_eval):
            agentgauge_eval.run(TASKS, boom, trials=2).check("success_rate", min=0.5)

        def test_passing_run_has_no_error_lines(agentgauge_eval):
            agentgauge_eval.run(TASKS, fails_b, trials=2).check("success_rate", min=0.9)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=3)
    text = out.stdout.str()
    for test in ("test_marked", "test_checked"):
        out.stdout.fnmatch_lines(
            [
                "*gate failed: success_rate >= 0.5 *: success_rate = 0*",
                "*  4 agent errors:",
                "*    4 x RuntimeError: the model client is not configured  (e.g. a trial 0)",
                f"*  the run is stored: agentgauge show *agentgauge.db:{test}-* --failed",
            ]
        )
    # A run without errors fails on its gate alone: nothing to add.
    assert "agentgauge show" not in text.split("test_passing_run_has_no_error_lines")[-1]


def test_control_characters_of_the_run_never_reach_the_terminal(
    pytester: pytest.Pytester,
) -> None:
    # A task id's ESC reached the terminal raw in the failure's error lines ("(e.g.
    # add^[[31mRED^[[0m trial 0)"), and a model's name in the gate lines and summary.
    _inner(
        pytester,
        """
        RED = [dict(TASKS[0], id="add\\x1b[31mRED\\x1b[0m")]

        def boom(session):
            raise RuntimeError("the model client is not configured")

        def test_red(agentgauge_eval):
            agentgauge_eval.run(
                RED, boom, trials=2, agent_options={"model": "m\\x1b[2J"}
            ).check("success_rate", min=0.5)
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    assert "\x1b" not in out.stdout.str()
    out.stdout.fnmatch_lines(
        [
            "gate failed: success_rate >= 0.5 (*model=m\\x1b[[]2J*): success_rate = 0",
            "*(e.g. add\\x1b[[]31mRED\\x1b[[]0m trial 0)",
            "*model=m\\x1b[[]2J, variant=base: success 0.000*",
            "  FAIL success_rate >= 0.5 — *model=m\\x1b[[]2J*",
        ]
    )


def test_a_failing_gate_on_a_run_a_grader_could_not_grade_names_the_grader(
    pytester: pytest.Pytester,
) -> None:
    # A grader that raised left every trial failed (success 0) with no word: the gate's
    # failure said only "success_rate = 0", as if the agent had failed.
    _inner(
        pytester,
        """
        def buggy(task, trial):
            raise KeyError("oops")

        def test_buggy_grader(agentgauge_eval):
            agentgauge_eval.run(TASKS, counting_agent, trials=2, grader=buggy).check(
                "success_rate", min=0.5
            )
        """,
    )
    out = pytester.runpytest()
    out.assert_outcomes(failed=1)
    out.stdout.fnmatch_lines(
        [
            "*gate failed: success_rate >= 0.5 *: success_rate = 0*",
            "*  4 trials could not be graded:",
            "*    4 x grader 'buggy' raised KeyError: 'oops'  (e.g. * trial *)",
            "*    they count as failures; fix the grader and re-grade with: agentgauge grade "
            "*agentgauge.db:test_buggy_grader-* --activate",
            "*  the run is stored: agentgauge show *agentgauge.db:test_buggy_grader-* --failed",
        ]
    )


def test_a_judge_that_cannot_be_reached_fails_the_test_before_any_trial(
    pytester: pytest.Pytester,
) -> None:
    # The judge was found out trial by trial: every criterion unknown:judge_unavailable,
    # the test failing (or passing) on numbers nobody measured. Now the run's preflight
    # checks it (docs/judge.md): one line, and no run stored.
    _inner(
        pytester,
        """
        import socket

        from agentgauge.graders.rubric import RubricGrader
        from agentgauge.harness.trial import grade_with

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            DEAD = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
        JUDGED = [dict(TASKS[0], expectations={"final_state": {"counter": 3},
                  "rubric": [{"id": "polite", "text": "The agent is polite."}]})]

        def test_judged(agentgauge_eval):
            judge = RubricGrader(base_url=DEAD, model="j", max_retries=0)
            agentgauge_eval.run(JUDGED, counting_agent, trials=2,
                                grader=grade_with("state", judge))
        """,
    )
    store = pytester.path / "judged.db"
    out = pytester.runpytest("--agentgauge-store", str(store))
    out.assert_outcomes(failed=1)
    out.stdout.fnmatch_lines(
        [
            "agentgauge: error: the judge of grader 'rubric': no answer from "
            "http://127.0.0.1:*/v1/chat/completions (could not connect *); nothing was run: "
            "start it, or point AGENTGAUGE_JUDGE_BASE_URL at it *",
        ]
    )
    assert not store.exists()
