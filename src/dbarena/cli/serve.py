"""`serve`: the store as live web pages (serve/app.py), served by uvicorn. Needs the
optional extra dbarena[serve]; without it, one line says how to install it."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dbarena.cli.app import cli, store_option
from dbarena.errors import DbarenaError, UsageError
from dbarena.masking import masked

if TYPE_CHECKING:
    from dbarena.serve.app import Reader

DEFAULT_PORT = 8642
TOKEN_ENV = "DBARENA_SERVE_TOKEN"
# The shortest token taken: a guess must not be within reach of a script.
MIN_TOKEN = 16
# What the extra brings (and what those bring): a missing one of these is the extra missing.
EXTRA_MODULES = {"starlette", "uvicorn", "anyio", "h11", "sniffio"}
INSTALL = "dbarena serve needs its extra: pip install 'dbarena[serve]'"


@cli.command("serve")
@store_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Any but 127.0.0.1, localhost or ::1 (e.g. 0.0.0.0 behind a "
                   "proxy) asks every request for the token.")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_PORT, show_default=True,
              help="The port to listen on.")
@click.option("--token", envvar=TOKEN_ENV, show_envvar=True, metavar="TOKEN",
              help=f"The token every request must carry (at least {MIN_TOKEN} characters); without it, one is "
                   f"made and printed when another --host needs one. Give it as {TOKEN_ENV} rather than on the "
                   "command line, where every user of the machine can read it (ps).")
@click.pass_context
def serve_command(ctx: click.Context, store: Path | str, host: str, port: int, token: str | None) -> int:
    """Browse the store in a web browser, read-only: Home (studies, labels, hosts and runs,
    newest first; a running run's points, and the point it is measuring second by second,
    update by themselves), Decide (a baseline and
    labels chosen in the address: the decision as `dbarena report` gives it), a workload
    (the sweep, latency percentiles, the bound and points of each level), History (change
    points and their causes, each linked to the diff of its runs), Hosts (probes, hosts
    far from their kind flagged), a run, and a point (its per-second series zoomable, the
    server's waits, the machine's CPU and I/O, command, configuration, provenance and raw
    output, passwords masked). Ctrl-C stops it.

    Listens on 127.0.0.1 unless --host says otherwise; then every request must carry a
    token (printed at start unless given): a first visit to ...?token=TOKEN keeps it in a
    cookie, a proxy or a script sends Authorization: Bearer TOKEN. docs/serve.md: running
    it for a team on a shared PostgreSQL store, behind a proxy."""
    try:
        import uvicorn

        from dbarena.serve import app as serve_app
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in EXTRA_MODULES:
            raise UsageError(INSTALL) from None
        raise
    if token is not None and len(token.strip()) < MIN_TOKEN:
        raise UsageError(f"--token: at least {MIN_TOKEN} characters (or leave it out: one is made)")
    if token is not None and ctx.get_parameter_source("token") == click.core.ParameterSource.COMMANDLINE:
        click.echo(f"dbarena serve: note: a --token on the command line is visible to every user of this machine; "
                   f"set {TOKEN_ENV} instead", err=True)
    made = None
    if token is None and host not in serve_app.LOOPBACK:
        token = made = secrets.token_urlsafe(24)
    listening = _listen(host, port)
    app = serve_app.create_app(store, token=token, loopback_only=host in serve_app.LOOPBACK)
    _check_store(serve_app.Reader(store, workers=1))
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{port}/"
    if made is not None:
        click.echo(f"dbarena serve: {address}?token={made} (the token is kept in a cookie after the first visit; a "
                   "proxy or a script sends Authorization: Bearer TOKEN)", err=True)
    else:
        click.echo(f"dbarena serve: {address}" + (" (every request needs the token)" if token else ""), err=True)
    click.echo(f"dbarena serve: store {store}, read-only; Ctrl-C stops", err=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False, lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[listening])
    except KeyboardInterrupt:  # Ctrl-C: how a server is stopped, not a failure
        pass
    finally:
        listening.close()
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket at host:port, or one line saying why not (the port taken, an
    address not of this machine): bound here, before uvicorn, which would log and exit."""
    try:
        family, kind, proto, _, where = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                           flags=socket.AI_PASSIVE)[0]
        listening = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"--host {host}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(where)
        listening.listen(128)
    except OSError as exc:
        listening.close()
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    return listening


def _check_store(reader: Reader) -> None:
    """The store read once before serving: a problem is said here too (the pages say it
    until it is solved: a store that a first run is about to make, say)."""
    try:
        reader.open().close()
    except DbarenaError as exc:
        click.echo(f"dbarena serve: warning: {' '.join(masked(str(exc)).split())}; the pages say so until it can be read",
                   err=True)
    finally:
        reader.close()
