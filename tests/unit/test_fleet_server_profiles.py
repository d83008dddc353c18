"""A `fleet run --together` [server] host's profiles (--profile), with its steps replaced:
what the host sends is read and checked at the edge (size, compression, folded stacks),
perf is asked once whether it may sample there (one line and the run goes on, or the
run is refused where the study requires profiles), and a point's profile is started
around its measured part only and discarded when the point does not end. The real
thing over SSH: tests/e2e/test_fleet_together.py."""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import replace
from types import SimpleNamespace

import pytest

from dbarena.errors import UsageError
from dbarena.fleet import messages, togetherpoint, togetherprofile
from dbarena.fleet.inventory import Host
from dbarena.fleet.messages import ProfileRequest, ProfileStatus
from dbarena.fleet.togethersteps import Answer
from dbarena.model import PointSpec, Profile
from dbarena.study import arguments
from dbarena.study.model import Profiling

FOLDED = "postgres;PostgresMain;exec_simple_query 30\npostgres;PostgresMain;pq_getbyte 12\n"


def _host(name: str) -> Host:
    return Host(name=name, label=name, price_per_hour=None, price_per_month=None, currency=None, workdir=f"/w/{name}")


def _study(*more: str):
    return arguments.study_from_args(["--engine", "postgres", "--workload", "pgbench-select-only", *more])


def _done(folded: str) -> ProfileStatus:
    return ProfileStatus("done", id="p1", folded=folded, frequency_hz=99.0, symbols="perf version 6.1; /usr/bin/x")


def test_a_hosts_profile_reads_back_as_it_was_made() -> None:
    sent = json.loads(json.dumps(_done(ProfileStatus.pack(FOLDED)).to_json()))
    assert ProfileStatus.from_json(sent).profile() == Profile(FOLDED, 99.0, "perf version 6.1; /usr/bin/x")
    request = ProfileRequest(id="p1", server="s1", frequency_hz=99, perf="perf version 6.1", max_s=900.0)
    assert ProfileRequest.from_json(request.to_json()) == request


@pytest.mark.parametrize(("folded", "why"), [
    ("not base64!", "do not read"),
    (base64.b64encode(b"not zlib").decode(), "do not read"),
    (ProfileStatus.pack("postgres;main many\n"), "do not read"),
    (ProfileStatus.pack(FOLDED)[:-8], "cut short|do not read"),
    (ProfileStatus.pack("x" * 2000), "above the 0 MiB read"),
])
def test_a_profile_that_does_not_read_is_refused_in_one_line(folded: str, why: str, monkeypatch) -> None:
    monkeypatch.setattr(messages, "MAX_PROFILE_CHARS", 1000)
    with pytest.raises(ValueError, match=why) as caught:
        _done(folded).profile()
    assert "\n" not in str(caught.value)


def test_what_a_host_may_not_send_is_refused_before_it_is_read(monkeypatch) -> None:
    monkeypatch.setattr(messages, "MAX_PROFILE_SENT_CHARS", 100)
    with pytest.raises(ValueError, match="above the 0 MiB a host may send"):
        ProfileStatus.from_json(_done("A" * 101).to_json())
    with pytest.raises(ValueError, match="unknown field"):
        ProfileStatus.from_json({"state": "done", "stacks": "x"})
    with pytest.raises(ValueError, match="no profile"):
        ProfileStatus("done", id="p1").profile()


def _serving():
    return SimpleNamespace(host=_host("gamma"), server_id="s1")


def test_where_perf_may_not_sample_one_line_says_so_or_a_study_that_requires_it_is_refused() -> None:
    said: list[str] = []
    asked: list[list[str]] = []

    def step(hosts, args, **kwargs):
        asked.append(args)
        return {"gamma": Answer({"perf": None, "problem": "perf is not installed (not on PATH)"})}

    profiles, facts = togetherprofile.for_run(_study("--profile"), _serving(), step, said.append)
    assert profiles is None and asked == [["host-profile-ctl", "--workdir", "{w}", "check", "--frequency", "99"]]
    assert said == ["no on-CPU profiles: gamma: perf is not installed (not on PATH); the run goes on without them"]
    assert facts == {"frequency_hz": 99, "required": False, "perf": None,
                     "problem": "gamma: perf is not installed (not on PATH)"}
    required = replace(_study("--profile"), profile=Profiling(99, True))
    with pytest.raises(UsageError, match=r"required = true\), but gamma: perf is not installed"):
        togetherprofile.for_run(required, _serving(), step, said.append)
    # Against a --target there is no server of dbarena's to sample.
    profiles, facts = togetherprofile.for_run(_study("--profile"), None, step, said.append)
    assert profiles is None and "not a --target" in said[-1] and len(asked) == 2
    assert togetherprofile.for_run(_study(), _serving(), step, said.append) == (None, None)


def test_where_perf_may_sample_each_profile_comes_back_read_or_says_why_not() -> None:
    said: list[str] = []
    answers = {"check": {"perf": "perf version 6.1", "problem": None},
               "wait-sampling": {"state": "sampling", "id": "p1"},
               "stop": _done(ProfileStatus.pack(FOLDED)).to_json()}

    def step(hosts, args, **kwargs):
        return {"gamma": Answer(answers[args[3]])}

    profiles, facts = togetherprofile.for_run(_study("--profile"), _serving(), step, said.append)
    assert profiles is not None and facts is not None and facts["perf"] == "perf version 6.1" and not said
    spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4, duration_s=4)
    assert profiles.start("p1", spec)
    assert profiles.stop("p1") == Profile(FOLDED, 99.0, "perf version 6.1; /usr/bin/x")
    answers["stop"] = _done("@@").to_json()
    assert profiles.stop("p1") is None
    assert len(said) == 1 and said[0].startswith("no on-CPU profile of this point: gamma: a profile's folded "
                                                 "stacks do not read"), said


class _Profiles:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self, point_id: str, spec: PointSpec) -> bool:
        self.calls.append("start")
        return True

    def stop(self, point_id: str) -> Profile | None:
        self.calls.append("stop")
        return None

    def discard(self, point_id: str) -> None:
        self.calls.append("discard")


@pytest.mark.parametrize("phase", ["measured", "warmup"])
def test_a_point_is_profiled_from_ready_in_its_measured_part_only_and_discarded_when_it_does_not_end(
        phase: str, monkeypatch) -> None:
    profiles = _Profiles()

    def step(hosts, args, **kwargs):
        if "status" in args:
            assert profiles.calls == (["start"] if phase == "measured" else [])
            raise KeyboardInterrupt  # the Ctrl-C, while the point runs
        return {h.name: Answer({"state": "ready"}) for h in hosts}

    measure = togetherpoint.Together(
        step=step, study=_study("--profile"), hosts=[_host("alpha"), _host("beta")],
        target="postgresql://dbarena@db:5432/dbarena", tls_ca=None, poll_s=0.01,
        profiles=profiles)
    monkeypatch.setattr(togetherpoint, "GO_LEAD_MIN_S", 0.0)
    with pytest.raises(KeyboardInterrupt):
        measure.measure(PointSpec(engine="postgres", workload="pgbench-select-only", threads=2, clients=4,
                                  duration_s=60), None, phase)
    assert profiles.calls == (["start", "discard"] if phase == "measured" else [])


def test_a_profile_asked_on_its_host_answers_at_once_when_it_never_started_or_its_process_is_gone(tmp_path) -> None:
    import time

    from dbarena.fleet import serverprofile
    from dbarena.fleet.progress import write_json

    began = time.monotonic()
    assert serverprofile.control(tmp_path, "stop", "p1") == ProfileStatus("failed",
                                                                           reason="its host-profile did not start")
    folder = serverprofile.folder_of(tmp_path)
    folder.mkdir()
    write_json(folder / "status.json", ProfileStatus("sampling", id="p1", pid=2**22 + 12345).to_json())
    gone = serverprofile.control(tmp_path, "discard", "p1")
    assert (gone.state, gone.reason) == ("failed", "its dbarena process is gone") and (folder / "discard").exists()
    assert time.monotonic() - began < 5
