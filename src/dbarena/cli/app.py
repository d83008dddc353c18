"""The command line's root: the `dbarena` group, the options several commands share,
and `main`, which maps every anticipated error to one line on stderr (`dbarena: error:
...`) and the exit status of errors.ExitStatus; no traceback.

Commands return their exit status (an int) rather than raising SystemExit.
"""

from __future__ import annotations

import _thread
import importlib
import logging
import math
import re
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import click

from dbarena import __version__
from dbarena.errors import DbarenaError, ExitStatus, Interrupted, UsageError
from dbarena import shield
from dbarena.lifecycle import pid1
from dbarena.limits import one_line, printable
from dbarena.masking import masked

if TYPE_CHECKING:
    from dbarena.store.database import Store

DEFAULT_STORE = "dbarena.db"

# click.ParamType is generic (value type, input type) from click 8.4/8.5 only; pyproject
# allows click>=8.1, where subscripting it at runtime raises TypeError. So the
# parametrised base is for the type checker only, the plain class at runtime.
if TYPE_CHECKING:
    _StoreLocationBase = click.ParamType[Path | str, Path | str]
    _AmountBase = click.ParamType[float, float | str]
else:
    _StoreLocationBase = click.ParamType
    _AmountBase = click.ParamType


# A libpq keyword connection string ("host=h dbname=d"): not a file name, and it may
# hold a password, so it is refused, masked, rather than taken for a file to create.
_CONNINFO = re.compile(r"\s*(?:[a-z_]+\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']*)\s*)+")
_CONNINFO_KEYS = {"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode", "options",
                  "service", "application_name", "connect_timeout"}


class StoreLocation(_StoreLocationBase):
    """An SQLite file (an absolute Path), or a postgresql:// URL (checked: no password).
    A value refused is shown masked: a mistyped URL may carry a password."""

    name = "FILE|URL"

    def convert(self, value: Path | str, param: click.Parameter | None, ctx: click.Context | None) -> Path | str:
        if isinstance(value, Path):
            return value.resolve()
        with shield.shielded():  # a Ctrl-C held while it loads (cli/__init__.py says why)
            from dbarena.store import postgres as pgstore
        if pgstore.is_url(value):
            try:
                return pgstore.check_url(value)
            except UsageError as exc:
                self.fail(str(exc).removeprefix("--store "), param, ctx)
        if "://" in value:
            self.fail(f"{masked(value)!r}: expected a file, or postgresql://USER@HOST[:PORT]/DATABASE", param, ctx)
        if _CONNINFO.fullmatch(value) and {k.strip() for k in re.findall(r"([a-z_]+)\s*=", value)} & _CONNINFO_KEYS:
            self.fail(f"{masked(value)!r}: a keyword connection string; expected a file, or "
                      "postgresql://USER@HOST[:PORT]/DATABASE (the password from PGPASSWORD or ~/.pgpass)", param, ctx)
        if "\0" in value or not value.strip():
            self.fail(f"{printable(value)!r} is not a file name", param, ctx)
        if Path(value).is_dir():
            self.fail(f"{value!r} is a directory", param, ctx)
        return Path(value).resolve()


class MaxCost(_AmountBase):
    """--max-cost: a finite amount above zero. float() takes "nan", "inf" and 1e309
    (inf), and no estimate is over nan or inf: such a budget would switch the cost
    guard off, and zero or less would refuse every study."""

    name = "amount"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float) and math.isfinite(value) and value > 0:
            return value
        try:
            amount = float(value)
        except (TypeError, ValueError):
            self.fail(f"{printable(str(value))!r} is not an amount (a number above 0, in the catalogue's currency)",
                      param, ctx)
        if not math.isfinite(amount) or amount <= 0:
            self.fail(f"{printable(str(value))!r}: the budget must be a finite amount above 0", param, ctx)
        return amount


# A study's [machines] (docs/cloud.md): on `cloud up` and on `run --study`.
max_cost_option = click.option(
    "--max-cost", type=MaxCost(), metavar="AMOUNT",
    help="With [machines]: refuse before anything is created when the estimate is over AMOUNT (above 0, in the "
         "catalogue's currency); `run` also stops and deletes the machines once their spend so far reaches it.")
max_instances_option = click.option(
    "--max-instances", type=click.IntRange(min=1), metavar="N",
    help="With [machines]: refuse before anything is created when the study makes more than N instances and "
         "databases.")

store_option = click.option(
    "--store",
    type=StoreLocation(),
    default=DEFAULT_STORE,
    envvar="DBARENA_STORE",
    show_default=True,
    help="Where results are kept: an SQLite file, or a shared PostgreSQL database "
         "postgresql://USER@HOST[:PORT]/DATABASE (password from PGPASSWORD or ~/.pgpass); or set DBARENA_STORE.",
)



# Each command: the module that defines it (and registers it on `cli` when imported) and
# the start of its help, which `dbarena --help` lists. A command imports only its own
# module: `dbarena report` does not load the run and fleet machinery, and `--help`
# loads none (all of them, numpy among them, were about 2 s of a loaded machine's
# start; issue 57). The start runs past the widest listing's cut (100 columns) or to
# the first sentence's end; tests/unit/test_cli_help.py holds it to the command's own.
COMMANDS: dict[str, tuple[str, str]] = {
    "bisect": ("bisect", "Which of the differences between A and B (two labels, two runs, or a failed gate's baseline and candidate)"),
    "cleanup": ("running", 'Remove what dbarena runs left behind: throwaway instances kept with --keep, and those of killed runs (which'),
    "cloud": ("cloud", "Machines on demand: a study's [machines] made, deleted and reaped (docs/cloud.md)."),
    "compare": ("results", 'Compare B against A: two labels (hosts), or two variants of a study.'),
    "fleet": ("fleet", 'One study on many hosts through Ansible (docs/fleet.md).'),
    "gate": ("history", 'Does the candidate make any workload slower than the baseline by more than --max-regression? The levels'),
    "history": ("history", "Each series of runs of one label, workload, level and dataset over time: every run's value with its 95"),
    "hostinfo": ("results", 'Print what dbarena records about this machine (CPU, cores vs threads, memory ...).'),
    "import": ("results", 'Bring results measured elsewhere into the store: pgbench, sysbench, mysqlslap, HammerDB or go-tpc outputs'),
    "merge": ("results", "Bring other stores' runs into this one: points, per-second series, raw outputs, studies, hosts."),
    "probe": ("probe", 'Measure this machine: CPU (sysbench cpu), memory bandwidth (sysbench memory) and the latency of a write'),
    "publish": ("exchange", 'Write runs of a store as one bundle others can verify: a manifest (every run and point as `results --json`'),
    "report": ("results", 'Charts and tables to publish: throughput, latency, price/performance, per core, scaling (USL), differences'),
    "results": ("results", 'List stored points (or their summaries), with steady-state figures and warnings.'),
    "run": ("running", 'Run a study, or the workloads of the flags, across a concurrency sweep; store every point.'),
    "serve": ("serve", 'Browse the store in a web browser, read-only: Home (studies, labels, hosts and runs, newest first; a running'),
    "site": ("exchange", 'Write a static comparison site of bundles: a row per result (a run at one engine and workload) with its'),
    "store": ("results", 'The results store itself.'),
    "study": ("running", 'Study files: a whole benchmark protocol in one TOML file (see `dbarena study show seed-a`).'),
    "verify": ("exchange", "Check bundles: the signature (and whose key), every file's sha256, that no byte of the file was changed,"),
}
COMMAND_MODULES = {name: module for name, (module, _) in COMMANDS.items()}


class _LazyGroup(click.Group):
    """A group whose commands are imported on first use (click's documented pattern
    for lazily loaded subcommands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMAND_MODULES))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands as click lists them, each not loaded yet from COMMANDS: listing
        them imports none."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands.get(name) or click.Command(name, help=COMMANDS[name][1])
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = COMMAND_MODULES.get(cmd_name)
            if module is None:
                load_commands()  # click's "no such command" then suggests from every name
            else:
                # A Ctrl-C or SIGTERM held until the module is loaded (cli/__init__.py says
                # why), then delivered: click's Abort, or Interrupted, as anywhere else.
                with shield.shielded():
                    importlib.import_module(f"dbarena.cli.{module}")
        return super().get_command(ctx, cmd_name)


def load_commands() -> None:
    """Every command registered on `cli` (for whoever walks cli.commands)."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(f"dbarena.cli.{module}")


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="dbarena")
def cli() -> None:
    """Benchmark PostgreSQL and MySQL/MariaDB across machines and settings; store every result.

    Start with `dbarena run` (a throwaway local PostgreSQL, pgbench at every
    concurrency level of this machine), then `dbarena results`.
    """
    # Whatever the command: first undo what a killed dbarena left (state.py), and what
    # a killed `run --study` made on a provider (cloud/machines.py). Imported here, as
    # the store is, so that `--help` and `--version` load neither; a Ctrl-C held while
    # they load, as while a command's module does (cli/__init__.py says why).
    with shield.shielded():
        from dbarena.lifecycle.cleanup import reap_dead
    reap_dead(lambda line: click.echo(f"dbarena: {line}", err=True))
    _reap_machines(lambda line: click.echo(f"dbarena: {line}", err=True))


def _reap_machines(say: Callable[[str], None]) -> None:
    """Delete what killed controllers' `run --study` made (their records in the state
    directory: not kept, owner gone). The cloud package is imported only when there is
    a record to look at; a provider that refuses now is said in a line, and the next
    command (or `dbarena cloud reap`) tries again."""
    from dbarena.lifecycle import state

    folder = state.state_dir() / "cloud"
    if not folder.is_dir() or not any(p for p in folder.glob("dbarena-*.json")
                                      if not p.name.endswith(".inventory.json")):
        return
    from dbarena.cloud import machines

    if not any(machines.orphaned(data) for data in machines.records()):
        return
    try:
        machines.reap_orphans(say)
    except DbarenaError as exc:
        say(f"{exc}; the next command, or `dbarena cloud reap`, tries again")


def open_store(path: Path | str) -> Store:
    """An existing store, to read: opened read-only, so that a read never writes (a
    file that is not there is a usage error, not a new store; a file that is not a
    dbarena store is refused). An older SQLite store is read through a copy migrated in
    memory, silently: reading works as before, and the file stays as it is until a
    command that writes (or `dbarena store migrate`) upgrades it (docs/store.md)."""
    if isinstance(path, Path) and not path.exists():
        raise UsageError(f"no results store at {path} (run `dbarena run` first, or pass --store)")
    with shield.shielded():
        from dbarena.store.database import Store
    return Store(path, readonly=True)


def _raise_on_sigterm(signum: int, frame: Any) -> None:
    raise Interrupted()


def _unraisable(found: Any) -> None:
    """sys.unraisablehook: an interrupt that lands while a finalizer runs (a driver's
    __del__, as Ctrl-C or SIGTERM arrives) is neither lost nor printed as Python's
    "Exception ignored in ..." traceback (seen: pymysql's MySQLResult.__del__ under a
    Ctrl-C, the run going on as if none came): it is raised again in the main thread,
    at its next step. Anything else as Python says it."""
    if isinstance(found.exc_value, (KeyboardInterrupt, Interrupted)):
        signum = signal.SIGINT if isinstance(found.exc_value, KeyboardInterrupt) else signal.SIGTERM
        # From another thread, a moment later: raised here, in the hook, it would be
        # swallowed again ("Exception ignored in sys.unraisablehook").
        threading.Timer(0.01, _thread.interrupt_main, (signum,)).start()
    else:
        sys.__unraisablehook__(found)


def main(argv: list[str] | None = None) -> None:
    # As PID 1 (a container), the command runs in a child and PID 1 reaps (pid1.py).
    pid1.become_init()
    # psycopg logs what it ignores, e.g. "error ignored in rollback on <psycopg.Connection
    # ...>" when a Ctrl-C or SIGTERM lands mid-query inside a `with connection:` block;
    # with no logging set up, Python's last-resort handler would print it between the
    # run's own lines. What matters of such a moment, dbarena says itself.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_on_sigterm)
    sys.unraisablehook = _unraisable
    try:
        status = cli.main(args=argv, prog_name="dbarena", standalone_mode=False)
    except click.exceptions.UsageError as exc:
        _fail(exc.format_message(), ExitStatus.USAGE)
    except click.exceptions.Abort:
        _fail("aborted", ExitStatus.INTERRUPTED)
    except DbarenaError as exc:
        _fail(str(exc), exc.exit_status)
    except Interrupted:
        sys.exit(ExitStatus.TERMINATED)
    sys.exit(status if isinstance(status, int) else 0)


def _fail(message: str, status: int) -> NoReturn:
    # One line, whatever the message quotes: no password a user mistyped into a URL or
    # a connection string (masked), nothing that acts on the terminal (printable).
    click.echo(f"dbarena: error: {one_line(message)}", err=True)
    sys.exit(status)
