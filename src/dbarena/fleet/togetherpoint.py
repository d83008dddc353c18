"""`fleet run --together`'s way of measuring a point (runner.Measure): every load
generator of the inventory runs its share of the point at once, against one server.

The point's threads and clients are split over the hosts (combine.split); every host
starts `host-point` detached, which opens the target, builds its share's command with
the tool's point_argv and says it is ready; once every host is ready, the controller
sends one start time a little ahead (long enough for that play to reach them all), and
each host sleeps until it and starts its tool. The controller polls the hosts; when
one fails (its tool died, it cannot be reached) it tells the others to stop and the
point fails with that host's reason. When all are done, their parts come back in the
status answer and combine.py makes them one point (each host's part, the split and
the start skew in its details). The sweep (runner.Sweep) does the rest as it does for
a local point: rounds, warm-ups (the checkpoint after one is the first host's, made
before it says it is ready for the measured run), storing, the configuration key.
With --profile, the [server] host's perf samples the server from when every host is
ready until every part has ended, and the point is stored with that profile
(togetherprofile.py).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Callable, Protocol, Sequence

from dbarena.fleet import combine
from dbarena.fleet.inventory import Host
from dbarena.fleet.messages import Part, PointRequest, Status
from dbarena.fleet.togethersteps import STEP_TIMEOUT_S, Step, statuses
from dbarena.host.sysmetrics import SystemSample
from dbarena.interfaces import Reporter
from dbarena.model import PointResult, PointSpec, Profile, Sample
from dbarena.records import JSONObject
from dbarena.run import measure as measure_mod
from dbarena.serverside.series import ServerSeries
from dbarena.stats import capacity
from dbarena.stats.latency import Latencies
from dbarena.study import Study
from dbarena.workloads import WORKLOADS

GO_LEAD_MIN_S = 2.0  # the start time is at least this far ahead of sending it
GO_PLAYS_KEPT = 3  # the go plays the lead is taken from: the run's last few (a busy spell passes)


class Profiles(Protocol):
    """The server's on-CPU profile of a point's measured part (--profile: togetherprofile.py)."""

    def start(self, point_id: str, spec: PointSpec) -> bool:
        """The server sampled from now on; False (said) where it cannot be."""
        ...

    def stop(self, point_id: str) -> Profile | None:
        """The profile since start; None (said) where there is none."""
        ...

    def discard(self, point_id: str) -> None:
        """Sampling stopped, nothing read."""
        ...


def split_point(spec: PointSpec, hosts: list[Host]) -> list[PointSpec]:
    """Each host's share of the point: its threads, clients and offered rate (so that the
    hosts together offer the rate the point records, not each of them all of it)."""
    threads = combine.split(spec.threads, len(hosts))
    clients = combine.split(spec.clients, len(hosts))
    rate = capacity.offered(spec.options)
    if rate is None:
        return [replace(spec, threads=t, clients=c) for t, c in zip(threads, clients)]
    rates = combine.split_rate(rate, len(hosts), WORKLOADS[spec.workload].tool.whole_rates)
    return [replace(spec, threads=t, clients=c, options=capacity.offering(spec.options, r))
            for t, c, r in zip(threads, clients, rates)]


@dataclass
class Together:
    """The load generators measuring one server's points (runner.Measure)."""

    step: Step
    hosts: list[Host]
    study: Study
    target: str
    tls_ca: str | None  # the server's certificate, which each load generator verifies it by
    poll_s: float
    sample_server: bool = True  # the first host samples the server's own statistics
    alive: Callable[[], str | None] | None = None  # a [server] host's: None while its server is up, else why not
    profiles: Profiles | None = None  # the [server] host's perf, around each measured part (--profile)
    pending_checkpoint: bool = False
    go_s: list[float] = field(default_factory=list)  # how long each go play took (_lead)
    warm_up_failed: str | None = None  # why the last warm-up failed, if it did

    def measure(self, spec: PointSpec, reporter: Reporter | None, phase: str = "measured") -> PointResult:
        # A [server] host's server asked before each point (its warm-up, or its run
        # where it has none): one that is gone fails the point with why.
        down = self.alive() if self.alive is not None and (phase == "warmup" or not spec.warmup_s) else None
        checkpoint, self.pending_checkpoint = self.pending_checkpoint, False
        result = _failed(spec, [down], time.time()) if down else self.point(spec, checkpoint, phase == "measured")
        if phase == "warmup":
            self.warm_up_failed = None if result.ok else result.error or "failed"
        return result

    def checkpoint(self, spec: PointSpec) -> str | None:
        # A warm-up that failed on some host fails its point at once (several plays
        # saved, and no share measured on a server some host could not load). Else the
        # checkpoint is the first host's, made before it says it is ready for the
        # measured run; one it cannot make fails that point with why.
        if self.warm_up_failed is not None:
            return f"the warm-up failed: {self.warm_up_failed}"
        self.pending_checkpoint = True
        return None

    def point(self, spec: PointSpec, checkpoint: bool = False, profile: bool = False) -> PointResult:
        shares = split_point(spec, self.hosts)
        family = self.study.engines[0]
        point_id = uuid.uuid4().hex[:12]
        ctl = ["host-point-ctl", "--workdir", "{w}", "--point", point_id]
        tls = {"ca": self.tls_ca} if self.tls_ca is not None else None
        requests = {h.name: PointRequest(id=point_id, engine=family.name, flavour=family.flavour, target=self.target,
                                         spec=share, sampling=self.study.latency_sampling, tls=tls,
                                         sample_server=self.sample_server and n == 0, server_clients=spec.clients,
                                         checkpoint=checkpoint and n == 0).to_json()
                    for n, (h, share) in enumerate(zip(self.hosts, shares))}
        began = time.time()
        profiled = False  # the server's perf sampling, until stopped (read) or discarded
        try:
            ready = self.step(self.hosts, [*ctl, "wait-ready"], request=requests, detach=True, secrets=True)
            problems = self._problems(statuses(ready), want="ready")
            if problems:
                self._stop(self.hosts, ctl)
                return _failed(spec, problems, began)
            # Sampling from here: after the first host's checkpoint, before any host's tool starts.
            profiled = profile and self.profiles is not None and self.profiles.start(point_id, spec)
            sent = time.time()
            start_at = sent + self._lead(sent - began)
            # The go play waits on each host for its share to end, at most a poll's
            # time after the start (loadgen.control's long poll); then each status play
            # does, until every share has ended. A host whose share fails answers at
            # once and the others at the latest a poll later, when they are stopped.
            wait = min(self.poll_s, STEP_TIMEOUT_S / 2)
            polled = statuses(self.step(self.hosts, [*ctl, "go", "--at", repr(start_at),
                                                     "--wait", repr(start_at - sent + wait)]))
            seen = [s.go_seen for s in polled.values() if s.go_seen is not None]
            # How long the go play took to reach the hosts (their clocks, as the
            # point's start skew is measured by): not the play's whole time, which waited.
            if len(seen) == len(self.hosts):
                self.go_s.append(max(seen) - sent)
            answers: dict[str, Status] = {}
            while True:
                problems = self._problems(polled, want=None)
                answers.update((name, status) for name, status in polled.items() if status.final)
                if problems:
                    rest = [h for h in self.hosts if h.name not in answers]
                    answers.update(statuses(self.step(rest, [*ctl, "stop"])))
                    return _failed(spec, problems, began, answers)
                if len(answers) == len(self.hosts):
                    break
                asked = time.monotonic()
                polled = statuses(self.step([h for h in self.hosts if h.name not in answers],
                                            [*ctl, "status", "--wait", repr(wait)]))
                # (Every host that answers without an end waited `wait`; no play is asked
                # again at once unless one did not.)
                time.sleep(max(0.0, min(wait, 1.0) - (time.monotonic() - asked)))
            found = None
            if profiled and self.profiles is not None:
                profiled, found = False, self.profiles.stop(point_id)
            result = self._combined(spec, shares, answers, began)
            return replace(result, profile=found) if result.ok else result
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM) or failed mid-point: each load generator's
            # share runs detached on its host and would run out its time; stopped now.
            self._stop(self.hosts, ctl)
            raise
        finally:
            if profiled and self.profiles is not None:
                self.profiles.discard(point_id)

    def _lead(self, ready_s: float) -> float:
        """How far ahead the start time is sent: far enough for the go play to reach
        every host. Half as long again as a step, taken as half the wait-ready step
        (ready_s); but that step also waits for each host to start its share and open
        the target, and on a busy machine the guess left the hosts idle for 10-16 s at
        every point where the go play itself took 3-5 s: once the run has timed go
        plays, at most twice the longest of its last few."""
        guess = 1.5 * ready_s / 2
        if self.go_s:
            guess = min(guess, 2.0 * max(self.go_s[-GO_PLAYS_KEPT:]))
        return max(GO_LEAD_MIN_S, guess)

    def _problems(self, found: dict[str, Status], want: str | None) -> list[str]:
        out = []
        for h in self.hosts:
            status = found.get(h.name)
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
            measurement = measure_mod.with_latencies(
                replace(measurement, latency_min_ms=None, latency_max_ms=None), latencies)
        measurement = replace(measurement, details={**measurement.details, **details})
        result = PointResult(
            spec=spec, status="ok", started_at=_utc(min(p.launched_at for _, _, p in raw)),
            ended_at=_utc(max(p.ended_at for _, _, p in raw)), command=raw[0][2].command,
            exit_code=0, stdout=_joined(raw, "stdout"), stderr=_joined(raw, "stderr"), measurement=measurement,
            samples=samples)
        # The server's series the first host sampled over the point. Its bound is derived
        # when the point is read (stats/bound.of_point), beside that host's share and its
        # load generator's CPU, which the point's details keep (the machine's other CPU
        # figures the host sampled are its own, not the server's).
        server = raw[0][2].server
        return replace(result, server=ServerSeries.decode(server) if server else None)


def describe(spec: PointSpec) -> str:
    return (f"{spec.workload} threads={spec.threads}{f' variant {spec.variant}' if spec.variant else ''} "
            f"repeat {spec.repeat + 1}")


def outcome(result: PointResult) -> str:
    """A together point in words: its TPS and each host's, its start skew."""
    if not result.ok or result.measurement is None:
        return f"failed: {result.error}"
    m = result.measurement
    together = m.details.get("together", {})
    parts = " + ".join(f"{p['host']} {p['tps']:.0f}" for p in together.get("parts", []) if p.get("tps") is not None)
    flag = " (above 1 % of the duration: flagged)" if together.get("start_skew_flagged") else ""
    return (f"{m.tps:.0f} TPS over the common window ({parts}), {m.transactions} transactions, "
            f"start skew {together.get('start_skew_ms', 0):.1f} ms{flag}")


class Said:
    """The sweep's progress as a together run says it (interfaces.Reporter): its stages
    and one line a point (describe, outcome); together.py's sweep reports to it."""

    def __init__(self, say: Callable[[str], None], of: str):
        self.say, self.of = say, of

    def begin(self, plan: Sequence[PointSpec], estimate_s: Callable[[PointSpec], float]) -> None:
        pass

    def replan(self, first_index: int, remaining: Sequence[PointSpec]) -> None:
        pass

    def stage(self, text: str) -> None:
        self.say(text)

    def point_started(self, index: int, spec: PointSpec) -> None:
        pass

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        pass

    def point_finished(self, index: int, result: PointResult) -> None:
        self.say(f"point {index + 1}{self.of}: {describe(result.spec)}: {outcome(result)}")

    def end(self) -> None:
        pass


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
