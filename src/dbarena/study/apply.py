"""Flags and --quick over a study; the implicit study of a flags-only run; the study
a stored run followed (--resume), and what differs between two studies."""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping

import tomli_w

from dbarena import engines, workloads
from dbarena.errors import UsageError
from dbarena.stats import capacity
from dbarena.stats.capacity import Objective
from dbarena.stats.price import HOURS_PER_MONTH
from dbarena.study.flags import Overrides, flag_of, run_flags
from dbarena.study.model import (
    FLAGS_SOURCE, QUICK_DURATION_S, QUICK_WARMUP_S, SCHEMA_VERSION, SWEEP_DEFAULTS, EngineEntry, Profiling, Study,
    Variant, WorkloadEntry,
)
from dbarena.study.reader import Checker, parse

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
    skeleton = Checker(FLAGS_SOURCE, Path.cwd()).study(raw, "")
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


class _Notes:
    """What flags and --quick changed, in order, for `study check`."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, what: str, old: Any, new: Any, why: str) -> None:
        if old != new:
            self.lines.append(f"{what}: {_show(old)} -> {_show(new)} ({why})")


def apply(study: Study, o: Overrides) -> Study:
    """The study with --quick and then the flags applied (flags win)."""
    note = _Notes()
    entries = chosen = _chosen(study, o, note)
    kept_engines = {e for w in entries for e in w.engines}
    engine_entries = [e for e in study.engines if e.name in kept_engines]
    variants = study.variants
    if o.quick:
        entries, engine_entries, variants = _quick(entries, engine_entries, variants, note)
    entries = [_flagged_workload(w, o, note) for w in entries]
    shortened_by = "--duration" if o.duration_s is not None else "--quick"
    entries = [_interval_within(w, was.duration_s, note, shortened_by) for w, was in zip(entries, chosen)]
    new_engines = [_flagged_engine(e, o, note) for e in engine_entries]
    _check_engine_flags(o, new_engines, kept_engines)
    variants = _variants_on_targets(variants, new_engines, note)
    repeats, precision, max_repeats, budget_s = _repetition(study, o, note, study.slo is not None or o.slo is not None)
    sessions = o.sessions if o.sessions is not None else study.sessions
    note("sessions", study.sessions, sessions, "--sessions")
    if sessions > 1 and precision is not None:
        raise UsageError("--sessions with --precision: adaptive repeats stop within one session, and their "
                         "budget is not shared between sessions yet; give --repeat N with --sessions")
    label = o.label if o.label is not None else study.label
    note("label", study.label, label, "--label")
    price, currency, basis, per_month = _price(study, o, note)
    sampling = study.latency_sampling if o.latency_sampling is None else (o.latency_sampling or None)
    slo, sampling = _slo(study, o, note, entries, precision, sampling)
    sampling = _rate_sampling(o, note, entries, sampling)
    profile = _profile(study, o, note)
    return replace(study, workloads=tuple(entries), engines=tuple(new_engines), variants=variants, repeats=repeats,
                   sessions=sessions,
                   label=label,
                   precision=precision, max_repeats=max_repeats,
                   budget_s=budget_s if precision or slo else None,
                   flags={**study.flags, **o.flags()},
                   fail_fast=study.fail_fast if o.fail_fast is None else (o.fail_fast or study.fail_fast),
                   latency_sampling=sampling, slo=slo, profile=profile,
                   client_progress=study.client_progress or bool(o.client_progress),
                   price_per_hour=price, currency=currency, price_basis=basis, price_per_month=per_month,
                   quick=study.quick or o.quick,
                   changes=study.changes + tuple(note.lines))


# The fewest per-second samples a shortened point keeps: enough for a steady state.
SAMPLES_PER_POINT = 5


def _interval_within(w: WorkloadEntry, study_duration_s: int, note: _Notes, why: str) -> WorkloadEntry:
    """A point that --quick or --duration shortened keeps a per-second series: the
    study's report interval (seed D's 20 s) on a 5 s point would leave none, so it is
    cut to at most a fifth of the point. A study's own durations keep its interval."""
    option = workloads.WORKLOADS[w.workload].tool.interval_option
    options = dict(w.options)
    if option is None or option not in options or w.duration_s == study_duration_s:
        return w
    most = max(1, w.duration_s // SAMPLES_PER_POINT)
    if not options[option].isdigit() or int(options[option]) <= most:
        return w
    note(f"{w.workload} {option}", options[option], str(most), why)
    return replace(w, options=tuple(sorted({**options, option: str(most)}.items())))


def _chosen(study: Study, o: Overrides, note: _Notes) -> list[WorkloadEntry]:
    """The study's workloads that --engine and --workload keep."""
    entries = list(study.workloads)
    if o.engines is not None:
        for engine_name in o.engines:
            engines.check_name(engine_name)
            if engine_name not in {x.name for x in study.engines}:
                raise UsageError(f"--engine {engine_name}: the study {study.name} has no {engine_name} engine "
                                 f"(it has: {', '.join(x.name for x in study.engines)})")
        entries = [replace(w, engines=tuple(e for e in w.engines if e in o.engines)) for w in entries]
        entries = [w for w in entries if w.engines]
        note.lines.append(f"engines: only {', '.join(o.engines)} (--engine)")
    if o.workloads is not None:
        known = {w.workload for w in entries}
        for name in o.workloads:
            workloads.get(name)
            if name not in known:
                raise UsageError(f"--workload {name}: not in the study {study.name} "
                                 f"(it has: {', '.join(dict.fromkeys(w.workload for w in entries))})")
        entries = [w for w in entries if w.workload in o.workloads]
        note.lines.append(f"workloads: only {', '.join(o.workloads)} (--workload)")
    if not entries:
        raise UsageError(f"nothing left of the study {study.name} to run with these --engine/--workload flags")
    return entries


def _quick(entries: list[WorkloadEntry], engine_entries: list[EngineEntry], variants: tuple[Variant, ...],
           note: _Notes) -> tuple[list[WorkloadEntry], list[EngineEntry], tuple[Variant, ...]]:
    """--quick: the same shape, seconds per point, tiny datasets, memory capped."""
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
    engine_entries = [replace(e, settings=_capped(e.settings, note, e.name)) for e in engine_entries]
    if any(variant.cores for variant in variants):
        # [cpus]: the core counts this machine has (study C's 4 cores on a 2-core VM: 1 and 2).
        from dbarena.host import topology

        available = topology.usable_cores()
        for variant in variants:
            if variant.cores and variant.cores > available:
                note.lines.append(f"variant {variant.name}: left out, {variant.cores} cores asked for, "
                                  f"{available} here (--quick)")
        variants = tuple(x for x in variants if not x.cores or x.cores <= available)
    variants = tuple(replace(x, settings=tuple((e, _capped(pairs, note, f"variant {x.name} {e}"))
                                               for e, pairs in x.settings)) for x in variants)
    return quick, engine_entries, variants


def _flagged_workload(w: WorkloadEntry, o: Overrides, note: _Notes) -> WorkloadEntry:
    """A workload with the sweep flags (--threads, --duration ...) and the tool
    parameters' flags applied; a flag the workload does not read leaves it alone."""
    tool = workloads.WORKLOADS[w.workload].tool
    new = w
    for flag in run_flags():
        name = flag.workload_field
        if name is None:
            continue
        value = getattr(o, name)
        if value is not None and not (name == "duration_s" and not tool.timed):
            note(f"{w.workload} {name}", getattr(new, name), value, flag.flag)
            new = replace(new, **{name: value})
    if new.restore and new.datasets == "point":
        raise UsageError(f"--datasets point: {w.workload} restores its prepared dataset ({new.restore}); datasets "
                         "prepared before every point need no restore")
    params = dict(new.params)
    for k, v in o.params.items():
        if k in params:
            note(f"{w.workload} {k}", params[k], v, flag_of(f"params.{k}"))
            params[k] = v
    return _offered(replace(new, params=tuple(sorted(params.items()))), o, note)


def _offered(w: WorkloadEntry, o: Overrides, note: _Notes) -> WorkloadEntry:
    """--rate: the workload's points offered that rate, in its tool's rate option (as a
    study's `options.rate` would be); a workload whose tool offers none is refused, not
    run closed-loop under a flag that says otherwise."""
    if o.rate is None:
        return w
    tool = workloads.WORKLOADS[w.workload].tool
    if tool.open_loop_refusal is not None:
        raise UsageError(f"--rate: {w.workload} cannot be offered a rate: {tool.name} {tool.open_loop_refusal} "
                         "(leave it out with --workload)")
    rate = capacity.rate_text(o.rate, tool.whole_rates)
    note(f"{w.workload} {capacity.RATE_OPTION}", dict(w.options).get(capacity.RATE_OPTION), rate, "--rate")
    return replace(w, options=capacity.offering(w.options, rate))


def _flagged_engine(e: EngineEntry, o: Overrides, note: _Notes) -> EngineEntry:
    settings = dict(e.settings)
    for setting, value in o.settings.get(e.name, {}).items():
        note(f"{e.name} setting {setting}", settings.get(setting), value, engines.first(e.name).setting_option)
        settings[setting] = value
    target = o.targets.get(e.name, e.target)
    note(f"{e.name} target", e.target, target, "--target")
    if target is not None and settings:
        if o.settings.get(e.name):
            raise UsageError(f"{engines.first(e.name).setting_option} applies to a throwaway {e.name} instance only")
        # The study's own settings are for the servers it starts: a --target (a managed
        # service, say) is measured with its own, and its points are keyed so.
        note(f"{e.name} settings", ", ".join(f"{k}={v}" for k, v in sorted(settings.items())),
             "none: a --target is measured with its own", "--target")
        settings = {}
    flavour = o.flavours.get(e.name, e.flavour)
    note(f"{e.name} flavour", e.flavour, flavour, f"--{e.name}-flavour")
    cores = o.server_cores if o.server_cores is not None else e.server_cores
    threads = o.server_threads if o.server_threads is not None else e.server_threads
    return replace(e, settings=tuple(sorted(settings.items())), target=target, flavour=flavour,
                   server_cores=cores, server_threads=threads, bindir=o.bindirs.get(e.name, e.bindir))


def _variants_on_targets(variants: tuple[Variant, ...], engine_entries: list[EngineEntry], note: _Notes
                         ) -> tuple[Variant, ...]:
    """A variant's settings and cluster options are for the servers the study starts: an
    engine that --target points at a server dbarena does not start is measured with its
    own (as the engine's own settings are), so they are left out, and said, rather than
    recorded in the variant's runs and keys as if they had been applied."""
    targets = {e.name for e in engine_entries if e.target is not None}
    out = []
    for v in variants:
        for kind, given in (("settings", v.settings), ("cluster options", v.cluster)):
            for engine, pairs in given:
                if engine in targets and pairs:
                    note(f"variant {v.name} {engine} {kind}", ", ".join(f"{k}={x}" for k, x in pairs),
                         "none: a --target is measured with its own", "--target")
        out.append(replace(v, settings=tuple((e, p) for e, p in v.settings if e not in targets),
                           cluster=tuple((e, p) for e, p in v.cluster if e not in targets)))
    return tuple(out)


def _check_engine_flags(o: Overrides, new_engines: list[EngineEntry], kept_engines: set[str]) -> None:
    for engine in engines.ENGINES:
        if o.settings.get(engine) and engine not in kept_engines:
            raise UsageError(f"{engines.first(engine).setting_option} applies to a throwaway {engine} instance only")
    if (o.server_cores or o.server_threads) and not any(e.target for e in new_engines):
        raise UsageError("--server-cores/--server-threads describe a --target's server; a throwaway instance "
                         "runs here and is measured")
    for engine in o.targets:
        if engine not in kept_engines:
            raise UsageError(f"--target {o.targets[engine]} is a {engine} server, but --engine does not include "
                             f"{engine}")


def _slo(study: Study, o: Overrides, note: _Notes, entries: list[WorkloadEntry], precision: float | None,
         sampling: float | None) -> tuple[Objective | None, float | None]:
    """The latency objective (--slo over [slo]: its statistic and limit, the file's
    budget and precision kept) and the latency sampling it needs; a UsageError where the
    study cannot search for a capacity."""
    slo = study.slo
    if o.slo is not None:
        given = capacity.parse(o.slo)
        slo = replace(slo, statistic=given.statistic, limit_ms=given.limit_ms) if slo else given
    note("slo", study.slo.spec if study.slo else None, slo.spec if slo else None, "--slo")
    if slo is None:
        return None, sampling
    if o.rate is not None:
        raise UsageError(f"--rate with a latency objective ({'--slo' if o.slo else '[slo]'}): the search for a "
                         "capacity offers its own rates; give one of them")
    if precision is not None:
        raise UsageError("--slo with --precision: each offered rate runs --repeat N times; adaptive repeats "
                         "do not search rates yet")
    if study.together:
        raise UsageError("--slo with [fleet] together: a search over offered rates runs on one host's "
                         "`dbarena run` (or `fleet run` without --together) for now")
    for w in entries:
        refusal = workloads.WORKLOADS[w.workload].tool.open_loop_refusal
        if refusal is not None:
            raise UsageError(f"--slo: {w.workload} cannot be searched for a capacity: "
                             f"{workloads.WORKLOADS[w.workload].tool.name} {refusal}")
        if capacity.RATE_OPTION in dict(w.options):
            raise UsageError(f"--slo: {w.workload} sets the option {capacity.RATE_OPTION!r}, which the search "
                             "over offered rates sets itself (leave it out, or leave out --slo)")
    if o.latency_sampling == 0:
        raise UsageError("--slo with --latency-sampling 0: the objective is judged on the per-transaction log's "
                         "latencies (from each transaction's scheduled start); give a share above 0")
    if sampling is None:
        note("latency_sampling", None, 1.0, "--slo: each transaction's latency from its scheduled start")
        sampling = 1.0
    return slo, sampling


def _rate_sampling(o: Overrides, note: _Notes, entries: list[WorkloadEntry], sampling: float | None) -> float | None:
    """The latency sampling of a study whose points are offered a fixed rate: such a
    point is compared by its p95 latency (stats/atrate.py), which pgbench gives only
    from its per-transaction log, so every transaction is logged unless
    --latency-sampling says otherwise (at an offered rate the log's CPU costs no
    throughput)."""
    if sampling is not None or o.latency_sampling == 0 or \
            not any(capacity.RATE_OPTION in dict(w.options) for w in entries):
        return sampling
    note("latency_sampling", None, 1.0, "a workload offered a rate: compared by its latency percentiles")
    return 1.0


def _profile(study: Study, o: Overrides, note: _Notes) -> Profiling | None:
    """The on-CPU profiles asked for (--profile over [profile]: the file's frequency and
    `required` kept)."""
    profile = study.profile or (Profiling() if o.profile else None)
    note("profile", study.profile is not None, profile is not None, "--profile")
    return profile


def check_profile_targets(study: Study) -> None:
    """A study that requires profiles of a server dbarena did not start (a --target),
    refused in one line before anything starts: perf samples only a throwaway instance
    (this machine's, or a `fleet run --together` [server] host's). Not checked as the
    flags are applied: a together run's load generators read the study with their
    [server] host's server as a --target, which that host profiles."""
    targets = [e.name for e in study.engines if e.target is not None]
    if study.profile is not None and study.profile.required and targets:
        raise UsageError(f"[profile] required = true with a --target ({', '.join(targets)}): perf samples only a "
                         "server dbarena started (a throwaway instance)")


def _repetition(study: Study, o: Overrides, note: _Notes, searching: bool) -> tuple[int, float | None, int, int | None]:
    """repeats, precision, max_repeats and budget: --repeat and --precision exclude each
    other; a budget bounds adaptive repeats or (`searching`: --slo) the search for capacity."""
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
    if precision is None and o.max_repeats is not None:
        raise UsageError("--max-repeats bounds adaptive repeats: give --precision too")
    if precision is None and not searching and o.budget_s is not None:
        raise UsageError("--budget bounds adaptive repeats or a search for capacity: give --precision or --slo too")
    return repeats, precision, max_repeats, budget_s


def _price(study: Study, o: Overrides, note: _Notes
           ) -> tuple[float | None, str | None, str | None, float | None]:
    price, currency, basis, per_month = study.price_per_hour, study.currency, study.price_basis, study.price_per_month
    if o.price_per_hour is not None and o.price_per_month is not None:
        raise UsageError("give --price-per-hour or --price-per-month, not both")
    if o.price_per_hour is not None:
        note("price per hour", price, o.price_per_hour, "--price-per-hour")
        price, currency, basis, per_month = o.price_per_hour, currency or "USD", "per hour", None
    if o.price_per_month is not None:
        hourly = o.price_per_month / HOURS_PER_MONTH
        note("price per hour", price, hourly, "--price-per-month")
        price, currency = hourly, currency or "USD"
        basis, per_month = f"{o.price_per_month:g} per month / {HOURS_PER_MONTH} h", o.price_per_month
    if o.currency is not None:
        if price is None:
            raise UsageError("--currency names the currency of a price: give --price-per-hour or --price-per-month")
        note("currency", currency, o.currency, "--currency")
        currency = o.currency
    return price, currency, basis, per_month


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
