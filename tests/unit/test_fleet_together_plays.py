"""What a `fleet run --together` controller spends in plays, its hosts replaced: a run
whose store is complete reaches no host (not even the install check), and a point's
start time is sent at most twice as far ahead as the go plays take, not as the wait-ready step
(tests/e2e/test_fleet_together.py drives real hosts)."""

from __future__ import annotations

import pytest

from test_fleet_together_loop import VARIANTS_STUDY, _controller, _figures


def test_a_complete_store_is_said_so_before_anything_reaches_the_hosts(tmp_path, monkeypatch):
    study = tmp_path / "variants.toml"
    study.write_text(VARIANTS_STUDY)
    args = ["--study", str(study), "--target", "postgresql://dbarena@db:5432/dbarena"]
    said: list[str] = []
    first = _controller(tmp_path, args, said)
    _figures(monkeypatch, {"steady": [1000.0], "noisy": [900.0]})
    assert first.run() == 0, said

    again: list[str] = []
    second = _controller(tmp_path, args, again)

    def reached(*args: object, **kwargs: object) -> object:
        raise AssertionError("a complete run reached its hosts")

    second.install = reached
    second.step = reached
    assert second.run() == 0, again
    assert again == ["complete already (2/2 points stored), not run again"], again


def test_a_store_not_made_yet_is_made_once_the_hosts_are_installed(tmp_path, monkeypatch):
    study = tmp_path / "variants.toml"
    study.write_text(VARIANTS_STUDY)
    said: list[str] = []
    run = _controller(tmp_path, ["--study", str(study), "--target", "postgresql://dbarena@db:5432/dbarena"], said)
    run.install = lambda: False  # (the install failed: said by the fleet)
    assert run.run() == 1
    assert not (tmp_path / "r.db").exists()


def _measure(step):
    from dbarena.fleet import togetherpoint
    from dbarena.fleet.inventory import Host
    from dbarena.study import arguments

    return togetherpoint.Together(
        step=step, study=arguments.study_from_args(["--engine", "postgres", "--workload", "pgbench-select-only"]),
        hosts=[Host(name=n, label=n, price_per_hour=None, price_per_month=None, currency=None, workdir=f"/w/{n}")
               for n in ("alpha", "beta")],
        target="postgresql://dbarena@db:5432/dbarena", tls_ca=None, poll_s=0.01)


def test_the_start_time_is_sent_as_far_ahead_as_the_go_plays_take():
    from dbarena.fleet.togetherpoint import GO_LEAD_MIN_S, GO_PLAYS_KEPT

    measure = _measure(lambda *a, **k: {})
    # Before any go play: half as long again as half the wait-ready step.
    assert measure._lead(20.0) == pytest.approx(15.0)
    assert measure._lead(1.0) == GO_LEAD_MIN_S
    # Then at most twice the longest of the last go plays, whatever the wait-ready took.
    measure.go_s.extend([9.0, 3.0, 4.0, 2.0])
    assert GO_PLAYS_KEPT == 3 and measure._lead(20.0) == pytest.approx(8.0)
    assert measure._lead(8.0) == pytest.approx(6.0)  # (the first guess, where it is the shorter)
    measure.go_s.extend([0.5, 0.5, 0.5])
    assert measure._lead(20.0) == GO_LEAD_MIN_S


def test_each_go_play_is_timed_into_the_runs_list(monkeypatch):
    """Timed to when the hosts had the start time (their go_seen): the go play itself
    waits on for the point's end (a long poll), which is no measure of how far ahead the
    start must be sent."""
    import time

    from dbarena.fleet import togetherpoint
    from dbarena.fleet.togethersteps import Answer
    from dbarena.model import PointSpec

    sent: list[tuple[str, float, float]] = []

    def step(hosts, args, **kwargs):
        if "--at" in args:
            at, wait = float(args[args.index("--at") + 1]), float(args[args.index("--wait") + 1])
            sent.append(("go", at, wait))
            return {h.name: Answer({"state": "running", "go_seen": time.time() + 0.5}) for h in hosts}
        if "status" in args:
            raise KeyboardInterrupt  # (ends the point here: what is looked at is the go)
        return {h.name: Answer({"state": "ready"}) for h in hosts}

    shared: list[float] = [0.0]
    measure = _measure(step)
    measure.go_s = shared
    monkeypatch.setattr(togetherpoint, "GO_LEAD_MIN_S", 0.0)
    with pytest.raises(KeyboardInterrupt):
        measure.measure(PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4,
                                  duration_s=60), None)
    assert [what for what, _, _ in sent] == ["go"]
    # Waited on until a poll after the start time.
    assert sent[0][2] == pytest.approx(sent[0][1] - time.time() + measure.poll_s, abs=0.5)
    assert len(shared) == 2 and shared[1] == pytest.approx(0.5, abs=0.3)


def _done(threads: int) -> dict:
    """A share that ended, as host-point-ctl answers it: its part with a measurement."""
    return {"state": "done", "id": "p", "part": {
        "command": ["pgbench"], "exit": 0, "stdout": "", "stderr": "", "launched_at": 1.0, "ended_at": 61.0,
        "start_at": 1.0, "system": [], "samples": [],
        "measurement": {"tps": 100.0, "latency_avg_ms": threads * 1.0, "transactions": 6000}}}


def test_a_point_that_ends_within_the_go_plays_wait_takes_no_status_play():
    from dbarena.fleet.togethersteps import Answer
    from dbarena.model import PointSpec

    asked: list[str] = []

    def step(hosts, args, **kwargs):
        action = next(a for a in args if a in ("wait-ready", "go", "status", "stop"))
        asked.append(action)
        if action == "go":
            return {h.name: Answer({**_done(1), "go_seen": 1.0}) for h in hosts}
        return {h.name: Answer({"state": "ready"}) for h in hosts}

    result = _measure(step).measure(PointSpec(engine="postgres", workload="pgbench-select-only", threads=2,
                                              clients=2, duration_s=60), None)
    assert asked == ["wait-ready", "go"], asked
    assert result.ok, result.error


def test_a_host_whose_share_fails_while_the_go_play_waits_stops_the_others():
    from dbarena.fleet.togethersteps import Answer
    from dbarena.model import PointSpec

    asked: list[tuple[str, list[str]]] = []

    def step(hosts, args, **kwargs):
        action = next(a for a in args if a in ("wait-ready", "go", "status", "stop"))
        asked.append((action, [h.name for h in hosts]))
        if action == "go":
            return {"alpha": Answer({"state": "failed", "reason": "pgbench: connection refused", "go_seen": 1.0}),
                    "beta": Answer({"state": "running", "go_seen": 1.0})}
        if action == "stop":
            return {h.name: Answer({"state": "stopped", "reason": "stopped: another load generator failed"})
                    for h in hosts}
        return {h.name: Answer({"state": "ready"}) for h in hosts}

    result = _measure(step).measure(PointSpec(engine="postgres", workload="pgbench-select-only", threads=2,
                                              clients=2, duration_s=60), None)
    assert asked == [("wait-ready", ["alpha", "beta"]), ("go", ["alpha", "beta"]), ("stop", ["beta"])], asked
    assert not result.ok and "alpha: pgbench: connection refused" in (result.error or ""), result.error
