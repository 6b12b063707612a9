"""The viewer's web app: Starlette routes over a store opened read-only.

Pages are rendered on the server by Jinja2 with autoescaping on; each has a JSON
twin at the same address with ``?format=json`` (docs/viewer.md lists the shapes).
Run ids, task ids and trial keys come from the address bar: they are looked up
with bound SQL parameters, and a run, task or trial the store lacks is a 404.
No route takes a file path: the page assets are one package folder served by
Starlette's `StaticFiles` (which refuses paths outside it) and plotly.js is one
fixed route to the file the ``plotly`` package ships.

Every response carries a Content-Security-Policy that allows scripts only from
this server (no inline script, no inline event handler, nothing remote), so text
that got past the escaping still could not run.
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, unquote_to_bytes, urlencode

import jinja2
import numpy as np
import numpy.typing as npt
import plotly
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentgauge._version import __version__
from agentgauge.components import side_components
from agentgauge.display import html_environment, visible
from agentgauge.errors import AgentgaugeError, InputError
from agentgauge.model_calls import ModelCalls
from agentgauge.report.diff import run_diff
from agentgauge.report.explain import MAX_TEXT, shorten, trial_view
from agentgauge.report.formats import (
    bounds,
    counted,
    money,
    no_spread_tasks,
    number,
    percent,
    shown_decimals,
    success_se_of,
    zero_difference_se,
)
from agentgauge.report.record import SystemInfo, agent_name, p_cell
from agentgauge.report.terminal import comparison_null_reason_lines, null_reason_lines
from agentgauge.sources import NOT_RECORDED, Selector, configurations, picks, selected_rows
from agentgauge.spelling import quoted
from agentgauge.store import Store
from agentgauge.store.faults import database_error
from agentgauge.table import TrialTable
from agentgauge.textio import is_digits
from agentgauge.viewer import queries
from agentgauge.viewer.cache import Memo
from agentgauge.viewer.plots import warm_up
from agentgauge.viewer.summary import summarise

__all__ = ["CSP", "LOOPBACK_HOSTS", "create_app"]

_HERE = Path(__file__).resolve().parent
_PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"

#: Scripts and styles from this server only; plotly.js sets inline styles on the
#: elements it draws, hence ``'unsafe-inline'`` for styles (styles cannot run code).
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
#: The names this machine answers to itself: the ``Host`` a browser sends to a viewer
#: on loopback. Any other is refused (400): a page of another site whose name was made
#: to resolve to 127.0.0.1 (DNS rebinding) would otherwise read every transcript.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: Pages change as runs grow or are re-graded; the assets only with agentgauge itself.
_PAGE_CACHE, _ASSET_CACHE = "no-store", "max-age=3600"


def _pct(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else percent(value)


def _difference_se(se: float | None, paired: bool) -> str:
    """A comparison's SE in percent, or why there is none where it is 0
    (`formats.zero_difference_se`): never "0.0%"."""
    if se == 0:
        return zero_difference_se(paired=paired)
    if se is not None and math.isfinite(se):
        return f"{100 * se:.{shown_decimals(100 * se, 1)}f}%"  # 0.004%, not "0.0%"
    return _pct(se)


def _pass_k(value: float | None, se: float | None, n_tasks: int | None) -> str | Markup:
    """pass@k or pass^k as `agentgauge metrics` prints it: the rate ± its SE over tasks,
    or, where every task has the same value (an SE of 0), the count of tasks that stands
    behind it (``0.0% (0/3 tasks)``, `formats.no_spread_tasks`), never a bare figure; a
    dash (the caller says why) where there is none."""
    if value is None or math.isnan(value):
        return "–"
    count = no_spread_tasks(value, se, n_tasks)
    if count is None and se is None:
        return _pct(value)
    # The cell may break before its ± (or count) on a narrow window, never inside it.
    extra = count if count is not None else f"± {_pct(se)}"
    return Markup('{} <span class="pm">{}</span>').format(_pct(value), extra)


def _interval(ci: Sequence[float]) -> str:
    """``[lo%, hi%]`` with decimals enough that the bounds differ (`formats.bounds`):
    0 of 10,000 trials is ``[0.00%, 0.04%]``, never ``[0.0%, 0.0%]``."""
    lo, hi = bounds(ci[0], ci[1], 1, scale=100)
    return f"[{lo}%, {hi}%]"


def _num(value: float | None, digits: int = 3, grouped: bool = False) -> str:
    """A figure as the HTML report writes it (`formats.number`): ``digits`` decimals,
    scientific notation from 1e12 on (a latency of 1e308 s is ``1.00e+308``, not 309
    digits), a dash where there is none; thousands separated when ``grouped`` (a count
    of calls, ``12,345``, as `agentgauge show` writes its token counts)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return number(value, digits, grouped=grouped)
    if isinstance(value, int) and not isinstance(value, bool):
        return number(value, 0, grouped=grouped)
    return str(value)


def _writing(entry: dict[str, Any]) -> str:
    """Who writes a run now, from its ``writing`` entry, as ``agentgauge runs`` says it:
    ``agentgauge run, pid 4242 on host, since ..., heartbeat 3 s ago``."""
    what = f"{entry['command']}, " if entry.get("command") else ""
    return (
        f"{what}pid {entry['pid']} on {entry['host']}, since {entry['since']}, "
        f"heartbeat {entry['heartbeat_age_s']} s ago"
    )


def run_url(run_id: str, *rest: str) -> str:
    """The address of a run's page (``rest``: ``tasks``, ``trials/PK``); the id is
    percent-encoded whole, a ``/`` in it included."""
    return "/".join(("/runs", quote(run_id, safe=""), *rest))


def _query(**params: Any) -> str:
    kept = {k: v for k, v in params.items() if v is not None and v is not False and v != ""}
    return "?" + urlencode({k: ("1" if v is True else v) for k, v in kept.items()})


def _json_link(request: Request) -> str:
    """This page's JSON twin: its address with ``format=json`` set. The address is the
    routed one (`_RunPaths`), whose run id is still percent-encoded: a decoded ``%2F``
    would point at another run's page."""
    params = {k: v for k, v in request.query_params.items() if k != "format"}
    return quote(request.scope["path"], safe="/%") + _query(**params, format="json")


def _run_id(request: Request) -> str:
    """The run id of a ``/runs/RUN...`` address, decoded from its one encoded segment."""
    return unquote(request.path_params["run_id"])


_ENV = html_environment(jinja2.FileSystemLoader(_HERE / "templates"))
_ENV.filters["pct"] = _pct
_ENV.filters["difference_se"] = _difference_se
_ENV.filters["interval"] = _interval
_ENV.filters["pass_k"] = _pass_k
_ENV.filters["num"] = _num
_ENV.filters["shorten"] = shorten
_ENV.filters["writing"] = _writing
_ENV.filters["p_value"] = p_cell
# Dollars as `agentgauge metrics` prints them: a fraction of a cent is never "$0.0000".
_ENV.filters["money"] = money
_ENV.globals.update(
    run_url=run_url,
    query=_query,
    json_link=_json_link,
    version=__version__,
    max_text=MAX_TEXT,
    null_reasons=null_reason_lines,
    success_se=success_se_of,
    comparison_null_reasons=comparison_null_reason_lines,
)


def _int(request: Request, name: str, default: int = 1) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise HTTPException(400, f"{name} must be a whole number, got {raw[:40]!r}") from None


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "") not in ("", "0", "false")


_ENV.globals["flag"] = _flag


def _json(data: Any) -> Response:
    body = json.dumps(data, allow_nan=False, default=str, ensure_ascii=False)
    return Response(body, media_type="application/json")


#: A diff side's choice of one (agent, model) configuration: ``a_agent``, ``a_model``,
#: ``b_agent``, ``b_model`` in the address, as ``#agent=``/``#model=`` on a SOURCE of
#: ``agentgauge compare``; ``None`` where the side does not choose, `NOT_RECORDED` for
#: the trials that record no agent (no model): ``a_no_agent=1`` (``a_no_model=1``).
Chosen = tuple[str | None, str | None]
#: A choice of the trials with no agent (model) recorded is `NOT_RECORDED`, compare's
#: ``#agent=``. The address says it with a flag of its own: an empty ``a_agent=`` is what
#: the form sends for an empty box, "no choice".
_COLUMNS = ("agent", "model")


def _chosen(request: Request, side: str) -> Chosen:
    def one(column: str) -> str | None:
        name = request.query_params.get(f"{side}_{column}") or None
        if name is None and _flag(request, f"{side}_no_{column}"):
            return NOT_RECORDED
        return name

    return (one("agent"), one("model"))


def _chosen_params(side: str, chosen: Chosen) -> dict[str, Any]:
    """The address's parameters of a side's choice (`_chosen` reads them back)."""
    out: dict[str, Any] = {}
    for column, value in zip(_COLUMNS, chosen, strict=True):
        if value == NOT_RECORDED:
            out[f"{side}_no_{column}"] = True
        elif value is not None:
            out[f"{side}_{column}"] = value
    return out


def _choice_words(chosen: Chosen, sep: str = " and ") -> str:
    """``agent careful and model not recorded``: a side's choice, in words."""
    return sep.join(
        f"{column} {'not recorded' if value == NOT_RECORDED else value}"
        for column, value in zip(_COLUMNS, chosen, strict=True)
        if value is not None
    )


def _side_label(run_id: str, chosen: Chosen) -> str:
    """A side's name as compare's SOURCE spells it: ``RUN#agent=A,model=M`` (``model=``
    for `NOT_RECORDED`: the trials that record no model)."""
    parts = [
        f"{column}={value}"
        for column, value in zip(_COLUMNS, chosen, strict=True)
        if value is not None
    ]
    return run_id + ("#" + ",".join(parts) if parts else "")


class _PickOne(Exception):
    """A diff side that is not one system: the configurations it holds, to pick from."""

    def __init__(
        self, message: str, side: str, configs: list[tuple[str | None, str | None, int]]
    ) -> None:
        super().__init__(message)
        self.message, self.side, self.configs = message, side, configs


class Viewer:
    """The app's state: the read-only store and the caches of computed pages."""

    def __init__(self, store_path: str | Path) -> None:
        self.store_path = str(store_path)
        self._store: Store | None = None
        # Each cache is keyed by `version` of the runs it reads.
        self.tables = Memo(keep=4)  # the largest entries: a column per trial field
        self.summaries = Memo(keep=64)
        self.cells = Memo(keep=16)
        self.diffs = Memo(keep=16)
        # `run_stamp` per run, good while no other connection committed to the store.
        self._stamps: dict[str, tuple[Any, ...]] = {}
        self._data_version: int | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            # Opened in the server's event-loop thread, which runs every handler.
            self._store = Store(self.store_path, readonly=True)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def version(self, run: dict[str, Any]) -> tuple[Any, ...]:
        """What a run's computed pages depend on: its id, active grade version, trial
        count (a re-grade activated, trials added by a resumed run) and `run_stamp`
        (figures ``collect`` updated in place when it joined spans to stored trials).

        The stamp is read again only after another connection committed to the store
        (SQLite's ``PRAGMA data_version``): while nothing writes, a page costs no scan."""
        (data_version,) = self.store.conn.execute("PRAGMA data_version").fetchone()
        if data_version != self._data_version:
            self._stamps.clear()
            self._data_version = data_version
        run_id = run["run_id"]
        stamp = self._stamps.get(run_id)
        if stamp is None:
            stamp = self._stamps[run_id] = queries.run_stamp(self.store, run_id)
        return (run_id, run["grade_version"], run["n_trials"], stamp)

    def page(self, request: Request, template: str, data: dict[str, Any], **extra: Any) -> Response:
        """The page, or its JSON twin with ``?format=json``."""
        if request.query_params.get("format") == "json":
            return _json(data)
        html = _ENV.get_template(template).render(data=data, request=request, **extra)
        return HTMLResponse(html)

    def table(self, run: dict[str, Any]) -> TrialTable:
        """The run's columnar table (`Store.columns`), read once per version of the run."""
        return self._columns(run)[0]

    def judged(self, run: dict[str, Any]) -> npt.NDArray[np.bool_]:
        """Per row of `table`: whether a model judge graded the trial (the ``judged``
        fact), so the judge's total tells "no judge" from "judge price unknown" as
        ``agentgauge metrics`` does; without it the page said "no trial records a judge
        cost" where the terminal said "not applicable", and summed a partly priced
        judge's spend."""
        return self._columns(run)[1]

    def _columns(self, run: dict[str, Any]) -> tuple[TrialTable, npt.NDArray[np.bool_]]:
        def read() -> tuple[TrialTable, npt.NDArray[np.bool_]]:
            table, facts = self.store.columns(run["run_id"], grade_version=run["grade_version"])
            return table, np.asarray(facts["judged"], dtype=bool)

        columns: tuple[TrialTable, npt.NDArray[np.bool_]] = self.tables.get(self.version(run), read)
        return columns

    def components(
        self, run: dict[str, Any], table: TrialTable, chosen: Chosen = (None, None)
    ) -> tuple[dict[str, Any], str | None]:
        """The run's configuration (of the ``chosen`` agent and model, whose trials are
        ``table``) and its agent's name, as `agentgauge compare` reads a stored run's."""
        calls = ModelCalls.of_run(self.store, run["run_id"], agent=chosen[0], model=chosen[1])
        header = self.store.get_run(run["run_id"])
        agent = agent_name(SystemInfo(run["run_id"], table, header))
        return side_components(header, table.codes("model")[0], calls.served), agent

    def system(self, run: dict[str, Any], side: str, chosen: Chosen) -> TrialTable:
        """The run's trials of the configuration ``chosen`` (all of them when nothing
        is), refused with `_PickOne` unless they are one (agent, model) configuration:
        `agentgauge compare` refuses to pool two agents into a system that never
        existed (`sources.require_one_configuration`), and so does the diff."""
        table = self.table(run)
        held = configurations(table)
        name = f"{side.upper()} (run {run['run_id']})"
        try:
            # The rows compare's ``#agent=``/``#model=`` keep, refused when none.
            rows = selected_rows(table, Selector(*chosen), run["run_id"], run["run_id"])
        except InputError:
            rows = np.zeros(len(table), dtype=bool)
        if not rows.any():
            what = _choice_words(chosen)
            raise _PickOne(f"{name} has no trials of {what}", side, held)
        kept = table if rows.all() else table.take(np.flatnonzero(rows))
        if len(configurations(kept)) > 1:
            raise _PickOne(
                f"{name} holds {len(held)} (agent, model) configurations and is compared "
                "as one system",
                side,
                held,
            )
        return kept

    def header(self, run_id: str) -> dict[str, Any]:
        run = queries.run_header(self.store, run_id)
        if run is None:
            raise HTTPException(404, "no such run in this store")
        return run

    # ------------------------------------------------------------------ pages

    async def runs(self, request: Request) -> Response:
        page = queries.runs_page(self.store, _int(request, "page"))
        data = {"schema": "agentgauge.runs/1", "runs": page.rows, "page": page.to_dict()}
        return self.page(request, "runs.html.j2", data, store=self.store_path)

    async def run(self, request: Request) -> Response:
        run = self.header(_run_id(request))
        summary = self.summaries.get(
            self.version(run), lambda: summarise(self.table(run), self.judged(run))
        )
        data = {
            "schema": "agentgauge.viewer.run/1",
            "run": run,
            "scope": summary["scope"],
            "base": summary["base"],
            "variants": summary["variants"],
        }
        return self.page(request, "run.html.j2", data, figures=summary["figures"])

    async def tasks(self, request: Request) -> Response:
        run = self.header(_run_id(request))
        variant = request.query_params.get("variant") or None
        task = request.query_params.get("task") or None
        failed, flaky = _flag(request, "failed"), _flag(request, "flaky")
        filters = {"variant": variant, "task": task, "failed": failed, "flaky": flaky}
        cells: list[queries.Cell] = self.cells.get(
            self.version(run), lambda: queries.task_cells(self.store, run["run_id"])
        )
        page = queries.task_page(
            self.store,
            run["run_id"],
            cells,
            variant=variant,
            task_id=task,
            failed_only=failed,
            flaky_only=flaky,
            page=_int(request, "page"),
        )
        data = {
            "schema": "agentgauge.viewer.tasks/1",
            "run": run,
            "filters": filters,
            "variants": sorted({c.variant for c in cells}, key=lambda v: (v != "base", v)),
            "tasks": page.rows,
            "page": page.to_dict(),
        }
        return self.page(request, "tasks.html.j2", data)

    async def trial(self, request: Request) -> Response:
        run = self.header(_run_id(request))
        raw = request.path_params["pk"]
        # A trial's key is a SQLite rowid: 1 to 2**63 − 1. A longer number overflowed the
        # query's bind and answered 500.
        pk = int(raw) if is_digits(raw) and len(raw) <= 19 else 0
        if not 1 <= pk < 2**63:
            raise HTTPException(404, "no such trial in this run")
        trial = queries.load_trial(self.store, run["run_id"], pk)
        if trial is None:
            raise HTTPException(404, "no such trial in this run")
        # The document `agentgauge show DB:RUN --task T --trial N --variant V --json`
        # prints, narrowed to this trial, with the viewer's address of it.
        data = {
            "schema": "agentgauge.show/1",
            "view": "trials",
            "source": f"{self.store_path}:{run['run_id']}",
            "task_id": trial.task_id,
            "trial": trial.trial,
            "variant": trial.variant,
            "failed_only": False,
            "trials": [trial_view(trial)],
            "run": run,
            "pk": pk,
        }
        return self.page(request, "trial.html.j2", data)

    async def diff(self, request: Request) -> Response:
        a_id, b_id = request.query_params.get("a"), request.query_params.get("b")
        # No variant: each side as `agentgauge compare` reads it (`run_diff`).
        variant = request.query_params.get("variant") or None
        # The runs compared are offered whatever their age: a form that showed another
        # run selected would compare that one when sent again.
        runs, n_runs = queries.run_ids(self.store, keep=[r for r in (a_id, b_id) if r])
        offered = {"runs": runs, "n_runs": n_runs}
        if not a_id or not b_id:
            data = {"schema": "agentgauge.viewer.diff-choose/1", **offered}
            return self.page(request, "diff_choose.html.j2", data, variant=variant)
        a, b = self.header(a_id), self.header(b_id)
        chosen_a, chosen_b = _chosen(request, "a"), _chosen(request, "b")
        key = (self.version(a), chosen_a, self.version(b), chosen_b, variant)
        diff: dict[str, Any] = self.diffs.peek(key)
        if diff is None:
            # The tables are read here, on the event loop's thread, which owns the store's
            # connection; the diff of them is computed on a worker thread, so that other
            # pages are served meanwhile.
            try:
                table_a, table_b = self.system(a, "a", chosen_a), self.system(b, "b", chosen_b)
            except _PickOne as pick:
                return _pick_page(request, pick, offered, variant)
            # Each side's configuration as `agentgauge compare` reads it, so the verdict
            # says what compare's says (not attributable when two components changed).
            (side_a, agent_a), (side_b, agent_b) = (
                self.components(a, table_a, chosen_a),
                self.components(b, table_b, chosen_b),
            )
            diff = await run_in_threadpool(
                self.diffs.get,
                key,
                lambda: run_diff(
                    table_a,
                    table_b,
                    label_a=_side_label(a["run_id"], chosen_a),
                    label_b=_side_label(b["run_id"], chosen_b),
                    variant=variant,
                    components=(side_a, side_b),
                    agents=(agent_a, agent_b),
                ),
            )
        changed = _flag(request, "changed")
        rows = [r for r in diff["tasks"] if not changed or r["change"] != "same"]
        size = queries.PAGE_SIZE * 2
        pages = max(1, -(-len(rows) // size))
        shown = min(max(1, _int(request, "page")), pages)
        if request.query_params.get("format") == "json":
            return _json({**diff, "tasks": rows, "run_a": a, "run_b": b})
        context = {
            "diff": diff,
            "a": a,
            "b": b,
            "rows": rows[(shown - 1) * size : shown * size],
            "page": {"page": shown, "pages": pages, "total": len(rows)},
            "changed": changed,
            "variant": variant,
            **offered,
            # Each side's choice in words, and in the address (the pager's links).
            "chosen": {"a": _choice_words(chosen_a, ", "), "b": _choice_words(chosen_b, ", ")},
            "params": {
                "a": a["run_id"],
                **_chosen_params("a", chosen_a),
                "b": b["run_id"],
                **_chosen_params("b", chosen_b),
                "variant": variant,
                "changed": changed,
            },
        }
        html = _ENV.get_template("diff.html.j2").render(
            data=context, request=request, variant=variant
        )
        return HTMLResponse(html)


async def _unreadable(request: Request, exc: Exception) -> Response:
    """A page whose rows the store cannot give back (a run's damaged config, a trial's
    damaged metadata, a damaged SQLite page): an error page naming what is damaged,
    and one line on the server's terminal, as the commands print it (no traceback:
    the store is damaged, the viewer is not broken)."""
    error = database_error(exc) if isinstance(exc, sqlite3.DatabaseError) else exc
    detail = str(error) if isinstance(error, AgentgaugeError) else "the store cannot be read"
    # The address is whoever sent it's, the detail may quote the store's rows: controls
    # in either are shown as escapes, never sent to the terminal.
    line = visible(f"agentgauge view: error: {request.url.path}: {detail}")
    print(line, file=sys.stderr, flush=True)
    return _error_page(request, 500, detail)


async def _not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return _error_page(request, status, detail)


def _quoted_names(names: Sequence[str | None]) -> list[str]:
    """Each of ``names`` quoted as the CLI's lists of names quote them (`quoted`: two
    names that print alike read apart), ``None`` as ``not recorded``."""
    given = [n for n in names if n is not None]
    shown = iter(quoted(given))
    return ["not recorded" if n is None else next(shown) for n in names]


def _naming(
    agent: str | None, model: str | None, held: list[tuple[str | None, str | None]]
) -> Chosen:
    """The shortest choice that picks the configuration (``agent``, ``model``) alone of
    those ``held``, as compare's selectors: the agent, else the model, else both; an
    unrecorded one as `NOT_RECORDED` (a choice that left it out would pick again the
    side the user is asked to narrow)."""
    want = (NOT_RECORDED if agent is None else agent, NOT_RECORDED if model is None else model)
    for chosen in ((want[0], None), (None, want[1])):
        if sum(_picks(chosen, config) for config in held) == 1:
            return chosen
    return want


def _picks(chosen: Chosen, config: tuple[str | None, str | None]) -> bool:
    return all(picks(v, c) for c, v in zip(chosen, config, strict=True))


def _pick_page(
    request: Request, pick: _PickOne, offered: dict[str, Any], variant: str | None
) -> Response:
    """A 400 for a diff side that is not one system: compare's message, and a link to
    the diff of each configuration the side holds (its ``a_agent``/``a_model``)."""
    side = pick.side
    chosen_keys = {f"{side}_{c}" for c in _COLUMNS} | {f"{side}_no_{c}" for c in _COLUMNS}
    kept = {
        k: v for k, v in request.query_params.items() if k not in ("format", "page", *chosen_keys)
    }
    held = [(a, m) for a, m, _ in pick.configs]
    choices: list[dict[str, Any]] = []
    for agent, model, n in pick.configs:
        choices.append(
            {
                "agent": agent,
                "model": model,
                "n_trials": n,
                "href": "/diff"
                + _query(**kept, **_chosen_params(side, _naming(agent, model, held))),
            }
        )
    # Quoted as compare's "pick one" list quotes them ('careful ' and 'careful' apart).
    agents = _quoted_names([c["agent"] for c in choices])
    models = _quoted_names([c["model"] for c in choices])
    labels = [f"agent {a}, model {m}" for a, m in zip(agents, models, strict=True)]
    listed = "; ".join(
        f"{label} ({counted(c['n_trials'], 'trial')})"
        for label, c in zip(labels, choices, strict=True)
    )
    detail = f"{pick.message}; pick one: {listed}"
    if request.query_params.get("format") == "json":
        body = json.dumps(
            {"error": detail, "status": 400, "side": pick.side, "choices": choices},
            ensure_ascii=False,
        )
        return Response(body, status_code=400, media_type="application/json")
    html = _ENV.get_template("diff_pick.html.j2").render(
        request=request,
        data=offered,
        variant=variant,
        message=pick.message,
        choices=list(zip(choices, labels, strict=True)),
    )
    return HTMLResponse(html, status_code=400)


def _error_page(request: Request, status: int, detail: str) -> Response:
    if request.query_params.get("format") == "json":
        body = json.dumps({"error": detail, "status": status})
        return Response(body, status_code=status, media_type="application/json")
    html = _ENV.get_template("error.html.j2").render(status=status, detail=detail)
    return HTMLResponse(html, status_code=status)


class _RunPaths:
    """Routes ``/runs/...`` addresses on the path as sent, not as decoded.

    A run id may contain ``/``; its address has it as ``%2F`` (`run_url`). The server
    decodes the path before routing, so ``/runs/x%2Ftasks`` (run ``x/tasks``) would be
    routed as the tasks page of run ``x``. Here the segment after ``/runs/`` is taken
    from the raw path and kept encoded (in one canonical form) for the routes, which
    match it as one segment; the rest of the address is decoded as usual."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if isinstance(raw, bytes) and raw.startswith(b"/runs/"):
            run, slash, rest = raw[len(b"/runs/") :].partition(b"/")
            path = "/runs/" + quote(unquote_to_bytes(run), safe="")
            if slash:
                path += "/" + unquote(rest.decode("latin-1"))
            scope = {**scope, "path": path}
        await self.app(scope, receive, send)


class _SecurityHeaders:
    """Adds the Content-Security-Policy and its companions to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.update(_HEADERS)
                asset = scope["path"].startswith(("/static/", "/assets/"))
                headers["Cache-Control"] = _ASSET_CACHE if asset else _PAGE_CACHE
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(store_path: str | Path, hosts: Sequence[str] = LOOPBACK_HOSTS) -> Starlette:
    """The viewer of the store at ``store_path`` (opened read-only on first use),
    answering requests whose ``Host`` is one of ``hosts`` (without the port; an IPv6
    address in brackets; ``*`` any) and 400 to others."""
    viewer = Viewer(store_path)

    async def plotly_js(request: Request) -> Response:
        return FileResponse(_PLOTLY_JS, media_type="text/javascript")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        warm_up()
        try:
            yield
        finally:
            viewer.close()

    app = Starlette(
        routes=[
            Route("/", viewer.runs),
            Route("/diff", viewer.diff),
            # The run id is one segment, still percent-encoded (`_RunPaths`): a "/" in
            # it (sent as %2F) never makes another route match.
            Route("/runs/{run_id}/trials/{pk}", viewer.trial),
            Route("/runs/{run_id}/tasks", viewer.tasks),
            Route("/runs/{run_id}", viewer.run),
            Route("/assets/plotly.min.js", plotly_js),
            Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
        ],
        exception_handlers={
            HTTPException: _not_found,
            AgentgaugeError: _unreadable,
            sqlite3.DatabaseError: _unreadable,
            Exception: _not_found,
        },
        lifespan=lifespan,
        middleware=[
            Middleware(_SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts), www_redirect=False),
            Middleware(_RunPaths),
        ],
    )
    app.state.viewer = viewer
    return app
