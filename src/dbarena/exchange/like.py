"""`dbarena run --like BUNDLE` (docs/exchange.md): a published result's study run here,
then decided against the bundle as baseline.

The bundle is verified first (verify.py); its study (the text its run stored: workloads,
levels, durations, datasets, settings) becomes the study of the run, flags given beside
--like over it as over any --study. What cannot be the same here (cores, memory, CPU
model, architecture, engine version) is said in lines before anything starts. The
bundle is imported into the store first, as `dbarena import BUNDLE` does, so that the
decision is made by what `compare` and `report` use (analysis.compare, stats.decision)
between two runs of one store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dbarena.errors import UsageError
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.verify import Verified, verify
from dbarena.records import JSON, JSONObject
from dbarena.report import decision as decision_view
from dbarena.stats import analysis, decision
from dbarena.store.database import Store
from dbarena.study.apply import rebuild
from dbarena.study.flags import Overrides
from dbarena.study.model import Study, check_bounds

# The stored flags that name the publisher's machine, not the study.
_THEIRS = frozenset({"targets", "label", "server_cores", "server_threads", "bindirs", "price_per_hour",
                     "price_per_month", "currency"})

__all__ = ["Like", "read", "differences", "decided_lines", "bundle_runs"]


@dataclass(frozen=True)
class Like:
    verified: Verified
    run: JSONObject  # the bundle's run whose study is run again
    study_text: str
    study_source: str

    @property
    def label(self) -> str:
        return str(self.run.get("label"))

    def study(self, given: Overrides) -> Study:
        """The study the bundle's run followed (its text and its flags, as `run --resume`
        rebuilds a stored run's), with the flags given here over it. Flags that name
        the publisher's machine are left out: its servers (--target: never run against
        someone else's server by accident), binary directories, server cores and price
        (give --price-per-hour for this machine's)."""
        options = self.run.get("options")
        options = options if isinstance(options, dict) else {}
        stored = options.get("flags")
        mine: dict[str, Any] = {k: v for k, v in (stored if isinstance(stored, dict) else {}).items()
                                if k not in _THEIRS}
        mine.update(given.flags())
        source = options.get("source")
        return check_bounds(rebuild(self.study_text, str(source or self.study_source), mine))


def read(path: Path, allowed_signers: Path | None = None) -> Like:
    """The bundle verified and its study; a bundle of several studies is refused
    (which one would `--like` mean?)."""
    try:
        verified = verify(path, allowed_signers)
    except BundleProblem as exc:
        raise UsageError(f"--like: {' '.join(str(exc).split())}") from None
    runs = verified.runs
    listed = verified.bundle.manifest.get("studies")
    studies = {s.get("sha256"): s for s in (listed if isinstance(listed, list) else []) if isinstance(s, dict)}
    wanted = {r.get("study_sha256") for r in runs}
    if len(wanted) != 1 or not runs:
        raise UsageError(f"--like {path}: its {len(runs)} run(s) ran {len(wanted)} studies; publish the run to "
                         "reproduce alone (`dbarena publish --run N`)")
    study = studies.get(next(iter(wanted)))
    if study is None or not isinstance(study.get("text"), str):
        raise UsageError(f"--like {path}: its run's study is not in the bundle")
    return Like(verified, runs[0], str(study["text"]), str(study.get("source")))


def _figure(facts: Mapping[str, JSON], key: str) -> JSON:
    return facts.get(key)


def differences(like: Like, here: Mapping[str, JSON], engine_versions: Mapping[str, str | None],
                on_target: bool) -> list[str]:
    """What cannot be the same here, a line each: the machine's cores, hardware threads,
    memory, CPU model and architecture, and the engine's version, the bundle's beside
    this machine's (or "unknown until the server answers" where a --target serves it)."""
    theirs = like.run.get("host_facts")
    theirs = theirs if isinstance(theirs, dict) else {}
    out = []
    for key, words in (("physical_cores", "cores"), ("hardware_threads", "hardware threads"),
                       ("memory_bytes", "memory"), ("cpu_model", "CPU model"), ("architecture", "architecture")):
        a, b = _figure(theirs, key), _figure(here, key)
        if a != b:
            shown = [f"{v / 2**30:.1f} GiB" if key == "memory_bytes" and isinstance(v, int) else str(v) for v in (a, b)]
            out.append(f"not the same here: {words}: the bundle's {shown[0]}, here {shown[1]}"
                       + (" (this machine's: the --target's server may differ)" if on_target else ""))
    engine = str(like.run.get("engine"))
    theirs_version = str(like.run.get("server_version") or "unknown")
    mine = engine_versions.get(engine)
    if mine is None:
        out.append(f"engine version: the bundle's {engine} {theirs_version}; here known once the server answers "
                   "(said with the decision)")
    elif mine.split()[0] != theirs_version.split()[0]:
        out.append(f"not the same here: {engine} version: the bundle's {theirs_version}, here {mine}")
    if not any(line.startswith("not the same") for line in out):
        out.insert(0, "the same here as in the bundle: cores, hardware threads, memory, CPU model, architecture"
                   + (f", {engine} version" if mine is not None else ""))
    return out


def bundle_runs(db: Store, like: Like) -> list[int]:
    """The ids in `db` of the bundle's runs (by their UUIDs, which import keeps)."""
    uuids = {r.get("uuid") for r in like.verified.runs}
    return [r.id for r in db.runs() if r.uuid in uuids]


def decided_lines(db: Store, baseline_runs: list[int], here_runs: list[int], like: Like) -> list[str]:
    """The run here against the bundle's as baseline: the decision's lines as `compare`
    prints them, after the versions each ran (known now)."""
    base_name, here_name = f"bundle {like.label}", "here"
    rows = [replace(r, label=base_name, series_label=base_name) for i in baseline_runs
            for r in analysis.load(db, run_id=i)]
    rows += [replace(r, label=here_name, series_label=here_name) for i in here_runs for r in analysis.load(db, run_id=i)]
    versions = [f"{r.engine} {r.server_version}" for r in (db.run(i) for i in here_runs) if r is not None]
    out = [f"here: {', '.join(versions)}; the bundle's: {like.run.get('engine')} {like.run.get('server_version')}"]
    decided = decision.decide(analysis.compare(rows, base_name, here_name), rows)
    line = decision.overall(decided)
    if not decided:
        return out + ["no decision: no level was measured here with the bundle's configuration"]
    return out + [f"decision, here against the bundle ({json.dumps(like.label)}) as baseline:",
                  *decision_view.lines(decided, [line] if line else [])]

