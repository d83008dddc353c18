"""The records the controller of `fleet run --together` and its load generators pass
(fleet/messages.py): what one side writes, the other reads back the same; a document
that does not fit is refused in one line."""

from __future__ import annotations

import json

import pytest

from dbarena.fleet.messages import Part, PointRequest, Status
from dbarena.host.sysmetrics import SystemSample
from dbarena.model import Measurement, PointSpec, Sample

SPEC = PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4, duration_s=8,
                 params=(("scale", 1),), options=(("no-vacuum", "on"),))


def test_a_request_reads_back_as_written_through_json():
    request = PointRequest(id="abc", engine="postgres", flavour=None, target="postgresql://h:5432/d", spec=SPEC,
                           sampling=0.5, tls={"ca": "PEM"}, sample_server=True, server_clients=8, checkpoint=True)
    text = request.to_json()
    assert json.loads(text)["spec"]["params"] == [["scale", 1]]
    assert PointRequest.from_json(text) == request


def test_a_part_and_its_status_read_back_as_written():
    system = SystemSample(second=1.0, cpu_user_pct=50.0, cpu_system_pct=10.0, cpu_iowait_pct=0.0, cpu_steal_pct=0.0,
                          cpu_idle_pct=40.0, context_switches_per_s=100.0, disk_read_bytes_per_s=None,
                          disk_write_bytes_per_s=None, memory_used_bytes=None, server_cpu=None, loadgen_cpu=0.4)
    part = Part(command=("pgbench", "-c", "4"), exit=0, stdout="out", stderr="err", launched_at=1.5, ended_at=9.5,
                start_at=1.0, system=(system,), samples=(Sample(second=1, tps=10.0),),
                server='{"engine": "postgres"}', measurement=Measurement(tps=10.0, transactions=80), first_at=1.6)
    status = Status("done", id="abc", pid=12, updated=3.0, part=part)
    # Through the text the playbook carries, as host-point-ctl prints it.
    assert Status.from_json(json.loads(json.dumps(status.to_json()))) == status


def test_a_failed_share_reads_without_a_measurement():
    part = Part(command=("pgbench",), exit=1, stdout="", stderr="pgbench: error: x", launched_at=1.0, ended_at=2.0,
                start_at=1.0)
    status = Status.from_json(json.loads(json.dumps(Status("failed", id="x", reason="pgbench exit status 1",
                                                           part=part).to_json())))
    assert status.final and status.part is not None and status.part.measurement is None


@pytest.mark.parametrize("text, said", [
    ('["not", "an", "object"]', "a point's request: not a JSON object"),
    ('{"id": "a", "engine": "postgres", "flavour": null, "target": "t", "spec": {}, "future": 1}',
     "a point's request: unknown field(s) future (another dbarena version on the host?)"),
    ('{"id": "a", "engine": "postgres", "flavour": null, "target": "t", "spec": {}}',
     "a point's request: no engine, workload, threads, clients, duration_s"),
    ('{"id": "a", "engine": "postgres", "flavour": null, "target": "t", "spec": {"engine": "postgres", '
     '"workload": "w", "threads": "2", "clients": 2, "duration_s": 5}}',
     "a point's request: threads is str, not int"),
    ('{"id": "a", "engine": "postgres", "flavour": null, "target": "t", "spec": {"engine": "postgres", '
     '"workload": "w", "threads": true, "clients": 2, "duration_s": 5}}',
     "a point's request: threads is bool, not int"),
    ('{"id": "a", "engine": "postgres", "flavour": null, "target": "t", "spec": {"engine": "postgres", '
     '"workload": "w", "threads": 2, "clients": 2, "duration_s": 5, "params": [["scale", "10"]]}}',
     "a point's request: not a list of [name, int] pairs"),
    ('{"id": "a", "engine": "postgres", "flavour": null, "target": "t", "tls": {"ca": 1}, "spec": {}}',
     "a point's request: tls is not an object of texts"),
])
def test_a_request_that_does_not_fit_is_refused_in_one_line(text, said):
    with pytest.raises(ValueError) as caught:
        PointRequest.from_json(text)
    assert str(caught.value) == said


@pytest.mark.parametrize("part, said", [
    ({"command": "pgbench"}, "a host's part: its command is not a list of texts"),
    ({"command": ["pgbench"], "exit": 0, "stdout": "", "stderr": "", "launched_at": 1, "ended_at": "2",
      "start_at": 1}, "a host's part: ended_at is str, not float"),
    ({"command": ["pgbench"], "exit": 0, "stdout": "", "stderr": "", "launched_at": 1, "ended_at": 2,
      "start_at": 1, "measurement": {"tps": "fast"}}, "a host's part: tps is str, not float | None"),
    ({"command": ["pgbench"], "exit": 0, "stdout": "", "stderr": "", "launched_at": 1, "ended_at": 2,
      "start_at": 1, "samples": {"second": 1}}, "a host's part: Sample records are not a list"),
])
def test_a_part_that_does_not_fit_is_refused_in_one_line(part, said):
    with pytest.raises(ValueError) as caught:
        Status.from_json({"state": "done", "part": part})
    assert str(caught.value) == said


def test_a_part_read_back_has_its_declared_types():
    """An integer where a float is declared (JSON writers may drop the .0) is read as a float."""
    status = Status.from_json({"state": "done", "part": {
        "command": ["pgbench"], "exit": 0, "stdout": "", "stderr": "", "launched_at": 1, "ended_at": 2,
        "start_at": 1, "measurement": {"tps": 100, "details": {"a": 1}}}})
    assert status.part is not None and status.part.measurement is not None
    assert isinstance(status.part.launched_at, float) and isinstance(status.part.measurement.tps, float)
    assert status.part.measurement.details == {"a": 1}


def test_a_status_without_a_state_is_refused():
    with pytest.raises(ValueError, match="a point's status: no state"):
        Status.from_json({"id": "x"})


def test_a_preparation_request_reads_back_as_it_was_sent():
    from dbarena.fleet.messages import PrepareRequest
    from dbarena.model import PointSpec

    spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=2, clients=2, duration_s=5,
                     params=(("scale", 10),))
    sent = PrepareRequest(args=("--study", "/w/study.toml", "--quick"), label="l", target="postgresql://h/db",
                          invocation="k", datasets=(spec,), tls={"ca": "PEM"})
    assert PrepareRequest.from_json(json.loads(sent.to_json())) == sent
    with pytest.raises(ValueError, match="a run's preparation: its args are not a list of texts"):
        PrepareRequest.from_json({**json.loads(sent.to_json()), "args": "--quick"})
