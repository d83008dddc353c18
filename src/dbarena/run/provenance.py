"""What the session records about each stored run besides its points: its provenance
(the study, this host, the target, the tools' and client libraries' versions, the
options --resume rebuilds the plan from), the run-level part of every point's
configuration key, and what a killed run may leave on an existing server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from dbarena import execute, workloads
from dbarena.host import datadir
from dbarena.interfaces import Engine, Executor, Target, Tool
from dbarena.lifecycle import state
from dbarena.model import PointSpec, RunInfo, StudyRecord
from dbarena.records import JSON, JSONObject
from dbarena.stats import configkey
from dbarena.store.database import now_utc
from dbarena.study import EngineEntry, Study


def tool_versions(target: Target, engine: Engine, tools: Iterable[Tool], executor: Executor) -> dict[str, str]:
    """The version of every tool the plan uses, found now rather than at the first point,
    and the client library each links, which speaks the wire protocol the numbers went
    through ("pgbench libpq", "sysbench libmariadb" ...), and the engine's own."""
    used = list(tools)
    versions = {t.binary: execute.version_line(target.client(t).binary, executor) for t in used}
    for t in used:
        for lib, text in execute.linked_libraries(target.client(t).binary, executor).items():
            versions[f"{t.binary} {lib}"] = text
    versions.update(engine.client_libraries())
    return versions


def _target_facts(entry: EngineEntry, target: Target) -> JSONObject:
    facts = target.facts()
    if not target.throwaway:
        if entry.server_cores:
            facts["server_physical_cores"] = entry.server_cores
        if entry.server_threads:
            facts["server_hardware_threads"] = entry.server_threads
    return facts


def run_info(study: Study, record: StudyRecord, label: str, facts: JSONObject, entry: EngineEntry, target: Target,
             variant: str, settings: Mapping[str, str], tool_versions: dict[str, str], init: bool, invocation: str,
             cluster: Mapping[str, str] | None = None, cpus: JSONObject | None = None,
             data_parent: Path | None = None, probe: JSONObject | None = None,
             session: tuple[int, int] = (0, 1), profiling: JSONObject | None = None,
             machine: JSONObject | None = None) -> RunInfo:
    """A run's provenance, as begin_run stores it (`cpus`: the [cpus] placement's facts;
    `probe`: the host probe before the study, host/probe.py; `session`: which of how
    many sessions of the study it is, stats/sessions.py; `profiling`: the on-CPU
    profiles asked for, with perf's version or why there are none; `machine`: the
    machine made for the run that it runs on, cloud/ondemand.py's machine_of)."""
    target_facts = _target_facts(entry, target)
    hostname = facts.get("hostname")
    host = hostname if isinstance(hostname, str) else ""
    options: JSONObject = {
        "study": study.name, "quick": study.quick, "changes": list(study.changes), "settings": dict(settings),
        "cluster": dict(cluster or {}),
        "cpus": cpus,  # [cpus]: where the server and the tools ran
        # Where the data lived (a RAM disk, an NVMe mount, the temporary directory): its
        # file system, device and mount options.
        "data_dir": dict(datadir.facts(data_parent, entry.data_dir)) if target.throwaway else None,
        "init": init, "repeats": study.repeats, "sessions": study.sessions,
        # A monthly rent as given (the run's price_per_hour is it / 730): shown as given.
        "price_per_month": study.price_per_month,
        # What --resume rebuilds the plan from: the study's text (stored apart) and these flags.
        "flags": dict(study.flags), "source": study.source,
        "precision": study.precision, "max_repeats": study.max_repeats, "budget_s": study.budget_s,
        # The latency objective whose capacity its points' search found (stats/capacity.py).
        "slo": study.slo.to_json() if study.slo else None,
        # The on-CPU profiles asked for (--profile, [profile]: run/profiling.py): the
        # frequency, and perf's version or why this run has none.
        "profile": profiling,
        "owner": {"pid": os.getpid(), "start": state.start_time(os.getpid()), "host": host},
        # What older runs recorded, so that report and analysis read both alike.
        "targets": {entry.name: entry.target} if entry.target else {},
        # The host probe before the study (host/probe.py): the machine measured, not the
        # configuration, so here rather than in host_facts (kept once per host) or the key.
        "probe": probe,
        # The session this run is (stats/sessions.py: the unit a comparison replicates),
        # and the state it began in, which the next session's start does not reset.
        "session": {"index": session[0] + 1, "of": session[1], "start": _session_start(target)},
    }
    if machine is not None:
        # A study's [machines]: what this host is (provider, region, type, image, prices
        # with their source and date, the times to make it), known as the run begins.
        options["machine"] = machine
    return RunInfo(
        label=label, host=host, engine=entry.name, target=target.url, started_at=now_utc(),
        server_version=target.server_version, tool_versions=tool_versions, options=options, host_facts=facts,
        target_facts=target_facts, price_per_hour=study.price_per_hour, currency=study.currency, variant=variant,
        flavour=target.flavour, study=record, invocation=invocation,
    )


def key_context(entry: EngineEntry, target: Target, settings: Mapping[str, str], variant: str, facts: JSONObject,
                target_facts: Mapping[str, JSON] | None = None) -> JSONObject:
    """The run-level part of every point's configuration key; `target_facts` the run's
    (run_info's), which say whether its connections were encrypted."""
    return {
        "settings": dict(settings), "variant": variant, "server_version": target.server_version,
        "flavour": target.flavour,
        "host": configkey.host_identity(facts, None if target.throwaway else target.url, entry.server_cores,
                                        entry.server_threads),
        "tls": configkey.tls_of(target_facts),
    }


def _add(out: list[str], line: str) -> None:
    if line not in out:
        out.append(line)


def leftovers(target: Target, points: Sequence[PointSpec], variant: str) -> list[str]:
    """What a killed run may leave on an existing server, each with the command that
    removes it (never run by dbarena on its own)."""
    if target.throwaway:
        return []
    out: list[str] = []
    secret = None
    for spec in points:
        if spec.variant != variant:
            continue
        tool = workloads.WORKLOADS[spec.workload].tool
        client = target.client(tool)
        secret = str(client.secret_file) if client.secret_file else None
        for argv in tool.cleanup_argv(client, spec):
            # The password file dbarena wrote is gone by then: the user supplies the password.
            shown = " ".join(a for a in argv if not (secret and secret in a))
            _add(out, f"{tool.name} tables may remain; drop them with: {shown}")
        if tool.name == "pgbench":
            _add(out, f"pgbench tables (pgbench_*) remain, as after any run on a target; drop them with: "
                      f"pgbench -i -I d -h {target.conn.host} -p {target.conn.port} -U {target.conn.user} "
                      f"{target.conn.dbname}")
    return out


def _session_start(target: Target) -> str:
    """How a session's server began, in words: the OS page cache is never dropped (that
    needs root and empties every other process's cache too), so it is stated instead."""
    if target.throwaway:
        return ("a throwaway server started afresh on a new data directory; its datasets prepared in it; the OS "
                "page cache not dropped (it holds what preparing them wrote)")
    return ("an existing server, connected to again; its datasets prepared again; its own caches and the OS page "
            "cache as the last session left them")
