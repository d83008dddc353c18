"""The dataset lifecycles: which steps (prepare, snapshot, restore, cleanup) of a
tool's prepared dataset go before and after each point of a plan. Pure, so that the
sweep (runner.py) and `study check` share them and tests check them without a server.
"""

from __future__ import annotations

from typing import Sequence, TypeAlias

from dbarena.model import PointSpec
from dbarena.workloads import WORKLOADS

DatasetKey: TypeAlias = tuple[str, str, tuple[tuple[str, int], ...]]  # (variant, tool, params)
Slot: TypeAlias = tuple[str, str]  # (variant, tool): where one dataset of the tool is prepared at a time
Step: TypeAlias = tuple[str, PointSpec]  # ("prepare" | "snapshot" | "restore" | "cleanup", spec)


def dataset_key(spec: PointSpec) -> DatasetKey:
    """What identifies a dataset on one target: the tool and its parameters."""
    return (spec.variant, WORKLOADS[spec.workload].tool.name, spec.params)


def dataset_use(spec: PointSpec) -> str:
    """How the point uses its tool's prepared dataset (Tool.dataset_use): "shared",
    "consumed" (sysbench's oltp_delete) or "own" (none: sysbench's bulk_insert)."""
    workload = WORKLOADS[spec.workload]
    return workload.tool.dataset_use(workload.mode_args)


def dataset_steps(plan: Sequence[PointSpec], current: dict[Slot, tuple[DatasetKey, PointSpec]] | None = None
                  ) -> list[tuple[list[Step], list[Step]]]:
    """For each point, the dataset steps before and after it: ("prepare" | "cleanup",
    spec). Pure, so the lifecycles are tested without a server. `current` (updated
    in place) carries what is prepared from one round of points to the next.

    - "run": prepared before the first point that needs it, and again (after a
      cleanup) when a later point needs other parameters; what is left at the end is
      cleaned up by the sweep (not on a throwaway instance, which goes away whole);
    - "workload": prepared before each run of consecutive points of one workload
      (one repeat, one variant), cleaned up after it;
    - "point": prepared before and cleaned up after every point (study A's
      prepare / run / cleanup around each sysbench test).

    With `restore` ("point" or "level"), a snapshot of the data directory follows each
    prepare ("snapshot"), and a point that finds its dataset already prepared gets it
    put back first ("restore"): before every point, or before the first point of each
    level (study B restored its TPC-C data before every round).

    A point of a workload that keeps no dataset (Tool.dataset_use "own") has no steps
    and leaves the tool's prepared dataset as it is, for the points after it; one that
    uses it up ("consumed") gets it as with "point", whatever the lifecycle.
    """
    steps: list[tuple[list[Step], list[Step]]] = [([], []) for _ in plan]
    if current is None:
        current = {}  # (variant, tool) -> (dataset key, who prepared it)

    def block(a: PointSpec, b: PointSpec | None) -> bool:
        return b is not None and (a.workload, a.repeat, a.variant, a.params, a.options) == \
            (b.workload, b.repeat, b.variant, b.params, b.options)

    last: dict[Slot, PointSpec] = {}  # slot -> the point that used its dataset last
    for i, spec in enumerate(plan):
        use = dataset_use(spec)
        if use == "own":
            continue
        lifecycle = "point" if use == "consumed" else spec.datasets
        key = dataset_key(spec)
        slot = key[:2]
        before, after = steps[i]
        if lifecycle == "run":
            fresh = current.get(slot, (None,))[0] != key
        else:
            fresh = lifecycle == "point" or not block(spec, plan[i - 1] if i else None)
        if fresh:
            if slot in current:
                before.append(("cleanup", current.pop(slot)[1]))
            before.append(("prepare", spec))
            if spec.restore:
                before.append(("snapshot", spec))
            current[slot] = (key, spec)
        elif spec.restore == "point" or (spec.restore == "level" and (
                slot not in last or last[slot].threads != spec.threads)):
            before.append(("restore", spec))
        last[slot] = spec
        if lifecycle == "point" or (lifecycle == "workload" and
                                    not block(spec, plan[i + 1] if i + 1 < len(plan) else None)):
            after.append(("cleanup", spec))
            current.pop(slot, None)
    return steps
