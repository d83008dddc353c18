"""`run --study` of a study with [machines], with a fake Provider and a fake fleet (the
real ones: tests/e2e/test_cloud_local.py, tests/e2e/test_cloud_aws.py): a zone without
capacity tried again in another, or refused in one line with nothing left; the cost
guard before anything is made and while the hosts run; teardown on a stop, an error
and Ctrl-C; each resource's times; the local provider's prices."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest

from dbarena import study as study_mod
from dbarena.cloud import catalogue, estimate, machines, ondemand
from dbarena.cloud.provider import TAG_HOST, TAG_RUN, CapacityError, Resource
from dbarena.errors import UsageError
from dbarena.study.model import Machines

STUDY = """
schema = 1
name = "ondemand"
[sweep]
levels = [1, 2]
duration_s = 60
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
[machines]
provider = "aws"
region = "us-east-1"
instance_types = ["m7g.large", "m7i.large"]
image = "ami-0123"
"""

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DBARENA_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def study(tmp_path: Path, text: str = STUDY) -> study_mod.Study:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return study_mod.load(str(path))


class Fake:
    """A provider whose zones in `full` have no capacity: the first host is made
    before the error, as a cloud that fails half-way through a creation leaves it."""

    name = "fake"
    passwords: dict[str, str] = {}  # (hosts only: no managed database, no password)

    def __init__(self, zones: Sequence[str] = (), full: Sequence[str | None] = (),
                 created: datetime | None = None):
        self._zones, self.full, self.created = list(zones), set(full), created
        self.made: list[Resource] = []
        self.asked: list[str | None] = []
        self.deleted: list[str] = []

    def zones(self) -> list[str]:
        return list(self._zones)

    def _resource(self, name: str, kind: str, tags: Mapping[str, str], zone: str | None) -> Resource:
        now = self.created or datetime.now(timezone.utc)
        return Resource(kind="instance", id=f"i-{len(self.made) + len(self.deleted)}", name=name, type=kind,
                        zone=zone, address="10.0.0.9", port=None, engine=None, created=now, state="running",
                        tags={**tags, TAG_HOST: name}, ready=now + timedelta(seconds=30))

    def create(self, machines: Machines, tags: Mapping[str, str], zone: str | None = None) -> list[Resource]:
        self.asked.append(zone)
        hosts = list(machines.hosts)
        self.made.append(self._resource(*hosts[0], tags, zone))
        if zone in self.full:
            raise CapacityError(f"create the hosts: InsufficientInstanceCapacity: no {hosts[0][1]} in {zone}", zone)
        self.made += [self._resource(name, kind, tags, zone) for name, kind in hosts[1:]]
        return [r for r in self.made if r.run == tags[TAG_RUN]]

    def describe(self) -> list[Resource]:
        return list(self.made)

    def delete(self, resources: Sequence[Resource]) -> None:
        ids = {r.id for r in resources}
        self.deleted += sorted(ids)
        self.made = [r for r in self.made if r.id not in ids]

    def host_vars(self, host: Resource, machines: Machines) -> dict[str, object]:
        return {"ansible_port": 2222}


def test_a_zone_without_capacity_is_left_for_another_and_what_it_made_is_deleted(tmp_path: Path) -> None:
    s = study(tmp_path)
    estimated, cat = machines.checked_estimate(s, None, None)
    fake = Fake(zones=["us-east-1a", "us-east-1b", "us-east-1c"], full=[None, "us-east-1a"])
    said: list[str] = []
    made = machines.up(s, fake, estimated, cat, said.append, kept=False)
    assert fake.asked == [None, "us-east-1a", "us-east-1b"]
    # What the two refused tries made was deleted; what the third made stays, in its zone.
    assert len(fake.deleted) == 2
    assert {r.zone for r in made.resources} == {"us-east-1b"} and len(made.resources) == 2
    assert {r.id for r in fake.made} == {r.id for r in made.resources}
    assert "trying again in us-east-1a" in said and "trying again in us-east-1b" in said
    assert made.record.exists() and made.inventory.exists()
    assert '"ansible_port": 2222' in made.inventory.read_text()


def test_no_capacity_in_any_zone_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    s = study(tmp_path)
    estimated, cat = machines.checked_estimate(s, None, None)
    fake = Fake(zones=["us-east-1a", "us-east-1b"], full=[None, "us-east-1a", "us-east-1b"])
    with pytest.raises(CapacityError) as refused:
        machines.up(s, fake, estimated, cat, lambda line: None, kept=False)
    line = str(refused.value)
    assert "\n" not in line and "no capacity" in line and "us-east-1a, us-east-1b" in line
    assert fake.made == [] and len(fake.deleted) == 3
    assert machines.records() == []


def test_times_to_create_and_be_ready_from_the_request() -> None:
    def made(created: datetime | None, ready: datetime | None) -> Resource:
        return Resource(kind="instance", id="i", name="h", type="t", zone=None, address=None, port=None, engine=None,
                        created=created, state="running", ready=ready)

    asked = NOW
    times = machines.timings([made(NOW + timedelta(seconds=4), NOW + timedelta(seconds=41.5))], asked,
                             NOW + timedelta(seconds=50))
    assert times == {"h": {"create_s": 4.0, "ready_s": 41.5}}
    # No ready time from the provider: when create() returned; a creation time a second
    # before the request (a provider's whole seconds) is 0, not negative.
    times = machines.timings([made(NOW - timedelta(seconds=1), None)], asked, NOW + timedelta(seconds=50))
    assert times == {"h": {"create_s": 0.0, "ready_s": 50.0}}


def test_the_guard_looks_ahead_to_the_next_check_and_the_deletion(tmp_path: Path) -> None:
    s = study(tmp_path, STUDY.replace('image = "ami-0123"', 'image = "ami-0123"\n[machines.prices]\n'
                                      'compute."m7g.large" = 3.6\ncompute."m7i.large" = 3.6\nstorage.gp3 = 0\n'))
    estimated, cat = machines.checked_estimate(s, None, None)
    # Two hosts at 3.6 an hour, per second (60 s at least): 0.002 a second together.
    created = {"m7g.large-1": NOW, "m7i.large-1": NOW}
    later = NOW + timedelta(seconds=400)
    assert estimate.spent(estimated, created, later, cat) == pytest.approx(0.8)
    assert estimate.would_pass(estimated, created, later, cat, 1.0, 60) is None  # 0.92 within a minute
    stop = estimate.would_pass(estimated, created, later, cat, 1.0, 130)  # 1.06 within 130 s
    assert stop is not None and "spent about 0.80" in stop and "1.06 within 130 s" in stop
    assert estimate.would_pass(estimated, created, later, cat, None, 130) is None


class FakeFleet:
    """controller.Fleet as ondemand uses it; `then` says how its run ends."""

    then = "complete"
    made: list["FakeFleet"] = []

    def __init__(self, **kwargs: Any):
        self.kwargs = kwargs
        self.stop = kwargs["stop"]
        self.stopped: str | None = None
        self.states: dict[str, Any] = {}
        self.hosts: list[Any] = []
        self.fetches: list[Path] = []
        self.closed = False
        FakeFleet.made.append(self)

    def run(self, *args: Any, **kwargs: Any) -> int:
        self.args = args
        if FakeFleet.then == "interrupt":
            raise KeyboardInterrupt
        if FakeFleet.then == "fail":
            raise RuntimeError("the fleet broke")
        if FakeFleet.then == "scratch gone":
            raise FileNotFoundError("[Errno 2] No such file or directory: '/tmp/dbarena-fleet-x/vars.json'")
        self.stopped = self.stop()
        return 1 if self.stopped else 0

    def fetch(self, hosts: list[Any], store: Path) -> None:
        assert not self.closed  # (fetched from the fleet's directory, before it is removed)
        self.fetches.append(store)

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_cloud(monkeypatch: pytest.MonkeyPatch) -> Fake:
    from dbarena.fleet import controller, inventory

    fake = Fake(created=datetime.now(timezone.utc) - timedelta(hours=10))
    monkeypatch.setattr(machines, "provider_for", lambda name, region: fake)
    monkeypatch.setattr(controller, "Fleet", FakeFleet)
    monkeypatch.setattr(inventory, "load", lambda *args: [])
    FakeFleet.made = []
    return fake


@pytest.mark.parametrize("then", ["complete", "interrupt", "fail"])
def test_the_machines_are_deleted_however_the_run_ends(tmp_path: Path, fake_cloud: Fake, then: str) -> None:
    s = study(tmp_path)
    FakeFleet.then = then
    said: list[str] = []
    if then == "complete":
        ended = ondemand.run(s, tmp_path / "s.toml", ["--quick"], tmp_path / "r.db", said.append, max_cost=None,
                             max_instances=None)
        assert ended.status == 0 and ended.stopped is None
    else:
        with pytest.raises(KeyboardInterrupt if then == "interrupt" else RuntimeError):
            ondemand.run(s, tmp_path / "s.toml", [], tmp_path / "r.db", said.append, max_cost=None,
                         max_instances=None)
        assert any("deleting what run" in line for line in said)
        # An interrupt, or a failure of the controller's, fetches what the hosts measured
        # before their machines go.
        assert [f.fetches for f in FakeFleet.made] == [[tmp_path / "r.db"]]
    assert fake_cloud.made == [] and len(fake_cloud.deleted) == 2
    assert machines.records() == []
    assert [f.closed for f in FakeFleet.made] == [True]


def test_a_run_that_would_pass_max_cost_stops_and_deletes(tmp_path: Path, fake_cloud: Fake) -> None:
    s = study(tmp_path)
    estimated, _ = machines.checked_estimate(s, None, None)
    assert estimated.total is not None
    FakeFleet.then = "complete"
    said: list[str] = []
    # Under the estimate's budget (refused otherwise), but the fake's hosts were made
    # ten hours ago: their spend is past it at the first check.
    ended = ondemand.run(s, tmp_path / "s.toml", [], tmp_path / "r.db", said.append,
                         max_cost=estimated.total + 0.01, max_instances=None)
    assert ended.stopped is not None and ended.stopped.startswith("spent about") and ended.status == 1
    assert fake_cloud.made == [] and machines.records() == []
    assert any(line.startswith("stopped at --max-cost") for line in said)


def test_max_cost_refuses_before_any_provider_is_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_provider(name: str, region: str) -> Fake:
        raise AssertionError("a provider was called")

    monkeypatch.setattr(machines, "provider_for", no_provider)
    monkeypatch.setattr(machines, "reap_orphans", no_provider)
    s = study(tmp_path)
    with pytest.raises(UsageError, match="is over --max-cost 0.01 USD: nothing was created"):
        ondemand.run(s, tmp_path / "s.toml", [], tmp_path / "r.db", print, max_cost=0.01, max_instances=None)
    with pytest.raises(UsageError, match="over --max-instances 1"):
        ondemand.check(s, None, 1)


def test_run_max_cost_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import invoke

    path = tmp_path / "s.toml"
    path.write_text(STUDY)
    code, out, err = invoke(["run", "--study", str(path), "--max-cost", "0.001", "--store", str(tmp_path / "r.db")],
                            capsys)
    assert code == 2 and err.startswith("dbarena: error: estimated ") and err.count("\n") == 1, err
    assert not (tmp_path / "r.db").exists() and machines.records() == []
    code, out, err = invoke(["run", "--quick", "--max-cost", "1", "--store", str(tmp_path / "r.db")], capsys)
    assert code == 2 and "--max-cost applies to a study with [machines]" in err
    for flags, message in ((["--label", "x"], "--label does not go with a study with [machines]"),
                           (["--keep"], "--keep does not go with a study with [machines]")):
        code, out, err = invoke(["run", "--study", str(path), *flags, "--store", str(tmp_path / "r.db")], capsys)
        assert code == 2 and message in err and machines.records() == [], err


def test_the_local_provider_prices_are_the_studys_or_zero_said_plainly(tmp_path: Path) -> None:
    s = study(tmp_path, STUDY.replace('provider = "aws"', 'provider = "local"').replace(
        'image = "ami-0123"', '[machines.prices]\ncompute."m7g.large" = 0.36\n'))
    assert s.machines is not None
    cat = catalogue.for_machines(s.machines, s.source)
    assert cat.price("compute", "m7g.large").amount == 0.36  # type: ignore[union-attr]
    assert cat.price("compute", "m7i.large").amount == 0.0  # type: ignore[union-attr]
    lines = estimate.describe(estimate.estimate(s, cat))
    zero = [line for line in lines if line.strip().startswith("counted as zero")]
    assert zero == ["  counted as zero (this machine; no price given in [machines.prices]): compute m7i.large, "
                    "storage gp3"]
    managed = STUDY.replace('provider = "aws"', 'provider = "local"') + \
        '[[machines.managed]]\nengine = "postgres"\ninstance_class = "db.m7g.large"\nstorage_gb = 20\n' \
        'storage_type = "gp3"\n'
    with pytest.raises(UsageError, match="the local provider makes hosts, not managed databases"):
        machines.checked_estimate(study(tmp_path, managed), None, None)


class FakeWithDatabase(Fake):
    """A provider that also makes the study's managed database, with a master password
    of its own making (as Aws.passwords keeps them)."""

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[str, str] = {}

    def create(self, machines: Machines, tags: Mapping[str, str], zone: str | None = None) -> list[Resource]:
        made = super().create(machines, tags, zone)
        now = datetime.now(timezone.utc)
        database = Resource(kind="database", id=f"{tags[TAG_RUN]}-postgres", name="postgres", type="db.m7g.large",
                            zone=zone, address="db.example", port=5432, engine="postgres", created=now,
                            state="available", tags=dict(tags), ready=now)
        self.passwords[database.id] = "s3cret-made-by-the-provider"
        self.made.append(database)
        return [*made, database]


def test_the_hosts_runs_get_the_managed_databases_password_as_a_user_exported_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fleet is handed PGPASSWORD explicitly (its plays send it to the hosts in a
    private file, never in an argument): the provider's password for its database,
    the user's own for the rest; this process's environment is never changed."""
    from dbarena.fleet import controller, inventory

    fake = FakeWithDatabase()
    monkeypatch.setattr(machines, "provider_for", lambda name, region: fake)
    monkeypatch.setattr(inventory, "load", lambda *args: [])
    monkeypatch.setenv("PGPASSWORD", "the user's own")
    seen: list[tuple[str | None, list[str]]] = []

    class Watching(FakeFleet):
        def run(self, *args: Any, **kwargs: Any) -> int:
            assert os.environ["PGPASSWORD"] == "the user's own"
            seen.append((self.kwargs["passwords"].get("PGPASSWORD"), list(args[3])))
            return 0

    monkeypatch.setattr(controller, "Fleet", Watching)
    s = study(tmp_path, STUDY.replace('image = "ami-0123"', 'image = "ami-0123"\n[[machines.managed]]\n'
                                      'engine = "postgres"\nversion = "16.4"\ninstance_class = "db.m7g.large"\n'
                                      'storage_gb = 20\n'))
    ended = ondemand.run(s, tmp_path / "s.toml", [], tmp_path / "r.db", lambda line: None, max_cost=None,
                         max_instances=None)
    assert ended.status == 0
    ((password, args),) = seen
    assert password == "s3cret-made-by-the-provider"
    assert "--target" in args and not any("s3cret" in a for a in args)
    assert os.environ["PGPASSWORD"] == "the user's own"


@pytest.mark.parametrize("amount", ["nan", "NaN", "inf", "-inf", "1e309", "0", "-5", "five"])
@pytest.mark.parametrize("command", ["run", "cloud up"])
def test_a_max_cost_that_no_estimate_is_over_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        amount: str, command: str) -> None:
    """nan, inf (1e309 is inf as a float): no total is over them, so the guard would
    let a study of any cost through; 0 or less refuses everything. One line, exit 2,
    nothing made."""
    from conftest import invoke

    path = tmp_path / "s.toml"
    path.write_text(STUDY)
    argv = [*command.split(), *(["--study"] if command == "run" else []), str(path), "--max-cost", amount,
            *(["--store", str(tmp_path / "r.db")] if command == "run" else [])]
    code, out, err = invoke(argv, capsys)
    assert code == 2 and err.startswith("dbarena: error: ") and err.count("\n") == 1, err
    assert "--max-cost" in err and "Traceback" not in err
    assert not (tmp_path / "r.db").exists() and machines.records() == []


@pytest.mark.parametrize("amount", [float("nan"), float("inf"), 0.0, -1.0])
def test_the_estimate_check_refuses_a_budget_nothing_is_over(tmp_path: Path, amount: float) -> None:
    s = study(tmp_path)
    with pytest.raises(UsageError, match="must be a finite amount above 0"):
        machines.checked_estimate(s, amount, None)


def test_a_study_named_relative_to_the_working_directory_reaches_the_fleet_absolute(
        tmp_path: Path, fake_cloud: Fake, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`dbarena run --study local.toml`, as docs/cloud.md writes it: the fleet's
    playbook copies the file from the controller, and Ansible looks for a relative
    source beside the playbook ("Could not find or access 'local.toml'")."""
    from conftest import invoke

    (tmp_path / "s.toml").write_text(STUDY)
    monkeypatch.chdir(tmp_path)
    FakeFleet.then = "complete"
    code, out, err = invoke(["run", "--study", "s.toml", "--store", "r.db"], capsys)
    assert code == 0, err
    _, study_arg, study_file, *_ = FakeFleet.made[0].args
    assert study_file == tmp_path / "s.toml" and study_file.is_absolute()
    assert study_arg == str(tmp_path / "s.toml")


def _tagged(fake: Fake, name: str, **tags: str) -> Resource:
    r = Resource(kind="instance", id=f"i-{name}", name=name, type="m7g.large", zone=None, address=None, port=None,
                 engine=None, created=NOW, state="running", tags={TAG_RUN: "dbarena-20260101120000-abcdef", **tags})
    fake.made.append(r)
    return r


def test_the_owner_id_is_one_per_state_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  state: Path) -> None:
    from dbarena.cloud.provider import owner_id
    from dbarena.errors import EnvironmentProblem

    first = owner_id()
    assert first == owner_id() and len(first) == 32
    assert (state / "cloud" / "owner-id").stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv("DBARENA_STATE_DIR", str(tmp_path / "other"))
    assert owner_id() != first  # another state directory (a container's): another installation
    (tmp_path / "other" / "cloud" / "owner-id").write_text("x\n")
    with pytest.raises(EnvironmentProblem, match="not an owner identity dbarena made"):
        owner_id()


def test_reap_deletes_only_what_this_installation_made_with_a_valid_expiry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: Path) -> None:
    """Another state directory's `cloud up` (same user@host, alive, unexpired), a
    production instance someone tagged dbarena-run (no expiry, no owner id), and
    another installation's expired instance are left; this installation's expired
    instance and the one of a run it no longer has are deleted."""
    from dbarena.cloud.provider import TAG_EXPIRES, TAG_OWNER, TAG_OWNER_ID, owner, owner_id, stamp

    s = study(tmp_path)
    estimated, cat = machines.checked_estimate(s, None, None)
    fake = Fake()
    monkeypatch.setenv("DBARENA_STATE_DIR", str(tmp_path / "other"))
    theirs = machines.up(s, fake, estimated, cat, lambda line: None, kept=True)
    monkeypatch.setenv("DBARENA_STATE_DIR", str(state))
    assert theirs.resources[0].tags[TAG_OWNER] == owner()  # the same user@host: not what tells them apart
    prod = _tagged(fake, "prod-db")
    old = stamp(NOW - timedelta(hours=1))
    stranger = _tagged(fake, "stranger", **{TAG_EXPIRES: old, TAG_OWNER_ID: "0" * 32})
    no_expiry = _tagged(fake, "mine-no-expiry", **{TAG_OWNER_ID: owner_id()})
    expired = _tagged(fake, "mine-expired", **{TAG_EXPIRES: old, TAG_OWNER_ID: owner_id()})
    gone = _tagged(fake, "mine-gone", **{TAG_EXPIRES: stamp(datetime.now(timezone.utc) + timedelta(hours=1)),
                                         TAG_OWNER_ID: owner_id()})
    said: list[str] = []
    assert machines.reap(fake, True, said.append) == 2
    assert sorted(fake.deleted) == sorted([expired.id, gone.id])
    left = {r.id for r in fake.made}
    assert {r.id for r in theirs.resources} <= left and {prod.id, stranger.id, no_expiry.id} <= left
    assert any(line.startswith("left 5 tagged resource(s) alone: not made by this installation") for line in said)
    # `cloud down` of a run goes by the owner id too: their run, named here, is not deleted.
    monkeypatch.setattr(machines, "provider_for", lambda name, region: fake)
    record = machines.records_dir() / f"{theirs.run}.json"
    record.write_text(theirs.record.read_text())
    said.clear()
    assert machines.down(theirs.run, said.append) == 0
    assert {r.id for r in theirs.resources} <= {r.id for r in fake.made}
    assert sum("alone: not tagged with this installation's dbarena-owner-id" in line for line in said) == 2


def test_reap_of_the_local_provider_leaves_an_instance_it_did_not_make(tmp_path: Path, state: Path) -> None:
    """An instance record in the local provider's directory with a dbarena-run tag and
    no expiry or owner id (as another tool, or a hand, could leave): listed by describe,
    never deleted."""
    import json

    from dbarena.cloud import local

    folder = local.root() / "local-0badc0de"
    folder.mkdir(parents=True)
    (folder / "instance.json").write_text(json.dumps({
        "id": "local-0badc0de", "name": "prod-db", "type": "big", "address": "127.77.1.1", "state": "running",
        "tags": {TAG_RUN: "prod"}}))
    provider = local.Local("here")
    assert [r.name for r in provider.describe()] == ["prod-db"]
    said: list[str] = []
    assert machines.reap(provider, True, said.append) == 0
    assert folder.is_dir() and "nothing to reap" in said


LOCAL_UNPRICED = """
schema = 1
name = "local-unpriced"
[sweep]
levels = [1]
duration_s = 60
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
[machines]
provider = "local"
instance_types = ["small", "large"]
"""


def test_the_local_provider_needs_no_region_and_no_prices(tmp_path: Path) -> None:
    """As docs/cloud.md writes a local study: no region, no [machines.prices]. Its hosts
    are priced at zero, and the inventory made for the fleet carries no price for them
    (the fleet takes only a positive one: it refused `dbarena_price_per_hour=0.0` after
    the instances were made)."""
    from dbarena.fleet import controller, inventory

    s = study(tmp_path, LOCAL_UNPRICED)
    assert s.machines is not None and s.machines.region == "local"
    estimated, cat = machines.checked_estimate(s, None, None)
    assert estimated.total == 0
    made = machines.up(s, Fake(), estimated, cat, lambda line: None, kept=False)
    assert "dbarena_price_per_hour" not in made.inventory.read_text()
    hosts = inventory.load(made.inventory, None, controller.ansible_command("ansible-inventory"))
    assert sorted(h.label for h in hosts) == ["large", "small"]
    assert all(h.price_per_hour is None for h in hosts)
    with pytest.raises(Exception, match="machines.region"):
        study(tmp_path, LOCAL_UNPRICED.replace('"local"', '"aws"').replace('["small", "large"]', '["m7g.large"]'))


def test_what_the_hosts_measured_is_fetched_when_the_controller_itself_fails(tmp_path: Path,
                                                                            fake_cloud: Fake) -> None:
    """The controller's own scratch directory gone mid-run (vars.json: a traceback once
    in three): the hosts' stores are fetched before their machines are deleted."""
    s = study(tmp_path)
    FakeFleet.then = "scratch gone"
    said: list[str] = []
    with pytest.raises(FileNotFoundError):
        ondemand.run(s, tmp_path / "s.toml", [], tmp_path / "r.db", said.append, max_cost=None, max_instances=None)
    assert [f.fetches for f in FakeFleet.made] == [[tmp_path / "r.db"]]
    assert any(line.startswith("failed: fetching what the hosts measured") for line in said)
    assert fake_cloud.made == [] and machines.records() == []


def test_a_play_makes_the_fleets_directory_again_if_it_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ansible.play writes its variables into the fleet's working directory: gone (the
    cause of the traceback above), it is made again rather than the run lost."""
    import shutil
    import subprocess

    from dbarena.fleet import controller

    work = tmp_path / "dbarena-fleet-x"
    work.mkdir()
    ansible = controller.Ansible(tmp_path / "inventory.json", work, forks=1, passwords={})
    ansible.plays.forking = False  # ansible-playbook as a process (the fake below), not as a fork of the plays' helper
    shutil.rmtree(work)
    seen: list[str] = []

    class Played:
        def __init__(self, args: list[str], **kwargs: Any):
            seen.append((work / "vars.yml").read_text())
            self.args, self.pid, self.returncode = args, 0, 0

        def communicate(self, timeout: float | None = None) -> tuple[str, str]:
            return '{"plays": [], "stats": {}}', ""

    monkeypatch.setattr(subprocess, "Popen", Played)
    assert ansible.play("status.yml", [], {}) == {}
    assert seen and '"dbarena_hosts": ""' in seen[0]


def test_the_local_provider_makes_sshds_privilege_separation_directory(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """As root where sshd never ran (a container): no /run/sshd, and every instance's
    sshd refused to start ("Missing privilege separation directory") after the run began."""
    from dbarena.cloud import local

    monkeypatch.setattr(local, "PRIVSEP_DIR", tmp_path / "run" / "sshd")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    local._privsep()
    assert (tmp_path / "run" / "sshd").is_dir()
    local._privsep()  # (there already: nothing to do)


def test_each_hosts_machine_is_handed_to_its_runs_as_they_begin(tmp_path: Path, fake_cloud: Fake) -> None:
    """What each host is (provider, type, zone, prices, the times to make it) goes to its
    runs as they begin (Fleet(machines=...) -> `run --machine-facts`), not written into
    the stored runs after the fact; only the time to delete it is added then."""
    s = study(tmp_path)
    FakeFleet.then = "complete"
    ondemand.run(s, tmp_path / "s.toml", [], tmp_path / "r.db", lambda line: None, max_cost=None,
                 max_instances=None)
    (fleet,) = FakeFleet.made
    machines_given = fleet.kwargs["machines"]
    assert sorted(machines_given) == ["m7g.large-1", "m7i.large-1"]  # (the study's two hosts, deleted by now)
    for name, facts in machines_given.items():
        assert facts["host"] == name and facts["provider"] == "aws" and facts["delete_s"] is None
        assert facts["instance_type"] and facts["cloud_run"] and isinstance(facts["prices"], list)


def test_a_hosts_machine_is_an_argument_of_its_own_run() -> None:
    from dbarena.fleet.controller import Fleet

    host = type("H", (), {"label": "small", "price_per_month": None, "price_per_hour": None, "currency": None})()
    args = Fleet._host_args(host, "s.toml", [], None, {"host": "small-1", "delete_s": None})  # type: ignore[arg-type]
    assert args[args.index("--machine-facts") + 1] == '{"delete_s": null, "host": "small-1"}'
    assert "--machine-facts" not in Fleet._host_args(host, "s.toml", [], None)  # type: ignore[arg-type]


@pytest.mark.parametrize("given", ["[1]", "nope", '"text"'])
def test_machine_facts_not_an_object_is_one_line(tmp_path: Path, given: str, capsys: pytest.CaptureFixture[str]
                                                 ) -> None:
    from conftest import invoke

    code, _, err = invoke(["run", "--machine-facts", given, "--store", str(tmp_path / "r.db")], capsys)
    assert code == 2 and "--machine-facts" in err and "expected a JSON object" in err and "Traceback" not in err
    assert not (tmp_path / "r.db").exists()
