"""The web application of `dbarena serve` (Starlette): its routes, the token it asks
for, the headers every answer carries, and the store, opened read-only.

    app = create_app(Path("dbarena.db"), token=None)   # served by uvicorn (cli/serve.py)

Every page reads the store in a worker thread of a small pool, each thread with a
read-only connection of its own (SQLite's connections belong to the thread that made
them; a pool of four also bounds a PostgreSQL store's connections); a connection that
fails is dropped and the next request opens another, so a store that appears, is
replaced or comes back is read again without a restart. Nothing here writes: every route
answers GET (and HEAD) only.

A problem (no store there, a damaged file, a store of a newer dbarena, a label the store
does not hold) is one line on the page, with a status that says what kind: 404 for what
is not there, 400 for a choice the store cannot answer, 503 for a store that cannot be
read now, 500 for anything else (and one line on the server's stderr). Never a traceback.
"""

from __future__ import annotations

import asyncio
import hmac
import re
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from dbarena import bulk
from dbarena.errors import DbarenaError, StoreError, UsageError
from dbarena.limits import printable
from dbarena.masking import masked
from dbarena.records import AnalysedPoint, LevelComparison, StoredRun
from dbarena.report.data import Report
from dbarena.report.levelprofiles import Profiled
from dbarena.report.shown import Links
from dbarena.report import html as report_html
from dbarena.serve import live, pages
from dbarena.store.database import Store
from dbarena.store.dialect import file_identity

# Nothing but the server's own files: scripts from /static (no inline script), its style
# sheets, and fetches of its own live data; no frame may hold a page, no form post
# elsewhere. A label holding <script> could not run even if it slipped through.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # The first address holds the token (?token=): no page sends its address on.
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    # What a page shows changes as runs store points, and it is the store's, not a cache's.
    "Cache-Control": "no-store",
}
# The token's cookie, named after the port the server listens on: a browser sends a
# host's cookies to every port of it (cookies ignore ports), so two servers on one host
# would otherwise overwrite each other's under one name (cookie_name).
COOKIE = "dbarena_serve_token"
# Hosts whose address only this machine reaches: served without a token, but only to
# requests that name them (a web page elsewhere cannot rebind its own name to 127.0.0.1
# and read the store through the visitor's browser).
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Runs whose points a page analyses (steady state, bound, warnings); beyond, the stored
# figures only (an imported run can hold hundreds of thousands).
ANALYSED_POINTS = 5000
WORKERS = 4

T = TypeVar("T")


class NotFound(DbarenaError):
    """A run or point the store does not hold."""


class Reader:
    """The store, read-only, a connection per worker thread, opened on first use."""

    def __init__(self, location: Path | str, workers: int = WORKERS):
        self.location = location
        self.workers = workers
        self.pool: ThreadPoolExecutor | None = None  # made on first use, again after close()
        self.local = threading.local()
        self.plans = live.Plans()
        self.latests = live.Latests()
        # (device, inode) of the file at an SQLite store's path when last opened: a file
        # renamed over it (an import's, a copy restored) is another store.
        self.identity: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def open(self) -> Store:
        """The store as every reading command opens it (cli.app.open_store): a file that
        is not there is said so, not created."""
        if isinstance(self.location, Path) and not self.location.exists():
            raise StoreError(f"no results store at {self.location} (run `dbarena run` first, or pass --store)")
        return Store(self.location, readonly=True, create=False)

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        store: Store | None = getattr(self.local, "store", None)
        now = file_identity(self.location) if isinstance(self.location, Path) else None
        if store is not None and now != getattr(self.local, "identity", None):
            # The file at the path is not the one this connection reads (SQLite goes on
            # reading the inode it opened, renamed over or removed): open the path again.
            self._drop(store)
            store = None
        if store is None:
            self._replaced(now)
            store = self.open()  # (the identity taken before: a file replaced meanwhile is seen next time)
            self.local.store, self.local.identity = store, now
        failures: tuple[type[BaseException], ...] = (sqlite3.Error, *store.errors)
        try:
            return fn(store, *args)
        except failures as exc:
            self._drop(store)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreError(f"store {store.location} cannot be read now: {first}") from None
        except StoreError:
            self._drop(store)
            raise

    def _replaced(self, now: tuple[int, int] | None) -> None:
        """Forget what was kept of the runs (plans, last points: by run and point id) when
        the file is another than the one last opened: its ids are another store's."""
        with self._lock:
            if now != self.identity:
                if self.identity is not None:
                    self.plans, self.latests = live.Plans(), live.Latests()
                self.identity = now

    def _drop(self, store: Store) -> None:
        self.local.store = None
        try:
            store.close()
        except Exception:  # (a connection already broken: nothing more to undo)
            pass

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="dbarena-serve")
        return await asyncio.get_running_loop().run_in_executor(self.pool, self._call, fn, args)

    def close(self) -> None:
        """The worker threads stopped (their connections go with them)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


def _one_line(exc: BaseException) -> str:
    return printable(" ".join(masked(str(exc)).split())) or type(exc).__name__


# Views kept (the pages a report model makes: Decide, a workload, History, Hosts, a
# diff): a view of 4 labels over 10 k points costs seconds to derive and is the same
# page until the store changes. Bounded: a page is at most a few MB.
CACHED_VIEWS = 32


# Report models kept (a choice of labels and baseline: its report and each level's
# points), shared by Decide and the workload pages of that choice.
CACHED_MODELS = 4


class Kept(Generic[T]):
    """Values already made, by (what, its arguments, the store's data version): one small
    query (Store.data_version) tells whether a value still holds; the least recently
    used goes first. A problem (an exception) is not kept."""

    def __init__(self, size: int):
        self.size = size
        self._kept: OrderedDict[tuple[Any, ...], T] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, name: str, fn: Callable[..., T]) -> Callable[..., T]:
        """fn(store, *args), answered from what is kept while the store holds the same data."""
        def made(store: Store, *args: Any) -> T:
            # (The file's identity too: a store renamed over the path may hold the same
            # version, its points' highest id and count and its runs' ends, with other figures.)
            key = (name, tuple(tuple(a) if isinstance(a, list) else a for a in args), store.data_version(),
                   file_identity(store.path) if store.path is not None else None)
            with self._lock:
                if key in self._kept:
                    self._kept.move_to_end(key)
                    return self._kept[key]
            value = fn(store, *args)
            with self._lock:
                self._kept[key] = value
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
            return value
        return made


class Views(Kept[str]):
    """Pages already made (Kept), CACHED_VIEWS of them."""

    def __init__(self, size: int = CACHED_VIEWS):
        super().__init__(size)


class _Pages:
    """The routes, over one Reader."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self.location = str(reader.location)
        self.views = Views()
        # A choice's report model, derived once for Decide and its workloads alike.
        self.model = Kept[Model](CACHED_MODELS).of("model", _model)

    async def page(self, title: str, fn: Callable[..., str], *args: Any, kept: bool = False) -> Response:
        """The page fn(store, *args) makes, in a worker thread; with `kept`, from the
        views kept while the store's data are the same (Views)."""
        try:
            body = await self.reader(self.views.of(fn.__name__, fn) if kept else fn, *args)
        except _Choice as exc:  # a choice the store cannot answer: the form, and why
            return HTMLResponse(pages.frame(title, exc.body, self.location), status_code=400)
        except NotFound as exc:
            return self.problem(title, exc, 404)
        except StoreError as exc:
            return self.problem(title, exc, 503)
        except DbarenaError as exc:
            return self.problem(title, exc, 400)
        except Exception as exc:  # a bug: one line here and on the server's stderr, no traceback
            print(f"dbarena serve: error: {title}: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
            return self.problem(title, RuntimeError(f"internal error ({type(exc).__name__}); the server's log "
                                                    "says more"), 500)
        return HTMLResponse(pages.frame(title, body, self.location))

    def problem(self, title: str, exc: BaseException, status: int) -> Response:
        return HTMLResponse(pages.frame(title, pages.error(_one_line(exc)), self.location), status_code=status)

    # ------------------------------------------------------------------ routes

    async def home(self, request: Request) -> Response:
        return await self.page("Home", self._home)

    def _home(self, store: Store) -> str:
        runs = store.runs()
        progress = store.run_progress()
        measuring = live.measuring_of(store, progress)
        names: dict[str, str | None] = {}
        for sha in dict.fromkeys(r.study_sha256 for r in runs if r.study_sha256):
            record = store.study(sha)
            names[sha] = record.name if record else None
        lines = []
        for r in runs:
            done = progress.get(r.id)
            last = done.last_point_id if done is not None and r.status == "running" else None
            lines.append(pages.RunLine(
                run=r, study=names.get(r.study_sha256 or ""), points=done.points if done else 0,
                failed=done.failed if done else 0,
                plan=self.reader.plans.of(store, r) if r.status == "running" else None,
                latest=live.measuring_text(measuring[r.id]) if r.id in measuring
                else live.latest_text(self.reader.latests.of(store, last) if last is not None else None)
                if r.status == "running" else None))
        return pages.home(lines, self.location)

    async def decide(self, request: Request) -> Response:
        baseline = request.query_params.get("baseline") or None
        chosen = list(dict.fromkeys(request.query_params.getlist("label")))
        per = request.query_params.get("per", "")
        about = list(dict.fromkeys(request.query_params.getlist("about")))
        return await self.page("Decide", self._decide, baseline, chosen, per, about, kept=True)

    def _decide(self, store: Store, baseline: str | None, chosen: list[str], per: str = "",
                about: Sequence[str] = ()) -> str:
        stored = list(dict.fromkeys(r.label for r in store.runs()))
        if per not in pages.VIEWS:
            views = ", ".join(f"per={key}" for key in pages.VIEWS if key)
            raise _Choice(pages.decide(None, stored, baseline, chosen, problem=f"per={printable(per)!r}: "
                                       f"no such view (views: {views}, or none for the throughput)", about=about))
        if not stored:
            return pages.decide(None, stored, baseline, chosen, problem=f"no runs in {store.location} yet", per=per,
                                about=about)
        baseline = baseline or (chosen[0] if chosen else stored[0])
        try:
            report, links, profiled = self.model(store, baseline, chosen, list(about))
        except UsageError as exc:
            raise _Choice(pages.decide(None, stored, baseline, chosen, problem=_one_line(exc), per=per,
                                       about=about)) from None
        from dbarena.report import profileview

        return pages.decide(report, stored, baseline, chosen, links=links, per=per,
                            profiles=profileview.section(store, report, profiled), about=about)

    async def workload(self, request: Request) -> Response:
        query = request.query_params
        baseline = query.get("baseline") or None
        chosen = list(dict.fromkeys(query.getlist("label")))
        engine, workload = query.get("engine"), query.get("workload")
        return await self.page(f"{engine or ''} {workload or 'Workloads'}".strip(), self._workload, engine, workload,
                               baseline, chosen, kept=True)

    def _workload(self, store: Store, engine: str | None, workload: str | None, baseline: str | None,
                  chosen: list[str]) -> str:
        stored = list(dict.fromkeys(r.label for r in store.runs()))
        if not stored:
            raise NotFound(f"no runs in {store.location} yet")
        baseline = baseline or (chosen[0] if chosen else stored[0])
        report, links, _ = self.model(store, baseline, chosen, [])  # (the key Decide gives it: one model)
        if not engine or not workload:
            return pages.workloads(report, baseline, chosen)
        section = next((s for s in report.sections if (s.engine, s.workload) == (engine, workload)), None)
        if section is None:
            shown = ", ".join(f"{s.engine} {s.workload}" for s in report.sections)
            raise NotFound(f"no points of {engine} {workload} under the labels chosen (workloads: {shown})")
        return pages.workload(report, section, links.get((engine, workload), {}), stored,
                              baseline, chosen)

    async def history(self, request: Request) -> Response:
        return await self.page("History", self._history, list(dict.fromkeys(request.query_params.getlist("label"))),
                               kept=True)

    def _history(self, store: Store, chosen: list[str]) -> str:
        from dbarena.errors import ToolMissing
        from dbarena.stats import history

        stored = list(dict.fromkeys(r.label for r in store.runs()))
        try:
            found = history.of_store(store, history.Filter(labels=tuple(chosen)))
        except ToolMissing as exc:  # without the optional change-point library: said, not a 500
            return pages.history_page(history.History(), stored, chosen, problem=_one_line(exc))
        except UsageError as exc:
            raise _Choice(pages.history_page(history.History(), stored, chosen, problem=_one_line(exc))) from None
        return pages.history_page(found, stored, chosen)

    async def diff(self, request: Request) -> Response:
        try:
            before, after = (int(request.query_params.get(name, "")) for name in ("before", "after"))
        except ValueError:
            return self.problem("Diff", UsageError("before and after: two run ids (/diff?before=N&after=M)"), 400)
        return await self.page(f"Run {before} → {after}", self._diff, before, after, kept=True)

    def _diff(self, store: Store, before_id: int, after_id: int) -> str:
        from dbarena.stats import environment, gate

        if before_id == after_id:
            raise UsageError(f"before and after are both run {before_id}: give two runs")
        runs = []
        for run_id in (before_id, after_id):
            run = store.run(run_id)
            if run is None:
                raise NotFound(f"no run {run_id} in {store.location}")
            if store.run_progress([run_id])[run_id].points > ANALYSED_POINTS:
                raise DbarenaError(f"run {run_id} holds more than {ANALYSED_POINTS} points: compare it with "
                                   "`dbarena compare` instead")
            runs.append(run)
        compared, sides = diff_levels(store, runs[0].id, runs[1].id)
        # The runs' environments as History names its causes: the run and a point's configuration.
        envs = [environment.of_run(run, side[0].config or {} if side else {}) for run, side in zip(runs, sides)]
        changes = [(c.fact, c.before, c.after) for c in environment.changes(envs[0], envs[1])]
        facts = [(f, envs[0].facts.get(f), envs[1].facts.get(f)) for f in sorted(set(envs[0].facts) | set(envs[1].facts))]
        return pages.diff_page(runs[0], runs[1], changes, facts, compared, about=gate.ABOUT)

    async def hosts(self, request: Request) -> Response:
        return await self.page("Hosts", self._hosts, kept=True)

    def _hosts(self, store: Store) -> str:
        from dbarena.stats import outliers
        from dbarena.records import json_object

        by_host: dict[str, list[StoredRun]] = {}
        for r in store.runs():
            by_host.setdefault(r.host, []).append(r)
        probed: list[outliers.HostProbe] = []
        latest: dict[str, StoredRun] = {}
        for host, runs in by_host.items():
            with_probe = [r for r in runs if json_object(r.options.get("probe"))]
            if with_probe:
                newest = max(with_probe, key=lambda r: r.id)
                latest[host] = newest
                probed.append(outliers.HostProbe(host, newest.host_facts, json_object(newest.options.get("probe"))))
        # One derivation of "far from its kind": fleet/outliers.py's, as `dbarena fleet` flags it.
        found: dict[str, outliers.Finding] = {}
        for f in outliers.findings(probed):
            for host in (f.host, *f.host.split(" and ")):
                found.setdefault(host, f)
        lines = []
        for host, runs in by_host.items():
            last = latest.get(host)
            finding = found.get(host)
            stored_flag = next((str(r.options["probe_outlier"]) for r in runs if r.options.get("probe_outlier")), None)
            facts = (last or runs[-1]).host_facts
            lines.append(pages.HostLine(
                host=host, group=outliers.group_of(facts), runs=runs,
                probe=json_object(last.options.get("probe")) if last is not None else {},
                finding=finding.text if finding is not None else stored_flag,
                flagged=(finding.flagged if finding is not None else stored_flag is not None)))
        return pages.hosts_page(lines)

    async def toggles(self, request: Request) -> Response:
        """The label toggles' rules for the classes asked (digests only: no text of a label)."""
        classes = [c for c in request.query_params.getlist("c") if re.fullmatch(r"lbl-[0-9a-f]{12}", c)]
        return Response(report_html.toggle_rules(classes[:200]), media_type="text/css")

    async def run(self, request: Request) -> Response:
        return await self.page(f"Run {request.path_params['run_id']}", self._run, request.path_params["run_id"])

    def _run(self, store: Store, run_id: int) -> str:
        from dbarena.stats import analysis

        run = store.run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id} in {store.location}")
        points = store.points(run_id=run_id, warmups=True)
        analysed = ({a.point_id: a for a in analysis.load(store, run_id=run_id)}
                    if len(points) <= ANALYSED_POINTS else {})
        study: str | None = None
        if run.study_sha256:
            record = store.study(run.study_sha256)
            study = record.name if record else None
        measured = sum(p.phase == "measured" for p in points)
        plan = self.reader.plans.of(store, run) if run.status == "running" else None
        return pages.run_page(run, study, points, analysed, plan, measured)

    async def point(self, request: Request) -> Response:
        point_id = request.path_params["point_id"]
        return await self.page(f"Point {point_id}", self._point, point_id)

    def _point(self, store: Store, point_id: int) -> str:
        from dbarena.stats import analysis

        found = store.points(point_ids=(point_id,), warmups=True)
        if not found:
            raise NotFound(f"no point {point_id} in {store.location}")
        point = found[0]
        run = store.run(point.run_id)
        if run is None:
            raise NotFound(f"no run {point.run_id} in {store.location}")
        analysed: AnalysedPoint | None = None
        if point.phase == "measured" and store.run_progress([run.id])[run.id].points <= ANALYSED_POINTS:
            analysed = next((a for a in analysis.load(store, run_id=run.id) if a.point_id == point_id), None)
        try:
            stdout, stderr = store.raw_output(point_id)
            raw: tuple[str | None, str | None, str | None] = (stdout, stderr, None)
        except StoreError as exc:
            raw = (None, None, _one_line(exc))
        stored = store.server_series([point_id]).get(point_id)
        server = stored.record if stored is not None and isinstance(stored.record, dict) else None
        profile = store.profiles([point_id], folded=True).get(point_id)
        return pages.point_page(point, run, analysed, store.samples(point_id), store.point_command(point_id), *raw,
                                system=store.system_samples(point_id), server=server, profile=profile)

    async def raw(self, request: Request) -> Response:
        point_id = request.path_params["point_id"]
        try:
            text = await self.reader(self._raw, point_id)
        except NotFound as exc:
            return PlainTextResponse(_one_line(exc) + "\n", status_code=404)
        except DbarenaError as exc:
            return PlainTextResponse(_one_line(exc) + "\n", status_code=503)
        return PlainTextResponse(text, headers={
            "Content-Disposition": f'attachment; filename="dbarena-point-{point_id}.txt"'})

    def _raw(self, store: Store, point_id: int) -> str:
        found = store.points(point_ids=(point_id,), warmups=True)
        if not found:
            raise NotFound(f"no point {point_id} in {store.location}")
        stdout, stderr = store.raw_output(point_id)
        return pages.raw_text(found[0], stdout, stderr)

    async def live(self, request: Request) -> Response:
        """What a live page polls once a second: one small query of the store (and of an
        SQLite store's live sidecar while a run is running)."""
        given = request.query_params.get("runs", "")
        try:
            watched = sorted({int(part) for part in given.split(",") if part.strip()})[:100]
        except ValueError:
            return JSONResponse({"error": "runs: run ids separated by commas"}, status_code=400)
        try:
            return JSONResponse(await self.reader(live.snapshot, self.reader.plans, watched, self.reader.latests))
        except DbarenaError as exc:
            return JSONResponse({"error": _one_line(exc)}, status_code=503)

    async def style(self, request: Request) -> Response:
        """The report's own style sheet: one look for the file and the served page."""
        return Response(report_html.STYLE, media_type="text/css")


# The report, its levels' points (report/shown.py), and its profiled points by level
# (report/levelprofiles.py).
Model = tuple[Report, Links, Profiled]


def diff_levels(store: Store, before: int, after: int
                ) -> tuple[list[LevelComparison], tuple[list[AnalysedPoint], list[AnalysedPoint]]]:
    """The levels two runs both measured, as /diff shows them: each run a label of its own
    ("run N"), compared as the gate compares two runs (analysis.compare about the machine,
    the server and its settings; a level whose workload, clients or options differ is not
    comparable), every other point of the store lending the spread between sessions of
    the sides' configurations as it does to `compare`; and each run's points."""
    from dbarena.stats import analysis, gate

    sides = (analysis.load(store, run_id=before), analysis.load(store, run_id=after))
    if not all(sides):
        return [], sides
    names = f"run {before}", f"run {after}"
    # The store's other runs lend from their session summaries, not their points (but
    # where one's label is named as a side is: its points would join that side's groups).
    labels = tuple(dict.fromkeys(r.label for r in store.runs()))
    lent = [one for one in analysis.lent_sessions(store, labels) if one.run_id not in (before, after)]
    history: list[AnalysedPoint] = []
    if any(one.label in names for one in lent):
        history, lent = [p for p in analysis.load(store) if p.run_id not in (before, after)], []
    return analysis.compare(gate.as_labels(*zip(names, sides)), *names, about=gate.ABOUT, history=history,
                            lent=lent, interleaved=False), sides


def _preload() -> None:
    """What the first report model of the process imports besides dbarena (scipy's
    special functions for the intervals, stats/estimate.py, and its optimizer for the
    USL fit, report/scaling.py: 0.5 to 1 s), imported while the server waits for its
    first requests rather than inside the first Decide's (each command imports them
    only when it needs them, for a fast start)."""
    from dbarena.stats import estimate

    estimate.t_dist()
    import scipy.optimize  # noqa: F401  (report/scaling.py's usl_fit imports it where it fits)


def _model(store: Store, baseline: str | None, chosen: list[str], about: Sequence[str] = ()) -> Model:
    """The report of a choice (as `dbarena report` builds it, `about` as its --about),
    the points of each of its levels, and the profiled ones Decide pools."""
    from dbarena.report import assemble  # (its charts' modules load on first use)

    report, shown = assemble.build_shown(store, assemble.Selection(labels=tuple(chosen), baseline=baseline,
                                                                   about=tuple(about)))
    return report, shown.links, shown.profiled


class _Choice(Exception):
    """A Decide page whose choice the store cannot answer: its body, form included."""

    def __init__(self, body: str):
        super().__init__("a choice the store cannot answer")
        self.body = body


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


class _Guard(BaseHTTPMiddleware):
    """The token (when there is one) on every request, and the security headers on
    every answer. The token comes as `Authorization: Bearer TOKEN` (a proxy or a
    script), or in a cookie that the first visit's `?token=TOKEN` sets (a browser): that
    visit is sent on to the same address without it, so that the token stays out of
    the address bar, the history and any link copied from the page."""

    def __init__(self, app: ASGIApp, token: str | None):
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = self._checked(request)
        if response is None:
            response = await call_next(request)
        response.headers.update(HEADERS)
        return response

    def _checked(self, request: Request) -> Response | None:
        if self.token is None:
            return None
        given = request.query_params.get("token")
        if given is not None:
            if not _same(given, self.token):
                return _refused()
            query = request.url.remove_query_params("token").query
            answer = RedirectResponse(_here(request.url.path) + (f"?{query}" if query else ""), status_code=303)
            answer.set_cookie(cookie_name(request), self.token, httponly=True, samesite="strict", path="/",
                              secure=_over_tls(request))
            return answer
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer ") and _same(header.removeprefix("Bearer ").strip(), self.token):
            return None
        cookie = request.cookies.get(cookie_name(request))
        if cookie is not None and _same(cookie, self.token):
            return None
        return _refused()


def cookie_name(request: Request) -> str:
    """The token's cookie for the server that answers `request`: COOKIE and the port it
    listens on (behind a proxy too, where the browser's port is the proxy's)."""
    server = request.scope.get("server")
    port = server[1] if server and server[1] is not None else request.url.port
    return f"{COOKIE}_{port}" if port else COOKIE


def _over_tls(request: Request) -> bool:
    """Whether the browser reached us over TLS: the request's own scheme (uvicorn's, which
    also takes a trusted local proxy's X-Forwarded-Proto), or a proxy elsewhere saying so
    (X-Forwarded-Proto, Forwarded: proto=https). The cookie is then Secure, never sent
    over plain HTTP. Taken from any client: a client that claims https only keeps its own
    cookie from coming back over HTTP; no page can make a browser send these headers."""
    if request.url.scheme in ("https", "wss"):
        return True
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    claims = re.findall(r"proto=\"?([a-z]+)", request.headers.get("forwarded", "").split(",")[0].lower())
    return forwarded == "https" or claims[:1] == ["https"]


def _here(path: str) -> str:
    """A request's path as a redirect to this server only: a browser reads a Location of
    `//evil.example/` (or `/\\evil.example/`, a backslash taken for a slash) as another host,
    so the leading slashes and backslashes become one slash; what the path holds is
    percent-encoded again (its decoded form may hold a space, a CR or LF)."""
    return "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")


def host_of(header: str) -> str:
    """The host a Host header names, without its port: an IPv6 address in its brackets
    (`[::1]:8642` is ::1; split at the first colon it was `[`, and every request to
    `--host ::1` was refused)."""
    header = header.strip().lower()
    if header.startswith("["):
        inside, closed, rest = header[1:].partition("]")
        return inside if closed and (not rest or rest.startswith(":")) else ""
    return header.split(":", 1)[0]


class _LoopbackOnly:
    """Without a token: only requests that name a loopback host (LOOPBACK) are answered;
    any other Host is 400 in one line."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            named = host_of(Headers(scope=scope).get("host", ""))
            if named not in LOOPBACK:
                answer = PlainTextResponse(f"dbarena serve: host {printable(named[:100])!r}: this server answers only "
                                           "requests to 127.0.0.1, localhost or [::1]\n", status_code=400)
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _refused() -> Response:
    return PlainTextResponse(
        "dbarena serve: this server asks for its token: open the address it printed at start (...?token=TOKEN) "
        "once, or send the header Authorization: Bearer TOKEN\n", status_code=401,
        headers={"WWW-Authenticate": 'Bearer realm="dbarena"'})


async def _http_problem(request: Request, exc: Exception) -> Response:
    """Starlette's own answers (no such page, a method other than GET) as one line."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    return PlainTextResponse(f"dbarena serve: {request.method} {request.url.path}: {detail}\n", status_code=status)


STATIC = Path(__file__).parent / "static"


def create_app(location: Path | str, token: str | None = None, loopback_only: bool = True,
               workers: int = WORKERS) -> Starlette:
    """The application over the store at `location`. With a token, every request must
    carry it (_Guard); without one, only requests naming a loopback host are answered
    (`loopback_only`, what cli/serve.py asks when it binds 127.0.0.1)."""
    bulk.never_freeze()  # a process that serves request after request (bulk.py)
    reader = Reader(location, workers)
    routes = _Pages(reader)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        threading.Thread(target=_preload, name="preload", daemon=True).start()
        yield
        reader.close()

    middleware = [Middleware(_Guard, token=token)]
    if token is None and loopback_only:
        middleware.append(Middleware(_LoopbackOnly))
    return Starlette(
        routes=[
            Route("/", routes.home),
            Route("/decide", routes.decide),
            Route("/run/{run_id:int}", routes.run),
            Route("/point/{point_id:int}", routes.point),
            Route("/point/{point_id:int}/raw.txt", routes.raw),
            Route("/workload", routes.workload),
            Route("/history", routes.history),
            Route("/hosts", routes.hosts),
            Route("/diff", routes.diff),
            Route("/toggles.css", routes.toggles),
            Route("/live.json", routes.live),
            Route("/static/report.css", routes.style),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: _http_problem},
        lifespan=lifespan,
    )
