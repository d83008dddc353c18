"""Study files: one TOML file describes a whole benchmark study (a protocol).

A study says which engines run which workloads with which tool options, over which
concurrency levels, for how long, on which datasets, with which server settings and
variants, how often, and what the machine costs. `load` reads a file or a bundled
study (studies/*.toml) and checks every key against the schema below; `apply`
layers command-line flags and --quick over it; plan.expand turns it into points.

Precedence, lowest first: dbarena's defaults < the file's [sweep] and [datasets] <
the file's [[workloads]] entry < --quick (scales the result down) < command-line
flags (they override every workload). `study check` lists what flags and --quick
changed.

The schema (version 1):

    schema = 1                      # required
    name = "my-study"               # required; stored with every run
    title = "one line"              # optional
    description = "..."             # optional
    label = "c7g.4xlarge"           # optional [default: the host name]

    [sweep]                         # defaults for every workload
    levels = [1, 2, "20%", "99%"]   # threads; "N%" of the server's hardware threads
    duration_s = 600                # seconds per point (timed tools)
    warmup_s = 0                    # a same-parameter run before each point, then a checkpoint
    repeats = 1                     # every point N times, interleaved
    precision = "2%"                # instead: repeat each point (in rounds) until the 95 % interval
                                    #   of its mean over runs is within +-2 % (at least 3 runs)
    max_repeats = 10                # with precision: at most this many runs of a point
    budget = "2h"                   # with precision: start no round past this machine time (s, m, h)
    clients_per_thread = 2          # pgbench -c = threads x this
    datasets = "run"                # (re)create datasets once per "run", per "workload" or per "point"
    restore = "point"               # put the prepared dataset back before every "point" or "level"
                                    #   (a copy of the stopped data directory, reflinked where the file
                                    #   system can; throwaway instances only) [default: false]
    fail_fast = false
    latency_sampling = 0.1          # the share of transactions pgbench logs for percentiles (-l
                                    #   --sampling-rate); 1: all; false: no per-transaction log

    [datasets]                      # tool parameters, defaults for every workload
    scale = 10                      # pgbench -i -s
    tables = 4                      # sysbench --tables
    table_size = 10000              # sysbench --table-size
    warehouses = 1                  # tpcc-like
    iterations = 1                  # mysqlslap --iterations
    queries = 100000                # mysqlslap --number-of-queries

    [engines.postgres]              # the engines the study runs [default: postgres]
    settings = { shared_buffers = "1GB" }
    target = "postgresql://user@host:5432/db"   # optional: an existing server
    server_cores = 2                # a target's cores and threads (for "N%" levels, per-core figures)
    server_threads = 4
    bindir = "/usr/lib/postgresql/16/bin"
    data_dir = "tmpfs"              # where a throwaway instance keeps its data: "tmpfs" (/dev/shm, a
                                    #   RAM disk), a path (e.g. an NVMe mount) [default: $TMPDIR]
    cluster = { data_checksums = true }   # what creating the data directory decides (see variants)

    [engines.mysql]
    flavour = "auto"                # auto, mariadb or mysql
    settings = { innodb_buffer_pool_size = "1G" }

    [[workloads]]                   # one entry per workload, in running order
    workload = "sysbench-read-only"
    engines = ["mysql"]             # optional [default: every study engine it can run on]
    options = { skip-trx = "on" }   # the tool's options
    # and any [sweep] key but repeats/precision/max_repeats/budget/fail_fast/latency_sampling,
    # and any [datasets] key

    [price]
    per_hour = 1.4464               # or per_month = 420 (730 hours a month)
    currency = "USD"

    [cpus]                          # study C: the server on N whole physical cores, one variant each
    server = [1, 2, 4]              #   (spread over sockets; crossed with [variants])
    smt = ["off", "on"]             #   optional: each count without / with the cores' SMT siblings
                                    #   (or threads per core, POWER's SMT modes: [1, 2, 4, 8])
    smt_emulate = true              #   SMT off by affinity (one thread per core); without it the
                                    #   kernel's switch, one mode after the other, restored at the end
    load_generator = "rest"         #   the load generator on the other usable CPUs, or the "same" ones

    [variants.checksums]            # named sets of settings the same plan runs under
    description = "..."
    postgres = { wal_compression = "on" }
    cluster.postgres = { data_checksums = true }   # what creating the data directory decides:
                                    #   postgres: data_checksums, wal_segsize (MB), locale, encoding;
                                    #   mysql: innodb_page_size. Each variant gets its own server.
                                    #   Also [engines.NAME] cluster = {...} for every variant.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import tomli_w

from dbarena import engines, workloads
from dbarena.errors import UsageError
from dbarena.model import DATASET_LIFECYCLES
from dbarena.stats.price import HOURS_PER_MONTH

SCHEMA_VERSION = 1
# The share of transactions pgbench logs by default (bench/overhead, on this project's
# 2-core machine, select-only at 33k TPS: logging every transaction cost pgbench 14.5 %
# more CPU per transaction, 3.5 % of the machine; one in ten, 5 %, about 1 %). Over a
# 60 s point at 1,000 TPS that still leaves 6,000 latencies.
DEFAULT_LATENCY_SAMPLING = 0.1

# Tool parameters and their defaults (what `dbarena run` used before studies).
PARAM_DEFAULTS = {"scale": 10, "tables": 4, "table_size": 10000, "warehouses": 1, "iterations": 1,
                  "queries": 100000}
SWEEP_DEFAULTS: dict[str, Any] = {"levels": [1, 2, "20%", "40%", "60%", "80%", "99%"], "duration_s": 60,
                                  "warmup_s": 0, "repeats": 1, "clients_per_thread": 2, "datasets": "run",
                                  "fail_fast": False, "precision": None, "max_repeats": 10, "budget": None,
                                  "latency_sampling": DEFAULT_LATENCY_SAMPLING, "restore": False}
RESTORE_CHOICES = ("point", "level")
MAX_PRECISION = 0.5  # +-50 %: anything wider is not a precision target
# --quick: the memory settings of a study tuned for a large server, capped so that its
# throwaway instances start on a small machine (study B's shared_buffers is 32 GB).
QUICK_MEMORY_CAPS = {"shared_buffers": "128MB", "effective_cache_size": "1GB", "max_wal_size": "1GB",
                     "maintenance_work_mem": "64MB", "innodb_buffer_pool_size": "256M",
                     "innodb_log_file_size": "128M", "innodb_redo_log_capacity": "256M"}
_SIZE_UNITS = {"k": 1024, "kb": 1024, "m": 1024 ** 2, "mb": 1024 ** 2, "g": 1024 ** 3, "gb": 1024 ** 3,
               "t": 1024 ** 4, "tb": 1024 ** 4}


def _size_bytes(value: str) -> int | None:
    """'32GB', '6G', '512MB' as bytes; None for a value without a unit (PostgreSQL
    reads those in the setting's own unit: left alone)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT][bB]?)\s*", value)
    return int(m[1]) * _SIZE_UNITS[m[2].lower()] if m else None


def _capped(settings: tuple[tuple[str, str], ...], note: Callable[[str, Any, Any, str], None], where: str
            ) -> tuple[tuple[str, str], ...]:
    out = []
    for k, v in settings:
        cap = QUICK_MEMORY_CAPS.get(k)
        size, limit = _size_bytes(v), _size_bytes(cap) if cap else None
        if cap and size is not None and limit is not None and size > limit:
            note(f"{where} {k}", v, cap, "--quick")
            v = cap
        out.append((k, v))
    return tuple(out)


# --quick: seconds per point and a tiny dataset, the protocol's shape kept.
QUICK_DURATION_S = 5
QUICK_WARMUP_S = 2

_TOP_KEYS = {"schema", "name", "title", "description", "label", "sweep", "datasets", "engines", "workloads",
             "price", "variants", "cpus"}
_CPUS_KEYS = {"server", "smt", "smt_emulate", "load_generator"}
LOAD_GENERATOR_PLACES = ("rest", "same")
_WORKLOAD_KEYS = {"workload", "engines", "options", "levels", "duration_s", "warmup_s", "clients_per_thread",
                  "datasets", "restore", *PARAM_DEFAULTS}
_ENGINE_KEYS = {"flavour", "settings", "target", "server_cores", "server_threads", "bindir", "cluster",
                "data_dir"}
_PRICE_KEYS = {"per_hour", "per_month", "currency"}


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
    """'2h' -> 7200, '90m' -> 5400, '45s' or '45' -> 45 (seconds, at least 1)."""
    body = text.strip().lower()
    unit = _UNITS.get(body[-1:], None) if body else None
    number = body[:-1] if unit else body
    try:
        value = float(number) * (unit or 1)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{text!r}: expected a time such as 45s, 90m or 2h")
    return int(value)


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
class Study:
    name: str
    source: str  # the file, "bundled study seed-a", or "command-line flags"
    text: str  # the file's text, or the implicit study's TOML
    title: str = ""
    description: str = ""
    label: str | None = None
    repeats: int = 1
    precision: float | None = None  # adaptive repeats: the relative half width to reach
    max_repeats: int = 10
    budget_s: int | None = None
    fail_fast: bool = False
    latency_sampling: float | None = DEFAULT_LATENCY_SAMPLING  # None: no per-transaction latency log
    engines: tuple[EngineEntry, ...] = ()
    workloads: tuple[WorkloadEntry, ...] = ()
    variants: tuple[Variant, ...] = ()
    price_per_hour: float | None = None
    currency: str | None = None
    price_basis: str | None = None  # "per hour" or "420 per month / 730 h"
    quick: bool = False
    changes: tuple[str, ...] = ()  # what flags and --quick changed, for `study check`
    smt_emulate: bool = False  # [cpus] smt by affinity (one thread per core), not the kernel's switch
    load_generator: str = "rest"  # with [cpus]: the load generator on the other CPUs, or the "same"
    flags: Mapping[str, Any] = field(default_factory=dict)  # Overrides.flags() applied over the text

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def engine(self, name: str) -> EngineEntry:
        return next(e for e in self.engines if e.name == name)


# ------------------------------------------------------------------ reading


def bundled() -> dict[str, str]:
    """Bundled study name -> its TOML text."""
    folder = resources.files("dbarena") / "studies"
    return {p.name.removesuffix(".toml"): p.read_text() for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".toml")}


def read_text(name_or_path: str) -> tuple[str, str, Path | None]:
    """(text, source description, directory for relative paths) of a bundled study
    name or a file path."""
    studies = bundled()
    path = Path(name_or_path)
    if path.is_file():
        try:
            return path.read_text(), str(path), path.resolve().parent
        except (OSError, UnicodeDecodeError) as exc:
            raise StudyError(f"{path}: cannot read it: {exc}") from None
    if name_or_path in studies:
        return studies[name_or_path], f"bundled study {name_or_path}", None
    raise StudyError(f"no study file {name_or_path!r} and no bundled study of that name "
                     f"(bundled: {', '.join(studies)})")


def load(name_or_path: str) -> Study:
    text, source, base_dir = read_text(name_or_path)
    return parse(text, source, base_dir)


def parse(text: str, source: str, base_dir: Path | None = None) -> Study:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{source}: not valid TOML: {exc}") from None
    return _Checker(source, base_dir).study(raw, text)


class _Checker:
    """Checks a parsed file against the schema; every error names the file and key."""

    def __init__(self, source: str, base_dir: Path | None):
        self.source = source
        self.base_dir = base_dir
        self.entries: tuple[EngineEntry, ...] = ()

    def fail(self, key: str, message: str) -> StudyError:
        return StudyError(f"{self.source}: {key}: {message}")

    def table(self, raw: Any, key: str, allowed: Iterable[str] | None) -> dict:
        if not isinstance(raw, dict):
            raise self.fail(key, f"expected a table, not {_kind(raw)}")
        if allowed is not None:
            for k in raw:
                if k not in allowed:
                    raise self.fail(f"{key}.{k}" if key else k,
                                    f"unknown key (expected one of: {', '.join(sorted(allowed))})")
        return raw

    def int_(self, raw: Any, key: str, minimum: int = 1) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise self.fail(key, f"expected a whole number, not {_kind(raw)}")
        if raw < minimum:
            raise self.fail(key, f"must be at least {minimum}, not {raw}")
        return raw

    def str_(self, raw: Any, key: str) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise self.fail(key, f"expected a non-empty text, not {_kind(raw)}")
        return raw

    def levels(self, raw: Any, key: str) -> tuple[Level, ...]:
        if not isinstance(raw, list):
            raise self.fail(key, f"expected a list of thread levels, not {_kind(raw)}")
        if not raw:
            raise self.fail(key, "the list of levels is empty")
        out: list[Level] = []
        for i, item in enumerate(raw):
            where = f"{key}[{i}]"
            if isinstance(item, str):
                number = item.strip().removesuffix("%")
                if not item.strip().endswith("%") or not number.isdigit() or not 1 <= int(number) <= 1000:
                    raise self.fail(where, f"{item!r} is neither a number of threads nor a percentage like \"20%\"")
                out.append(f"{int(number)}%")
            else:
                out.append(self.int_(item, where))
        return tuple(out)

    def settings(self, raw: Any, key: str) -> tuple[tuple[str, str], ...]:
        table = self.table(raw, key, None)
        out = []
        for name, value in table.items():
            if isinstance(value, bool):
                value = "on" if value else "off"
            if not isinstance(value, (str, int, float)):
                raise self.fail(f"{key}.{name}", f"expected a text or a number, not {_kind(value)}")
            out.append((name, str(value)))
        return tuple(sorted(out))

    def cluster(self, raw: Any, key: str, engine: str) -> tuple[tuple[str, str], ...]:
        """Cluster options (engines' CLUSTER_OPTIONS): true/false as on/off, like settings."""
        options = self.settings(raw, key)
        try:
            engines.first(engine).check_cluster(dict(options))
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None
        return options

    def study(self, raw: dict, text: str) -> Study:
        self.table(raw, "", _TOP_KEYS)
        if "schema" not in raw:
            raise self.fail("schema", f"missing (this dbarena reads schema = {SCHEMA_VERSION})")
        if raw["schema"] != SCHEMA_VERSION:
            raise self.fail("schema", f"version {raw['schema']!r} is not one this dbarena reads ({SCHEMA_VERSION})")
        if "name" not in raw:
            raise self.fail("name", "missing (the study's name, stored with every run)")
        name = self.str_(raw["name"], "name")
        sweep = {**SWEEP_DEFAULTS, **self.table(raw.get("sweep", {}), "sweep", SWEEP_DEFAULTS)}
        params = {**PARAM_DEFAULTS, **self.table(raw.get("datasets", {}), "datasets", PARAM_DEFAULTS)}
        for k in PARAM_DEFAULTS:
            self.int_(params[k], f"datasets.{k}")
        engine_entries = self.engines(raw.get("engines", {"postgres": {}}))
        self.entries = engine_entries
        study_engines = tuple(e.name for e in engine_entries)
        raw_workloads = raw.get("workloads")
        if raw_workloads is None:
            raw_workloads = [{"workload": w} for e in study_engines for w in workloads.default_names(e)]
            raw_workloads = list({w["workload"]: w for w in raw_workloads}.values())
        if not isinstance(raw_workloads, list) or not raw_workloads:
            raise self.fail("workloads", "expected a non-empty list of [[workloads]] tables")
        entries = [self.workload(w, f"workloads[{i}]", sweep, params, study_engines)
                   for i, w in enumerate(raw_workloads)]
        seen: set[tuple[str, str]] = set()
        for i, entry in enumerate(entries):
            for e in entry.engines:
                if (entry.workload, e) in seen:
                    raise self.fail(f"workloads[{i}]", f"{entry.workload} on {e} is listed twice "
                                                       "(use [variants] to run it under other settings)")
                seen.add((entry.workload, e))
        for e in study_engines:
            if not any(e in w.engines for w in entries):
                raise self.fail(f"engines.{e}", "no workload runs on this engine")
        price, currency, basis = self.price(raw.get("price"))
        label = raw.get("label")
        return Study(
            name=name, source=self.source, text=text,
            title=self.str_(raw["title"], "title") if "title" in raw else "",
            description=raw.get("description", "") if isinstance(raw.get("description", ""), str)
            else self._bad("description", "expected a text"),
            label=self.str_(label, "label") if label is not None else None,
            repeats=self.int_(sweep["repeats"], "sweep.repeats"),
            precision=self.precision(sweep["precision"], sweep),
            max_repeats=self.int_(sweep["max_repeats"], "sweep.max_repeats", minimum=3),
            budget_s=self.duration(sweep["budget"], "sweep.budget") if sweep["budget"] is not None else None,
            fail_fast=self.bool_(sweep["fail_fast"], "sweep.fail_fast"),
            latency_sampling=self.sampling(sweep["latency_sampling"], "sweep.latency_sampling"),
            engines=engine_entries, workloads=tuple(entries),
            variants=self.cpu_axes(raw.get("cpus"), self.variants(raw.get("variants", {}), study_engines)),
            price_per_hour=price, currency=currency, price_basis=basis,
            **self.cpu_options(raw.get("cpus")),
        )

    def cpu_options(self, raw: Any) -> dict:
        if raw is None:
            return {}
        body = self.table(raw, "cpus", _CPUS_KEYS)
        place = body.get("load_generator", "rest")
        if place not in LOAD_GENERATOR_PLACES:
            raise self.fail("cpus.load_generator", f"expected \"rest\" or \"same\", not {_kind(place)}")
        return {"smt_emulate": self.bool_(body.get("smt_emulate", False), "cpus.smt_emulate"),
                "load_generator": place}

    def cpu_axes(self, raw: Any, variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
        """[cpus] server = [1, 2, 4] (whole physical cores) and smt = ["off", "on"]: one
        variant per combination (crossed with the study's own variants), each with a
        server of its own confined to those CPUs (study C)."""
        if raw is None:
            return variants
        body = self.table(raw, "cpus", _CPUS_KEYS)
        if any(e.target for e in self.entries):
            raise self.fail("cpus", "a target's CPUs are not dbarena's to choose: [cpus] needs throwaway instances")
        counts = body.get("server")
        if not isinstance(counts, list) or not counts or any(
                isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in counts):
            raise self.fail("cpus.server", "expected a list of physical core counts, e.g. [1, 2, 4]")
        modes = body.get("smt", [None])
        if not isinstance(modes, list) or not modes or any(
                m not in ("on", "off", None) and not (isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= 8)
                for m in modes):
            raise self.fail("cpus.smt", "expected a list of \"on\" and/or \"off\" (x86), or of threads per core "
                                        "1 to 8 (POWER's SMT1, SMT2, SMT4, SMT8)")
        modes = [str(m) if isinstance(m, int) else m for m in modes]
        out = []
        for v in variants or (Variant(name=""),):
            for n in counts:
                for mode in modes:
                    name = "_".join(p for p in (v.name, f"{n}core{'s' if n > 1 else ''}",
                                                f"smt-{mode}" if mode else "") if p)
                    out.append(replace(v, name=name, cores=n, smt=mode,
                                       description=v.description or f"the server on {n} physical core(s)"
                                       + (f", SMT {mode}" if mode else "")))
        return tuple(out)

    def precision(self, raw: Any, sweep: dict) -> float | None:
        if raw is None:
            if sweep["budget"] is not None:
                raise self.fail("sweep.budget", "a budget bounds adaptive repeats: give sweep.precision too")
            return None
        if not isinstance(raw, str):
            raise self.fail("sweep.precision", f"expected a percentage like \"2%\", not {_kind(raw)}")
        if sweep["repeats"] != 1:
            raise self.fail("sweep.precision", "give either repeats (a fixed number) or precision (adaptive), "
                                               "not both")
        try:
            return parse_precision(raw)
        except UsageError as exc:
            raise self.fail("sweep.precision", str(exc)) from None

    def duration(self, raw: Any, key: str) -> int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return self.int_(raw, key)
        if not isinstance(raw, str):
            raise self.fail(key, f"expected seconds or a text like \"2h\", not {_kind(raw)}")
        try:
            return parse_duration(raw)
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None

    def _bad(self, key: str, message: str) -> Any:
        raise self.fail(key, message)

    def sampling(self, raw: Any, key: str) -> float | None:
        if raw is False:
            return None
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 < raw <= 1:
            raise self.fail(key, f"expected a share of transactions above 0 and at most 1, or false, not {raw!r}")
        return float(raw)

    def bool_(self, raw: Any, key: str) -> bool:
        if not isinstance(raw, bool):
            raise self.fail(key, f"expected true or false, not {_kind(raw)}")
        return raw

    def engines(self, raw: Any) -> tuple[EngineEntry, ...]:
        table = self.table(raw, "engines", engines.ENGINES)
        if not table:
            raise self.fail("engines", "no engine (expected [engines.postgres] and/or [engines.mysql])")
        out = []
        for name, body in table.items():
            key = f"engines.{name}"
            body = self.table(body, key, _ENGINE_KEYS)
            flavour = body.get("flavour", engines.AUTO)
            try:
                engines.check_flavour(name, self.str_(flavour, f"{key}.flavour"))
            except StudyError:
                raise
            except UsageError as exc:
                raise self.fail(f"{key}.flavour", str(exc)) from None
            target = body.get("target")
            if target is not None:
                try:
                    if engines.engine_of_url(self.str_(target, f"{key}.target")) != name:
                        raise self.fail(f"{key}.target", f"{target!r} is not a {name} URL")
                    engines.first(name).check_target_url(target)
                except StudyError:
                    raise
                except UsageError as exc:
                    raise self.fail(f"{key}.target", str(exc)) from None
            out.append(EngineEntry(
                name=name, flavour=flavour, settings=self.settings(body.get("settings", {}), f"{key}.settings"),
                target=target,
                server_cores=self.int_(body["server_cores"], f"{key}.server_cores") if "server_cores" in body else None,
                server_threads=self.int_(body["server_threads"], f"{key}.server_threads")
                if "server_threads" in body else None,
                bindir=self.str_(body["bindir"], f"{key}.bindir") if "bindir" in body else None,
                cluster=self.cluster(body.get("cluster", {}), f"{key}.cluster", name),
                data_dir=self.str_(body["data_dir"], f"{key}.data_dir") if "data_dir" in body else None,
            ))
            if target is not None and out[-1].data_dir is not None:
                raise self.fail(f"{key}.data_dir", "data_dir applies to a throwaway instance only, not to a target")
            if target is not None and out[-1].settings:
                raise self.fail(f"{key}.settings", "settings apply to a throwaway instance only, not to a target")
            if target is not None and out[-1].cluster:
                raise self.fail(f"{key}.cluster", "cluster options apply to a throwaway instance only, not to a "
                                                  "target (its data directory exists already)")
        return tuple(out)

    def workload(self, raw: Any, key: str, sweep: dict, params: dict, study_engines: tuple[str, ...]
                 ) -> WorkloadEntry:
        body = self.table(raw, key, _WORKLOAD_KEYS)
        if "workload" not in body:
            raise self.fail(f"{key}.workload", f"missing (one of: {', '.join(workloads.WORKLOADS)})")
        name = self.str_(body["workload"], f"{key}.workload")
        if name not in workloads.WORKLOADS:
            raise self.fail(f"{key}.workload", f"unknown workload {name!r} (known: {', '.join(workloads.WORKLOADS)})")
        w = workloads.WORKLOADS[name]
        if "engines" in body:
            listed = body["engines"]
            if not isinstance(listed, list) or not listed or not all(isinstance(e, str) for e in listed):
                raise self.fail(f"{key}.engines", "expected a non-empty list of engine names")
            for e in listed:
                if e not in study_engines:
                    raise self.fail(f"{key}.engines", f"{e!r} is not an engine of this study "
                                                      f"([engines] has: {', '.join(study_engines)})")
                if e not in w.engines:
                    raise self.fail(f"{key}.engines", f"{name} cannot run on {e} (it runs on: {', '.join(w.engines)})")
            chosen = tuple(dict.fromkeys(listed))
        else:
            chosen = tuple(e for e in study_engines if e in w.engines)
            if not chosen:
                raise self.fail(f"{key}.workload", f"{name} runs on {', '.join(w.engines)}, "
                                                   f"not on this study's engines ({', '.join(study_engines)})")
        for k in PARAM_DEFAULTS:
            if k in body and k not in w.tool.params:
                raise self.fail(f"{key}.{k}", f"{name} has no parameter {k!r} (it reads: {', '.join(w.tool.params)})")
        merged = {**sweep, **{k: v for k, v in body.items() if k in SWEEP_DEFAULTS}}
        own = {k: self.int_(body.get(k, params[k]), f"{key}.{k}") for k in w.tool.params}
        try:
            options = w.tool.check_options(self.table(body.get("options", {}), f"{key}.options", None), self.base_dir)
        except StudyError:
            raise
        except UsageError as exc:
            raise self.fail(f"{key}.options", str(exc)) from None
        for required in w.required_options:
            if required not in options:
                raise self.fail(f"{key}.options", f"{name} needs the option {required!r}")
        datasets = merged["datasets"]
        if datasets not in DATASET_LIFECYCLES:
            raise self.fail(f"{key}.datasets" if "datasets" in body else "sweep.datasets",
                            f"expected one of {', '.join(DATASET_LIFECYCLES)}, not {datasets!r}")
        where = (lambda k: f"{key}.{k}" if k in body else f"sweep.{k}")
        restore = merged["restore"]
        if restore is not False and restore not in RESTORE_CHOICES:
            raise self.fail(where("restore"), f"expected \"point\", \"level\" or false, not {_kind(restore)}")
        if restore and datasets == "point":
            raise self.fail(where("restore"), "datasets are prepared before every point already: restore needs "
                                              "datasets = \"run\" or \"workload\"")
        for entry in self.entries:
            if restore and entry.name in chosen and entry.target is not None:
                raise self.fail(where("restore"), f"restore puts back a throwaway instance's data directory: not "
                                                  f"possible on {entry.name}'s target (leave restore out for it, or "
                                                  f"give this workload the throwaway engines only)")
        return WorkloadEntry(
            workload=name, engines=chosen, levels=self.levels(merged["levels"], where("levels")),
            duration_s=self.int_(merged["duration_s"], where("duration_s")),
            warmup_s=self.int_(merged["warmup_s"], where("warmup_s"), minimum=0),
            clients_per_thread=self.int_(merged["clients_per_thread"], where("clients_per_thread")),
            datasets=datasets, params=tuple(sorted(own.items())), options=tuple(sorted(options.items())),
            restore=restore or None,
        )

    def price(self, raw: Any) -> tuple[float | None, str | None, str | None]:
        if raw is None:
            return None, None, None
        body = self.table(raw, "price", _PRICE_KEYS)
        if ("per_hour" in body) == ("per_month" in body):
            raise self.fail("price", "give either per_hour or per_month")
        currency = self.str_(body.get("currency", "USD"), "price.currency")
        for k in ("per_hour", "per_month"):
            if k in body:
                value = body[k]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                    raise self.fail(f"price.{k}", f"expected a positive number, not {value!r}")
                if k == "per_hour":
                    return float(value), currency, "per hour"
                return float(value) / HOURS_PER_MONTH, currency, f"{value:g} per month / {HOURS_PER_MONTH} h"
        raise AssertionError("unreachable")

    def variants(self, raw: Any, study_engines: tuple[str, ...]) -> tuple[Variant, ...]:
        table = self.table(raw, "variants", None)
        out = []
        for name, body in table.items():
            key = f"variants.{name}"
            if not name.replace("-", "").replace("_", "").isalnum():
                raise self.fail(key, "a variant name is letters, digits, - and _")
            body = self.table(body, key, {"description", "cluster", *engines.ENGINES})
            settings = []
            for e in engines.ENGINES:
                if e in body:
                    if e not in study_engines:
                        raise self.fail(f"{key}.{e}", f"{e} is not an engine of this study")
                    settings.append((e, self.settings(body[e], f"{key}.{e}")))
            cluster = []
            for e, options in self.table(body.get("cluster", {}), f"{key}.cluster", set(engines.ENGINES)).items():
                if e not in study_engines:
                    raise self.fail(f"{key}.cluster.{e}", f"{e} is not an engine of this study")
                cluster.append((e, self.cluster(options, f"{key}.cluster.{e}", e)))
            out.append(Variant(name=name, description=str(body.get("description", "")), settings=tuple(settings),
                               cluster=tuple(sorted(cluster))))
            if any(e.target for e in self.entries if dict(settings).get(e.name) or dict(cluster).get(e.name)):
                raise self.fail(key, "a variant's settings and cluster options apply to throwaway instances only, "
                                     "not to a target")
        return tuple(out)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value!r}"
    return f"{value!r}"


# ------------------------------------------------------------------ flags and --quick


@dataclass(frozen=True)
class Overrides:
    """Command-line flags given with (or instead of) a study file; None: not given."""

    engines: tuple[str, ...] | None = None
    workloads: tuple[str, ...] | None = None
    levels: tuple[Level, ...] | None = None
    duration_s: int | None = None
    warmup_s: int | None = None
    repeats: int | None = None
    precision: float | None = None
    max_repeats: int | None = None
    budget_s: int | None = None
    clients_per_thread: int | None = None
    params: Mapping[str, int] = field(default_factory=dict)
    settings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # engine -> settings
    targets: Mapping[str, str] = field(default_factory=dict)  # engine -> URL
    flavours: Mapping[str, str] = field(default_factory=dict)  # engine -> flavour
    bindirs: Mapping[str, str] = field(default_factory=dict)
    server_cores: int | None = None
    server_threads: int | None = None
    label: str | None = None
    price_per_hour: float | None = None
    price_per_month: float | None = None
    currency: str | None = None
    fail_fast: bool | None = None
    latency_sampling: float | None = None  # 0: no per-transaction log
    quick: bool = False

    def flags(self) -> dict[str, Any]:
        """The flags given, as the implicit study of a flags-only `dbarena run` records them."""
        out: dict[str, Any] = {}
        for name in ("engines", "workloads", "levels", "duration_s", "warmup_s", "repeats", "precision",
                     "max_repeats", "budget_s", "clients_per_thread", "server_cores", "server_threads", "label",
                     "price_per_hour", "price_per_month", "currency", "fail_fast", "latency_sampling"):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        for name in ("params", "settings", "targets", "flavours", "bindirs"):
            if getattr(self, name):
                out[name] = {k: dict(v) if isinstance(v, Mapping) else v for k, v in getattr(self, name).items()}
        if self.quick:
            out["quick"] = True
        return out

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> "Overrides":
        """The inverse of flags(): what a stored run recorded, as Overrides again."""
        values: dict[str, Any] = {}
        for name, value in flags.items():
            if name not in cls.__dataclass_fields__:
                raise UsageError(f"the stored run has a flag {name!r} this dbarena does not know")
            values[name] = tuple(value) if isinstance(value, list) else value
        return cls(**values)


def implicit(overrides: Overrides) -> Study:
    """The study a flags-only `dbarena run` stands for: dbarena's defaults, the flags
    applied over them. Its text is the equivalent study file."""
    names = overrides.engines or tuple(overrides.targets) or ("postgres",)
    raw: dict[str, Any] = {"schema": SCHEMA_VERSION, "name": "flags", "title": "a study made of command-line flags",
                           "engines": {e: {} for e in names}}
    if overrides.workloads:
        # Every named workload on every engine that can run it; one no engine runs is an error.
        entries = []
        for name in overrides.workloads:
            w = workloads.get(name)
            chosen = [e for e in names if e in w.engines]
            if not chosen:
                raise UsageError(f"workload {name!r} cannot run on engine {names[0]!r} "
                                 f"(it runs on: {', '.join(w.engines)})")
            entries.append({"workload": name, "engines": chosen})
        raw["workloads"] = entries
    if overrides.levels is None and overrides.targets and overrides.server_threads is None:
        # A target's hardware threads are not visible: the default levels are a share
        # of this machine's (the load generator's), as before studies existed.
        from dbarena.host import hostinfo

        raw["sweep"] = {"levels": [int(n) for n in dict.fromkeys(
            max(1, hostinfo.hardware_threads() * int(str(p).removesuffix("%")) // 100) if isinstance(p, str) else p
            for p in SWEEP_DEFAULTS["levels"])]}
    skeleton = _Checker(FLAGS_SOURCE, Path.cwd()).study(raw, "")
    study = apply(skeleton, replace(overrides, workloads=None, engines=None))
    body = {"schema": SCHEMA_VERSION, "name": "flags", "title": "a study made of command-line flags",
            "flags": overrides.flags()}
    return replace(study, text=tomli_w.dumps(_plain(body)), changes=(), flags=overrides.flags())


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def apply(study: Study, o: Overrides) -> Study:
    """The study with --quick and then the flags applied (flags win)."""
    changes: list[str] = []

    def note(what: str, old: Any, new: Any, why: str) -> None:
        if old != new:
            changes.append(f"{what}: {_show(old)} -> {_show(new)} ({why})")

    entries = list(study.workloads)
    variants = study.variants
    if o.engines is not None:
        for engine_name in o.engines:
            engines.check_name(engine_name)
            if engine_name not in {x.name for x in study.engines}:
                raise UsageError(f"--engine {engine_name}: the study {study.name} has no {engine_name} engine "
                                 f"(it has: {', '.join(x.name for x in study.engines)})")
        entries = [replace(w, engines=tuple(e for e in w.engines if e in o.engines)) for w in entries]
        entries = [w for w in entries if w.engines]
        changes.append(f"engines: only {', '.join(o.engines)} (--engine)")
    if o.workloads is not None:
        known = {w.workload for w in entries}
        for name in o.workloads:
            workloads.get(name)
            if name not in known:
                raise UsageError(f"--workload {name}: not in the study {study.name} "
                                 f"(it has: {', '.join(dict.fromkeys(w.workload for w in entries))})")
        entries = [w for w in entries if w.workload in o.workloads]
        changes.append(f"workloads: only {', '.join(o.workloads)} (--workload)")
    if not entries:
        raise UsageError(f"nothing left of the study {study.name} to run with these --engine/--workload flags")
    kept_engines = {e for w in entries for e in w.engines}
    engine_entries = [e for e in study.engines if e.name in kept_engines]

    if o.quick:
        quick = []
        for w in entries:
            tool = workloads.WORKLOADS[w.workload].tool
            params = tool.quick_params(dict(w.params))
            new = replace(w, duration_s=min(w.duration_s, QUICK_DURATION_S),
                          warmup_s=min(w.warmup_s, QUICK_WARMUP_S), params=tuple(sorted(params.items())))
            for k, v in params.items():
                note(f"{w.workload} {k}", dict(w.params)[k], v, "--quick")
            if tool.timed:
                note(f"{w.workload} duration_s", w.duration_s, new.duration_s, "--quick")
            note(f"{w.workload} warmup_s", w.warmup_s, new.warmup_s, "--quick")
            quick.append(new)
        entries = quick
        engine_entries = [replace(e, settings=_capped(e.settings, note, e.name)) for e in engine_entries]
        if any(variant.cores for variant in variants):
            # [cpus]: the core counts this machine has (study C's 4 cores on a 2-core VM: 1 and 2).
            from dbarena.host import topology

            available = topology.usable_cores()
            for variant in variants:
                if variant.cores and variant.cores > available:
                    changes.append(f"variant {variant.name}: left out, {variant.cores} cores asked for, "
                                   f"{available} here (--quick)")
            variants = tuple(x for x in variants if not x.cores or x.cores <= available)
        variants = tuple(replace(x, settings=tuple((e, _capped(pairs, note, f"variant {x.name} {e}"))
                                                   for e, pairs in x.settings)) for x in variants)

    flagged = []
    for w in entries:
        tool = workloads.WORKLOADS[w.workload].tool
        new = w
        for name, flag in (("levels", "--threads"), ("duration_s", "--duration"), ("warmup_s", "--warmup"),
                           ("clients_per_thread", "--clients-per-thread")):
            value = getattr(o, name)
            if value is not None and not (name == "duration_s" and not tool.timed):
                note(f"{w.workload} {name}", getattr(new, name), value, flag)
                new = replace(new, **{name: value})
        params = dict(new.params)
        for k, v in o.params.items():
            if k in params:
                note(f"{w.workload} {k}", params[k], v, f"--{k.replace('_', '-')}")
                params[k] = v
        flagged.append(replace(new, params=tuple(sorted(params.items()))))
    entries = flagged

    new_engines = []
    for e in engine_entries:
        settings = dict(e.settings)
        for setting, value in o.settings.get(e.name, {}).items():
            note(f"{e.name} setting {setting}", settings.get(setting), value, engines.first(e.name).setting_option)
            settings[setting] = value
        target = o.targets.get(e.name, e.target)
        note(f"{e.name} target", e.target, target, "--target")
        if target is not None and settings:
            raise UsageError(f"{engines.first(e.name).setting_option} applies to a throwaway {e.name} instance only")
        flavour = o.flavours.get(e.name, e.flavour)
        note(f"{e.name} flavour", e.flavour, flavour, f"--{e.name}-flavour")
        cores = o.server_cores if o.server_cores is not None else e.server_cores
        threads = o.server_threads if o.server_threads is not None else e.server_threads
        new_engines.append(replace(e, settings=tuple(sorted(settings.items())), target=target, flavour=flavour,
                                   server_cores=cores, server_threads=threads,
                                   bindir=o.bindirs.get(e.name, e.bindir)))
    for engine, option in (("postgres", "--pg-setting"), ("mysql", "--mysql-setting")):
        if o.settings.get(engine) and engine not in kept_engines:
            raise UsageError(f"{option} applies to a throwaway {engine} instance only")
    if (o.server_cores or o.server_threads) and not any(e.target for e in new_engines):
        raise UsageError("--server-cores/--server-threads describe a --target's server; a throwaway instance "
                         "runs here and is measured")
    for engine in o.targets:
        if engine not in kept_engines:
            raise UsageError(f"--target {o.targets[engine]} is a {engine} server, but --engine does not include "
                             f"{engine}")

    repeats = o.repeats if o.repeats is not None else study.repeats
    note("repeats", study.repeats, repeats, "--repeat")
    precision = o.precision if o.precision is not None else study.precision
    if o.repeats is not None and o.precision is None:
        precision = None  # --repeat asks for a fixed number: it replaces the study's precision
    elif o.precision is not None:
        if o.repeats is not None:
            raise UsageError("give either --repeat (a fixed number) or --precision (adaptive), not both")
        repeats = 1
    note("precision", _pct(study.precision), _pct(precision), "--precision/--repeat")
    max_repeats = o.max_repeats if o.max_repeats is not None else study.max_repeats
    note("max_repeats", study.max_repeats, max_repeats, "--max-repeats")
    budget_s = o.budget_s if o.budget_s is not None else study.budget_s
    note("budget_s", study.budget_s, budget_s, "--budget")
    if precision is None and (o.budget_s is not None or o.max_repeats is not None):
        raise UsageError("--budget and --max-repeats bound adaptive repeats: give --precision too")
    label = o.label if o.label is not None else study.label
    note("label", study.label, label, "--label")
    price, currency, basis = study.price_per_hour, study.currency, study.price_basis
    if o.price_per_hour is not None and o.price_per_month is not None:
        raise UsageError("give --price-per-hour or --price-per-month, not both")
    if o.price_per_hour is not None:
        note("price per hour", price, o.price_per_hour, "--price-per-hour")
        price, currency, basis = o.price_per_hour, currency or "USD", "per hour"
    if o.price_per_month is not None:
        hourly = o.price_per_month / HOURS_PER_MONTH
        note("price per hour", price, hourly, "--price-per-month")
        price, currency = hourly, currency or "USD"
        basis = f"{o.price_per_month:g} per month / {HOURS_PER_MONTH} h"
    if o.currency is not None:
        if price is None:
            raise UsageError("--currency names the currency of a price: give --price-per-hour or --price-per-month")
        note("currency", currency, o.currency, "--currency")
        currency = o.currency
    return replace(study, workloads=tuple(entries), engines=tuple(new_engines), variants=variants, repeats=repeats,
                   label=label,
                   precision=precision, max_repeats=max_repeats, budget_s=budget_s if precision else None,
                   flags={**study.flags, **o.flags()},
                   fail_fast=study.fail_fast if o.fail_fast is None else (o.fail_fast or study.fail_fast),
                   latency_sampling=study.latency_sampling if o.latency_sampling is None else
                   (o.latency_sampling or None),
                   price_per_hour=price, currency=currency, price_basis=basis, quick=study.quick or o.quick,
                   changes=study.changes + tuple(changes))


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{value:.1%}"


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


# ------------------------------------------------------------------ --resume


def rebuild(text: str, source: str, flags: Mapping[str, Any]) -> Study:
    """The study a stored run followed, from its text and the flags applied over it."""
    overrides = Overrides.from_flags(flags)
    if source == FLAGS_SOURCE:
        return implicit(overrides)
    path = Path(source)
    return apply(parse(text, source, path.resolve().parent if path.is_file() else None), overrides)


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, dict):
        for k, v in value.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value
    return out


def differences(old: Study, new: Study) -> list[str]:
    """What differs between two studies' files and flags, key by key ("sweep.duration_s:
    600 -> 30"); [] when they describe the same plan."""
    def flat(study: Study) -> dict[str, Any]:
        out = _flat("", tomllib.loads(study.text), {})
        out.pop("flags", None)
        out.update(_flat("flags", _plain(dict(study.flags)), {}))
        return out

    a, b = flat(old), flat(new)
    return [f"{k}: {_show(a.get(k))} -> {_show(b.get(k))}" for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
