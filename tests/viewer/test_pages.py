"""The viewer's pages and their JSON twins over real HTTP, checked against the
metrics engine, `report.explain.trial_view` and `report.diff.run_diff` on the
same store, and the store left exactly as it was."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
from tests.conftest import Cli
from viewer_support import Served, digest

from agentgauge.components import side_components
from agentgauge.metrics.engine import compute_metrics
from agentgauge.model_calls import ModelCalls
from agentgauge.report.diff import run_diff
from agentgauge.report.explain import trial_view
from agentgauge.report.formats import percent
from agentgauge.store import Store
from agentgauge.viewer import queries
from agentgauge.viewer.app import CSP


def _get(served: Served, path: str) -> tuple[int, Message, bytes]:
    try:
        with urllib.request.urlopen(served.url + path, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def _json(served: Served, path: str) -> Any:
    sep = "&" if "?" in path else "?"
    status, headers, body = _get(served, f"{path}{sep}format=json")
    assert status == 200, body[:300]
    assert headers["Content-Type"].startswith("application/json")
    return json.loads(body)


@pytest.fixture(scope="module")
def store(store_path: Path) -> Any:
    with Store(store_path, readonly=True) as s:
        yield s


def test_runs_list_counts_the_base_variant_by_sql(served: Served, store: Store) -> None:
    data = _json(served, "/")
    assert data["schema"] == "agentgauge.runs/1"
    assert data["page"] == {"page": 1, "pages": 1, "total": 2}
    by_id = {r["run_id"]: r for r in data["runs"]}
    assert set(by_id) == {"retail-careful", "retail-hasty"}
    for run_id in ("retail-careful", "retail-hasty"):
        row = by_id[run_id]
        trials = store.trials(run_id, events=False)
        base = [t for t in trials if t.variant == "base"]
        assert row["n_trials"] == len(trials) == 36
        assert row["base"]["n"] == len(base) == 18
        assert row["base"]["passed"] == sum(bool(t.success) for t in base)
        assert row["base"]["success_rate"] == pytest.approx(row["base"]["passed"] / 18)


def test_run_summary_is_the_metrics_engine_on_each_scope(served: Served, store: Store) -> None:
    data = _json(served, "/runs/retail-hasty")
    assert data["run"]["run_id"] == "retail-hasty" and data["run"]["n_trials"] == 36
    assert data["scope"] == "base variant"
    table, facts = store.columns("retail-hasty")
    rows = np.flatnonzero(table.variant == "base")
    base = compute_metrics(
        table.take(rows), k=(1, 2, 4), by=("agent", "model"), judged=facts["judged"][rows]
    ).to_dict()
    assert data["base"] == json.loads(json.dumps(base))
    group = data["base"]["groups"][0]
    # Which trials a judge graded is read with the table, as `agentgauge metrics` reads
    # it: the page said "no trial records a judge cost" where the terminal said this.
    assert group["cost"]["judge_total"] is None
    assert group["null_reasons"]["cost.judge_total"] == (
        "not applicable: no model judge graded these trials"
    )
    assert group["n_trials"] == 18 and group["variant"] == "base"
    assert [g["variant"] for g in data["variants"]["groups"]] == ["base", "fault:tool_error"]
    assert [g["n_trials"] for g in data["variants"]["groups"]] == [18, 18]
    status, headers, body = _get(served, "/runs/retail-hasty")
    assert status == 200 and headers["Content-Security-Policy"] == CSP
    assert b"Outcome per agent (base variant)" in body
    assert b"Outcome per variant (all variants)" in body


def test_a_summary_is_computed_once(served: Served) -> None:
    memo = served.app.state.viewer.summaries
    _json(served, "/runs/retail-careful")
    before = memo.computed
    _json(served, "/runs/retail-careful")
    _get(served, "/runs/retail-careful")
    assert memo.computed == before


def test_tasks_page_marks_every_trial_and_filters(served: Served, store: Store) -> None:
    trials = store.trials("retail-hasty", events=False)
    pks = store.trial_keys("retail-hasty")
    data = _json(served, "/runs/retail-hasty/tasks")
    assert data["page"]["total"] == 6
    marks = {m["pk"]: m["mark"] for t in data["tasks"] for c in t["cells"] for m in c["trials"]}
    expected = {
        pk: ("error" if t.status != "completed" else "pass" if t.success else "fail")
        for pk, t in zip(pks, trials, strict=True)
    }
    assert marks == expected
    failed = _json(served, "/runs/retail-hasty/tasks?failed=1")["tasks"]
    assert failed and all(t["passed"] < t["n"] for t in failed)
    assert {t["task_id"] for t in failed} == {t.task_id for t in trials if not t.success}
    flaky = _json(served, "/runs/retail-hasty/tasks?flaky=1")["tasks"]
    for t in flaky:
        assert any(0 < sum(m["mark"] == "pass" for m in c["trials"]) < 3 for c in t["cells"])
    base = _json(served, "/runs/retail-hasty/tasks?variant=base")["tasks"]
    assert all(c["variant"] == "base" for t in base for c in t["cells"])
    assert sum(t["n"] for t in base) == 18
    one = _json(served, f"/runs/retail-hasty/tasks?task={quote(trials[0].task_id)}")["tasks"]
    assert [t["task_id"] for t in one] == [trials[0].task_id]


def test_task_pages_are_slices_of_the_task_list(store: Store) -> None:
    whole = queries.task_page(store, "retail-careful").rows
    assert [t["task_id"] for t in whole] == sorted(t["task_id"] for t in whole)
    pages = [queries.task_page(store, "retail-careful", page=p, size=4) for p in (1, 2)]
    assert [p.pages for p in pages] == [2, 2]
    assert [t["task_id"] for p in pages for t in p.rows] == [t["task_id"] for t in whole]
    # A page beyond the last shows the last; before the first, the first.
    assert queries.task_page(store, "retail-careful", page=99, size=4).page == 2
    assert queries.runs_page(store, page=0, size=2).page == 1
    assert [r["run_id"] for r in queries.runs_page(store, page=2, size=1).rows] == ["retail-hasty"]


def test_trial_page_is_trial_view(served: Served, store: Store) -> None:
    trials = store.trials("retail-hasty")
    pks = store.trial_keys("retail-hasty")
    for i in (0, len(pks) - 1):
        data = _json(served, f"/runs/retail-hasty/trials/{pks[i]}")
        assert data["schema"] == "agentgauge.show/1" and data["view"] == "trials"
        assert (data["task_id"], data["trial"]) == (trials[i].task_id, trials[i].trial)
        (shown,) = data["trials"]
        assert shown == json.loads(json.dumps(trial_view(trials[i]), default=str))
        assert shown["events"] and shown["grades"]


def test_unknown_runs_and_trials_are_404(served: Served, store: Store) -> None:
    other = store.trial_keys("retail-careful")[0]
    for path in (
        "/runs/nope",
        "/runs/nope/tasks",
        f"/runs/retail-hasty/trials/{other}",  # a trial of another run
        "/runs/retail-hasty/trials/999999",
        "/runs/retail-hasty/trials/x",
        # Past a SQLite rowid's range, and digits of another script: 500 and a lookup.
        "/runs/retail-hasty/trials/99999999999999999999999",
        "/runs/retail-hasty/trials/9223372036854775808",
        "/runs/retail-hasty/trials/0",
        "/runs/retail-hasty/trials/%D9%A1",
        "/diff?a=nope&b=retail-hasty",
    ):
        status, headers, body = _get(served, path)
        assert status == 404, path
        assert headers["Content-Security-Policy"] == CSP
        status, _, body = _get(served, path + ("&" if "?" in path else "?") + "format=json")
        assert status == 404 and json.loads(body)["status"] == 404
    status, _, body = _get(served, "/?page=many")
    assert status == 400 and b"page must be a whole number" in body
    # A format the viewer does not know is the HTML page, whose JSON link replaces it.
    status, _, body = _get(served, "/runs/retail-hasty/tasks?format=xml&failed=1")
    assert status == 200 and b'href="/runs/retail-hasty/tasks?failed=1&amp;format=json"' in body


def _components(store: Store, run_id: str) -> dict[str, Any]:
    models = store.table(run_id).codes("model")[0]
    served = ModelCalls.of_run(store, run_id).served
    return side_components(store.get_run(run_id), models, served)


def test_diff_is_run_diff_of_the_two_tables(served: Served, store: Store) -> None:
    data = _json(served, "/diff?a=retail-hasty&b=retail-careful")
    expected = run_diff(
        store.table("retail-hasty"),
        store.table("retail-careful"),
        label_a="retail-hasty",
        label_b="retail-careful",
        components=(_components(store, "retail-hasty"), _components(store, "retail-careful")),
        agents=("builtin:hasty", "builtin:careful"),
    )
    assert data["run_a"]["run_id"] == "retail-hasty"
    assert {k: v for k, v in data.items() if k not in ("run_a", "run_b")} == json.loads(
        json.dumps(expected)
    )
    changed = _json(served, "/diff?a=retail-hasty&b=retail-careful&changed=1")
    assert changed["n_changed"] == sum(r["change"] != "same" for r in expected["tasks"])
    assert changed["tasks"] == [r for r in data["tasks"] if r["change"] != "same"]
    status, _, body = _get(served, "/diff?a=retail-hasty&b=retail-careful&changed=1")
    assert status == 200
    assert body.count(b'class="change-same"') == 0
    assert body.count(b'<tr class="change-') == expected["n_changed"]
    status, _, body = _get(served, "/diff?a=retail-hasty&b=retail-careful&variant=fault:tool_error")
    assert status == 200 and b"Variant fault:tool_error" in body


def _independent_diff(store: Store, run_a: str, run_b: str, variant: str) -> dict[str, Any]:
    """The diff's figures counted from the trials as objects, rule by rule, with
    scipy's Fisher test: what the page must show, computed without `run_diff`."""
    from scipy.stats import fisher_exact

    counts: list[dict[str, list[int]]] = []
    for run in (run_a, run_b):
        per_task: dict[str, list[int]] = {}
        for t in store.trials(run, events=False):
            if t.variant != variant or t.split == "heldout":
                continue
            infra = t.status != "completed" and t.error_kind != "agent"  # a failure
            cell = per_task.setdefault(t.task_id, [0, 0])
            cell[0] += int(t.success and not infra)
            cell[1] += 1
        counts.append(per_task)
    ca, cb = counts
    rows = {}
    for task in set(ca) | set(cb):
        row: dict[str, Any] = {"a": ca.get(task), "b": cb.get(task)}
        if task in ca and task in cb:
            pa, pb = ca[task][0] / ca[task][1], cb[task][0] / cb[task][1]
            table = [
                [ca[task][0], ca[task][1] - ca[task][0]],
                [cb[task][0], cb[task][1] - cb[task][0]],
            ]
            row["p"] = float(fisher_exact(table)[1])
            row["difference"] = pb - pa
            row["change"] = (
                "lost"
                if pa > 0.5 > pb
                else "gained"
                if pb > 0.5 > pa
                else "same"
                if pa == pb
                else "better"
                if pb > pa
                else "worse"
            )
        else:
            row["change"] = "only_b" if task not in ca else "only_a"
        rows[task] = row
    shared = sorted(set(ca) & set(cb))
    pa = np.array([ca[t][0] / ca[t][1] for t in shared])
    pb = np.array([cb[t][0] / cb[t][1] for t in shared])
    return {"rows": rows, "ca": ca, "cb": cb, "shared": shared, "pa": pa, "pb": pb}


@pytest.mark.parametrize("variant", ["base", "fault:tool_error"])
def test_diff_page_figures_by_an_independent_count(
    served: Served, store: Store, variant: str
) -> None:
    a, b = "retail-hasty", "retail-careful"
    want = _independent_diff(store, a, b, variant)
    data = _json(served, f"/diff?a={a}&b={b}&variant={quote(variant)}")
    assert data["variant"] == variant
    assert {r["task_id"] for r in data["tasks"]} == set(want["rows"])
    for r in data["tasks"]:
        w = want["rows"][r["task_id"]]
        for side in ("a", "b"):
            got = None if r[side] is None else [r[side]["passed"], r[side]["n"]]
            assert got == w[side], (r["task_id"], side)
        assert r["change"] == w["change"], r["task_id"]
        if "p" in w:
            assert r["p_value"] == pytest.approx(w["p"], rel=1e-12)
            assert r["difference"] == pytest.approx(w["difference"], abs=1e-15)
        else:
            assert r["p_value"] is None and r["difference"] is None
    for side, per_task in (("a", want["ca"]), ("b", want["cb"])):
        assert data[side]["n_tasks"] == len(per_task)
        assert data[side]["passed"] == sum(c for c, _ in per_task.values())
        assert data[side]["n"] == sum(n for _, n in per_task.values())
    assert data["n_changed"] == sum(w["change"] != "same" for w in want["rows"].values())
    c = data["comparison"]
    pa, pb = want["pa"], want["pb"]
    assert c["n_tasks"] == len(want["shared"])
    assert c["a"]["success_rate"] == pytest.approx(pa.mean(), abs=1e-12)
    assert c["b"]["success_rate"] == pytest.approx(pb.mean(), abs=1e-12)
    assert c["mean_diff"] == pytest.approx((pb - pa).mean(), abs=1e-12)
    a_only = [t for t, x, y in zip(want["shared"], pa, pb, strict=True) if x > 0.5 > y]
    b_only = [t for t, x, y in zip(want["shared"], pa, pb, strict=True) if y > 0.5 > x]
    assert c["flips"] == {"a_only": a_only, "b_only": b_only}
    # The HTML page shows the same counts.
    status, _, body = _get(served, f"/diff?a={a}&b={b}&variant={quote(variant)}")
    assert status == 200
    page = body.decode()
    ca, cb = want["ca"], want["cb"]
    assert (
        f"A: {sum(x for x, _ in ca.values())}/{sum(n for _, n in ca.values())} trials passed"
        f" over {len(ca)} tasks · B: {sum(x for x, _ in cb.values())}/"
        f"{sum(n for _, n in cb.values())} over {len(cb)} tasks" in page
    )
    for task, w in want["rows"].items():
        if w["a"] is not None and w["b"] is not None:
            side_a, side_b = (f'<td class="n">{c}/{n}</td>' for c, n in (w["a"], w["b"]))
            cells = f"{side_a}\n  {side_b}"
            assert cells in page, task


def test_a_diff_is_computed_once(served: Served) -> None:
    memo = served.app.state.viewer.diffs
    _json(served, "/diff?a=retail-careful&b=retail-hasty")
    before = memo.computed
    _json(served, "/diff?a=retail-careful&b=retail-hasty&changed=1")
    _get(served, "/diff?a=retail-careful&b=retail-hasty&page=2")
    assert memo.computed == before


def test_a_diff_follows_trials_added_while_serving(store_path: Path, tmp_path: Path) -> None:
    from viewer_support import serving

    from agentgauge.schema import Trial

    db = tmp_path / "agentgauge.db"
    source = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
    copy = sqlite3.connect(db)
    source.backup(copy)
    source.close()
    copy.close()
    with serving(db) as s:
        first = _json(s, "/diff?a=retail-hasty&b=retail-careful")
        assert "late-task" not in {r["task_id"] for r in first["tasks"]}
        with Store(db) as writer:  # a resumed run adds trials next to the viewer
            writer.add_trials(
                "retail-careful",
                # The run's agent: a trial of no agent would be a second configuration,
                # which the diff refuses to pool (as compare does).
                [
                    Trial(task_id="late-task", trial=k, success=True, agent="builtin:careful")
                    for k in range(2)
                ],
            )
        again = _json(s, "/diff?a=retail-hasty&b=retail-careful")
        late = [r for r in again["tasks"] if r["task_id"] == "late-task"]
        assert late and late[0]["b"] == {"passed": 2, "n": 2}
        assert late[0]["change"] == "only_b"
        assert again["b"]["n"] == first["b"]["n"] + 2


def test_the_json_is_what_the_commands_print(store_path: Path, tmp_path: Path, cli: Cli) -> None:
    # docs/viewer.md: the runs have the fields `agentgauge runs --json` prints, and the
    # diff's comparison is `agentgauge compare --json`'s. The runs lacked baseline_role,
    # and the verdict lacked compare's "not attributable" clause.
    from viewer_support import serving

    db = tmp_path / "agentgauge.db"
    shutil.copy(store_path, db)
    assert cli("runs", "--store", str(db), "--mark", "retail-hasty", "previous")[0] == 0
    code, out, err = cli("runs", "--store", str(db), "--json")
    assert code == 0, err
    listed = {r["run_id"]: r for r in json.loads(out)["runs"]}
    assert listed["retail-hasty"]["baseline_role"] == "previous"
    code, out, err = cli("compare", f"{db}:retail-hasty", f"{db}:retail-careful", "--json")
    assert code == 0, err
    compared = json.loads(out)
    with serving(db) as s:
        runs = {r["run_id"]: r for r in _json(s, "/")["runs"]}
        header = _json(s, "/runs/retail-hasty")["run"]
        diff = _json(s, "/diff?a=retail-hasty&b=retail-careful")
    assert {k: {f: r[f] for f in listed[k]} for k, r in runs.items()} == listed
    assert {f: header[f] for f in listed["retail-hasty"]} == listed["retail-hasty"]
    verdict = compared["verdict"]
    assert verdict.endswith("; not attributable: model and agent version both changed")
    assert diff["verdict"] == diff["comparison"]["verdict"] == verdict
    assert diff["components"] == compared["components"]
    # The sides are named as each was given: run ids here, the SOURCEs typed there.
    for side in ("a", "b"):
        compared[side].pop("label"), diff["comparison"][side].pop("label")
    assert diff["comparison"] == {k: compared[k] for k in diff["comparison"]}


def test_browsing_never_writes_to_the_store(served: Served, store_path: Path) -> None:
    before = digest(store_path)
    for path in ("/", "/runs/retail-hasty", "/runs/retail-hasty/tasks?failed=1", "/diff"):
        assert _get(served, path)[0] == 200
    assert digest(store_path) == before


def test_figures_nobody_measured_say_so_not_none(tmp_path: Path) -> None:
    # One family, no call counts: the run page named the interval "None" and the trial
    # page said "None model calls · None tool calls".
    from viewer_support import serving

    from agentgauge.importers import import_file

    src = tmp_path / "t.jsonl"
    src.write_text(
        '{"task_id":"t1","success":true,"family":"f"}\n{"task_id":"t2","success":false,"family":"f"}\n'
    )
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "m")
    with serving(db) as s:
        run = _get(s, "/runs/m")[2].decode()
        trial = _get(s, "/runs/m/trials/1")[2].decode()
    assert "None" not in run and "None" not in trial
    assert "the interval is not computed: fewer than 2 clusters" in run
    assert "model calls unknown · tool calls unknown" in trial


def test_an_infra_error_whose_record_says_success_did_not_pass(tmp_path: Path) -> None:
    # fixtures/infra/trials.jsonl: trial 1 of task long is an infra error recorded as a
    # success. Its page said "passed" beside the task page's mark and counts, which the
    # SQL rule already made a failure.
    from viewer_support import serving

    from agentgauge.importers import import_file

    db = tmp_path / "s.db"
    import_file("jsonl", Path(__file__).parents[1] / "fixtures" / "infra" / "trials.jsonl", db, "m")
    with Store(db) as store:
        pk = next(
            pk
            for pk, t in zip(store.trial_keys("m"), store.trials("m"), strict=True)
            if t.is_infra_error
        )
    with serving(db) as s:
        page = _get(s, f"/runs/m/trials/{pk}")[2].decode()
        (shown,) = _json(s, f"/runs/m/trials/{pk}")["trials"]
        tasks = _json(s, "/runs/m/tasks")
    assert 'class="verdict fail" id="why">did not pass: infra error' in page
    assert (shown["success"], shown["passed"]) == (True, False)
    assert {r["task_id"]: r["passed"] for r in tasks["tasks"]}["long"] == 0


def test_a_run_id_with_a_slash_opens_its_own_pages(tmp_path: Path) -> None:
    # docs/viewer.md: run ids may contain "/", percent-encoded in the addresses. The
    # server decoded %2F before routing, so run "x/tasks" opened the tasks page of run
    # "x" (another run's data), and "q/trials/1" the trial route of run "q".
    from viewer_support import serving

    from agentgauge.importers import import_file

    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id":"a","success":true}\n{"task_id":"b","success":false}\n')
    db = tmp_path / "s.db"
    run_ids = ("x", "x/tasks", "q", "q/trials/1", "x/tasks/tasks")
    for run_id in run_ids:
        import_file("jsonl", src, db, run_id)
    with serving(db) as s:
        listed = _get(s, "/")[2].decode()
        for run_id in run_ids:
            address = "/runs/" + quote(run_id, safe="")
            assert f'href="{address}"' in listed
            assert _json(s, address)["run"]["run_id"] == run_id
            tasks = _json(s, address + "/tasks")
            assert tasks["schema"] == "agentgauge.viewer.tasks/1"
            assert tasks["run"]["run_id"] == run_id
            pk = tasks["tasks"][0]["cells"][0]["trials"][0]["pk"]
            trial = _json(s, f"{address}/trials/{pk}")
            assert trial["run"]["run_id"] == run_id and trial["pk"] == pk
            # The page's JSON link keeps the run id encoded, so it names the same run.
            status, _, page = _get(s, address + "/tasks?failed=1")
            assert status == 200
            link = f'id="json-link" href="{address}/tasks?failed=1&amp;format=json"'
            assert link in page.decode()
        # A trial of run "x" is not a trial of run "x/tasks" (nor the other way round).
        other = _json(s, "/runs/x/tasks")["tasks"][0]["cells"][0]["trials"][0]["pk"]
        assert _get(s, f"/runs/x%2Ftasks/trials/{other}")[0] == 404
        assert _get(s, "/runs/nope%2Ftasks")[0] == 404


def test_a_long_text_is_whole_in_the_json_and_one_click_away_on_the_page(
    tmp_path: Path,
) -> None:
    # The trial's JSON (`show --json`'s document) cut the text at 2,000 characters, and
    # the page had no way to show the rest.
    from viewer_support import serving

    from agentgauge.importers import import_file

    long = "<b>" + "A" * 5_000 + "END"
    row = {
        "task_id": "long",
        "success": True,
        "answer": long,
        "events": [{"type": "message", "role": "assistant", "content": long, "t": 0.0}],
    }
    src = tmp_path / "l.jsonl"
    src.write_text(json.dumps(row) + "\n", encoding="utf-8")
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "r")
    with serving(db) as s:
        (shown,) = _json(s, "/runs/r/trials/1")["trials"]
        page = _get(s, "/runs/r/trials/1")[2].decode()
    assert shown["events"][0]["text"] == long and shown["answer"] == long
    escaped = "&lt;b&gt;" + "A" * 5_000 + "END"
    # The message and the answer: their start, then the whole text behind a summary.
    assert page.count("… [3,006 more characters]") == 2
    assert page.count("<summary>show all 5,006 characters</summary>") == 2
    assert page.count(escaped) == 2 and "<b>" not in page


def _paired_store(tmp_path: Path) -> Path:
    """Runs ``a`` (every task failed) and ``b`` (every task passed) over 30 tasks."""
    from agentgauge.importers import import_file

    db = tmp_path / "s.db"
    for run_id, ok in (("a", False), ("b", True)):
        src = tmp_path / f"{run_id}.jsonl"
        rows = [
            {"task_id": f"t{i}", "trial": k, "success": ok} for i in range(30) for k in range(2)
        ]
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        import_file("jsonl", src, db, run_id)
    return db


def test_a_tiny_p_value_reads_as_compare_prints_it(tmp_path: Path) -> None:
    # p = 3e-05 was printed "0.000"; a p-value is never 0 (compare says "p < 0.001").
    from viewer_support import serving

    with serving(_paired_store(tmp_path)) as s:
        diff = _json(s, "/diff?a=a&b=b")
        page = _get(s, "/diff?a=a&b=b")[2].decode()
    assert diff["comparison"]["p_value"] < 0.001
    assert '<td class="n">&lt; 0.001</td>' in page
    assert ">0.000<" not in page
    # Fisher's p for one task, 0/2 against 2/2, is 1/3.
    assert '<td class="n">0.333</td>' in page


def test_an_unmeasured_figure_says_why(tmp_path: Path) -> None:
    # pass@4, pass^4 and latency p50 were bare dashes with no reason on the page; the
    # terminal and the JSON give it.
    from viewer_support import serving

    from agentgauge.importers import import_file

    src = tmp_path / "t.jsonl"
    src.write_text(
        "".join(
            json.dumps({"task_id": t, "trial": k, "success": ok}) + "\n"
            for t, k, ok in (("a", 0, True), ("a", 1, False), ("b", 0, True), ("b", 1, True))
        )
    )
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "r")
    with serving(db) as s:
        page = _get(s, "/runs/r")[2].decode()
        (group,) = _json(s, "/runs/r")["base"]["groups"]
    exceeds = group["null_reasons"]["pass_at_k.4"]
    assert exceeds == "k=4 exceeds the trials of 2 of 2 tasks (fewest: 2)"
    assert page.count(f'<span class="unknown" title="{exceeds}">–</span>') == 4  # 2 tables
    latency = '<span class="unknown" title="no trial records a latency">–</span>'
    assert page.count(latency) == 2
    assert '<td class="n">–</td>' not in page  # no dash without its reason
    # Visible under each table, as the terminal prints them.
    assert page.count(f"<li>– pass_at_k.4, pass_hat_k.4: {exceeds}</li>") == 2
    assert page.count("<li>– latency_s: no trial records a latency</li>") == 2


def test_a_diff_of_one_task_says_why_its_figures_are_missing(tmp_path: Path) -> None:
    # One shared task: the comparison has no interval, SE or p-value, and the page showed
    # bare dashes where `compare` now prints why.
    import subprocess
    import sys

    from viewer_support import serving

    db = tmp_path / "agentgauge.db"
    for run_id, outcomes in (("one-a", (True, False, False)), ("one-b", (True, True, True))):
        src = tmp_path / f"{run_id}.jsonl"
        rows = [{"task_id": "t", "trial": k, "success": ok} for k, ok in enumerate(outcomes)]
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        cmd = [sys.executable, "-m", "agentgauge", "import", "jsonl", str(src)]
        done = subprocess.run(
            [*cmd, "--store", str(db), "--run-id", run_id],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    spread = (
        "one shared task: no spread between tasks to measure, and a standard error, an "
        "interval and a test need at least two"
    )
    with serving(db) as s:
        c = _json(s, "/diff?a=one-a&b=one-b")["comparison"]
        assert c["ci95"] is None and c["se_paired"] is None and c["p_value"] is None
        assert c["null_reasons"]["ci95"] == c["null_reasons"]["p_value"] == spread
        status, _, body = _get(s, "/diff?a=one-a&b=one-b")
    assert status == 200
    page = body.decode()
    assert f"<li>– 95% interval, SE paired, p: {spread}</li>" in page
    assert 'id="comparison-unknown"' in page


def _two_agents_and_one(tmp_path: Path) -> Path:
    """Run ``sample`` (examples/sample_trials.jsonl: agents careful and hasty) and run
    ``careful2``: careful's trials with every even trial's outcome flipped."""
    from agentgauge.importers import import_file

    sample = Path(__file__).parents[2] / "examples" / "sample_trials.jsonl"
    rows = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    careful = [
        {**r, "success": not r["success"] if r["trial"] % 2 == 0 else r["success"]}
        for r in rows
        if r["agent"] == "careful"
    ]
    flipped = tmp_path / "careful2.jsonl"
    flipped.write_text("".join(json.dumps(r) + "\n" for r in careful))
    db = tmp_path / "s.db"
    import_file("jsonl", sample, db, "sample")
    import_file("jsonl", flipped, db, "careful2")
    return db


def test_a_diff_side_of_two_agents_is_refused_and_one_can_be_picked(
    tmp_path: Path, cli: Cli
) -> None:
    # The diff pooled careful's and hasty's trials into one side (A 55%, p 0.785, and a
    # verdict) where `agentgauge compare` refuses the run and compares one agent of it.
    from viewer_support import serving

    db = _two_agents_and_one(tmp_path)
    code, _, err = cli("compare", f"{db}:sample", f"{db}:careful2")
    assert code == 2 and "A holds 2 (agent, model) configurations" in err
    code, out, err = cli("compare", f"{db}:sample#agent=careful", f"{db}:careful2", "--json")
    assert code == 0, err
    compared = json.loads(out)
    with serving(db) as s:
        status, _, body = _get(s, "/diff?a=sample&b=careful2&format=json")
        refused = json.loads(body)
        page_status, _, page = _get(s, "/diff?a=sample&b=careful2&changed=1")
        picked = _json(s, refused["choices"][0]["href"])
        chosen_page = _get(s, "/diff?a=sample&a_agent=careful&b=careful2")[2].decode()
        none_status, _, none = _get(s, "/diff?a=sample&a_agent=nobody&b=careful2&format=json")
        # B is checked too, and the pick keeps what the address already chose for A.
        b_refused = _get(s, "/diff?a=careful2&b=sample&a_agent=careful&format=json")
    assert status == page_status == none_status == 400
    # The names quoted as compare's own "pick one" list quotes them (they were bare).
    assert refused["error"] == (
        "A (run sample) holds 2 (agent, model) configurations and is compared as one "
        "system; pick one: agent 'careful', model 'gpt-4o-mini' (40 trials); agent 'hasty', "
        "model 'llama-3.1-8b' (40 trials)"
    )
    assert [c["href"] for c in refused["choices"]] == [
        "/diff?a=sample&b=careful2&a_agent=careful",
        "/diff?a=sample&b=careful2&a_agent=hasty",
    ]
    html = page.decode()
    assert 'href="/diff?a=sample&amp;b=careful2&amp;changed=1&amp;a_agent=hasty"' in html
    assert ">agent &#39;hasty&#39;, model &#39;llama-3.1-8b&#39;</a> (40 trials)" in html
    assert 'id="verdict"' not in html
    # The chosen agent's diff is compare's numbers: A 67.5%, B − A −15 pp, p 0.093.
    c = picked["comparison"]
    assert c["a"]["label"] == "sample#agent=careful"
    assert c["a"]["success_rate"] == compared["a"]["success_rate"] == pytest.approx(0.675)
    assert c["mean_diff"] == compared["mean_diff"] == pytest.approx(-0.15)
    assert c["p_value"] == compared["p_value"]
    assert picked["verdict"] == compared["verdict"]
    assert picked["components"] == compared["components"]
    assert 'sample</a> <span class="chosen">(agent careful)</span> (A)' in chosen_page
    assert json.loads(none)["error"].startswith("A (run sample) has no trials of agent nobody;")
    assert b_refused[0] == 400 and json.loads(b_refused[2])["side"] == "b"
    assert json.loads(b_refused[2])["choices"][0]["href"] == (
        "/diff?a=careful2&b=sample&a_agent=careful&b_agent=careful"
    )


def test_a_run_page_follows_figures_collect_updates_in_place(tmp_path: Path) -> None:
    # `collect` joins spans to trials already stored: their cost, calls and tokens change
    # with no trial added and no grade activated. The run page, cached by (run, grade
    # version, trial count), said "unknown (2 unpriced)" until the viewer restarted,
    # beside `agentgauge metrics` and the trial page saying $0.072 a trial.
    from viewer_support import serving

    from agentgauge.importers import import_file
    from agentgauge.schema import ModelCallEvent

    src = tmp_path / "t.jsonl"
    rows = [{"task_id": t, "trial": 0, "success": t == "a", "model": "m"} for t in "ab"]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "r")
    with serving(db) as s:
        (before,) = _json(s, "/runs/r")["base"]["groups"]
        assert before["cost"]["per_trial"] is None
        assert "unknown (2 unpriced)" in _get(s, "/runs/r")[2].decode()
        summaries = s.app.state.viewer.summaries.computed
        _json(s, "/runs/r")  # nothing changed: read from memory
        assert s.app.state.viewer.summaries.computed == summaries
        with Store(db) as writer, writer.transaction():  # as `collect` joins a trace
            for pk in writer.trial_keys("r"):
                call = ModelCallEvent(model="m", input_tokens=10, output_tokens=5, cost_usd=0.072)
                writer.append_events(pk, [call], {})
        (after,) = _json(s, "/runs/r")["base"]["groups"]
        page = _get(s, "/runs/r")[2].decode()
    assert after["cost"]["per_trial"] == pytest.approx(0.072)
    assert "$0.072" in page and "unpriced" not in page


def test_an_unmeasured_se_is_a_dash_that_says_why(tmp_path: Path) -> None:
    # One task: no spread between tasks to estimate an SE from. Both tables showed
    # "100.0% ± –", a dash with no reason, where every other unknown says why.
    from viewer_support import serving

    from agentgauge.importers import import_file

    src = tmp_path / "t.jsonl"
    src.write_text(
        "".join(json.dumps({"task_id": "t", "trial": k, "success": True}) + "\n" for k in range(2))
    )
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "one")
    with serving(db) as s:
        page = _get(s, "/runs/one")[2].decode()
        (group,) = _json(s, "/runs/one")["base"]["groups"]
    assert group["success_rate"]["se"] is None
    reason = group["null_reasons"]["se"]
    assert reason == "one task: no spread to estimate"
    assert page.count(f'100.0% ± <span class="unknown" title="{reason}">–</span>') == 2
    assert "± –" not in page


def test_a_fraction_of_a_cent_reads_as_metrics_prints_it(tmp_path: Path, cli: Cli) -> None:
    # 8 trials of $0.00002 each: the run page (both tables) and the trial page said
    # "$0.0000", a measured cost that reads as free, where `agentgauge metrics` prints
    # "$2.00e-05".
    from viewer_support import serving

    from agentgauge.importers import import_file

    call = {"type": "model_call", "model": "m", "cost_usd": 0.00002, "t": 0.1}
    rows = [
        {"task_id": f"t{i % 4}", "trial": i // 4, "success": i % 3 == 0, "cost_usd": 0.00002}
        | {"events": [call]}
        for i in range(8)
    ]
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "c")
    code, out, err = cli("metrics", f"{db}:c")
    assert code == 0, err
    assert "$2.00e-05" in out
    with serving(db) as s:
        run = _get(s, "/runs/c")[2].decode()
        trial = _get(s, "/runs/c/trials/1")[2].decode()
    assert "$0.0000" not in run and "$0.0000" not in trial.split('id="transcript"')[0]
    assert run.count('<td class="n">$2.00e-05</td>') == 2  # base and per-variant tables
    assert "cost $2.00e-05 ·" in trial
    assert "model call · m · duration unknown · $2.00e-05" in trial  # the timeline mark


def test_an_interval_is_never_shown_as_two_equal_bounds(tmp_path: Path) -> None:
    # 0 of 10,000 single-trial tasks: Wilson's interval is [0, 0.038%], which the run
    # page wrote "[0.0%, 0.0%]", an interval of no width.
    from viewer_support import serving

    from agentgauge.importers import import_file

    src = tmp_path / "t.jsonl"
    src.write_text(
        "".join(json.dumps({"task_id": f"t{i}", "success": False}) + "\n" for i in range(10_000))
    )
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "z")
    with serving(db) as s:
        run = _get(s, "/runs/z")[2].decode()
    assert "[0.0%, 0.0%]" not in run
    assert run.count("[0.00%, 0.04%]") == 2  # base and per-variant tables


def test_runs_of_paraphrases_only_are_compared_as_compare_compares_them(
    tmp_path: Path, cli: Cli
) -> None:
    # No base-variant trial on either side: the diff said "pa has no trial of variant
    # 'base'" and gave no comparison, where `compare` warns and compares all the trials.
    from viewer_support import serving

    from agentgauge.importers import import_file

    db = tmp_path / "s.db"
    for run_id, shift in (("pa", 0), ("pb", 1)):
        rows = [
            {"task_id": f"t{i}", "trial": k, "variant": f"paraphrase:{1 + k % 2}"}
            | {"success": (i * k + shift * (i % 2)) % 3 != 0}
            for i in range(8)
            for k in range(4)
        ]
        src = tmp_path / f"{run_id}.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        import_file("jsonl", src, db, run_id)
    code, out, err = cli("compare", f"{db}:pa", f"{db}:pb", "--json")
    assert code == 0, err
    compared = json.loads(out)
    assert len(compared["warnings"]) == 2
    with serving(db) as s:
        diff = _json(s, "/diff?a=pa&b=pb")
        page = _get(s, "/diff?a=pa&b=pb")[2].decode()
        strict = _json(s, "/diff?a=pa&b=pb&variant=base")
    c = diff["comparison"]
    assert diff["reason"] is None and c is not None
    for key in ("mean_diff", "se_paired", "ci95", "p_value", "verdict", "scope", "n_tasks"):
        assert c[key] == compared[key], key
    assert diff["variant"] is None and diff["a"]["n"] == diff["b"]["n"] == 32
    scope = "all its variants (paraphrase:1, paraphrase:2)"
    assert diff["a"]["scope"] == diff["b"]["scope"] == scope
    # compare's warnings, with the run ids where compare has the SOURCEs as typed.
    warnings = [w.replace(f"{db}:", "") for w in compared["warnings"]]
    assert diff["notes"][:2] == warnings
    assert f"A {scope}; B {scope} · A: " in page
    assert f'<p class="note">{warnings[0]}</p>' in page
    assert 'id="verdict">No comparison' not in page
    # The tasks links read the side whole too (no variant filter).
    assert 'href="/runs/pa/tasks?task=t0">A</a>' in page
    # A variant named is that variant alone.
    assert strict["comparison"] is None and strict["reason"] == "pa has no trial of variant 'base'"


def _compared_agents(
    tmp_path: Path, cli: Cli, models: dict[str, str]
) -> tuple[Path, dict[str, Any]]:
    """A store of one run "two" of agents careful and hasty (each on its model in
    ``models``), and `compare --json`'s components of careful against hasty."""
    from agentgauge.importers import import_file

    rows = [
        {"task_id": f"t{i}", "trial": k, "agent": agent, "model": model}
        | {"success": (i + k + len(agent)) % 3 != 0}
        for agent, model in models.items()
        for i in range(6)
        for k in range(2)
    ]
    src = tmp_path / "two.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "two")
    code, out, err = cli("compare", f"{db}:two#agent=careful", f"{db}:two#agent=hasty", "--json")
    assert code == 0, err
    return db, json.loads(out)["components"]


def test_a_diff_names_the_agents_as_compare_does(tmp_path: Path, cli: Cli) -> None:
    # Two agents of one model in one run, no component recorded: compare's sentence says
    # "no recorded component differs, but the agent does (careful → hasty)", the diff's
    # JSON (documented as compare's) "no recorded component differs" only.
    from viewer_support import serving

    db, compared = _compared_agents(tmp_path, cli, {"careful": "m", "hasty": "m"})
    assert compared["sentence"].startswith(
        "no recorded component differs, but the agent does (careful → hasty); "
    )
    with serving(db) as s:
        diff = _json(s, "/diff?a=two&a_agent=careful&b=two&b_agent=hasty")
        same = _json(s, "/diff?a=two&a_agent=careful&b=two&b_agent=careful")
    assert diff["components"] == compared
    # One agent on both sides: no clause.
    assert same["components"]["sentence"].startswith("no recorded component differs; not ")


def test_a_diff_of_two_agents_on_two_models_is_not_attributable_as_compare_says(
    tmp_path: Path, cli: Cli
) -> None:
    # One run of two agents, each on its own model, narrowed to one agent a side: the
    # header names no agent, so the diff counted only the model's change ("one change:
    # model") where compare read each side's agent from its trials ("model and agent
    # both changed": not attributable).
    from viewer_support import serving

    db, compared = _compared_agents(tmp_path, cli, {"careful": "m1", "hasty": "m2"})
    assert compared["agent_changed"] is True
    with serving(db) as s:
        diff = _json(s, "/diff?a=two&a_agent=careful&b=two&b_agent=hasty")
    assert diff["components"] == compared


def test_a_configuration_with_nothing_recorded_can_be_picked(tmp_path: Path) -> None:
    # Run "na": half its trials record no agent and no model, half model m2. The pick-one
    # link for the first left both out, so it led back to the same 400 page; the same for
    # agent x with no model beside agent x with model m.
    from viewer_support import serving

    from agentgauge.importers import import_file

    def imported(run_id: str, rows: list[dict[str, Any]]) -> None:
        src = tmp_path / f"{run_id}.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        import_file("jsonl", src, db, run_id)

    db = tmp_path / "s.db"
    tasks = [f"t{i}" for i in range(6)]
    # Trials 0-1 record nothing (all pass), trials 2-3 model m2 (all fail).
    imported(
        "na",
        [
            {"task_id": t, "trial": k, "success": k < 2} | ({"model": "m2"} if k >= 2 else {})
            for t in tasks
            for k in range(4)
        ],
    )
    imported("other", [{"task_id": t, "trial": 0, "success": True, "model": "m2"} for t in tasks])
    imported(
        "xm",
        [
            {"task_id": t, "trial": k, "agent": "x", "success": k == 0}
            | ({"model": "m"} if k else {})
            for t in tasks
            for k in range(2)
        ],
    )
    with serving(db) as s:
        status, _, body = _get(s, "/diff?a=na&b=other&format=json")
        refused = json.loads(body)
        picked = [_json(s, c["href"]) for c in refused["choices"]]
        page = _get(s, refused["choices"][1]["href"])[2].decode()
        status_xm, _, body_xm = _get(s, "/diff?a=xm&b=other&format=json")
        xm = json.loads(body_xm)
        picked_xm = [_json(s, c["href"]) for c in xm["choices"]]
        none_status, _, none = _get(s, "/diff?a=other&a_no_model=1&b=na&b_no_model=1&format=json")
    assert status == status_xm == none_status == 400
    assert [(c["agent"], c["model"], c["href"]) for c in refused["choices"]] == [
        (None, "m2", "/diff?a=na&b=other&a_model=m2"),
        (None, None, "/diff?a=na&b=other&a_no_model=1"),
    ]
    # Each link is the diff of that one configuration: 12 trials, all failed or all passed.
    assert [(d["a"]["n"], d["a"]["passed"]) for d in picked] == [(12, 0), (12, 12)]
    # Named as compare's SOURCE picks it: `#model=` is the trials that record no model.
    assert picked[1]["a"]["label"] == "na#model="
    assert picked[1]["comparison"]["mean_diff"] == 0.0
    assert 'na</a> <span class="chosen">(model not recorded)</span> (A)' in page
    # The form keeps the choice (a hidden flag; a name typed in the box wins).
    assert '<input type="hidden" name="a_no_model" value="1">' in page
    assert 'name="a_model" value="" size="10" placeholder="not recorded"' in page
    # Agent x with no model beside agent x with model m.
    assert [(c["model"], c["href"]) for c in xm["choices"]] == [
        ("m", "/diff?a=xm&b=other&a_model=m"),
        (None, "/diff?a=xm&b=other&a_no_model=1"),
    ]
    assert [(d["a"]["n"], d["a"]["passed"]) for d in picked_xm] == [(6, 0), (6, 6)]
    # A side with no such trials says so, in words.
    assert json.loads(none)["error"].startswith(
        "A (run other) has no trials of model not recorded;"
    )


def test_the_diff_form_offers_the_runs_compared_and_says_when_it_offers_fewer(
    tmp_path: Path,
) -> None:
    # The form offered the newest 1,000 runs only: a diff of two older runs showed the
    # newest run selected on both sides, and sending the form again compared it.
    from viewer_support import serving

    from agentgauge.importers import import_file
    from agentgauge.schema import Run

    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id":"a","success":true}\n{"task_id":"b","success":false}\n')
    db = tmp_path / "s.db"
    for run_id in ("old-a", "old-b"):
        import_file("jsonl", src, db, run_id)
    with Store(db) as store, store.transaction():
        for i in range(1_000):  # queries.RUN_CHOICES, the newest runs the form offers
            at = f"2099-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}+00:00"
            store.create_run(Run(run_id=f"new-{i:04d}", created_at=at))
    with serving(db) as s:
        chooser = _json(s, "/diff")
        empty_form = _get(s, "/diff")[2].decode()
        page = _get(s, "/diff?a=old-a&b=old-b")[2].decode()
        one_old = _get(s, "/diff?a=old-a&b=new-0005")[2].decode()
    assert chooser["n_runs"] == 1_002 and len(chooser["runs"]) == 1_000
    assert chooser["runs"][0] == "new-0999" and "old-a" not in chooser["runs"]
    assert "The lists offer 1,000 of the store's 1,002 runs" in empty_form
    # Both runs compared are offered, and selected, on both lists.
    assert page.count('<option value="old-a" selected>') == 1
    assert page.count('<option value="old-b" selected>') == 1
    assert 'id="runs-cut"' not in page  # every run is offered
    assert one_old.count('<option value="old-a" selected>') == 1
    assert "The lists offer 1,001 of the store" in one_old


def test_a_trial_page_names_its_variant_in_its_title_and_counts_one_in_the_singular(
    tmp_path: Path,
) -> None:
    # Two tabs of one task and trial index, base and a paraphrase, read alike
    # ("t1 trial 0 · agentgauge viewer"); and a trial of one call said "1 tool calls".
    from viewer_support import serving

    from agentgauge.importers import import_file

    rows = [
        {"task_id": "t1", "trial": 0, "variant": variant, "success": True, "tool_calls": 1,
         "model_calls": 1}
        for variant in ("base", "paraphrase:1")
    ]  # fmt: skip
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "m")
    with serving(db) as s:
        pages = [_get(s, f"/runs/m/trials/{pk}")[2].decode() for pk in (1, 2)]
    titles = sorted(re.search(r"<title>(.*?)</title>", p, re.S)[1].strip() for p in pages)
    assert titles == [
        "t1 trial 0 · base · agentgauge viewer",
        "t1 trial 0 · paraphrase:1 · agentgauge viewer",
    ]
    assert "1 model call · 1 tool call · 0 events" in pages[0]


def test_a_huge_figure_reads_in_scientific_notation_as_the_reports_write_it(
    tmp_path: Path,
) -> None:
    # A latency of 1e308 s (a corrupt file, or an imported tau2 `duration`) was written
    # with "%.2f": 309 digits on the trial page and the run page, where the reports write
    # "1.00e+308" (`report.formats.number`).
    from viewer_support import serving

    from agentgauge.importers import import_file

    call = {"type": "model_call", "model": "m", "t": 1e308, "latency_s": 1e308}
    rows = [
        {"task_id": "t", "trial": i, "success": i == 0, "latency_s": 1e308, "events": [call]}
        for i in range(2)
    ]
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "h")
    with serving(db) as s:
        run = _get(s, "/runs/h")[2].decode()
        trial = _get(s, "/runs/h/trials/1")[2].decode()
    digits = re.compile(r"\d{20}")
    assert not digits.search(run), digits.search(run)
    assert not digits.search(trial), digits.search(trial)
    assert "latency 1.00e+308 s ·" in trial
    assert '<td class="n">1.00e+308 s</td>' in run
    assert '<td class="n">1.00e+308</td>' in trial  # the transcript's time column
    assert "model call · m · 1.00e+308 s" in trial  # the timeline mark


def test_a_trial_page_writes_its_call_counts_as_the_reports_write_counts(
    tmp_path: Path,
) -> None:
    # The counts were written raw: "12345 model calls", and a count of 10^15 from a
    # corrupt file as 16 digits, where the reports write "12,345" and "1.00e+15"
    # (`report.formats.number`).
    from viewer_support import serving

    from agentgauge.importers import import_file

    rows = [{"task_id": "t", "trial": 0, "success": True, "model_calls": 12345,
             "tool_calls": 10**15}]  # fmt: skip
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "c")
    with serving(db) as s:
        trial = _get(s, "/runs/c/trials/1")[2].decode()
        data = _json(s, "/runs/c/trials/1")
    assert "12,345 model calls · 1.00e+15 tool calls · 0 events" in trial
    assert (data["trials"][0]["model_calls"], data["trials"][0]["tool_calls"]) == (12345, 10**15)


def test_pass_at_k_has_its_error_bar_or_its_count(tmp_path: Path) -> None:
    # The run page wrote pass@k and pass^k bare ("0.505", "0.000"), with neither the SE
    # `agentgauge metrics` prints beside them nor, where every task has the same value,
    # the count of tasks that stands in for "± 0".
    from viewer_support import serving

    from agentgauge.importers import import_file

    rows = [
        {"task_id": f"t{t}", "trial": k, "success": t == 1 or (t + k) % 3 == 0}
        for t in range(6)
        for k in range(2)
    ] + [{"task_id": f"z{t}", "trial": k, "success": False} for t in range(3) for k in range(2)]
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    none = tmp_path / "none.jsonl"
    none.write_text("".join(json.dumps(r) + "\n" for r in rows if r["task_id"][0] == "z"))
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "r")
    import_file("jsonl", none, db, "none")
    with serving(db) as s:
        page = _get(s, "/runs/r")[2].decode()
        (group,) = _json(s, "/runs/r")["base"]["groups"]
        zero = _get(s, "/runs/none")[2].decode()
    at2, se1 = group["pass_at_k"]["2"], group["pass_at_k_se"]["2"]
    hat2, se2 = group["pass_hat_k"]["2"], group["pass_hat_k_se"]["2"]
    assert se1 and se2 and at2 != hat2
    pm = '<td class="n k">{} <span class="pm">{}</span></td>'
    assert page.count(pm.format(percent(at2), f"± {percent(se1)}")) == 2
    assert page.count(pm.format(percent(hat2), f"± {percent(se2)}")) == 2
    # No task of "none" ever passed: pass@k is 0 with no spread, said with its count.
    assert zero.count(pm.format("0.0%", "(0/3 tasks)")) == 8  # 2 k x 2 x 2 tables
    assert ">0.000<" not in zero
