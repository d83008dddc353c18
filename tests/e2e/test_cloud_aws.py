"""`dbarena cloud` against a local AWS API: moto in server mode, driven through the
real amazon.aws Ansible modules (DBARENA_AWS_ENDPOINT_URL points them at it) and read
back with boto3, as a second opinion. No test reaches a real cloud (docs/cloud.md)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_env, dbarena, error_line

boto3 = pytest.importorskip("boto3")
# fleet: driven by Ansible, as the fleet's tests are, and mostly its waits: `make test` runs
# them beside the other tests, not in their session (pyproject's markers).
pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.timeout(600)]

REGION = "us-east-1"
STUDY = """
schema = 1
name = "graviton"
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
image = "ami-12c6146b"
disk_gb = 20
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory):
    """A moto server of our own on a free port; stopped at the end."""
    moto_server = Path(sys.executable).parent / "moto_server"
    if not moto_server.exists():
        pytest.skip("moto[server] is not installed (the test extra installs it)")
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(moto_server), "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=out,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield url
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


@pytest.fixture
def env(moto: str, tmp_path: Path) -> dict[str, str]:
    # moto takes any credentials; these are its documented test values, in the
    # environment where the AWS SDK looks for them (never in an argument).
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return cli_env(tmp_path, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                   AWS_DEFAULT_REGION=REGION, DBARENA_AWS_ENDPOINT_URL=moto, DBARENA_STATE_DIR=str(state),
                   PYTHONPATH=str(Path(__file__).parents[2] / "src"))


def ec2(moto: str):
    return boto3.client("ec2", region_name=REGION, endpoint_url=moto, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def live(moto: str, run: str | None = None) -> dict[str, dict[str, str]]:
    """instance id -> its tags, for the instances not terminated (of `run`, if given)."""
    found = {}
    for reservation in ec2(moto).describe_instances()["Reservations"]:
        for i in reservation["Instances"]:
            tags = {t["Key"]: t["Value"] for t in i.get("Tags", [])}
            if i["State"]["Name"] not in ("terminated", "shutting-down") and "dbarena-run" in tags \
                    and (run is None or tags["dbarena-run"] == run):
                found[i["InstanceId"]] = {**tags, "type": i["InstanceType"]}
    return found


def _run_of(stdout: str) -> str:
    line = next(line for line in stdout.splitlines() if line.startswith("run dbarena-"))
    return line.split()[1].rstrip(":")


def test_up_creates_tagged_instances_and_down_deletes_them(moto: str, env: dict[str, str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    made = dbarena("cloud", "up", str(study), "--max-cost", "5", env=env)
    assert made.returncode == 0, made.stderr
    run = _run_of(made.stdout)
    instances = live(moto, run)
    assert sorted(t["type"] for t in instances.values()) == ["m7g.large", "m7i.large"]
    for tags in instances.values():
        assert tags["dbarena-owner"] and tags["dbarena-expires"].endswith("Z")
        assert tags["dbarena-host"] == f"{tags['type']}-1"
    inventory = Path(made.stdout.split("inventory ")[1].split()[0])
    text = inventory.read_text()
    assert '"dbarena_label": "m7g.large"' in text and '"dbarena_price_per_hour"' in text
    assert "testing" not in made.stdout + made.stderr + text  # no credential shown or stored
    gone = dbarena("cloud", "down", run, env=env)
    assert gone.returncode == 0, gone.stderr
    assert "2 resource(s) deleted" in gone.stdout
    assert live(moto, run) == {}
    assert not inventory.exists()


def test_max_cost_refuses_before_any_cloud_call(moto: str, env: dict[str, str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    before = live(moto)
    refused = dbarena("cloud", "up", str(study), "--max-cost", "0.001", env=env)
    assert refused.returncode == 2
    assert "is over --max-cost 0.001 USD: nothing was created" in error_line(refused.stderr)
    refused = dbarena("cloud", "up", str(study), "--max-instances", "1", env=env)
    assert refused.returncode == 2 and "over --max-instances 1" in refused.stderr
    assert live(moto) == before


def test_reap_lists_first_then_deletes_the_expired(moto: str, env: dict[str, str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY.replace('disk_gb = 20', 'disk_gb = 20\nlifetime = "1s"'))
    made = dbarena("cloud", "up", str(study), env=env)
    assert made.returncode == 0, made.stderr
    run = _run_of(made.stdout)
    time.sleep(1.5)
    listed = dbarena("cloud", "reap", "--region", REGION, env=env)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count(f"would delete instance") >= 2 and "expired at" in listed.stdout
    assert "nothing deleted (--yes deletes them)" in listed.stdout
    assert len(live(moto, run)) == 2  # listed, not deleted
    reaped = dbarena("cloud", "reap", "--region", REGION, "--yes", env=env)
    assert reaped.returncode == 0, reaped.stderr
    assert live(moto, run) == {}
    again = dbarena("cloud", "reap", "--region", REGION, env=env)
    assert "nothing to reap" in again.stdout


def test_reap_leaves_what_another_installation_made_and_what_has_no_expiry(
        moto: str, env: dict[str, str], tmp_path: Path) -> None:
    """Another state directory of the same user and host (its `cloud up`, alive and
    unexpired) and an instance someone tagged dbarena-run by hand (prod-db: no expiry,
    no owner id): `cloud reap --yes` lists neither and deletes neither."""
    other = {**env, "DBARENA_STATE_DIR": str(tmp_path / "other")}
    (tmp_path / "other").mkdir(mode=0o700)
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    made = dbarena("cloud", "up", str(study), env=other)
    assert made.returncode == 0, made.stderr
    theirs = _run_of(made.stdout)
    prod = ec2(moto).run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="m7g.large",
                                   TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                       {"Key": "Name", "Value": "prod-db"},
                                       {"Key": "dbarena-run", "Value": "prod"}]}])["Instances"][0]["InstanceId"]
    try:
        reaped = dbarena("cloud", "reap", "--region", REGION, "--yes", env=env)
        assert reaped.returncode == 0, reaped.stderr
        assert theirs not in reaped.stdout and prod not in reaped.stdout
        assert "tagged resource(s) alone: not made by this installation" in reaped.stdout
        assert len(live(moto, theirs)) == 2 and prod in live(moto, "prod")
    finally:
        ec2(moto).terminate_instances(InstanceIds=[prod])
        assert dbarena("cloud", "down", theirs, env=other).returncode == 0
    assert live(moto, theirs) == {}


CONTROLLER = """
import sys, time
from dbarena import study as study_mod
from dbarena.cloud import machines
s = study_mod.load(sys.argv[1])
estimated, cat = machines.checked_estimate(s, None, None)
provider = machines.provider_for("aws", "us-east-1")
made = machines.up(s, provider, estimated, cat, print, kept=False)  # a run's own, as `run --study` holds them
print("made", made.run, flush=True)
time.sleep(600)
"""


def test_a_sigkilled_controllers_resources_are_reaped_by_the_next_command(
        moto: str, env: dict[str, str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLER, str(study)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("made "):
                run = line.split()[1]
                break
        else:
            pytest.fail(f"the controller made nothing: {proc.stderr.read() if proc.stderr else ''}")
        assert len(live(moto, run)) == 2
    finally:
        proc.kill()  # SIGKILL: no teardown of its own
        proc.communicate()
    # The next command, whatever it is (here one that only lists studies), deletes what
    # the dead controller made, at its start.
    after = dbarena("study", "list", env=env)
    assert after.returncode == 0, after.stderr
    assert f"dbarena: run {run}'s controller (process {proc.pid}) is gone: deleting what it made" in after.stderr
    assert live(moto, run) == {}


def test_sigkill_mid_provision_leaves_nothing_after_reap(moto: str, env: dict[str, str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLER, str(study)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("creating "):
                run = line.split("of run ")[1].split()[0]
                break
        deadline = time.monotonic() + 120
        while not live(moto, run) and time.monotonic() < deadline:  # the first instance made
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.communicate()
    time.sleep(1)  # an ansible-playbook of the killed controller's may finish a call in flight
    after = dbarena("cloud", "reap", "--region", REGION, env=env)
    assert after.returncode == 0, after.stderr
    assert live(moto, run) == {}


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT],
                         ids=["SIGKILL", "SIGTERM", "SIGINT"])
def test_a_killed_cloud_up_leaves_nothing_in_tmpdir(moto: str, env: dict[str, str], tmp_path: Path,
                                                    signum: int) -> None:
    """`cloud up` killed while its creation play runs (its scratch directory, holding the
    play's variables, exists then): SIGTERM and SIGINT delete what it made and remove it;
    after a SIGKILL, its watchdog or the next command does. Nothing of it is left in
    TMPDIR, and nothing running."""
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", "cloud", "up", str(study)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("creating "):
                run = line.split("of run ")[1].split()[0]
                break
        else:
            pytest.fail(f"cloud up made nothing: {proc.stderr.read() if proc.stderr else ''}")
        deadline = time.monotonic() + 120
        while not (live(moto, run) and list(tmp_path.glob("dbarena-cloud-*"))) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(tmp_path.glob("dbarena-cloud-*")), "no play's scratch directory seen"
    finally:
        proc.send_signal(signum)
        proc.communicate(timeout=120)
    if signum == signal.SIGKILL:
        time.sleep(1)  # an ansible-playbook of the killed controller's may finish a call in flight
        after = dbarena("cloud", "reap", "--region", REGION, env=env)
        assert after.returncode == 0, after.stderr
    else:
        assert proc.returncode != 0
    deadline = time.monotonic() + 30
    while list(tmp_path.glob("dbarena-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(tmp_path.glob("dbarena-*")) == []
    assert live(moto, run) == {}


def test_the_zones_of_the_region_and_a_creation_in_one(moto: str, env: dict[str, str], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a creation refused for capacity is tried again (moto raises no capacity
    error: the retry itself is tests/unit/test_cloud_ondemand.py's, with a fake provider)."""
    from dbarena import study as study_mod
    from dbarena.cloud.aws import Aws
    from dbarena.cloud.provider import TAG_RUN

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "DBARENA_STATE_DIR"):
        monkeypatch.setenv(key, env[key])
    aws = Aws(REGION, endpoint_url=moto)
    zones = aws.zones()
    assert zones == sorted(zones) and f"{REGION}a" in zones and f"{REGION}b" in zones
    study = tmp_path / "s.toml"
    study.write_text(STUDY.replace('["m7g.large", "m7i.large"]', '["m7i.large"]'))
    machines = study_mod.load(str(study)).machines
    assert machines is not None
    made = aws.create(machines, {TAG_RUN: "dbarena-zones-test"}, zone=zones[1])
    try:
        assert [(r.name, r.zone) for r in made] == [("m7i.large-1", zones[1])]
    finally:
        aws.delete(made)
    assert live(moto, "dbarena-zones-test") == {}
