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
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from dbarena.errors import DbarenaError, StoreError, UsageError
from dbarena.limits import printable
from dbarena.masking import masked
from dbarena.records import AnalysedPoint
from dbarena.report import html as report_html
from dbarena.serve import live, pages
from dbarena.store.database import Store

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

    def open(self) -> Store:
        """The store as every reading command opens it (cli.app.open_store): a file that
        is not there is said so, not created."""
        if isinstance(self.location, Path) and not self.location.exists():
            raise StoreError(f"no results store at {self.location} (run `dbarena run` first, or pass --store)")
        return Store(self.location, readonly=True, create=False)

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        store: Store | None = getattr(self.local, "store", None)
        if store is None:
            store = self.open()
            self.local.store = store
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


class _Pages:
    """The routes, over one Reader."""

    def __init__(self, reader: Reader):
        self.reader = reader
        self.location = str(reader.location)

    async def page(self, title: str, fn: Callable[..., str], *args: Any) -> Response:
        try:
            body = await self.reader(fn, *args)
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
        names: dict[str, str | None] = {}
        for sha in dict.fromkeys(r.study_sha256 for r in runs if r.study_sha256):
            record = store.study_text(sha)
            name = record.get("name") if record else None
            names[sha] = name if isinstance(name, str) else None
        lines = []
        for r in runs:
            done = progress.get(r.id)
            lines.append(pages.RunLine(
                run=r, study=names.get(r.study_sha256 or ""), points=done.points if done else 0,
                failed=done.failed if done else 0,
                plan=self.reader.plans.of(store, r) if r.status == "running" else None))
        return pages.home(lines, self.location)

    async def decide(self, request: Request) -> Response:
        baseline = request.query_params.get("baseline") or None
        chosen = list(dict.fromkeys(request.query_params.getlist("label")))
        return await self.page("Decide", self._decide, baseline, chosen)

    def _decide(self, store: Store, baseline: str | None, chosen: list[str]) -> str:
        from dbarena.report import assemble  # (its charts' modules load on first use)

        stored = list(dict.fromkeys(r.label for r in store.runs()))
        if not stored:
            return pages.decide(None, stored, baseline, chosen, problem=f"no runs in {store.location} yet")
        baseline = baseline or (chosen[0] if chosen else stored[0])
        try:
            report = assemble.build(store, assemble.Selection(labels=tuple(chosen), baseline=baseline))
        except UsageError as exc:
            raise _Choice(pages.decide(None, stored, baseline, chosen, problem=_one_line(exc))) from None
        return pages.decide(report, stored, baseline, chosen)

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
        study = None
        if run.study_sha256:
            record = store.study_text(run.study_sha256)
            study = record.get("name") if record else None
        measured = sum(p.phase == "measured" for p in points)
        plan = self.reader.plans.of(store, run) if run.status == "running" else None
        return pages.run_page(run, study if isinstance(study, str) else None, points, analysed, plan, measured)

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
        return pages.point_page(point, run, analysed, store.samples(point_id), store.point_command(point_id), *raw)

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
        """What a live page polls once a second: one small query."""
        given = request.query_params.get("runs", "")
        try:
            watched = sorted({int(part) for part in given.split(",") if part.strip()})[:100]
        except ValueError:
            return JSONResponse({"error": "runs: run ids separated by commas"}, status_code=400)
        try:
            return JSONResponse(await self.reader(live.snapshot, self.reader.plans, watched))
        except DbarenaError as exc:
            return JSONResponse({"error": _one_line(exc)}, status_code=503)

    async def style(self, request: Request) -> Response:
        """The report's own style sheet: one look for the file and the served page."""
        return Response(report_html.STYLE, media_type="text/css")


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
            answer = RedirectResponse(request.url.path + (f"?{query}" if query else ""), status_code=303)
            answer.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/")
            return answer
        header = request.headers.get("authorization", "")
        if header.startswith("Bearer ") and _same(header.removeprefix("Bearer ").strip(), self.token):
            return None
        cookie = request.cookies.get(COOKIE)
        if cookie is not None and _same(cookie, self.token):
            return None
        return _refused()


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
    reader = Reader(location, workers)
    routes = _Pages(reader)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        reader.close()

    middleware = [Middleware(_Guard, token=token)]
    if token is None and loopback_only:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK)))
    return Starlette(
        routes=[
            Route("/", routes.home),
            Route("/decide", routes.decide),
            Route("/run/{run_id:int}", routes.run),
            Route("/point/{point_id:int}", routes.point),
            Route("/point/{point_id:int}/raw.txt", routes.raw),
            Route("/live.json", routes.live),
            Route("/static/report.css", routes.style),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=middleware,
        exception_handlers={HTTPException: _http_problem},
        lifespan=lifespan,
    )
