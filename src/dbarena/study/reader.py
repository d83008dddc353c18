"""Reading study files: bundled studies, files, and the check of every key against
the schema (each error names the file and the key)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable

from dbarena import engines, workloads
from dbarena.errors import UsageError
from dbarena.limits import MAX_PRICE, name_problem, quoted, setting_problem
from dbarena.model import DATASET_LIFECYCLES
from dbarena.stats import capacity
from dbarena.stats.capacity import Objective
from dbarena.stats.price import HOURS_PER_MONTH
from dbarena.study.model import (
    CPUS_KEYS, ENGINE_KEYS, FLEET_KEYS, MACHINES_KEYS, MANAGED_KEYS, PRICE_KEYS, PRICES_KEYS, TOP_KEYS, WORKLOAD_KEYS, LOAD_GENERATOR_PLACES, PARAM_DEFAULTS,
    MAX_PROFILE_FREQUENCY_HZ, PROFILE_FREQUENCY_HZ, PROFILE_KEYS, RESTORE_CHOICES, SCHEMA_VERSION, SLO_KEYS, SWEEP_DEFAULTS, EngineEntry, Level, Machines, ManagedDb, Profiling, Study, StudyError, Variant, WorkloadEntry,
    parse_duration, parse_level, parse_precision,
)

# The shapes of a provider's identifiers in [machines] (Reader.ident): what AWS and the
# local provider name them with, and nothing Ansible or a shell would read as code.
_IDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # region, instance type or class, disk, version
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")  # an AMI id, or resolve:ssm:/aws/service/...
_KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+=-]*")  # an EC2 key pair
_LOGIN = re.compile(r"[A-Za-z_][A-Za-z0-9._-]*")  # a login name on the image
_SHAPES = {_IDENT.pattern: "letters, digits, '.', '_' and '-'",
           _IMAGE.pattern: "letters, digits and '.', '_', '-', ':', '/'",
           _KEY_NAME.pattern: "letters, digits and '.', '_', '-', ':', '/', '@', '+', '='",
           _LOGIN.pattern: "a login name: letters, digits, '.', '_' and '-'"}

# A server setting's name as both engines spell theirs (PostgreSQL's custom ones have a dot).

# A study file's size and nesting, bounded before tomllib parses it: a study is a few KB
# (the bundled ones under 3 KB) with tables four keys deep at the most, while tomllib
# recurses once per nested array or inline table (2,000 of them: a RecursionError) and
# takes time quadratic in a dotted key's parts (20,000 parts: 18 s, 100,000: a hang).
MAX_STUDY_BYTES = 2**20
MAX_NESTING = 16
# The tokens that tell structure from text in TOML: its four kinds of string and its
# comments (skipped whole: a dot or a bracket in them is text), then the brackets that
# nest, the dot that joins a dotted key's parts, and what ends a key or a value. A
# string never closed runs to its line's end (the text's, for a multi-line one), as
# tomllib reads it before it refuses it: a match attempt from each of its quotes would
# read the rest again each time (quadratic: 350,000 of `"a\` on one line).
_TOML_TOKEN = re.compile(r'''
    """(?:[^"\\]|\\.|""?(?!"))*(?:"{3,5})?    # multi-line basic string (up to two quotes end its text)
  | '{3}(?:[^']|''?(?!'))*(?:'{3,5})?         # multi-line literal string
  | "(?:[^"\\\n]|\\.)*"?                      # basic string
  | '[^'\n]*'?                                # literal string
  | \#[^\n]*                                  # comment
  | [][{}.=,\n]                               # structure
''', re.VERBOSE | re.DOTALL)


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
            size = path.stat().st_size
            if size > MAX_STUDY_BYTES:  # refused unread: it could be any size
                raise StudyError(f"{path}: {size:,} bytes long (a study file is at most {MAX_STUDY_BYTES:,})")
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
    _check_bounds(text, source)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # (the bounds keep it from happening; never a traceback if it does)
        raise StudyError(f"{source}: nested too deep to read") from None
    return Checker(source, base_dir).study(raw, text)


def _check_bounds(text: str, source: str) -> None:
    """Refuse a text beyond MAX_STUDY_BYTES, nested deeper than MAX_NESTING arrays and
    inline tables, or with a key of MAX_NESTING dotted parts or more, naming its line:
    one pass over the text, linear in its size, before tomllib reads it."""
    if len(text) > MAX_STUDY_BYTES:
        raise StudyError(f"{source}: {len(text):,} characters long (a study file is at most {MAX_STUDY_BYTES:,})")
    depth = dots = 0
    for token in _TOML_TOKEN.finditer(text):
        kind = token.group()
        if kind in ("[", "{"):
            depth += 1
        elif kind in ("]", "}"):
            depth = max(depth - 1, 0)
        if kind == ".":  # outside a string: between a dotted key's parts (or once in a float)
            dots += 1
        elif kind[0] not in "\"'#":  # anything else ends a key (a string is one of its parts)
            dots = 0
        if depth > MAX_NESTING or dots >= MAX_NESTING:
            line = text.count("\n", 0, token.start()) + 1
            what = "arrays and inline tables" if depth > MAX_NESTING else "parts of a dotted key"
            raise StudyError(f"{source}: line {line}: nested deeper than {MAX_NESTING} {what} "
                             f"(a study's tables are a few levels deep)")


class Checker:
    """Checks a parsed file against the schema; every error names the file and key."""

    def __init__(self, source: str, base_dir: Path | None):
        self.source = source
        self.base_dir = base_dir
        self.entries: tuple[EngineEntry, ...] = ()
        self.searching = False  # the study has [slo] (study(): a budget may bound its search)

    def fail(self, key: str, message: str) -> StudyError:
        return StudyError(f"{self.source}: {key}: {message}")

    def table(self, raw: Any, key: str, allowed: Iterable[str] | None) -> dict[str, Any]:
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
                # A string is a share ("20%"), as --threads takes it (model.parse_level).
                level = parse_level(item) if item.strip().endswith("%") else None
                if level is None:
                    raise self.fail(where, f"{item!r} is neither a number of threads nor a percentage like \"20%\"")
                out.append(level)
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
            problem = setting_problem(name, str(value))  # one line each, no config file injection
            if problem is not None:
                raise self.fail(f"{key}.{quoted(name)}", problem)
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

    def study(self, raw: dict[str, Any], text: str) -> Study:
        self.table(raw, "", TOP_KEYS)
        if "schema" not in raw:
            raise self.fail("schema", f"missing (this dbarena reads schema = {SCHEMA_VERSION})")
        if raw["schema"] != SCHEMA_VERSION:
            raise self.fail("schema", f"version {raw['schema']!r} is not one this dbarena reads ({SCHEMA_VERSION})")
        if "name" not in raw:
            raise self.fail("name", "missing (the study's name, stored with every run)")
        name = self.str_(raw["name"], "name")
        sweep = {**SWEEP_DEFAULTS, **self.table(raw.get("sweep", {}), "sweep", SWEEP_DEFAULTS)}
        self.searching = raw.get("slo") is not None  # [slo]: a budget may bound its search
        # [datasets]: the tools' parameters for every workload that reads them; what it
        # leaves out is each tool's own default (workload entries may override both).
        params = self.table(raw.get("datasets", {}), "datasets", PARAM_DEFAULTS)
        for k in params:
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
        price, currency, basis, per_month = self.price(raw.get("price"))
        label = raw.get("label")
        return Study(
            name=name, source=self.source, text=text,
            title=self.str_(raw["title"], "title") if "title" in raw else "",
            description=raw.get("description", "") if isinstance(raw.get("description", ""), str)
            else self._bad("description", "expected a text"),
            label=self.str_(label, "label") if label is not None else None,
            repeats=self.int_(sweep["repeats"], "sweep.repeats"),
            sessions=self.int_(sweep["sessions"], "sweep.sessions"),
            precision=self.precision(sweep["precision"], sweep),
            max_repeats=self.int_(sweep["max_repeats"], "sweep.max_repeats", minimum=3),
            budget_s=self.duration(sweep["budget"], "sweep.budget") if sweep["budget"] is not None else None,
            fail_fast=self.bool_(sweep["fail_fast"], "sweep.fail_fast"),
            latency_sampling=self.sampling(sweep["latency_sampling"], "sweep.latency_sampling"),
            client_progress=self.bool_(sweep["client_progress"], "sweep.client_progress"),
            engines=engine_entries, workloads=tuple(entries),
            variants=self.cpu_axes(raw.get("cpus"), self.variants(raw.get("variants", {}), study_engines)),
            price_per_hour=price, currency=currency, price_basis=basis, price_per_month=per_month,
            **self.cpu_options(raw.get("cpus")),
            together=self.bool_(self.table(raw.get("fleet", {}), "fleet", FLEET_KEYS).get("together", False),
                                "fleet.together"),
            machines=self.machines(raw.get("machines")),
            slo=self.slo(raw.get("slo")),
            profile=self.profile(raw.get("profile")),
        )

    def name(self, raw: Any, key: str) -> str:
        """A provider's name for something (a region, an instance type, an AMI): a
        non-empty text that acts on no terminal and fits a table's column."""
        text = self.str_(raw, key)
        problem = name_problem(text)
        if problem is not None:
            raise self.fail(key, f"{quoted(text)} {problem}")
        return text

    def ident(self, raw: Any, key: str, shape: re.Pattern[str] | None = None) -> str:
        """A provider's identifier (a region, an instance type, an AMI, a key pair, a
        login), in the shape its provider spells it. These values reach Ansible (the
        providers' playbooks, the inventory's ansible_user and host names), where a
        `{{ ... }}` would be a template run on the controller: a shape without braces,
        quotes or spaces refuses one in one line (and the variables dbarena hands a
        playbook are never templated anyway: fleet/untemplated.py)."""
        text = self.name(raw, key)
        shape = shape or _IDENT
        if not shape.fullmatch(text):
            raise self.fail(key, f"{quoted(text)} is not a provider's name ({_SHAPES[shape.pattern]})")
        return text

    def machines(self, raw: Any) -> Machines | None:
        """[machines]: checked here, priced and made by dbarena.cloud (docs/cloud.md)."""
        if raw is None:
            return None
        body = self.table(raw, "machines", MACHINES_KEYS)
        # The local provider's instances are on this machine: its one region is "local"
        # (a region named otherwise is only a name, as its instance types are).
        local = body.get("provider") == "local"
        for required in ("provider", *(() if local else ("region",))):
            if required not in body:
                raise self.fail(f"machines.{required}", "missing (e.g. provider = \"aws\", region = \"us-east-1\")")
        types = body.get("instance_types", [])
        if not isinstance(types, list):
            raise self.fail("machines.instance_types", f"expected a list of instance types, not {_kind(types)}")
        instance_types = tuple(self.ident(t, f"machines.instance_types[{i}]") for i, t in enumerate(types))
        if len(set(instance_types)) != len(instance_types):
            raise self.fail("machines.instance_types", "an instance type is listed twice (count = N makes N of each)")
        raw_managed = body.get("managed", [])
        if not isinstance(raw_managed, list):
            raise self.fail("machines.managed", "expected [[machines.managed]] tables")
        managed = tuple(self.managed(m, f"machines.managed[{i}]") for i, m in enumerate(raw_managed))
        if not instance_types and not managed:
            raise self.fail("machines", "nothing to make: give instance_types and/or [[machines.managed]]")
        if managed and not instance_types:
            # The load has to come from somewhere dbarena runs: a host of its own.
            raise self.fail("machines.instance_types", "a managed database needs a host to load it from: give an "
                                                       "instance type for the load generator")
        if len({m.engine for m in managed}) != len(managed):
            raise self.fail("machines.managed", "one managed database per engine (the engine's target is it)")
        prices, currency = self.machine_prices(body.get("prices"))
        lifetime = body.get("lifetime")
        return Machines(
            provider=self.ident(body["provider"], "machines.provider"),
            region=self.ident(body["region"], "machines.region") if "region" in body else "local",
            instance_types=instance_types,
            count=self.int_(body.get("count", 1), "machines.count"),
            disk=self.ident(body.get("disk", "gp3"), "machines.disk"),
            disk_gb=self.int_(body.get("disk_gb", 20), "machines.disk_gb"),
            disk_iops=self.int_(body["disk_iops"], "machines.disk_iops") if "disk_iops" in body else None,
            image=self.ident(body["image"], "machines.image", _IMAGE) if "image" in body else None,
            ssh_user=self.ident(body.get("ssh_user", "admin"), "machines.ssh_user", _LOGIN),
            key_name=self.ident(body["key_name"], "machines.key_name", _KEY_NAME) if "key_name" in body else None,
            managed=managed, prices=prices, currency=currency,
            catalogue=str((self.base_dir or Path.cwd()) / self.str_(body["catalogue"], "machines.catalogue"))
            if "catalogue" in body else None,
            lifetime_s=self.duration(lifetime, "machines.lifetime") if lifetime is not None else None,
        )

    def managed(self, raw: Any, key: str) -> ManagedDb:
        body = self.table(raw, key, MANAGED_KEYS)
        for required in ("engine", "instance_class"):
            if required not in body:
                raise self.fail(f"{key}.{required}", "missing")
        engine = self.str_(body["engine"], f"{key}.engine")
        entry = next((e for e in self.entries if e.name == engine), None)
        if entry is None:
            raise self.fail(f"{key}.engine", f"{engine!r} is not an engine of this study "
                                             f"([engines] has: {', '.join(e.name for e in self.entries)})")
        if entry.target is not None:
            raise self.fail(f"{key}.engine", f"engines.{engine} has a target already: the managed database "
                                             "becomes its target")
        if entry.settings or entry.cluster or entry.data_dir:
            raise self.fail(f"{key}.engine", f"engines.{engine}'s settings, cluster options and data_dir apply to a "
                                             "throwaway instance only, not to a managed database")
        return ManagedDb(
            engine=engine, version=self.ident(str(body["version"]), f"{key}.version") if "version" in body else None,
            instance_class=self.ident(body["instance_class"], f"{key}.instance_class"),
            storage_gb=self.int_(body.get("storage_gb", 20), f"{key}.storage_gb"),
            storage_type=self.ident(body.get("storage_type", "gp3"), f"{key}.storage_type"),
            iops=self.int_(body["iops"], f"{key}.iops") if "iops" in body else None,
            ha=self.bool_(body.get("ha", False), f"{key}.ha"),
        )

    def machine_prices(self, raw: Any) -> tuple[tuple[tuple[tuple[str, str], float], ...], str | None]:
        """[machines.prices]: compute."m7g.large" = 0.0816 (per hour), storage.gp3 = 0.08
        (per GB-month), iops.gp3 = 0.005 (per IOPS-month), managed."db.m7g.large",
        replicas."db.m7g.large" (per hour), managed_storage, managed_iops; currency."""
        if raw is None:
            return (), None
        body = self.table(raw, "machines.prices", PRICES_KEYS)
        currency = self.name(body["currency"], "machines.prices.currency") if "currency" in body else None
        out = []
        for part, table in body.items():
            if part == "currency":
                continue
            for name, value in self.table(table, f"machines.prices.{part}", None).items():
                where = f"machines.prices.{part}.{quoted(name)}"
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_PRICE:
                    raise self.fail(where, f"expected a price of 0 or more, not {_kind(value)}")
                out.append(((part, self.name(name, where)), float(value)))
        return tuple(sorted(out)), currency

    def cpu_options(self, raw: Any) -> dict[str, Any]:
        if raw is None:
            return {}
        body = self.table(raw, "cpus", CPUS_KEYS)
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
        body = self.table(raw, "cpus", CPUS_KEYS)
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

    def precision(self, raw: Any, sweep: dict[str, Any]) -> float | None:
        if raw is None:
            if sweep["budget"] is not None and not self.searching:
                raise self.fail("sweep.budget", "a budget bounds adaptive repeats or a search for capacity: give "
                                                "sweep.precision or [slo] too")
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

    def slo(self, raw: Any) -> Objective | None:
        """[slo]: objective = "p99=10ms", errors = "0.1%", precision = "2%", max_rates = 12."""
        if raw is None:
            return None
        body = self.table(raw, "slo", SLO_KEYS)
        if "objective" not in body:
            raise self.fail("slo.objective", "missing (e.g. objective = \"p99=10ms\")")
        try:
            found = capacity.parse(self.str_(body["objective"], "slo.objective"))
        except UsageError as exc:
            raise self.fail("slo.objective", str(exc).removeprefix("--slo ")) from None
        share = {}
        for key, default in (("errors", capacity.DEFAULT_ERRORS), ("precision", capacity.DEFAULT_PRECISION)):
            given = body.get(key)
            if given is None:
                share[key] = default
                continue
            if not isinstance(given, str):
                raise self.fail(f"slo.{key}", f"expected a percentage like \"{default:.1%}\", not {_kind(given)}")
            number = given.strip().removesuffix("%")
            try:
                value = float(number) / 100
            except ValueError:
                value = -1.0
            if not given.strip().endswith("%") or not 0 <= value <= 0.5 or (key == "precision" and value <= 0):
                raise self.fail(f"slo.{key}", f"{given!r}: expected a percentage from "
                                              f"{'above ' if key == 'precision' else ''}0 to 50 %, e.g. "
                                              f"\"{default:.1%}\"")
            share[key] = value
        rates = self.int_(body.get("max_rates", capacity.DEFAULT_MAX_RATES), "slo.max_rates", minimum=2)
        if rates > 100:
            raise self.fail("slo.max_rates", f"{rates}: at most 100 offered rates a search")
        return Objective(found.statistic, found.limit_ms, errors=share["errors"], precision=share["precision"],
                         max_rates=rates)

    def profile(self, raw: Any) -> Profiling | None:
        """[profile]: frequency = 99 (samples a second of each CPU's time), required = false.
        The table present, even empty: each point profiled."""
        if raw is None:
            return None
        body = self.table(raw, "profile", PROFILE_KEYS)
        frequency = self.int_(body.get("frequency", PROFILE_FREQUENCY_HZ), "profile.frequency")
        if frequency > MAX_PROFILE_FREQUENCY_HZ:
            raise self.fail("profile.frequency", f"{frequency}: at most {MAX_PROFILE_FREQUENCY_HZ} samples a second "
                                                 "(a profile may cost 1 % of throughput at most)")
        return Profiling(frequency_hz=frequency, required=self.bool_(body.get("required", False), "profile.required"))

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
            body = self.table(body, key, ENGINE_KEYS)
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

    def workload(self, raw: Any, key: str, sweep: dict[str, Any], params: dict[str, Any],
                 study_engines: tuple[str, ...]) -> WorkloadEntry:
        body = self.table(raw, key, WORKLOAD_KEYS)
        w = self._workload_of(body, key)
        name = w.name
        chosen = self._workload_engines(body, key, w, study_engines)
        for k in PARAM_DEFAULTS:
            if k in body and k not in {p.name for p in w.tool.params}:
                raise self.fail(f"{key}.{k}", f"{name} has no parameter {k!r} "
                                              f"(it reads: {', '.join(p.name for p in w.tool.params)})")
        merged = {**sweep, **{k: v for k, v in body.items() if k in SWEEP_DEFAULTS}}
        own = {p.name: self.int_(body.get(p.name, params.get(p.name, p.default)), f"{key}.{p.name}")
               for p in w.tool.params}
        options = self._tool_options(body, key, w)
        def where(k: str) -> str:  # the key that set it: the workload's own, else [sweep]'s
            return f"{key}.{k}" if k in body else f"sweep.{k}"

        datasets, restore = self._lifecycle(merged, where, chosen)
        return WorkloadEntry(
            workload=name, engines=chosen, levels=self.levels(merged["levels"], where("levels")),
            duration_s=self.int_(merged["duration_s"], where("duration_s")),
            warmup_s=self.int_(merged["warmup_s"], where("warmup_s"), minimum=0),
            clients_per_thread=self.int_(merged["clients_per_thread"], where("clients_per_thread")),
            datasets=datasets, params=tuple(sorted(own.items())), options=tuple(sorted(options.items())),
            restore=restore,
        )

    def _workload_of(self, body: dict[str, Any], key: str) -> workloads.Workload:
        if "workload" not in body:
            raise self.fail(f"{key}.workload", f"missing (one of: {', '.join(workloads.WORKLOADS)})")
        name = self.str_(body["workload"], f"{key}.workload")
        if name not in workloads.WORKLOADS:
            raise self.fail(f"{key}.workload", f"unknown workload {name!r} (known: {', '.join(workloads.WORKLOADS)})")
        return workloads.WORKLOADS[name]

    def _workload_engines(self, body: dict[str, Any], key: str, w: workloads.Workload,
                          study_engines: tuple[str, ...]) -> tuple[str, ...]:
        """The engines a workload entry runs on: those it lists, else every engine of the
        study that can run it."""
        if "engines" not in body:
            chosen = tuple(e for e in study_engines if e in w.engines)
            if not chosen:
                raise self.fail(f"{key}.workload", f"{w.name} runs on {', '.join(w.engines)}, "
                                                   f"not on this study's engines ({', '.join(study_engines)})")
            return chosen
        listed = body["engines"]
        if not isinstance(listed, list) or not listed or not all(isinstance(e, str) for e in listed):
            raise self.fail(f"{key}.engines", "expected a non-empty list of engine names")
        for e in listed:
            if e not in study_engines:
                raise self.fail(f"{key}.engines", f"{e!r} is not an engine of this study "
                                                  f"([engines] has: {', '.join(study_engines)})")
            if e not in w.engines:
                raise self.fail(f"{key}.engines", f"{w.name} cannot run on {e} (it runs on: {', '.join(w.engines)})")
        return tuple(dict.fromkeys(listed))

    def _tool_options(self, body: dict[str, Any], key: str, w: workloads.Workload) -> dict[str, str]:
        try:
            options = w.tool.check_options(self.table(body.get("options", {}), f"{key}.options", None), self.base_dir)
        except StudyError:
            raise
        except UsageError as exc:
            raise self.fail(f"{key}.options", str(exc)) from None
        for required in w.required_options:
            if required not in options:
                raise self.fail(f"{key}.options", f"{w.name} needs the option {required!r}")
        return options

    def _lifecycle(self, merged: dict[str, Any], where: Callable[[str], str], chosen: tuple[str, ...]
                   ) -> tuple[str, str | None]:
        """The workload's datasets lifecycle and restore choice, checked together."""
        datasets = merged["datasets"]
        if datasets not in DATASET_LIFECYCLES:
            raise self.fail(where("datasets"), f"expected one of {', '.join(DATASET_LIFECYCLES)}, not {datasets!r}")
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
        return datasets, restore or None

    def price(self, raw: Any) -> tuple[float | None, str | None, str | None, float | None]:
        """(per hour, currency, how it was given, the monthly amount when it was one)."""
        if raw is None:
            return None, None, None, None
        body = self.table(raw, "price", PRICE_KEYS)
        if ("per_hour" in body) == ("per_month" in body):
            raise self.fail("price", "give either per_hour or per_month")
        currency = self.str_(body.get("currency", "USD"), "price.currency")
        for k in ("per_hour", "per_month"):
            if k in body:
                value = body[k]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                    raise self.fail(f"price.{k}", f"expected a positive number, not {value!r}")
                if k == "per_hour":
                    return float(value), currency, "per hour", None
                return (float(value) / HOURS_PER_MONTH, currency, f"{value:g} per month / {HOURS_PER_MONTH} h",
                        float(value))
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


