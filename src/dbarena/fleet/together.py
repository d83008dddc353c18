"""`dbarena fleet run --together`: every host of the inventory a load generator of the
same point, against one server, measured as one point.

The run is the one session's (run/session.py, run/runner.py): its rounds, --precision,
--budget, resume, configuration keys, warm-ups and stored points are the local
sweep's; what differs is how a point is measured, the sweep's strategy
(togetherpoint.Together: the point split over the hosts, started at once, combined).
What is together's own: the controller coordinates; Ansible does every reaching
(playbooks/together.yml or step.yml, one short play per step: togethersteps.py), the hosts run the
hidden commands of loadgen.py, and the store is the controller's own (no fetch, no merge):

1. **Install** as `fleet run` does (start.yml, without starting a study there).
2. **Provenance and datasets**, once per server, on the first host (`host-prepare`):
   the run's run_info and configuration-key context, built there by provenance.py
   exactly as `dbarena run --target` builds them, and the study's datasets prepared
   by the tool's own prepare_argv. One run per variant is begun in the controller's
   store, with this key of the study, the target and the hosts as its invocation.
3. **The points**, swept as a local run sweeps them (runner.Sweep with the together
   strategy; session.sweep_points: one round of what is not stored ok yet, or with
   --precision as many as rounds.Adaptive decides).
4. **Resume**: the runs are found again by their key; points stored ok under the
   same configuration key are not run again (session.stored).
5. **Variants**: against --target one server holds every variant (interleaved); a
   [server] host's server is started per variant with its settings, one variant after
   the other (_parts; togetherserver.py: its life, its lease, its TLS), each with its
   share of the budget (session.budget_share).
6. **Profiles** (--profile, [profile]): the [server] host's perf around each measured
   part, stored with the point as a one-host run's (togetherprofile.py).

The start skew is the spread of the hosts' first transactions (combine.skew_s);
above 1 % of the duration the point is flagged (details and the line said here).
Clocks: the hosts' wall clocks are taken to agree (NTP); what they do not agree by
shows up as skew.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from datetime import datetime
from pathlib import Path
from typing import Mapping, Sequence

from dbarena import execute
from dbarena.errors import UsageError
from dbarena.fleet import togetherprofile, togethersteps
from dbarena.fleet.controller import Fleet, START_TIMEOUT_S, build_wheel, packages
from dbarena.fleet.inventory import Host
from dbarena.fleet.messages import PrepareRequest
from dbarena.fleet.togetherpoint import Said, Together as Measure, split_point
from dbarena.fleet.togethersteps import STEP_TIMEOUT_S, Answer
from dbarena.fleet.togetherserver import ServerHost, server_password
from dbarena.interfaces import ResultStore
from dbarena.lifecycle import state
from dbarena.model import PointSpec, RunInfo, StudyRecord
from dbarena.records import JSONObject, StoredRun, json_object
from dbarena.run import plan, resume, session
from dbarena.run.runner import Bound, Sweep
from dbarena.stats import configkey, rounds
from dbarena.study import Study

PREPARE_TIMEOUT_S = 3600.0


def check(study: Study, hosts: list[Host], server: Host | None = None) -> None:
    """What --together does not take, refused in one line before anything starts."""
    if len(study.engines) != 1:
        raise UsageError("--together drives one server: give the study one engine (--engine)")
    if server is None and study.engines[0].target is None:
        raise UsageError("--together needs --target URL, or a host in the inventory's [server] group to run a "
                         "throwaway server on: every load generator drives that server")
    if server is not None and study.engines[0].target is not None:
        raise UsageError(f"--together: give --target or a [server] host ({server.name}), not both")
    if not hosts:
        raise UsageError("--together needs at least one load generator besides the [server] host")
    if study.slo is not None:
        # Each host's share would need its own offered rate and the parts' latencies pooled
        # from each transaction's scheduled start: not built yet (docs/capacity.md).
        raise UsageError("--together with --slo ([slo]): a search over offered rates runs on one host's `dbarena "
                         "run`, or on each host of `fleet run` without --together, for now")
    placed = [v.name for v in study.variants if v.cores is not None or v.smt is not None]
    if placed:
        # [cpus] confines a throwaway server and its load generator to this machine's
        # cores; here the server is on another machine and the load generators on theirs.
        raise UsageError(f"--together places no CPUs ([cpus], variant {placed[0]}): its server and load generators "
                         "run on other machines than the one [cpus] would divide")
    if any(entry.datasets != "run" for entry in study.workloads):
        raise UsageError("--together prepares each dataset once per run: datasets = \"run\"")


def run_key(study: Study, hosts: list[Host], server: Host | None = None) -> str:
    """What finds the run again (resume): the study, its flags, the target (or the
    [server] host: its throwaway server's port differs each time), the hosts."""
    where = f"server {server.name}" if server is not None else study.engines[0].target
    text = json.dumps([study.sha256, sorted(study.flags.items()), where,
                       [h.name for h in hosts]], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Together:
    """One `fleet run --together`."""

    profiles: togetherprofile.ServerProfiles | None = None  # the [server] host's perf (--profile), once checked
    profiling: JSONObject | None = None  # what the runs record of the profiles asked for

    def __init__(self, fleet: Fleet, study: Study, study_arg: str, study_file: Path | None, run_args: list[str],
                 store: Path | str, label: str, server: Host | None = None):
        self.fleet, self.study, self.label = fleet, study, label
        # The load generators: every host but the one that runs the throwaway server.
        self.server = server
        self.hosts = [h for h in fleet.hosts if h != server]
        self.say = fleet.say
        self.store_arg = store
        self.study_file = study_file
        self.host_study = "{w}/study.toml" if study_file else study_arg
        self.run_args = run_args  # as given (a [server] host's server adds its own: ServerHost.args)
        self.target = study.engines[0].target or ""
        self.outcome = session.Outcome()  # what this session measured; precision: where each point ended

    def step(self, hosts: list[Host], args: list[str], *, request: dict[str, str] | None = None,
             detach: bool = False, secrets: bool = False, timeout_s: float = STEP_TIMEOUT_S,
             detached: str = "host-point") -> dict[str, Answer]:
        """One play of together.yml (togethersteps.play)."""
        return togethersteps.play(self.fleet.ansible, hosts, args, request=request, detach=detach, secrets=secrets,
                                  timeout_s=timeout_s, detached=detached)

    def run(self) -> int:
        check(self.study, self.hosts, self.server)
        engine_plan = self._plan()
        if self.server is None:
            return self._run(engine_plan, None)
        serving = ServerHost(self.server, self.hosts, self.study, self.step, self.say, self.fleet.ansible.inventory)
        with server_password(self.fleet.ansible, self.study.engines[0].name):
            return self._run(engine_plan, serving)

    def _plan(self) -> plan.EnginePlan:
        """The study's one engine's plan (as `dbarena run` expands it: variants and
        repeats interleaved), every point of it checked to split over the hosts."""
        from dbarena.run import preflight

        (engine_plan,) = preflight.expand(self.study)
        for spec in engine_plan.points:
            try:
                split_point(spec, self.hosts)
            except ValueError as exc:
                raise UsageError(f"{spec.workload} at {spec.threads} threads: {exc}") from None
        return engine_plan

    def _run(self, engine_plan: plan.EnginePlan, serving: ServerHost | None) -> int:
        from dbarena.store import postgres as pgstore
        from dbarena.store.database import Store

        key = run_key(self.study, self.hosts, self.server)
        specs = engine_plan.points
        self.go_s: list[float] = []  # how long each point's go play took, over every part (togetherpoint)
        # A run whose store holds every point already is said so before anything reaches
        # the hosts: nothing would run there, and the install check alone is a play on
        # every host (seconds each, more on a busy controller). (A store not made yet
        # holds nothing: it is made as before, once the hosts are installed.)
        if pgstore.is_url(self.store_arg) or Path(self.store_arg).exists():
            with Store(self.store_arg) as store:
                if not self._todo(store, engine_plan, key, serving):
                    return 0
        if not self.install():
            return 1
        self.profiles, self.profiling = togetherprofile.for_run(self.study, serving, self.step, self.say)
        with Store(self.store_arg) as store:
            found = {run.variant: run for run in store.invocation_runs(key)}
            stored = sum(p.status == "ok" for run in found.values() for p in store.points(run_id=run.id))
            parts = self._todo(store, engine_plan, key, serving)
            if not parts:  # (another run completed it meanwhile)
                return 0
            if found:
                self.say(f"resuming: {stored} of {len(specs)} points stored already")
            self.outcome = session.Outcome(invocation=key)
            clock = time.monotonic
            deadline = clock() + self.study.budget_s if self.study.budget_s is not None else None
            for number, part in enumerate(parts):
                later = [p for after in parts[number + 1:] for p in after]
                share = session.budget_share(deadline, clock, part, later) if deadline is not None else None
                with _serving(serving, engine_plan, part) as up:
                    if not up or not self._part(store, engine_plan, part, key, found, share, serving):
                        return 1
            self.say(f"{len(self.outcome.results)} point(s) with {len(self.hosts)} load generators"
                     + (f", {self.outcome.failed} failed" if self.outcome.failed else "")
                     + f"; stored in {store.location}")
            return 1 if self.outcome.failed else 0

    def _todo(self, store: ResultStore, engine_plan: plan.EnginePlan, key: str,
              serving: ServerHost | None) -> list[tuple[PointSpec, ...]]:
        """The parts with points left to run; none said as "complete already"."""
        found = {run.variant: run for run in store.invocation_runs(key)}
        parts = [p for p in _parts(engine_plan, serving is not None)
                 if _left(store, p, found, key, self.study.precision is not None)]
        if not parts:
            stored = sum(p.status == "ok" for run in found.values() for p in store.points(run_id=run.id))
            counted = "" if self.study.precision is not None else f"/{len(engine_plan.points)}"
            self.say(f"complete already ({stored}{counted} points stored), not run again")
        return parts

    def _part(self, store: ResultStore, engine_plan: plan.EnginePlan, part: Sequence[PointSpec], key: str,
              found: Mapping[str, StoredRun], deadline: float | None, serving: ServerHost | None) -> bool:
        """The points of one server (every variant's against a --target, one variant's on
        a [server] host): the datasets prepared, each variant's run begun (or reopened),
        the points swept and stored; False if the first host could not prepare."""
        first = self.hosts[0]
        target, tls_ca = (serving.target, serving.tls_ca) if serving is not None else (self.target, None)
        datasets = list({(s.workload, s.params): s for s in part}.values())
        request = PrepareRequest(
            args=("--study", self.host_study.replace("{w}", first.workdir), *self.run_args,
                  *(serving.args if serving is not None else ())),
            label=self.label, target=target, invocation=key, datasets=tuple(datasets),
            tls={"ca": tls_ca} if tls_ca is not None else None)
        self.say(f"preparing on {first.name}: the run's provenance and its datasets")
        answer = self.step([first], ["host-prepare", "--workdir", "{w}", "--request", "{w}/request.json"],
                           request={first.name: request.to_json()}, secrets=True,
                           timeout_s=PREPARE_TIMEOUT_S)[first.name]
        if answer.data is None or "error" in answer.data:
            self.say(f"{first.name}: preparing failed: {answer.problem or (answer.data or {}).get('error')}")
            return False
        prepared = json_object(answer.data.get("run_info"))
        context: JSONObject = {**json_object(answer.data.get("context")), "load_generators": len(self.hosts)}
        if serving is not None:
            # A throwaway server: its key is the machine's, as a one-host run's (its port
            # differs each time).
            context["host"] = configkey.host_identity(serving.facts)
        location = str(store.path.resolve()) if store.path else store.location
        # Recorded while they run, as `dbarena run` records its runs: a controller killed
        # outright (SIGKILL, a lost session) leaves its runs to the next dbarena command
        # here (`fleet cleanup`, `cleanup`, any) to mark interrupted, not running for good.
        with contextlib.ExitStack() as stack:
            bound: dict[str, Bound] = {}
            for variant in dict.fromkeys(s.variant for s in part):
                settings, cluster = engine_plan.settings[variant], engine_plan.cluster.get(variant, {})
                run_id = self._begin(store, prepared, key, variant, settings, cluster, found, serving)
                record = stack.enter_context(state.run(location, run_id, None, []))
                # The key's settings as a local run's (session._bind): the variant's, its
                # cluster options named "cluster.NAME"; the tools' own per-second report
                # on every host (fleet/loadgen.py).
                bound[variant] = Bound(target=None, run_id=run_id, record=record, client_progress=True,
                                       latency_sampling=self.study.latency_sampling, context={
                                           **context, "variant": variant, "settings": {
                                               **settings, **{f"cluster.{k}": v for k, v in cluster.items()}}})
            status = "interrupted"
            try:
                self._sweep(store, part, bound, target, tls_ca, deadline, serving)
                status = "finished"
            finally:
                for b in bound.values():
                    store.finish_run(b.run_id, status)
        return True

    def _sweep(self, store: ResultStore, part: Sequence[PointSpec], bound: Mapping[str, Bound], target: str,
               tls_ca: str | None, deadline: float | None, serving: ServerHost | None) -> None:
        """The part's points, swept as a local run's (session.sweep_points), each
        measured by the load generators at once."""
        measure = Measure(step=self.step, hosts=self.hosts, study=self.study, target=target, tls_ca=tls_ca,
                          poll_s=self.fleet.poll_s,
                          sample_server="--no-server-metrics" not in self.run_args,
                          alive=serving.alive if serving is not None else None, profiles=self.profiles,
                          go_s=self.go_s)
        earlier = session.stored(store, bound, part)
        todo = sum((rounds.base(p), p.repeat) not in earlier.ok for p in part)
        reporter = Said(self.say, "" if self.study.precision is not None else f"/{todo}")
        sweep = Sweep(targets=bound, store=store, reporter=reporter, executor=execute.LOCAL, init=False,
                      fail_fast=self.study.fail_fast, sample_system=False, sample_server=False,
                      latency_sampling=self.study.latency_sampling, measure=measure)
        session.sweep_points(sweep, part, earlier, self.outcome, study=self.study, reporter=reporter,
                             deadline=deadline, clock=time.monotonic)

    def _begin(self, store: ResultStore, prepared: JSONObject, key: str, variant: str, settings: Mapping[str, str],
               cluster: Mapping[str, str], found: Mapping[str, StoredRun], serving: ServerHost | None) -> int:
        """The variant's stored run: the one an earlier session began (reopened), else a new one."""
        resumed = found.get(variant)
        if resumed is None:
            return store.begin_run(self._run_info(prepared, key, variant, settings, cluster, serving))
        store.reopen_run(resumed.id, {**resumed.options, "owner": _owner()})
        if serving is not None:
            # The resumed points' server is a new one, whose TLS may not be the first
            # one's: the fact says this one's, and keeps the other's.
            now = serving.tls_fact(json_object(json_object(prepared.get("target_facts")).get("tls")) or None)
            before = resumed.target_facts.get("tls")
            if before != now:
                store.update_target_facts(resumed.id, {"tls": now, "tls_before_resume": before})
        return resumed.id

    def install(self) -> bool:
        wheel = build_wheel(self.fleet.workdir)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        every = [*self.hosts, *([self.server] if self.server else [])]
        self.say(f"installing on {', '.join(h.name for h in every)}: packages, dbarena")
        # openssl makes the certificates of a [server] host's TLS (engines/tls.py).
        need = sorted({*packages(self.study), *(("openssl",) if self.server else ())})
        results = self.fleet.ansible.play("start.yml", every, {
            "args": {h.name: [] for h in every}, "dbarena_wheel": str(wheel), "dbarena_wheel_sha256": digest,
            "dbarena_packages": need, "dbarena_study_file": str(self.study_file or ""),
            "dbarena_start_run": False}, timeout_s=START_TIMEOUT_S)
        ok = True
        for h in every:
            result = results[h.name]
            if result.unreachable or result.failed:
                host_state = self.fleet.states[h.name]
                host_state.set_failure(result.failure, "start failed: " if result.failed else "")
                self.say(host_state.block())
                ok = False
        return ok

    def _run_info(self, record: JSONObject, key: str, variant: str = "", settings: Mapping[str, str] | None = None,
                  cluster: Mapping[str, str] | None = None, serving: ServerHost | None = None) -> RunInfo:
        """A variant's run, from the provenance the first host made (host-prepare, for
        the study as a whole): the variant and its settings and cluster options, as a
        local run records them (session._bind)."""
        # The run is the controller's (the first host's provenance named the process
        # that prepared it there): whoever marks it interrupted once its owner is gone
        # checks that it is still this one's (lifecycle/cleanup.mark_interrupted).
        options: JSONObject = {**json_object(record.get("options")), "owner": _owner(), "together": {
            "key": key, "load_generators": len(self.hosts), "hosts": [h.name for h in self.hosts],
            "labels": [h.label for h in self.hosts]}, "profile": self.profiling}
        if settings is not None:
            options["settings"] = dict(settings)
        if cluster is not None:
            options["cluster"] = dict(cluster)
        studied = json_object(record.get("study"))
        study = StudyRecord(**studied) if studied else None  # type: ignore[arg-type]  # (host-prepare's asdict)
        facts = dict(json_object(record.get("target_facts")))
        if serving is not None:
            facts["tls"] = serving.tls_fact(json_object(facts.get("tls")) or None)
        return RunInfo(**{**record, "started_at": datetime.fromisoformat(str(record["started_at"])),  # type: ignore[arg-type]
                          "study": study, "options": options, "target_facts": facts, "variant": variant,
                          "invocation": key,  # (what finds the runs again: invocation_runs)
                          "host": f"{len(self.hosts)} load generators: {', '.join(h.name for h in self.hosts)}"})


def _owner() -> JSONObject:
    """This controller as a run's owner (as provenance records a `dbarena run`)."""
    return {"pid": os.getpid(), "start": state.start_time(os.getpid()), "host": socket.gethostname()}


def _parts(engine_plan: plan.EnginePlan, server: bool) -> list[tuple[PointSpec, ...]]:
    """The plan's points by the server they run on, in the plan's order. Against a
    --target, one part: every variant on that server, interleaved as a local run's are.
    With a [server] host, one part per variant, one after the other: the host runs one
    together server at a time, started with that variant's settings and cluster
    options (as plan.by_smt runs one SMT mode after the other: what cannot be
    interleaved is not); repeats stay interleaved within a part."""
    if not server:
        return [engine_plan.points]
    return [tuple(p for p in engine_plan.points if p.variant == v) for v in engine_plan.variants]


def _serving(serving: ServerHost | None, engine_plan: plan.EnginePlan,
             part: Sequence[PointSpec]) -> contextlib.AbstractContextManager[bool]:
    """The part's server: a [server] host's, started for the part's variant; a --target
    is there already."""
    if serving is None:
        return contextlib.nullcontext(True)
    variant = part[0].variant
    return serving.serving(engine_plan.settings[variant], engine_plan.cluster.get(variant, {}),
                           engine_plan.max_clients)


def _left(store: ResultStore, part: Sequence[PointSpec], found: Mapping[str, StoredRun], key: str,
          precision: bool) -> bool:
    """Whether the part has points to run, as a resumed `dbarena run`'s parts are told
    (session._not_done): a point not stored ok yet; with --precision, a run that did not
    finish (its points' rounds go on from where they were)."""
    runs = [found.get(variant) for variant in dict.fromkeys(p.variant for p in part)]
    if precision:
        return any(run is None or resume.left_to_do(store, run) for run in runs)
    return not {resume.identity(p) for p in part} <= resume.stored_points(store, key)
