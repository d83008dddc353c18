"""`dbarena fleet run --together`: every host of the inventory a load generator of the
same point, against one server, measured as one point.

Design. The controller coordinates point by point; Ansible does every reaching
(playbooks/together.yml, one short play per step), the hosts run the hidden commands
of loadgen.py, and the store is the controller's own (no fetch, no merge):

1. **Install** as `fleet run` does (start.yml, without starting a study there).
2. **Provenance and datasets**, once, on the first host (`host-prepare`): the run's
   run_info and configuration-key context, built there by provenance.py exactly as
   `dbarena run --target` builds them, and the study's datasets prepared by the
   tool's own prepare_argv. The run is begun in the controller's store.
3. **Each point**: its threads and clients split over the hosts (combine.split, the
   split stored); every host starts `host-point` detached, which opens the target,
   builds its share's command with the tool's point_argv (pgbench with its
   per-transaction log) and says it is ready; once every host is ready, the controller
   sends one start time a little ahead (long enough for that play to reach them all),
   each host sleeps until it and starts its tool. The controller polls the hosts; when
   one fails (its tool died, it cannot be reached) it tells the others to stop (their
   tools are killed at once) and stores the point failed with that host's reason.
   When all are done, their parts (raw output, the tool's own parse of it, the
   per-second series, the latency histogram, the first transaction's start, the load
   generator's CPU) come back in the status answer and combine.py makes them one
   point, stored with add_point; each host's part and the split and start skew go in
   the point's details.
4. **Resume**: the run is found again by a key of the study, the target and the hosts
   (one run per variant: the key and the variant); points stored ok are not run again.
5. **Variants and --precision** as a local run takes them (run/session.py): one stored
   run per variant, its points keyed by it; the points in rounds, one of everything
   left, or with --precision as many as rounds.Adaptive decides. Against --target one
   server holds every variant (interleaved); a [server] host's server is started per
   variant with its settings, one variant after the other (_parts).

With a [server] host, the load generators reach its throwaway server over TLS where the
engine offers it: the server makes a certificate and key for the run on its host
(engines/tls.py; the key never leaves it), lets dbarena's user in over TLS only
(PostgreSQL's hostssl, MySQL's REQUIRE SSL), and says `ready` with the certificate,
which every host-prepare and host-point request then carries: each load generator
requires TLS and verifies the server against that certificate. For a MySQL-family
server, each load generator first makes a client certificate of its own (host-tls:
sysbench 1.0 presents one), which the server trusts. Where the engine's build, a host's
missing openssl or a load generator's client certificate rules TLS out, the run goes on
unencrypted, says so in one line and records why in the run's target facts (`tls`).

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
import secrets
import shlex
import signal
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from dbarena import engines
from dbarena.run import measure, plan
from dbarena.errors import UsageError
from dbarena.fleet import combine, loadgen, serverhost
from dbarena.fleet.controller import Fleet, START_TIMEOUT_S, ansible_command, build_wheel, packages
from dbarena.fleet.inventory import Host
from dbarena.fleet.messages import Part, PointRequest, PrepareRequest, Status
from dbarena.host.sysmetrics import SystemSample
from dbarena.lifecycle import state
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo, StudyRecord
from dbarena.interfaces import ResultStore
from dbarena.records import JSON, JSONObject, StoredPoint, StoredRun, json_object
from dbarena.serverside.series import ServerSeries
from dbarena.stats import configkey, rounds
from dbarena.stats.latency import Latencies
from dbarena.study import Study

STEP_TIMEOUT_S = 600.0
# A [server] host's server stops itself once its lease is this old; the controller
# renews it every RENEW_S (a renewal that fails is tried again: three may fail in a row).
LEASE_S = 40.0
RENEW_S = 10.0
PREPARE_TIMEOUT_S = 3600.0
GO_LEAD_MIN_S = 2.0  # the start time is at least this far ahead of sending it
# What a point of the plan and a stored one are matched by on resume: workload, threads,
# clients, repeat, dataset parameters.
Identity = tuple[str, int, int, int, tuple[tuple[str, JSON], ...]]
# A point of the plan whatever its repeat (what adaptive repeats count runs of): variant,
# workload, threads, clients, dataset parameters.
Unrepeated = tuple[str, str, int, int, tuple[tuple[str, JSON], ...]]


@dataclass
class Answer:
    """What one host said to a step: its JSON, or why there is none."""

    data: JSONObject | None
    problem: str | None = None


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
    for entry in study.workloads:
        if entry.warmup_s and server is not None:
            # The checkpoint after it (CHECKPOINT, FLUSH TABLES) needs a privilege that the
            # [server] host's server keeps from dbarena's user there (no superuser, no RELOAD).
            raise UsageError("--together with a [server] host runs no warm-up yet (warmup_s): the checkpoint after "
                             "it needs a privilege its server's user is not given; use --target, or no warm-up")
        if entry.datasets != "run":
            raise UsageError("--together prepares each dataset once per run: datasets = \"run\"")


def split_point(spec: PointSpec, hosts: list[Host]) -> list[PointSpec]:
    threads = combine.split(spec.threads, len(hosts))
    clients = combine.split(spec.clients, len(hosts))
    return [replace(spec, threads=t, clients=c) for t, c in zip(threads, clients)]


def run_key(study: Study, hosts: list[Host], server: Host | None = None) -> str:
    """What finds the run again (resume): the study, its flags, the target (or the
    [server] host: its throwaway server's port differs each time), the hosts."""
    where = f"server {server.name}" if server is not None else study.engines[0].target
    text = json.dumps([study.sha256, sorted(study.flags.items()), where,
                       [h.name for h in hosts]], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Together:
    """One `fleet run --together`."""

    def __init__(self, fleet: Fleet, study: Study, study_arg: str, study_file: Path | None, run_args: list[str],
                 store: Path | str, label: str, server: Host | None = None):
        self.fleet, self.study, self.label = fleet, study, label
        # The load generators: every host but the one that runs the throwaway server.
        self.server = server
        self.hosts = [h for h in fleet.hosts if h != server]
        self.say = fleet.say
        self.store_arg = store
        self.study_file = study_file
        self.host_study = f"{{w}}/study.toml" if study_file else study_arg
        self.run_args = run_args
        self.study_args = list(run_args)  # as given: a [server] host's server adds its --target to run_args
        self.target = study.engines[0].target or ""
        # The [server] host's certificate (PEM) when its server requires TLS; else why not.
        self.tls_ca: str | None = None
        self.tls_problem: str | None = None
        self.server_facts: JSONObject = {}  # the [server] host's, once its server is up
        self.server_threads = 1  # the hardware threads the server could use (a point's bound reads it)

    # ------------------------------------------------------------ steps

    def step(self, hosts: list[Host], args: list[str], *, request: dict[str, str] | None = None,
             detach: bool = False, secrets: bool = False, timeout_s: float = STEP_TIMEOUT_S,
             detached: str = "host-point") -> dict[str, Answer]:
        """One play of together.yml: the `dbarena fleet` command args (with {w}: the
        host's working directory) on each host; its last line of output, read as JSON."""
        if not hosts:
            return {}
        extra: dict[str, object] = {"args": {h.name: [a.replace("{w}", h.workdir) for a in args] for h in hosts},
                                 "dbarena_detach": detach, "dbarena_detached": detached, "dbarena_secrets": secrets}
        if request is not None:
            extra["dbarena_request"] = request
        results = self.fleet.ansible.play("together.yml", hosts, extra, timeout_s=timeout_s)
        out: dict[str, Answer] = {}
        for h in hosts:
            result = results[h.name]
            if result.unreachable or result.failed:
                found = result.failure
                out[h.name] = Answer(None, ("unreachable: " if result.unreachable else "") + found.short)
                continue
            stdout = str(result.task("step").get("stdout", "")).strip()
            try:
                out[h.name] = Answer(json.loads(stdout.splitlines()[-1]))
            except (ValueError, IndexError):
                out[h.name] = Answer(None, f"no answer: {stdout[:200] or 'no output'}")
        return out

    # ------------------------------------------------------------ run

    def run(self) -> int:
        check(self.study, self.hosts, self.server)
        engine_plan = self._plan()
        if self.server is None:
            return self._run(engine_plan)
        with _server_password(self.study.engines[0].name):
            return self._run(engine_plan)

    def _plan(self) -> plan.EnginePlan:
        """The study's one engine's plan (as `dbarena run` expands it: variants and
        repeats interleaved), every point of it checked to split over the hosts."""
        (engine_plan,) = _expand(self.study)
        for spec in engine_plan.points:
            try:
                split_point(spec, self.hosts)
            except ValueError as exc:
                raise UsageError(f"{spec.workload} at {spec.threads} threads: {exc}") from None
        return engine_plan

    def _run(self, engine_plan: plan.EnginePlan) -> int:
        from dbarena.store.database import Store

        if not self.install():
            return 1
        key = run_key(self.study, self.hosts, self.server)
        specs = engine_plan.points
        with Store(self.store_arg) as store:
            found = self._find(store, key)
            parts = [p for p in _parts(engine_plan, self.server is not None) if self._left(store, p, found)]
            if not parts:
                counted = "" if self.study.precision is not None else f"/{len(specs)}"
                self.say(f"complete already ({found.count()}{counted} points stored), not run again")
                return 0
            if found.runs:
                self.say(f"resuming: {found.count()} of {len(specs)} points stored already")
            tally = _Tally()
            deadline = time.monotonic() + self.study.budget_s if self.study.budget_s is not None else None
            for number, part in enumerate(parts):
                budget = _budget_share(deadline, part, [p for later in parts[number + 1:] for p in later])
                with self._serving(engine_plan, part) as up:
                    if not up or not self._part(store, engine_plan, part, key, found, tally, budget):
                        return 1
            for line in _precision_lines(tally.precision, self.study.precision):
                self.say(line)
            self.say(f"{tally.measured} point(s) with {len(self.hosts)} load generators"
                     + (f", {tally.failed} failed" if tally.failed else "") + f"; stored in {store.location}")
            return 1 if tally.failed else 0

    @contextlib.contextmanager
    def _serving(self, engine_plan: plan.EnginePlan, part: Sequence[PointSpec]) -> Iterator[bool]:
        """With a [server] host, its throwaway server for the part's variant, with that
        variant's settings and cluster options (as a local run's throwaway instance of
        that variant), kept by its lease and stopped when the part ends, however it
        ends; True once it is up. Against a --target, nothing to start."""
        if self.server is None:
            yield True
            return
        variant = part[0].variant
        try:
            started = self.start_server(engine_plan.settings[variant], engine_plan.cluster.get(variant, {}),
                                        engine_plan.max_clients)
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) or failed while the server starts: it was
            # asked to start detached on its host and goes on without the controller,
            # until its lease or `fleet cleanup`; stopped now, as at a run's end.
            self.stop_server()
            raise
        if not started:
            yield False
            return
        try:
            with Lease(self.fleet.ansible.inventory, self.server):
                yield True
        finally:
            self.stop_server()

    def _part(self, store: ResultStore, engine_plan: plan.EnginePlan, part: Sequence[PointSpec], key: str,
              found: _Found, tally: _Tally, budget_s: float | None) -> bool:
        """The points of one server (every variant's against a --target, one variant's on
        a [server] host): the datasets prepared, each variant's run begun (or reopened),
        the points measured and stored; False if the first host could not prepare."""
        first = self.hosts[0]
        datasets = list({(s.workload, s.params): s for s in part}.values())
        request = PrepareRequest(
            args=("--study", self.host_study.replace("{w}", first.workdir), *self.run_args), label=self.label,
            target=self.target, invocation=key, datasets=tuple(datasets),
            tls={"ca": self.tls_ca} if self.tls_ca is not None else None)
        self.say(f"preparing on {first.name}: the run's provenance and its datasets")
        answer = self.step([first], ["host-prepare", "--workdir", "{w}", "--request", "{w}/request.json"],
                           request={first.name: request.to_json()}, secrets=True,
                           timeout_s=PREPARE_TIMEOUT_S)[first.name]
        if answer.data is None or "error" in answer.data:
            self.say(f"{first.name}: preparing failed: {answer.problem or (answer.data or {}).get('error')}")
            return False
        prepared = json_object(answer.data.get("run_info"))
        context: JSONObject = {**json_object(answer.data.get("context")), "load_generators": len(self.hosts)}
        if self.server is not None:
            # A throwaway server: its key is the machine's, as a one-host run's (its port
            # differs each time).
            context["host"] = configkey.host_identity(self.server_facts)
        runs: dict[str, int] = {}
        contexts: dict[str, JSONObject] = {}
        location = str(store.path.resolve()) if store.path else store.location
        # Recorded while they run, as `dbarena run` records its runs: a controller killed
        # outright (SIGKILL, a lost session) leaves its runs to the next dbarena command
        # here (`fleet cleanup`, `cleanup`, any) to mark interrupted, not running for good.
        with contextlib.ExitStack() as stack:
            for variant in dict.fromkeys(s.variant for s in part):
                settings, cluster = engine_plan.settings[variant], engine_plan.cluster.get(variant, {})
                # The key's settings as a local run's (session._bind): the variant's, its
                # cluster options named "cluster.NAME".
                contexts[variant] = {**context, "variant": variant, "settings": {
                    **settings, **{f"cluster.{k}": v for k, v in cluster.items()}}}
                runs[variant] = self._begin(store, prepared, key, variant, settings, cluster, found)
                stack.enter_context(state.run(location, runs[variant], None, []))
            self.server_threads = self._server_threads(store.run(next(iter(runs.values()))))
            status = "interrupted"
            try:
                self._sweep(store, part, runs, contexts, found, tally, budget_s)
                status = "finished"
            finally:
                for run_id in runs.values():
                    store.finish_run(run_id, status)
        return True

    def _begin(self, store: ResultStore, prepared: JSONObject, key: str, variant: str, settings: Mapping[str, str],
               cluster: Mapping[str, str], found: _Found) -> int:
        """The variant's stored run: the one an earlier session began (reopened), else a new one."""
        resumed = found.runs.get(variant)
        if resumed is None:
            return store.begin_run(self._run_info(prepared, key, variant, settings, cluster))
        store.reopen_run(resumed.id, {**resumed.options, "owner": _owner()})
        if self.server is not None:
            # The resumed points' server is a new one, whose TLS may not be the first
            # one's: the fact says this one's, and keeps the other's.
            seen = json_object(json_object(prepared.get("target_facts")).get("tls")) or None
            now = self._tls_fact(seen)
            before = resumed.target_facts.get("tls")
            if before != now:
                store.update_target_facts(resumed.id, {"tls": now, "tls_before_resume": before})
        return resumed.id

    def _sweep(self, store: ResultStore, part: Sequence[PointSpec], runs: Mapping[str, int],
               contexts: Mapping[str, JSONObject], found: _Found, tally: _Tally, budget_s: float | None) -> None:
        """The part's points, round after round as the local sweep runs them
        (Sweep.run_rounds): one round of the points not stored ok yet, or with
        --precision the rounds rounds.Adaptive decides on, as `dbarena run` does."""
        adaptive = self._adaptive(store, part, found, budget_s)
        if adaptive is None:
            todo = [s for s in part if _identity(s) not in found.ok.get(s.variant, set())]
            pending = iter([todo])
            next_round: Callable[[list[PointResult]], Sequence[PointSpec]] = lambda finished: next(pending, [])
            of = f"/{len(todo)}"
        else:
            next_round, of = adaptive.next_round, ""
        finished: list[PointResult] = []
        n = 0
        try:
            while plan_round := next_round(finished):
                finished = []
                for spec in plan_round:
                    n += 1
                    run_id, context = runs[spec.variant], contexts[spec.variant]
                    down = self.server_alive() if self.server is not None else None
                    result = _failed(spec, [down], time.time()) if down else self.warmed(store, run_id, spec, context)
                    store.add_point(run_id, result, _config(spec, context, self.study.latency_sampling))
                    finished.append(result)
                    tally.measured += 1
                    tally.failed += not result.ok
                    self.say(f"point {n}{of}: {_describe(spec)}: {_outcome(result)}")
        finally:
            if adaptive is not None:
                # Where each point ended, also when interrupted (as session._sweep_adaptive).
                tally.precision += adaptive.summary()

    def _adaptive(self, store: ResultStore, part: Sequence[PointSpec], found: _Found,
                  budget_s: float | None) -> rounds.Adaptive | None:
        """With --precision, the adaptive repeats of the part's points (the local
        sweep's own, session._sweep_adaptive), from where earlier sessions left them."""
        if self.study.precision is None:
            return None
        from dbarena.run.preflight import estimate_s
        from dbarena.stats import analysis

        return rounds.Adaptive(part, target=self.study.precision, max_repeats=self.study.max_repeats,
                               budget_s=budget_s, value=analysis.result_value, estimate_s=estimate_s,
                               history=_history(store, part, found) or None)

    def _left(self, store: ResultStore, part: Sequence[PointSpec], found: _Found) -> bool:
        """Whether the part has points to run: not stored ok yet, or (--precision) not
        as precise as asked and below their limit."""
        adaptive = self._adaptive(store, part, found, None)
        if adaptive is None:
            return any(_identity(s) not in found.ok.get(s.variant, set()) for s in part)
        return any(s.status == "running" for s in adaptive.summary())

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
                state = self.fleet.states[h.name]
                state.set_failure(result.failure, "start failed: " if result.failed else "")
                self.say(state.block())
                ok = False
        return ok

    # ------------------------------------------------------------ the [server] host

    def start_server(self, settings: Mapping[str, str], cluster: Mapping[str, str], max_clients: int) -> bool:
        """The study's engine as a throwaway instance on the [server] host, listening on
        its address, with a variant's settings and cluster options (the engine's, where
        the study has no variants); the run then drives it as a --target."""
        assert self.server is not None
        entry = self.study.engines[0]
        tls, self.tls_problem = self._client_certificates()
        self.server_id = uuid.uuid4().hex[:12]
        request: JSONObject = {
            "id": self.server_id, "engine": entry.name, "flavour": entry.flavour,
            "settings": dict(settings), "cluster": dict(cluster), "bindir": entry.bindir,
            # Room for every client of the widest point, plus a few for dbarena itself.
            "max_connections": max(151, max_clients + 10),
            "listen": self.server.address,
            # Who may connect: the load generators, each by the address the inventory
            # gives it (the server host resolves a name: serverhost.clients_of).
            "clients": {h.name: h.address for h in self.hosts},
            "lease_s": LEASE_S, "tls": tls}
        self.say(f"starting the server on {self.server.name} ({self.server.address}): a throwaway {entry.name}")
        answer = self.step([self.server], ["host-server-ctl", "--workdir", "{w}", "wait-ready",
                                           "--server", self.server_id],
                           request={self.server.name: json.dumps(request)}, detach=True, detached="host-server",
                           secrets=True, timeout_s=STEP_TIMEOUT_S + serverhost.READY_WAIT_S)[self.server.name]
        data = answer.data or {}
        if data.get("state") != "ready":
            self.say(f"{self.server.name}: the server did not start: "
                     f"{answer.problem or data.get('reason') or data.get('state')}")
            self.stop_server()
            return False
        self.server_facts = json_object(data.get("host_facts"))
        self.target = str(data["url"])
        cores, threads = data.get("physical_cores"), data.get("hardware_threads")
        # This server's (a part per variant starts its own): the study's arguments and it.
        self.run_args = [*self.study_args, "--target", self.target,
                         *(("--server-cores", str(cores)) if cores else ()),
                         *(("--server-threads", str(threads)) if threads else ())]
        opened = ", ".join(f"{name} ({' '.join(map(str, ips if isinstance(ips, list) else [ips]))})"
                           for name, ips in json_object(data.get("clients")).items())
        self.say(f"server on {self.server.name}: {data.get('server_version')} at {self.target}, "
                 f"open to {opened or 'no one'}")
        cert = data.get("tls_cert")
        self.tls_ca = cert if isinstance(cert, str) and cert else None
        if self.tls_ca is not None:
            self.say(f"connections to the server: TLS required, its certificate (made on {self.server.name} for "
                     "this run) verified by each load generator")
        else:
            problem = data.get("tls_problem")
            self.tls_problem = self.tls_problem or (problem if isinstance(problem, str) and problem else
                                                    "the server offers no TLS")
            self.say(f"connections to the server: NOT encrypted: {self.tls_problem}")
        return True

    def _client_certificates(self) -> tuple[JSONObject | None, str | None]:
        """What the server's request says of TLS ({"client_certs": [...]}), or None and
        why not. A MySQL-family server verifies the client certificate that sysbench
        presents: each load generator makes its own first (host-tls) and the server
        trusts those (Engine.client_certificates). PostgreSQL asks none."""
        if not engines.first(self.study.engines[0].name).client_certificates:
            return {"client_certs": []}, None
        answers = self.step(self.hosts, ["host-tls", "--workdir", "{w}"])
        certs: list[JSON] = []
        for h in self.hosts:
            answer = answers[h.name]
            cert = (answer.data or {}).get("cert")
            if not cert:
                why = answer.problem or (answer.data or {}).get("error") or "no answer"
                return None, f"{h.name} could not make its client certificate: {why}"
            certs.append(str(cert))
        return {"client_certs": certs}, None

    def _tls_request(self) -> dict[str, str] | None:
        """What a host-prepare or host-point request says of TLS: the server's certificate."""
        return {"ca": self.tls_ca} if self.tls_ca is not None else None

    def _tls_fact(self, seen: JSONObject | None) -> JSONObject:
        """The run's target fact `tls`: required and verified, with what the first load
        generator's connection got (`seen`: TLS version and cipher, as the server saw
        them); or not, and why."""
        if self.tls_ca is None:
            return {"required": False, "reason": self.tls_problem}
        return {"required": True, "verified": "against the server's own certificate, made for this run",
                **(seen or {})}

    def server_alive(self) -> str | None:
        """None while the server is up (and so told the controller is there), else why not."""
        assert self.server is not None
        answer = self.step([self.server], ["host-server-ctl", "--workdir", "{w}", "status",
                                           "--server", self.server_id])[self.server.name]
        data = answer.data or {}
        if data.get("state") == "ready":
            return None
        return f"{self.server.name}: the server is {answer.problem or data.get('reason') or data.get('state')}"

    def stop_server(self) -> None:
        assert self.server is not None
        answer = self.step([self.server], ["host-server-ctl", "--workdir", "{w}", "stop",
                                           "--server", getattr(self, "server_id", "")],
                           timeout_s=STEP_TIMEOUT_S + serverhost.STOP_WAIT_S)[self.server.name]
        state = (answer.data or {}).get("state")
        self.say(f"server on {self.server.name}: " + ("stopped and removed" if state in ("stopped", "absent") else
                                                      f"not confirmed stopped ({answer.problem or state}); "
                                                      f"`dbarena cleanup` on {self.server.name} removes it"))

    def _find(self, store: ResultStore, key: str) -> _Found:
        """The runs earlier sessions of this run began (one per variant; the latest of
        each), and the points each stored ok."""
        runs: dict[str, StoredRun] = {}
        for run in store.runs():
            if json_object(run.options.get("together")).get("key") == key:
                runs[run.variant] = run
        return _Found(runs=runs, ok={variant: {_identity_row(p) for p in store.points(run_id=run.id)
                                               if p.status == "ok"} for variant, run in runs.items()})

    def _server_threads(self, run: StoredRun | None) -> int:
        """Those of the [server] host; for a --target, whose machine is not known,
        those of the run's host (the first load generator's: its CPU is the one the
        bound's CPU part reads)."""
        for name in ("effective_hardware_threads", "hardware_threads"):
            if isinstance(found := self.server_facts.get(name), int) and found > 0:
                return found
        from dbarena.stats import analysis

        return analysis.run_threads(run) if run is not None else 1

    def _run_info(self, record: JSONObject, key: str, variant: str = "", settings: Mapping[str, str] | None = None,
                  cluster: Mapping[str, str] | None = None) -> RunInfo:
        """A variant's run, from the provenance the first host made (host-prepare, for
        the study as a whole): the variant and its settings and cluster options, as a
        local run records them (session._bind)."""
        # The run is the controller's (the first host's provenance named the process
        # that prepared it there): whoever marks it interrupted once its owner is gone
        # checks that it is still this one's (lifecycle/cleanup.mark_interrupted).
        options: JSONObject = {**json_object(record.get("options")), "owner": _owner(), "together": {
            "key": key, "load_generators": len(self.hosts), "hosts": [h.name for h in self.hosts],
            "labels": [h.label for h in self.hosts]}}
        if settings is not None:
            options["settings"] = dict(settings)
        if cluster is not None:
            options["cluster"] = dict(cluster)
        studied = json_object(record.get("study"))
        study = StudyRecord(**studied) if studied else None  # type: ignore[arg-type]  # (host-prepare's asdict)
        facts = dict(json_object(record.get("target_facts")))
        if self.server is not None:
            facts["tls"] = self._tls_fact(json_object(facts.get("tls")) or None)
        return RunInfo(**{**record, "started_at": datetime.fromisoformat(str(record["started_at"])),  # type: ignore[arg-type]
                          "study": study, "options": options, "target_facts": facts, "variant": variant,
                          "host": f"{len(self.hosts)} load generators: {', '.join(h.name for h in self.hosts)}"})

    # ------------------------------------------------------------ one point

    def warmed(self, store: ResultStore, run_id: int, spec: PointSpec, context: JSONObject) -> PointResult:
        """The point, after its warm-up where it has one (runner.Sweep.warm's round: a
        run of the same shares for warmup_s, stored apart as phase 'warmup', then a
        checkpoint, which the first host makes before it says it is ready to measure)."""
        if not spec.warmup_s:
            return self.point(spec)
        warm = replace(spec, duration_s=spec.warmup_s)
        self.say(f"warming up {spec.workload} at {spec.threads} threads for {spec.warmup_s} s")
        result = self.point(warm)
        store.add_point(run_id, replace(result, phase="warmup"), _config(warm, context, self.study.latency_sampling))
        if not result.ok:
            return _failed(spec, [f"the warm-up failed: {result.error}"], time.time())
        return self.point(spec, checkpoint=True)

    def point(self, spec: PointSpec, checkpoint: bool = False) -> PointResult:
        shares = split_point(spec, self.hosts)
        rate = self.study.latency_sampling
        family = self.study.engines[0]
        point_id = uuid.uuid4().hex[:12]
        ctl = ["host-point-ctl", "--workdir", "{w}", "--point", point_id]
        # The first host samples the server's own statistics for the whole point (its
        # waits: the point's bound), as a local point's sweep does.
        sample_server = "--no-server-metrics" not in self.run_args
        requests = {h.name: PointRequest(id=point_id, engine=family.name, flavour=family.flavour, target=self.target,
                                         spec=share, sampling=rate, tls=self._tls_request(),
                                         sample_server=sample_server and n == 0, server_clients=spec.clients,
                                         checkpoint=checkpoint and n == 0).to_json()
                    for n, (h, share) in enumerate(zip(self.hosts, shares))}
        began = time.time()
        try:
            ready = self.step(self.hosts, [*ctl, "wait-ready"], request=requests,
                              detach=True, secrets=True)
            problems = self._problems(_statuses(ready), want="ready")
            if problems:
                self._stop(self.hosts, ctl)
                return _failed(spec, problems, began)
            # Far enough ahead for the go play to reach every host (it takes about as long as a step).
            lead = max(GO_LEAD_MIN_S, 1.5 * (time.time() - began) / 2)
            start_at = time.time() + lead
            self.step(self.hosts, [*ctl, "go", "--at", repr(start_at)])
            answers: dict[str, Status] = {}
            # Polled while the point runs (not only at its end): a host that fails stops the others at once.
            time.sleep(max(0.0, start_at + 1.0 - time.time()))
            while True:
                pending = [h for h in self.hosts if h.name not in answers]
                polled = _statuses(self.step(pending, [*ctl, "status"]))
                problems = self._problems(polled, want=None)
                answers.update((name, status) for name, status in polled.items() if status.final)
                if problems:
                    rest = [h for h in self.hosts if h.name not in answers]
                    answers.update(_statuses(self.step(rest, [*ctl, "stop"])))
                    return _failed(spec, problems, began, answers)
                if len(answers) == len(self.hosts):
                    break
                time.sleep(self.fleet.poll_s)
            return self._combined(spec, shares, answers, began)
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) or failed mid-point: each load generator's
            # share runs detached on its host and would run out its time; stopped now.
            self._stop(self.hosts, ctl)
            raise

    def _problems(self, statuses: dict[str, Status], want: str | None) -> list[str]:
        out = []
        for h in self.hosts:
            status = statuses.get(h.name)
            if status is None:
                continue
            if status.state in ("failed", "stopped") or (want and status.state != want):
                out.append(f"{h.name}: {status.reason or status.state}")
        return out

    def _stop(self, hosts: list[Host], ctl: list[str]) -> None:
        with contextlib.suppress(Exception):
            self.step(hosts, [*ctl, "stop"])

    def _combined(self, spec: PointSpec, shares: list[PointSpec], answers: dict[str, Status],
                  began: float) -> PointResult:
        parts, raw = [], []
        for h, share in zip(self.hosts, shares):
            part = answers[h.name].part
            if part is None or part.measurement is None:  # (done says it has both: a host that says otherwise failed)
                return _failed(spec, [f"{h.name}: done, but its part holds no measurement"], began, answers)
            histogram = part.measurement.latency_histogram
            parts.append(combine.Part(
                host=h.name, label=h.label, threads=share.threads, clients=share.clients,
                launched_at=part.launched_at, first_at=part.first_at, measurement=part.measurement,
                samples=part.samples, latencies=Latencies.decode(histogram) if histogram else None,
                command=part.command, cpu=_cpu(part.system)))
            raw.append((h, share, part))
        measurement, samples, details = combine.combine(parts, spec.duration_s)
        latencies = combine.merged_latencies(parts)
        if latencies is not None:
            measurement = measure.with_latencies(replace(measurement, latency_min_ms=None, latency_max_ms=None), latencies)
        measurement = replace(measurement, details={**measurement.details, **details})
        result = PointResult(
            spec=spec, status="ok", started_at=_utc(min(p.launched_at for _, _, p in raw)),
            ended_at=_utc(max(p.ended_at for _, _, p in raw)), command=raw[0][2].command,
            exit_code=0, stdout=_joined(raw, "stdout"), stderr=_joined(raw, "stderr"), measurement=measurement,
            samples=samples)
        return replace(result, server=self._server_series(result, shares[0], raw[0][2]))

    def _server_series(self, result: PointResult, share: PointSpec, part: Part) -> ServerSeries | None:
        """The server's series the first host sampled over the point, with the point's
        bound decided from it as a local point's is (measure.with_bound). The CPU part of
        that decision sees only that host's load generator: the machines' CPU figures
        the host sampled are its own, not the server's."""
        if not part.server:
            return None
        series = ServerSeries.decode(part.server)
        loadgen = [{"loadgen_cpu": s.loadgen_cpu} for s in part.system]
        return measure.with_bound(replace(result, spec=share, server=series), self.server_threads, loadgen)


class Lease:
    """Keeps the [server] host's server while this controller is there: a thread that
    every RENEW_S touches the server's lease file (serverhost.LEASE) over SSH, by
    Ansible's raw module, so that nothing but `touch` starts on the host being measured
    (no Python, no dbarena) and no play of the run waits for it. A controller that is
    killed stops renewing, and its server stops itself LEASE_S later."""

    def __init__(self, inventory: Path, host: Host):
        lease = str(serverhost.lease_path(Path(host.workdir)))
        self.argv = [ansible_command("ansible"), "-i", str(inventory), host.name, "-m", "raw",
                     "-a", f"touch -c {shell_path(lease)}"]
        # The passwords stay out of it (the raw module sends no environment, but why hand them on).
        self.env = {k: v for k, v in os.environ.items() if k not in engines.PASSWORD_VARIABLES}
        self.env.setdefault("ANSIBLE_TIMEOUT", str(int(RENEW_S)))
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._renew, name="dbarena-server-lease", daemon=True)

    def __enter__(self) -> "Lease":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=2 * RENEW_S)

    def _renew(self) -> None:
        while not self.done.wait(RENEW_S):
            try:
                proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError:
                continue
            try:
                proc.wait(timeout=2 * RENEW_S)
            except subprocess.TimeoutExpired:  # a connection that hangs: the next renewal tries again
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _owner() -> JSONObject:
    """This controller as a run's owner (as provenance records a `dbarena run`)."""
    return {"pid": os.getpid(), "start": state.start_time(os.getpid()), "host": socket.gethostname()}


def shell_path(path: str) -> str:
    """A host's path quoted for its shell, a leading ~/ left for the shell to expand (a
    working directory in the login user's home, as inventory.py's default is)."""
    if path == "~" or path.startswith("~/"):
        rest = path[2:]
        return "~/" + (shlex.quote(rest) if rest else "")
    return shlex.quote(path)


def _expand(study: Study) -> list[plan.EnginePlan]:
    from dbarena.run import preflight

    return preflight.expand(study)


@dataclass
class _Found:
    """What earlier sessions of this run stored: per variant, its run and the points
    stored ok in it."""

    runs: dict[str, StoredRun]
    ok: dict[str, set[Identity]]

    def count(self) -> int:
        return sum(len(done) for done in self.ok.values())


@dataclass
class _Tally:
    """What this session measured."""

    measured: int = 0
    failed: int = 0
    precision: list[rounds.PointState] = field(default_factory=list)  # --precision: where each point ended


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


def _budget_share(deadline: float | None, part: Sequence[PointSpec], later: Sequence[PointSpec]) -> float | None:
    """The seconds of the budget (--budget, with --precision) a part may take: its
    share of what is left, by the points' estimates, or the first part would take it
    all (session._budget_share, for SMT modes)."""
    if deadline is None:
        return None
    from dbarena.run.preflight import estimate_s

    mine = sum(estimate_s(p) for p in part)
    return max(0.0, (deadline - time.monotonic()) * mine / max(mine + sum(estimate_s(p) for p in later), 1e-9))


def _history(store: ResultStore, part: Sequence[PointSpec], found: _Found) -> dict[PointSpec, rounds.PointState]:
    """Where earlier sessions of this run left each point's adaptive repeats (its
    values and next repeat), as session._stored reads them for `dbarena run --resume`."""
    from dbarena.stats import analysis

    bases = {_unrepeated(p): rounds.base(p) for p in part}
    states: dict[PointSpec, rounds.PointState] = {}
    for variant in dict.fromkeys(p.variant for p in part):
        run = found.runs.get(variant)
        if run is None:
            continue
        for row in analysis.load(store, run_id=run.id):
            spec = bases.get(_unrepeated_row(row))
            if spec is None:
                continue
            states.setdefault(spec, rounds.PointState(spec=spec)).stored(row.repeat, analysis.value(row))
    return states


def _precision_lines(states: Sequence[rounds.PointState], target: float | None) -> list[str]:
    """Where each point's adaptive repeats ended, as `dbarena run` shows them (listings.precision_table)."""
    if not states or target is None:
        return []
    lines = [f"precision +-{target:.1%} (95 % interval of the mean over runs, conservative):"]
    for s in states:
        interval = f"+-{s.half_width:.1%}" if s.half_width is not None else "-"
        lines.append(f"  {s.spec.workload} threads={s.spec.threads}{f' variant {s.spec.variant}' if s.spec.variant else ''}"
                     f": {len(s.values)} runs{f' (+{s.failures} failed)' if s.failures else ''}, {interval}, "
                     f"{s.describe()}")
    return lines


def _unrepeated(spec: PointSpec) -> Unrepeated:
    return (spec.variant, spec.workload, spec.threads, spec.clients, spec.params)


def _unrepeated_row(point: StoredPoint) -> Unrepeated:
    return (point.variant, point.workload, point.threads, point.clients, tuple(sorted(point.params.items())))


def _identity(spec: PointSpec) -> Identity:
    return (spec.workload, spec.threads, spec.clients, spec.repeat, spec.params)


def _identity_row(point: StoredPoint) -> Identity:
    return (point.workload, point.threads, point.clients, point.repeat, tuple(sorted(point.params.items())))


def _config(spec: PointSpec, context: JSONObject, sampling: float | None) -> JSONObject:
    """The point's configuration key, as runner.Bound.config makes a local point's (the
    variant and its settings in it), with the load generators that drove it. Each runs
    the tool with its own per-second report (fleet/loadgen.py): `sampling`, the share of
    transactions each logs."""
    from dbarena.workloads import WORKLOADS

    settings, host, generators = json_object(context.get("settings")), context.get("host"), context.get("load_generators")
    return configkey.build(
        engine=spec.engine, workload=spec.workload, threads=spec.threads, clients=spec.clients,
        duration_s=spec.duration_s if WORKLOADS[spec.workload].tool.timed else None, warmup_s=spec.warmup_s,
        params=dict(spec.params), options=dict(spec.options),
        settings={k: v if isinstance(v, str) else str(v) for k, v in settings.items()}, variant=spec.variant,
        server_version=_text(context.get("server_version")), flavour=_text(context.get("flavour")),
        host=host if isinstance(host, dict) else None, load_generators=generators if isinstance(generators, int) else 1,
        instruments=WORKLOADS[spec.workload].tool.instruments(True, sampling), tls=_text(context.get("tls")))


def _text(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def _cpu(system: Sequence[SystemSample]) -> JSONObject:
    """The load generator's CPU over its part: the tool's cores, and the host's busy share."""
    tool = [s.loadgen_cpu for s in system if s.loadgen_cpu is not None]
    busy = [100.0 - s.cpu_idle_pct for s in system]
    return {"loadgen_cpu_cores": round(sum(tool) / len(tool), 3) if tool else None,
            "host_cpu_busy_pct": round(sum(busy) / len(busy), 1) if busy else None}


def _joined(raw: list[tuple[Host, PointSpec, Part]], stream: str) -> str:
    return "".join(f"# load generator {h.name} ({h.label}): threads {s.threads}, clients {s.clients}\n"
                   f"{p.stdout if stream == 'stdout' else p.stderr}" for h, s, p in raw)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


def _failed(spec: PointSpec, problems: list[str], began: float,
            answers: dict[str, Status] | None = None) -> PointResult:
    parts = [a.part for a in (answers or {}).values() if a.part is not None]
    return PointResult(spec=spec, status="failed", started_at=_utc(began), ended_at=_utc(time.time()),
                       command=(), exit_code=None, stdout="".join(p.stdout for p in parts),
                       stderr="".join(p.stderr for p in parts), error="; ".join(problems))


def _statuses(answers: dict[str, Answer]) -> dict[str, Status]:
    """The hosts' answers to host-point-ctl as statuses; one that says nothing readable
    is a failed one, with why."""
    out = {}
    for name, answer in answers.items():
        try:
            out[name] = Status("failed", reason=answer.problem) if answer.data is None else \
                Status.from_json(answer.data)
        except (ValueError, TypeError) as exc:
            out[name] = Status("failed", reason=f"an answer that does not read: {' '.join(str(exc).split())}")
    return out


def _describe(spec: PointSpec) -> str:
    return (f"{spec.workload} threads={spec.threads}{f' variant {spec.variant}' if spec.variant else ''} "
            f"repeat {spec.repeat + 1}")


def _outcome(result: PointResult) -> str:
    if not result.ok or result.measurement is None:
        return f"failed: {result.error}"
    m = result.measurement
    together = m.details.get("together", {})
    parts = " + ".join(f"{p['host']} {p['tps']:.0f}" for p in together.get("parts", []) if p.get("tps") is not None)
    flag = " (above 1 % of the duration: flagged)" if together.get("start_skew_flagged") else ""
    return (f"{m.tps:.0f} TPS over the common window ({parts}), {m.transactions} transactions, "
            f"start skew {together.get('start_skew_ms', 0):.1f} ms{flag}")


@contextlib.contextmanager
def _server_password(engine: str) -> Iterator[None]:
    """A password for the [server] host's throwaway server, made here and set in this
    process's environment for the run: the playbooks hand it to the server host and to
    the load generators as they hand a --target's password (a file only the host's user
    reads, removed once read), never as an argument or a logged result."""
    variable = engines.first(engine).password_env
    before = os.environ.get(variable)
    os.environ[variable] = secrets.token_urlsafe(24)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = before
