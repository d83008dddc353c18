"""A study as data: its records (Study, EngineEntry, WorkloadEntry, Variant), the
schema's constants and defaults, and the parsers of the values flags and files share
(levels, precision, durations). No I/O here."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from dbarena import engines, workloads
from dbarena.errors import UsageError
from dbarena.stats.capacity import Objective
from dbarena.limits import (
    MAX_POINTS, MAX_PRICE, MAX_SECONDS, MAX_STUDY_SECONDS, MAX_THREADS, MAX_TOOL_INT, name_problem, number_problem,
    quoted,
)

SCHEMA_VERSION = 1
# The share of transactions pgbench logs by default: none. The seed studies ran pgbench
# bare, and a default measurement costs no more than 1 % of the throughput the bare tool
# gets (issue 41): logging one transaction in ten cost pgbench 5 % more CPU per
# transaction on this project's 2-core machine, every one 14.5 % (bench/README.md). A
# user who wants percentiles asks for them (--latency-sampling) at that cost.
DEFAULT_LATENCY_SAMPLING: float | None = None

# Tool parameters and their defaults, as each tool declares them (workloads/*.py): the
# keys [datasets] and a workload entry accept.
PARAM_DEFAULTS = {p.name: p.default for tool in workloads.TOOLS.values() for p in tool.params}
SWEEP_DEFAULTS: dict[str, Any] = {"levels": [1, 2, "20%", "40%", "60%", "80%", "99%"], "duration_s": 60,
                                  "warmup_s": 0, "repeats": 1, "sessions": 1, "clients_per_thread": 2,
                                  "datasets": "run",
                                  "fail_fast": False, "precision": None, "max_repeats": 10, "budget": None,
                                  "latency_sampling": DEFAULT_LATENCY_SAMPLING or False, "restore": False,
                                  "client_progress": False}
RESTORE_CHOICES = ("point", "level")
MAX_PRECISION = 0.5  # +-50 %: anything wider is not a precision target
# Runs of one point: beyond this, the plan alone (one record per run of a point) would
# fill the memory before anything starts.
MAX_REPEATS = 10_000
# Sessions of a study (each its servers started afresh, its datasets prepared again):
# beyond a few dozen, a study is better run as nightly runs of one label (history).
MAX_SESSIONS = 100
# --quick: seconds per point and a tiny dataset, the protocol's shape kept.
QUICK_DURATION_S = 5
QUICK_WARMUP_S = 2

TOP_KEYS = {"schema", "name", "title", "description", "label", "sweep", "datasets", "engines", "workloads",
             "price", "variants", "cpus", "fleet", "machines", "slo", "profile"}
# [slo] (docs/capacity.md): the latency objective whose capacity each point's search finds.
SLO_KEYS = {"objective", "errors", "precision", "max_rates"}
# [profile] (docs/running.md): the server's on-CPU profile of every point, sampled by perf.
PROFILE_KEYS = {"frequency", "required"}
# perf's samples a second of each CPU's time a server process takes, by default: 99, an
# odd number, so that sampling does not beat in step with a timer of the server's
# (bench/overhead --profile measured what it costs).
PROFILE_FREQUENCY_HZ = 99
MAX_PROFILE_FREQUENCY_HZ = 1000  # beyond it a profile costs more than the 1 % it may


@dataclass(frozen=True)
class Profiling:
    """[profile] / --profile: each point's server sampled by perf during its measured run
    (run/profiling.py). `required`: a run where perf is missing or may not sample is
    refused before anything starts, rather than run without profiles."""

    frequency_hz: int = PROFILE_FREQUENCY_HZ
    required: bool = False

    def to_json(self) -> dict[str, int | bool]:
        return {"frequency_hz": self.frequency_hz, "required": self.required}
FLEET_KEYS = {"together"}
CPUS_KEYS = {"server", "smt", "smt_emulate", "load_generator"}
LOAD_GENERATOR_PLACES = ("rest", "same")
WORKLOAD_KEYS = {"workload", "engines", "options", "levels", "duration_s", "warmup_s", "clients_per_thread",
                  "datasets", "restore", *PARAM_DEFAULTS}
ENGINE_KEYS = {"flavour", "settings", "target", "server_cores", "server_threads", "bindir", "cluster",
                "data_dir"}
PRICE_KEYS = {"per_hour", "per_month", "currency"}
# [machines] (docs/cloud.md): the hosts and managed databases `run --study` makes, runs
# on and deletes. Only what every provider has a word for; the provider's own spelling
# (an AMI, an RDS class) is the value.
MACHINES_KEYS = {"provider", "region", "instance_types", "count", "disk", "disk_gb", "disk_iops", "image",
                  "ssh_user", "key_name", "managed", "prices", "catalogue", "lifetime"}
MANAGED_KEYS = {"engine", "version", "instance_class", "storage_gb", "storage_type", "iops", "ha"}
PRICES_KEYS = {"compute", "storage", "iops", "managed", "managed_storage", "managed_iops", "replicas",
                "currency"}


FLAGS_SOURCE = "command-line flags"


class StudyError(UsageError):
    """A study file that does not follow the schema: names the file and the key."""


def parse_precision(text: str) -> float:
    """'2%' -> 0.02 (a relative half width of the 95 % interval)."""
    number = text.strip().removesuffix("%").strip()
    try:
        value = float(number) / 100
    except ValueError:
        value = -1.0
    if not text.strip().endswith("%") or not 0 < value <= MAX_PRECISION:
        raise UsageError(f"{text!r}: expected a percentage above 0 and at most "
                         f"{MAX_PRECISION:.0%}, e.g. \"2%\"")
    return value


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> int:
    """'2h' -> 7200, '90m' -> 5400, '45s' or '45' -> 45 (seconds, at least 1, at most
    limits.MAX_SECONDS)."""
    body = text.strip().lower()
    unit = _UNITS.get(body[-1:], None) if body else None
    number = body[:-1] if unit else body
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        value = 0
    if not math.isfinite(value) or value < 1:  # (nan, inf: float() takes them)
        raise UsageError(f"{text!r}: expected a time such as 45s, 90m or 2h")
    if value > MAX_SECONDS:
        raise UsageError(f"{text!r}: at most {MAX_SECONDS} s (about 68 years), what a tool's timer takes")
    return int(value)


def check_name(text: str, what: str) -> str:
    problem = name_problem(text)
    if problem is not None:
        raise UsageError(f"{what} {quoted(text)} {problem}")
    return text


Level = int | str  # 4, or "20%" of the server's hardware threads


@dataclass(frozen=True)
class EngineEntry:
    name: str  # postgres, mysql
    flavour: str = engines.AUTO
    settings: tuple[tuple[str, str], ...] = ()
    target: str | None = None
    server_cores: int | None = None
    server_threads: int | None = None
    bindir: str | None = None
    cluster: tuple[tuple[str, str], ...] = ()  # what creating the data directory decides
    data_dir: str | None = None  # "tmpfs" (a RAM disk), a path, or None: the temporary directory


@dataclass(frozen=True)
class WorkloadEntry:
    workload: str
    engines: tuple[str, ...]
    levels: tuple[Level, ...]
    duration_s: int
    warmup_s: int
    clients_per_thread: int
    datasets: str
    restore: str | None  # "point" or "level": the prepared dataset put back before each; None: never
    params: tuple[tuple[str, int], ...]  # the tool's parameters only
    options: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Variant:
    name: str
    description: str = ""
    settings: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # engine -> settings
    cluster: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()  # engine -> cluster options
    cores: int | None = None  # the server on this many whole physical cores ([cpus] server)
    smt: str | None = None  # "on" / "off": with or without their SMT siblings ([cpus] smt)

    def settings_for(self, engine: str) -> dict[str, str]:
        return dict(dict(self.settings).get(engine, ()))

    def cluster_for(self, engine: str) -> dict[str, str]:
        return dict(dict(self.cluster).get(engine, ()))


@dataclass(frozen=True)
class ManagedDb:
    """A managed database [machines.managed] asks for: its engine is one of the study's
    [engines], whose target becomes the database once it is made."""

    engine: str  # postgres, mysql (an engine of the study)
    version: str | None  # as the provider spells it ("16.4"); None: the provider's default
    instance_class: str  # "db.m7g.large"
    storage_gb: int
    storage_type: str  # "gp3", "io1" ...
    iops: int | None  # provisioned IOPS; None: what the storage type includes
    ha: bool  # a standby replica in another zone (RDS Multi-AZ)


@dataclass(frozen=True)
class Machines:
    """A study's [machines]: the hosts (`count` of each instance type, each labelled by
    its type) and managed databases made for the run and deleted after it."""

    provider: str  # "aws"
    region: str
    instance_types: tuple[str, ...] = ()
    count: int = 1  # hosts of each instance type
    disk: str = "gp3"  # the disk class of each host's volume
    disk_gb: int = 20
    disk_iops: int | None = None
    image: str | None = None  # the provider's image id (an AMI); needed to create, not to price
    ssh_user: str = "admin"  # what the image's SSH login is (Debian's AMIs: admin)
    key_name: str | None = None  # the provider's key pair the hosts accept
    managed: tuple[ManagedDb, ...] = ()
    # The study's own prices over the catalogue's: (part, name) -> per hour, or per
    # GB-month / IOPS-month for storage and IOPS (cloud/catalogue.py's units).
    prices: tuple[tuple[tuple[str, str], float], ...] = ()
    currency: str | None = None  # of the study's prices; the catalogue's must match
    catalogue: str | None = None  # a catalogue file instead of the bundled one (`cloud prices --refresh`)
    lifetime_s: int | None = None  # the expiry tag's distance from creation [default: the estimate, doubled]

    @property
    def hosts(self) -> tuple[tuple[str, str], ...]:
        """(host name, instance type) of every host made: m7g.large-1, m7i.large-1 ..."""
        return tuple((f"{t}-{i + 1}", t) for t in self.instance_types for i in range(self.count))


@dataclass(frozen=True)
class Study:
    name: str
    source: str  # the file, "bundled study seed-a", or "command-line flags"
    text: str  # the file's text, or the implicit study's TOML
    title: str = ""
    description: str = ""
    label: str | None = None
    repeats: int = 1
    # Sessions (stats/sessions.py): the whole plan this many times, each with its servers
    # started afresh and its datasets prepared again, `repeats` runs a point in each.
    sessions: int = 1
    precision: float | None = None  # adaptive repeats: the relative half width to reach
    max_repeats: int = 10
    budget_s: int | None = None
    fail_fast: bool = False
    latency_sampling: float | None = DEFAULT_LATENCY_SAMPLING  # None: no per-transaction latency log
    # The tool's own per-second report even where the server's commit counter gives the
    # series at no cost to the tool (pgbench -P 1: its per-second latency, at a cost).
    client_progress: bool = False
    engines: tuple[EngineEntry, ...] = ()
    workloads: tuple[WorkloadEntry, ...] = ()
    variants: tuple[Variant, ...] = ()
    price_per_hour: float | None = None
    currency: str | None = None
    price_basis: str | None = None  # "per hour" or "420 per month / 730 h"
    price_per_month: float | None = None  # as given, when the price is a monthly rent (shown so)
    quick: bool = False
    changes: tuple[str, ...] = ()  # what flags and --quick changed, for `study check`
    smt_emulate: bool = False  # [cpus] smt by affinity (one thread per core), not the kernel's switch
    load_generator: str = "rest"  # with [cpus]: the load generator on the other CPUs, or the "same"
    together: bool = False  # [fleet] together: `fleet run` drives one server from every host at once
    flags: Mapping[str, Any] = field(default_factory=dict)  # Overrides.flags() applied over the text
    machines: Machines | None = None  # [machines]: hosts and managed databases made for the run
    # [slo] / --slo: each point's capacity at this latency objective, searched over offered rates.
    slo: Objective | None = None
    # [profile] / --profile: each point's server profiled on CPU (None: not profiled).
    profile: Profiling | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def engine(self, name: str) -> EngineEntry:
        return next(e for e in self.engines if e.name == name)




# A level as a share: "N%" of the server's hardware threads, 1 % to 1000 %.
MAX_PERCENT = 1000


def parse_level(text: str) -> Level | None:
    """One thread level as a study file or --threads gives it: a positive number of
    threads (4), or "N%" of the server's hardware threads ("20%"); None if neither."""
    text = text.strip()
    # ASCII digits only (str.isdigit takes '²' and '٣'), and few enough of them that
    # int() is cheap: a level above MAX_THREADS is refused anyway.
    if text.isascii() and text.isdigit() and len(text) <= 12 and 1 <= int(text) <= MAX_THREADS:
        return int(text)
    number = text.removesuffix("%")
    if text.endswith("%") and number.isascii() and number.isdigit() and len(number) <= 12 \
            and 1 <= int(number) <= MAX_PERCENT:
        return f"{int(number)}%"
    return None


def parse_levels(text: str) -> list[Level]:
    """'1,4,16' -> [1, 4, 16]; '1,2,50%' -> [1, 2, '50%']: the forms a study file takes,
    duplicates dropped, numbers ascending, then shares ascending."""
    levels: set[Level] = set()
    for item in text.split(","):
        level = parse_level(item)
        if level is None:
            raise UsageError(f"--threads: {item.strip()!r} is neither a number of threads nor a percentage like "
                             f"\"20%\" (expected e.g. 1,4,16 or 1,2,50%); threads 1 to {MAX_THREADS}, shares 1 to "
                             f"{MAX_PERCENT} %")
        levels.add(level)
    return sorted(levels, key=lambda v: (0, v) if isinstance(v, int) else (1, int(v.removesuffix("%"))))


def bounds_problems(study: Study) -> list[str]:
    """What a study holds beyond the bounds of limits.py, each as "key value problem"
    (empty: nothing). The flags' values are checked as they are read (flags.py's
    table); this catches the rest, a study file's, before anything starts."""
    found: list[tuple[str, float, str | None]] = []

    def whole(key: str, value: float | None, maximum: int, minimum: int = 1) -> None:
        if value is not None:
            found.append((key, value, number_problem(value, whole=True, minimum=minimum, maximum=maximum,
                                                     beyond="what dbarena takes")))

    whole("sweep.repeats", study.repeats, MAX_REPEATS)
    whole("sweep.sessions", study.sessions, MAX_SESSIONS)
    whole("sweep.max_repeats", study.max_repeats, MAX_REPEATS)
    whole("sweep.budget", study.budget_s, MAX_SECONDS)
    for e in study.engines:
        whole(f"engines.{e.name}.server_cores", e.server_cores, MAX_THREADS)
        whole(f"engines.{e.name}.server_threads", e.server_threads, MAX_THREADS)
    for i, w in enumerate(study.workloads):
        key = f"workloads[{i}] ({w.workload})"
        for level in w.levels:
            if isinstance(level, int):
                whole(f"{key} levels", level, MAX_THREADS)
                whole(f"{key} clients (level {level} x clients_per_thread {w.clients_per_thread})",
                      level * w.clients_per_thread, MAX_THREADS)
        whole(f"{key} duration_s", w.duration_s, MAX_SECONDS)
        whole(f"{key} warmup_s", w.warmup_s, MAX_SECONDS, minimum=0)
        whole(f"{key} clients_per_thread", w.clients_per_thread, MAX_THREADS)
        for name, value in w.params:
            whole(f"{key} {name}", value, MAX_TOOL_INT)
    # The price as given: per month when it was a monthly rent (per hour is derived from it).
    given = ("price.per_month", study.price_per_month) if study.price_per_month is not None \
        else ("price.per_hour", study.price_per_hour)
    for key, price in (given,):
        if price is not None:
            found.append((key, price, number_problem(price, minimum=0, above=True, maximum=MAX_PRICE,
                                                     beyond="any price")))
    problems = [f"{key} {value:g} {problem}" if isinstance(value, float) else f"{key} {value} {problem}"
                for key, value, problem in found if problem is not None]
    if not problems:
        problems += _whole_study_problems(study)
    for key, text in (("name", study.name), ("label", study.label), ("price.currency", study.currency)):
        if text is not None and (problem := name_problem(text)) is not None:
            problems.append(f"{key} {quoted(text)} {problem}")
    return problems


def _whole_study_problems(study: Study) -> list[str]:
    """The plan's size and machine time, from the study alone (before the levels are
    resolved on a machine: a share is one level whatever its threads): more points
    than MAX_POINTS, or timed points that run longer than MAX_STUDY_SECONDS in all (the
    least the study takes: no preparation, no pause counted)."""
    runs = (study.max_repeats if study.precision is not None else study.repeats) * study.sessions
    variants = max(1, len(study.variants))
    points = seconds = 0
    for w in study.workloads:
        n = len(w.levels) * len(w.engines) * variants * runs
        points += n
        if workloads.WORKLOADS[w.workload].tool.timed:
            seconds += n * (w.duration_s + w.warmup_s)
    if points > MAX_POINTS:
        return [f"the plan has {points:,} points (levels x engines x variants x repeats x sessions): at most "
                f"{MAX_POINTS:,}"]
    if seconds > MAX_STUDY_SECONDS:
        return [f"its timed points alone run {seconds / (365 * 86400):,.0f} years: at most "
                f"{MAX_STUDY_SECONDS // (365 * 86400)} years of machine time"]
    return []


def check_bounds(study: Study) -> Study:
    """The study, or a UsageError naming its source and the first value beyond the
    bounds of limits.py (a duration of 10**26 s, a level of 10**23 threads)."""
    problems = bounds_problems(study)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StudyError(f"{study.source}: {problems[0]}{more}")
    return study
