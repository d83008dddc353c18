"""`probe`: a few seconds of CPU, memory bandwidth and fsync latency on this machine
(host/probe.py measures; this prints)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from dbarena.cli.app import cli
from dbarena.errors import UsageError
from dbarena.host import datadir
from dbarena.host import probe as probe_mod
from dbarena.limits import MAX_SECONDS


@cli.command("probe")
@click.option("--seconds", type=click.IntRange(probe_mod.MIN_SECONDS, MAX_SECONDS),
              default=probe_mod.DEFAULT_SECONDS, show_default=True,
              help="How long the probe takes, shared among CPU, memory and fsync (a third, a sixth, a half).")
@click.option("--data-dir", metavar="tmpfs|DIR",
              help="Where the fsync part writes: the file system a server's data would use, as a study's "
                   "data_dir [default: the temporary directory].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def probe_command(seconds: int, data_dir: str | None, as_json: bool) -> None:
    """Measure this machine: CPU (sysbench cpu), memory bandwidth (sysbench memory) and
    the latency of a write followed by fsync (sysbench fileio), as `dbarena run` does
    before a study. Two machines of one kind that probe far apart will not measure alike."""
    try:
        where: Path | None = datadir.resolve(data_dir)
    except UsageError as exc:
        raise UsageError(f"--data-dir: {str(exc).removeprefix('data_dir ')}") from None
    say = None if as_json else (lambda line: click.echo(line, err=True))
    measured = probe_mod.probe(seconds, where, say=say)
    if as_json:
        click.echo(json.dumps(measured.to_dict(), indent=2, sort_keys=True))
        return
    from rich.markup import escape
    from rich.table import Table

    from dbarena.report import terminal

    table = Table(title="Host probe", show_header=False)
    table.add_column("what")
    table.add_column("measured", justify="right")
    for what, value in probe_mod.rows(measured):
        table.add_row(escape(what), escape(value))
    terminal.console().print(table)
