"""From a study to the concrete list of points to run. Pure functions.

Order, outermost first: engine (each its own servers), repeat, variant, workload,
level. Repeats and variants are interleaved as whole passes over the plan, so that
drift over time (a warming cache, a neighbour, thermal throttling) spreads over all
points instead of masquerading as a difference between repeats or variants. The one
exception is the kernel's SMT switch, which is machine-wide: its modes run one after
the other (by_smt).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable

from dbarena import workloads
from dbarena.stats import estimators as stats
from dbarena.errors import UsageError
from dbarena.model import PointSpec
from dbarena.study import EngineEntry, Level, Study

# Study A's levels: 1 and 2 threads, then these shares of the hardware threads,
# rounded down (128 threads -> 1 2 25 51 76 102 126).
SWEEP_PERCENTS = (20, 40, 60, 80, 99)


def default_levels(hardware_threads: int) -> list[int]:
    """1, 2, then floor(p % of N) for p in 20, 40, 60, 80, 99; no zeros or duplicates."""
    return resolve_levels([1, 2, *(f"{p}%" for p in SWEEP_PERCENTS)], hardware_threads)


def resolve_levels(levels: Iterable[Level], hardware_threads: int | None) -> list[int]:
    """Numbers as they are, "N%" as floor(N % of the hardware threads); zeros and
    duplicates dropped, ascending."""
    out = set()
    for level in levels:
        if isinstance(level, str):
            if hardware_threads is None:
                raise UsageError(f"level {level!r} is a share of the server's hardware threads, which a --target "
                                 "does not show: give server_threads (--server-threads) or levels as numbers")
            if hardware_threads < 1:
                raise ValueError(f"hardware_threads must be >= 1, not {hardware_threads}")
            # Integer arithmetic: floor(0.2 * 5) must be 1, never 0.99999.
            out.add(hardware_threads * int(level.removesuffix("%")) // 100)
        else:
            out.add(level)
    out.discard(0)
    return sorted(out)


@dataclass(frozen=True)
class EnginePlan:
    """The points one engine runs, in order, on one server per variant."""

    engine: EngineEntry
    variants: tuple[str, ...]  # ("",) when the study has none
    settings: dict[str, dict[str, str]]  # variant -> the server settings it runs under
    cluster: dict[str, dict[str, str]]  # variant -> the cluster options its server is created with
    # variant -> (whole physical cores, "on"/"off" SMT) its server is confined to ([cpus])
    placement: dict[str, tuple[int | None, str | None]]
    levels: tuple[int, ...]  # every level of the engine's workloads, for display
    points: tuple[PointSpec, ...]

    @property
    def max_clients(self) -> int:
        return max(p.clients for p in self.points)


def planned_runs(study: Study) -> list[tuple[str, str]]:
    """(engine, variant) of every stored run a `dbarena run` of the study makes, in the
    order it begins them (as expand plans them; SMT modes aside): what --resume checks
    an invocation against, to find the engines an interrupted study never began."""
    variants = [v.name for v in study.variants] or [""]
    return [(engine.name, variant) for engine in _engines_with_work(study) for variant in variants]


def _engines_with_work(study: Study) -> list[EngineEntry]:
    """The study's engines that some workload runs on (the others get no run)."""
    return [engine for engine in study.engines if any(engine.name in w.engines for w in study.workloads)]


def expand(study: Study, hardware_threads: Callable[[EngineEntry], int | None]) -> list[EnginePlan]:
    """Every workload of every engine at each of its levels, for every variant and
    repeat (see the module's note on order). hardware_threads(engine) is what "N%"
    levels are a share of: this machine's for a throwaway instance, the server's
    (as the study or --server-threads says) for a target, None if unknown."""
    plans = []
    for engine in _engines_with_work(study):
        entries = [w for w in study.workloads if engine.name in w.engines]
        threads = hardware_threads(engine)
        one_pass: list[PointSpec] = []
        for w in entries:
            workload = workloads.WORKLOADS[w.workload]
            for t in resolve_levels(w.levels, threads):
                clients = t * w.clients_per_thread if workload.multiplies_clients else t
                one_pass.append(PointSpec(
                    engine=engine.name, workload=w.workload, threads=t, clients=clients, duration_s=w.duration_s,
                    params=w.params, options=w.options, warmup_s=w.warmup_s, datasets=w.datasets,
                    restore=w.restore,
                ))
        variants = tuple(v.name for v in study.variants) or ("",)
        settings = {v.name: {**dict(engine.settings), **v.settings_for(engine.name)} for v in study.variants} \
            or {"": dict(engine.settings)}
        cluster = {v.name: {**dict(engine.cluster), **v.cluster_for(engine.name)} for v in study.variants} \
            or {"": dict(engine.cluster)}
        # Adaptive repeats (precision) start with the rounds every point runs (the
        # least a verdict needs); rounds.Adaptive decides on more as results come.
        repeats = study.repeats if study.precision is None else min(stats.MIN_REPEATS, study.max_repeats)
        points = tuple(replace(p, repeat=r, variant=v) for r in range(repeats) for v in variants for p in one_pass)
        placement = {v.name: (v.cores, v.smt) for v in study.variants}
        plans.append(EnginePlan(engine=engine, variants=variants, settings=settings, cluster=cluster,
                                placement=placement,
                                levels=tuple(sorted({p.threads for p in one_pass})), points=points))
    return plans


def by_smt(engine_plan: EnginePlan) -> list[tuple[str | None, EnginePlan]]:
    """The plan cut into one part per [cpus] smt mode, in the study's order of modes:
    the kernel's SMT switch is machine-wide, so one mode's variants run (and their
    servers start) while the machine is in that mode. Repeats and variants stay
    interleaved within a part; the mode is what cannot be."""
    modes = dict.fromkeys(engine_plan.placement.get(v, (None, None))[1] for v in engine_plan.variants)
    out = []
    for mode in modes:
        variants = tuple(v for v in engine_plan.variants if engine_plan.placement.get(v, (None, None))[1] == mode)
        out.append((mode, replace(engine_plan, variants=variants,
                                  placement={v: engine_plan.placement[v] for v in variants
                                             if v in engine_plan.placement},
                                  points=tuple(p for p in engine_plan.points if p.variant in variants))))
    return out
