"""Every flag that sets part of a study, declared once.

`run_flags()` is the one table: each entry names its flag, how its text is read, its
help, the field of `Overrides` it sets, the study key it overrides and whether it
is part of a point's configuration key (stats/configkey.py). The command line's
options (study/arguments.py), `Overrides` from given values (`overrides`), the
stored flags of a run (`Overrides.flags`, read back by `--resume`), `apply`'s notes
of what a flag changed and the reference in docs/studies.md (`reference`) are all
derived from it.

Adding a flag: one entry here and the Overrides field it fills, plus the code that
uses the value (apply.py; a workload-level flag, `workload_field`, is applied by
apply.py without more). A tool's parameters are not listed here: they come from each
tool's `params` (model.ToolParam) in its workload module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping

from dbarena import engines, workloads
from dbarena.errors import UsageError
from dbarena.limits import MAX_PRICE, MAX_SECONDS, MAX_THREADS, MAX_TOOL_INT
from dbarena.model import DATASET_LIFECYCLES
from dbarena.stats import capacity
from dbarena.study.model import (
    MAX_REPEATS, MAX_SESSIONS, QUICK_DURATION_S, Level, check_name, parse_duration, parse_levels, parse_precision,
)


# ------------------------------------------------------------------ kinds of values


@dataclass(frozen=True)
class Int:
    """A whole number of at least `min` and at most `max` (limits.py's bounds: every
    number is bounded, so that none overflows past the edge)."""

    min: int
    max: int


@dataclass(frozen=True)
class Float:
    """A finite number (never nan or inf) between `min` and `max`."""

    min: float
    max: float
    min_open: bool = False


@dataclass(frozen=True)
class Choice:
    choices: tuple[str, ...]


@dataclass(frozen=True)
class Text:
    """Any text; `parse` (when given) turns it into the value or raises UsageError."""

    parse: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class Switch:
    """A flag without a value."""


@dataclass(frozen=True)
class Pairs:
    """NAME=VALUE, repeatable: a mapping."""


@dataclass(frozen=True)
class Directory:
    """A directory's path."""


Kind = Int | Float | Choice | Text | Switch | Pairs | Directory


@dataclass(frozen=True)
class RunFlag:
    name: str  # the option's parameter name (unique)
    flag: str  # "--duration"
    kind: Kind
    help: str
    dest: str  # the Overrides field it sets; "params.scale": one key of a mapping field
    metavar: str | None = None
    multiple: bool = False
    study_key: str | None = None  # the study file's key it overrides, for the reference
    in_key: bool = False  # part of a point's configuration key
    convert: Callable[[Any], Any] | None = None  # the given value -> the Overrides value
    workload_field: str | None = None  # the WorkloadEntry field it overrides in every workload


# ------------------------------------------------------------------ the values' checks


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise UsageError("expected a comma-separated list of workload names")
    return names


def _engine_names(text: str) -> tuple[str, ...]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        engines.check_name(name)  # UsageError for an unknown one
    return tuple(dict.fromkeys(names))


def _label(text: str) -> str:
    return check_name(text, "label")


def _currency(text: str) -> str:
    return check_name(text, "currency")


def _slo(text: str) -> str:
    """An objective as --slo gives it, checked and written as dbarena writes it."""
    return capacity.parse(text).spec


def _levels(text: str) -> tuple[Level, ...]:
    try:
        return tuple(parse_levels(text))
    except UsageError as exc:
        raise UsageError(str(exc).removeprefix("--threads: ")) from None


def _targets(urls: tuple[str, ...]) -> dict[str, str]:
    """--target URLs -> engine -> URL, one per engine, each checked (no password in it)."""
    target_of: dict[str, str] = {}
    for url in urls:
        engine = engines.engine_of_url(url)
        if engine in target_of:
            raise UsageError(f"two --target URLs for engine {engine!r}; give one per engine")
        target_of[engine] = engines.first(engine).check_target_url(url)
    return target_of


# ------------------------------------------------------------------ the table


def _param_flags() -> list[RunFlag]:
    """The tools' dataset and run parameters, as each tool declares them."""
    out: dict[str, RunFlag] = {}
    for tool in workloads.TOOLS.values():
        for p in tool.params:
            if p.name in out:
                continue  # a parameter two tools share is one flag (its help names the first)
            out[p.name] = RunFlag(p.name, p.flag, Int(1, MAX_TOOL_INT),
                                  f"{p.help} [default: {p.default}]{p.help_tail}.",
                                  f"params.{p.name}", study_key=f"workloads[].{p.name} or [datasets] {p.name}",
                                  in_key=True)
    return list(out.values())


@functools.cache
def run_flags(here: bool = True) -> tuple[RunFlag, ...]:
    """Every flag of `run` and `study check` that sets part of a study, in --help order.
    `here`: the help of --threads names this machine's hardware threads (not in the
    reference, which is the same on every machine)."""
    from dbarena.host import hostinfo

    threads = f"the {hostinfo.hardware_threads()} hardware threads" if here else "the hardware threads"

    setting_flags = [
        RunFlag(f"{e.setting_option[2:].replace('-', '_')}s", e.setting_option, Pairs(), e.setting_help,
                f"settings.{name}", metavar="NAME=VALUE", multiple=True, study_key=f"engines.{name}.settings",
                in_key=True)
        for name, e in ((n, engines.first(n)) for n in engines.ENGINES)
    ]
    return (
        RunFlag("quick", "--quick", Switch(),
                f"Same shape, {QUICK_DURATION_S} s per point and tiny datasets: a trial of the whole protocol in "
                "minutes.", "quick"),
        RunFlag("engine_names", "--engine", Text(_engine_names),
                f"Engines to benchmark, comma-separated ({', '.join(engines.ENGINES)}); with --study, a subset of "
                "the study's [default: the engines of --target, else postgres].", "engines", metavar="LIST",
                study_key="engines"),
        RunFlag("mysql_flavour", "--mysql-flavour", Choice((engines.AUTO, *engines.FLAVOURS["mysql"])),
                "Which MySQL-family server a throwaway instance runs: whichever is installed (auto, MariaDB first), "
                "mariadb or mysql [default: auto].", "flavours.mysql", study_key="engines.mysql.flavour",
                in_key=True),
        RunFlag("targets", "--target", Text(),
                "Benchmark an existing server instead of a throwaway instance (repeatable, one per engine): "
                "postgresql://user@host:5432/db (password from PGPASSWORD or ~/.pgpass) or "
                "mysql://user@host:3306/db (password from MYSQL_PWD or ~/.my.cnf); never a password in the "
                "URL. pgbench tables are dropped and recreated unless --no-init.", "targets", metavar="URL",
                multiple=True, study_key="engines.NAME.target", in_key=True, convert=_targets),
        RunFlag("workload_names", "--workload", Text(_names),
                f"Comma-separated workloads ({', '.join(workloads.WORKLOADS)}); with --study, a subset of the "
                f"study's [default: postgres: {', '.join(workloads.default_names('postgres'))}; mysql: "
                f"{', '.join(workloads.default_names('mysql'))}].",
                "workloads", metavar="LIST", study_key="workloads[].workload"),
        RunFlag("levels", "--threads", Text(_levels),
                "Thread levels, numbers or shares of the server's hardware threads as in a study file, e.g. 1,4,16 "
                f"or 1,2,50% [default: 1, 2, then 20/40/60/80/99 % of {threads} dbarena may use here (its CPU "
                "affinity and cgroup quota)].", "levels", metavar="LIST", study_key="sweep.levels", in_key=True,
                workload_field="levels"),
        RunFlag("clients_per_thread", "--clients-per-thread", Int(1, MAX_THREADS),
                "pgbench clients per thread (-c = threads x this) [default: 2]; sysbench and mysqlslap use one "
                "per thread.", "clients_per_thread", study_key="sweep.clients_per_thread", in_key=True,
                workload_field="clients_per_thread"),
        RunFlag("duration", "--duration", Int(1, MAX_SECONDS),
                "Seconds per point [default: 60] (pgbench, sysbench; mysqlslap runs a number of queries).",
                "duration_s", study_key="sweep.duration_s", in_key=True, workload_field="duration_s"),
        *_param_flags(),
        RunFlag("rate", "--rate", Float(min=capacity.MIN_RATE, max=MAX_TOOL_INT),
                "Offer each point this many transactions per second in all (pgbench -R, sysbench --rate: an "
                "open-loop point, its latency counted from each transaction's scheduled start) instead of as many "
                "as the clients can run. Such points are compared by their p95 latency at that rate (every "
                "transaction logged for it unless --latency-sampling says otherwise). Refused for a workload "
                "whose tool offers no rate (mysqlslap, tpcc-like) and with --slo, which searches rates itself.",
                "rate", metavar="TPS",
                study_key="workloads[].options.rate", in_key=True),
        RunFlag("repeats", "--repeat", Int(1, MAX_REPEATS),
                "Run every point this many times, interleaved across points (not back to back) [default: 1].",
                "repeats", study_key="sweep.repeats"),
        RunFlag("sessions", "--sessions", Int(1, MAX_SESSIONS),
                "Run the whole plan this many times, each a session of its own: servers started afresh, datasets "
                "prepared again, --repeat runs a point in each. Two labels are two sessions, so a verdict between "
                "them needs 2 sessions a side (or earlier sessions of the same configuration in the store) "
                "[default: 1].", "sessions", study_key="sweep.sessions"),
        RunFlag("precision", "--precision", Text(parse_precision),
                "Instead of --repeat: run the plan in rounds until the 95 % interval of each point's mean over "
                "runs is within +-PCT, e.g. 2% (at least 3 runs a point; see docs/studies.md on how).",
                "precision", metavar="PCT", study_key="sweep.precision"),
        RunFlag("max_repeats", "--max-repeats", Int(3, MAX_REPEATS),
                "With --precision: at most N runs of a point [default: 10].",
                "max_repeats", metavar="N", study_key="sweep.max_repeats"),
        RunFlag("budget", "--budget", Text(parse_duration),
                "With --precision or --slo: start no round (of repeats, or of offered rates) past this much time, "
                "e.g. 90m or 2h; points not reached by then say so.", "budget_s", metavar="TIME",
                study_key="sweep.budget"),
        RunFlag("slo", "--slo", Text(_slo),
                "A latency objective, e.g. p99=10ms (p50, p90, p95, p99, p99.9 or avg): besides each point's "
                "closed-loop throughput, search offered rates (pgbench -R, latency from each transaction's "
                "scheduled start) for the highest that meets it, its capacity (docs/capacity.md); every "
                "transaction is logged unless --latency-sampling says otherwise.", "slo", metavar="OBJECTIVE",
                study_key="slo.objective"),
        RunFlag("datasets", "--datasets", Choice(DATASET_LIFECYCLES),
                "When each workload's dataset is prepared: once per run, before each workload's points, or before "
                "every point (each point on a fresh dataset) [default: run].", "datasets", study_key="sweep.datasets",
                workload_field="datasets"),
        RunFlag("warmup_s", "--warmup", Int(0, MAX_SECONDS),
                "Before each point, a run with the same parameters for this long (stored apart, not a result), "
                "then a CHECKPOINT (PostgreSQL) or FLUSH TABLES (MySQL) [default: 0].", "warmup_s",
                metavar="SECONDS", study_key="sweep.warmup_s", in_key=True, workload_field="warmup_s"),
        *setting_flags,
        RunFlag("pg_bindir", "--pg-bindir", Directory(),
                "Use the PostgreSQL binaries in this directory [default: the newest installed].",
                "bindirs.postgres", study_key="engines.postgres.bindir", convert=str),
        RunFlag("label", "--label", Text(_label),
                "Name for this run's results, e.g. the machine type [default: the study's, else the host name].",
                "label", study_key="label"),
        RunFlag("price_per_hour", "--price-per-hour", Float(min=0, max=MAX_PRICE, min_open=True),
                "Hourly price of what is measured (instance, managed service), for price/performance in "
                "`dbarena report`.", "price_per_hour", metavar="PRICE", study_key="price.per_hour"),
        RunFlag("price_per_month", "--price-per-month", Float(min=0, max=MAX_PRICE, min_open=True),
                "Monthly price instead (a rented server): stored per hour, at 730 hours a month.",
                "price_per_month", metavar="PRICE", study_key="price.per_month"),
        RunFlag("currency", "--currency", Text(_currency), "Currency of the price [default: USD].", "currency",
                metavar="CODE", study_key="price.currency"),
        RunFlag("server_cores", "--server-cores", Int(1, MAX_THREADS),
                "Physical cores of a --target's server (not visible from here), for per-core figures.",
                "server_cores", metavar="N", study_key="engines.NAME.server_cores", in_key=True),
        RunFlag("server_threads", "--server-threads", Int(1, MAX_THREADS),
                "Hardware threads (vCPUs) of a --target's server, for per-thread figures and \"N%\" levels.",
                "server_threads", metavar="N", study_key="engines.NAME.server_threads", in_key=True),
        RunFlag("fail_fast", "--fail-fast", Switch(), "Stop at the first failed point.", "fail_fast",
                study_key="sweep.fail_fast", convert=lambda given: True if given else None),
        RunFlag("latency_sampling", "--latency-sampling", Float(min=0, max=1),
                "The share of transactions pgbench logs (-l --sampling-rate) for the latency percentiles; 1: every "
                "transaction; 0: none [default: none, as the bare tool runs: one in ten costs pgbench about 5 % more CPU a "
                "transaction on a CPU-bound 2-core machine, every one 14.5 % (bench/README.md); 1 with --slo or an "
                "offered --rate, whose points are judged by their latency].", "latency_sampling",
                metavar="SHARE", study_key="sweep.latency_sampling"),
        RunFlag("profile", "--profile", Switch(),
                "The server's on-CPU profile of every point: perf samples the server's processes (new backends "
                "too) during each point's measured run, not its warm-up, at 99 Hz unless [profile] frequency says "
                "otherwise (about 0.7 % of the server's CPU a transaction on a 2-CPU VM, bench/README.md); stored "
                "as folded stacks, its top functions in results --json. A throwaway server only (fleet run --together: "
                "its [server] host's); where perf is "
                "missing or may not sample, one line says so and the run goes on ([profile] required = true: "
                "refused).", "profile",
                study_key="profile", convert=lambda given: True if given else None),
        RunFlag("client_progress", "--client-progress", Switch(),
                "pgbench's own per-second report (-P 1: throughput and latency each second) instead of the "
                "per-second throughput from the server's commit counter, which costs pgbench nothing; -P 1 costs "
                "about 5 % of a CPU-bound point's throughput on a 2-core machine (bench/README.md).",
                "client_progress", study_key="sweep.client_progress", convert=lambda given: True if given else None),
    )


def flag_of(dest: str) -> str:
    """The flag that sets an Overrides field (or one key of a mapping field)."""
    return next(f.flag for f in run_flags() if f.dest == dest)


# ------------------------------------------------------------------ Overrides


@dataclass(frozen=True)
class Overrides:
    """Command-line flags given with (or instead of) a study file; None: not given.

    The fields' order is the order `flags()` records them in (a flags-only run's
    study text, and so its hash, depends on it)."""

    engines: tuple[str, ...] | None = None
    workloads: tuple[str, ...] | None = None
    levels: tuple[Level, ...] | None = None
    duration_s: int | None = None
    warmup_s: int | None = None
    repeats: int | None = None
    sessions: int | None = None
    precision: float | None = None
    max_repeats: int | None = None
    budget_s: int | None = None
    clients_per_thread: int | None = None
    rate: float | None = None  # an offered rate (TPS) for every point, in its tool's option
    server_cores: int | None = None
    server_threads: int | None = None
    label: str | None = None
    price_per_hour: float | None = None
    price_per_month: float | None = None
    currency: str | None = None
    fail_fast: bool | None = None
    latency_sampling: float | None = None  # 0: no per-transaction log
    client_progress: bool | None = None
    datasets: str | None = None  # run, workload or point
    slo: str | None = None  # a latency objective (capacity.parse): its capacity searched
    profile: bool | None = None  # each point's server profiled on CPU (run/profiling.py)
    params: Mapping[str, int] = field(default_factory=dict)
    settings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # engine -> settings
    targets: Mapping[str, str] = field(default_factory=dict)  # engine -> URL
    flavours: Mapping[str, str] = field(default_factory=dict)  # engine -> flavour
    bindirs: Mapping[str, str] = field(default_factory=dict)
    quick: bool = False

    def flags(self) -> dict[str, Any]:
        """The flags given, as the implicit study of a flags-only `dbarena run` records
        them: every field that is not at its default."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                if value:
                    out[f.name] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
            elif value is not None and not (f.name == "quick" and not value):
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> Overrides:
        """The inverse of flags(): what a stored run recorded, as Overrides again."""
        values: dict[str, Any] = {}
        for name, value in flags.items():
            if name not in cls.__dataclass_fields__:
                raise UsageError(f"the stored run has a flag {name!r} this dbarena does not know")
            values[name] = tuple(value) if isinstance(value, list) else value
        return cls(**values)


def _given(flag: RunFlag, value: Any) -> bool:
    if value is None:
        return False
    if flag.multiple or isinstance(flag.kind, Switch):
        return bool(value)
    return True


def overrides(values: Mapping[str, Any]) -> Overrides:
    """The values of the run flags (by RunFlag.name; a missing or None one: not given),
    as Overrides of a study."""
    scalars: dict[str, Any] = {}
    mappings: dict[str, Any] = {}
    for flag in run_flags():
        value = values.get(flag.name)
        if not _given(flag, value):
            continue
        if flag.convert is not None:
            value = flag.convert(value)
        elif isinstance(value, list):
            value = tuple(value)
        name, _, key = flag.dest.partition(".")
        if key:
            mappings.setdefault(name, {})[key] = value
        else:
            scalars[name] = value
    return Overrides(**scalars, **mappings)


# ------------------------------------------------------------------ the reference


def _metavar(kind: Kind) -> str:
    if isinstance(kind, Choice):
        return "|".join(kind.choices)
    return {Int: "N", Float: "X", Pairs: "NAME=VALUE", Directory: "DIR"}.get(type(kind), "TEXT")


def reference() -> str:
    """The flags as a Markdown table, for docs/studies.md (a unit test keeps it current)."""
    lines = ["| flag | sets | study key it overrides | in the configuration key |", "|---|---|---|---|"]
    for f in run_flags(here=False):
        value = f" {f.metavar or _metavar(f.kind)}" if not isinstance(f.kind, Switch) else ""
        lines.append(f"| `{f.flag}{value}` | {' '.join(f.help.split())} | {f'`{f.study_key}`' if f.study_key else '-'} "
                     f"| {'yes' if f.in_key else 'no'} |")
    return "\n".join(lines) + "\n"
