"""`dbarena cloud` with managed databases ([[machines.managed]]) against a local AWS API:
moto in server mode, driven through the real amazon.aws Ansible modules and read back
with boto3, as tests/e2e/test_cloud_aws.py does for the hosts. A module of its own so that
`make test`'s fleet part (pytest-xdist, a worker per module) runs the two beside each
other: together they were one worker's 13 minutes. No test reaches a real cloud."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import dbarena
from test_cloud_aws import CONTROLLER, REGION, _run_of, env, live, moto  # noqa: F401 (fixtures: moto, env)

boto3 = pytest.importorskip("boto3")
pytestmark = [pytest.mark.e2e, pytest.mark.fleet, pytest.mark.timeout(600)]


# A managed database as machines.py models it (engine, version, instance class, storage
# size and type, IOPS, high availability), with the one host that loads it.
MANAGED = {
    "postgres": """
schema = 1
name = "rds-postgres"
[sweep]
levels = [1, 2]
duration_s = 60
[engines.postgres]
[[workloads]]
workload = "pgbench-select-only"
[machines]
provider = "aws"
region = "us-east-1"
instance_types = ["m7g.large"]
image = "ami-12c6146b"
disk_gb = 20
[[machines.managed]]
engine = "postgres"
version = "16.4"
instance_class = "db.m7g.large"
storage_gb = 100
storage_type = "io1"
iops = 3000
ha = true
""",
    "mysql": """
schema = 1
name = "rds-mysql"
[sweep]
levels = [1, 2]
duration_s = 60
[engines.mysql]
[[workloads]]
workload = "sysbench-read-only"
[machines]
provider = "aws"
region = "us-east-1"
instance_types = ["m7i.large"]
image = "ami-12c6146b"
disk_gb = 20
[[machines.managed]]
engine = "mysql"
version = "8.0.35"
instance_class = "db.m6g.large"
storage_gb = 50
storage_type = "gp3"
ha = false
""",
}
# What each study asks of its database, as RDS's DescribeDBInstances says it back.
ASKED = {
    "postgres": {"Engine": "postgres", "EngineVersion": "16.4", "DBInstanceClass": "db.m7g.large",
                 "AllocatedStorage": 100, "StorageType": "io1", "Iops": 3000, "MultiAZ": True},
    "mysql": {"Engine": "mysql", "EngineVersion": "8.0.35", "DBInstanceClass": "db.m6g.large",
              "AllocatedStorage": 50, "StorageType": "gp3", "MultiAZ": False},
}


def rds(moto: str):
    return boto3.client("rds", region_name=REGION, endpoint_url=moto, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


def databases(moto: str, run: str | None = None) -> dict[str, dict]:
    """RDS identifier -> its description (tags as a dict), for dbarena's databases that
    are not being deleted (of `run`, if given)."""
    found = {}
    for d in rds(moto).describe_db_instances()["DBInstances"]:
        tags = {t["Key"]: t["Value"] for t in d.get("TagList", [])}
        if d["DBInstanceStatus"] != "deleting" and "dbarena-run" in tags \
                and (run is None or tags["dbarena-run"] == run):
            found[d["DBInstanceIdentifier"]] = {**d, "Tags": tags}
    return found


def _processes_argv() -> set[str]:
    """Every process's command line now (what `ps` shows any user)."""
    out = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            out.add(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            pass
    return out


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_up_creates_a_tagged_managed_database_and_down_deletes_it(
        moto: str, env: dict[str, str], tmp_path: Path, engine: str) -> None:
    study = tmp_path / "s.toml"
    study.write_text(MANAGED[engine])
    up = subprocess.Popen([sys.executable, "-m", "dbarena", "cloud", "up", str(study), "--max-cost", "50"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    argv: set[str] = set()
    while up.poll() is None:  # every command line while it provisions: the password must be in none
        argv |= _processes_argv()
        time.sleep(0.05)
    stdout, stderr = up.communicate()
    assert up.returncode == 0, stderr
    run = _run_of(stdout)
    made = databases(moto, run)
    assert len(made) == 1
    (identifier, db), = made.items()
    assert identifier == f"{run}-{engine}"
    assert {k: db.get(k) for k in ASKED[engine]} == ASKED[engine]
    assert db["DBInstanceStatus"] == "available"  # cloud up returned once it was (the module's wait)
    assert db["Tags"]["dbarena-owner"] and db["Tags"]["dbarena-expires"].endswith("Z")
    assert db["Tags"]["dbarena-host"] == engine and db["MasterUsername"] == "dbarena"
    assert len(live(moto, run)) == 1  # and its host
    address, port = db["Endpoint"]["Address"], db["Endpoint"]["Port"]
    scheme, name = ("postgresql", "postgres") if engine == "postgres" else ("mysql", "mysql")
    url = f"{scheme}://dbarena@{address}:{port}/{name}"
    assert f"target of {engine}: {url}\n" in stdout
    # The password: in one private file the clients read, and nowhere else.
    secret = Path(stdout.split(f"password of {engine}'s master user: in ")[1].split()[0])
    assert secret.stat().st_mode & 0o077 == 0
    text = secret.read_text()
    if engine == "postgres":
        assert text.startswith(f"{address}:{port}:*:dbarena:")
        password = text.strip().split(":", 4)[4]
    else:
        assert f"user=dbarena\n" in text and f"host={address}\n" in text
        password = text.split('password="')[1].split('"')[0]
    assert len(password) >= 24
    assert all(password not in line for line in argv) and len(argv) > 1
    assert password not in stdout + stderr
    for path in [*tmp_path.rglob("*"), *Path(env["DBARENA_STATE_DIR"]).rglob("*")]:
        if path.is_file() and path != secret and path.suffix != ".log":
            assert password not in path.read_text(errors="replace"), path
        if path.is_file():
            assert path.stat().st_mode & 0o077 == 0 or password not in path.read_text(errors="replace"), path
    gone = dbarena("cloud", "down", run, env=env)
    assert gone.returncode == 0, gone.stderr
    assert f"deleting database {identifier} ({engine}, {ASKED[engine]['DBInstanceClass']}, available)" in gone.stdout
    assert "2 resource(s) deleted" in gone.stdout
    assert databases(moto, run) == {} and live(moto, run) == {}
    assert not secret.exists()


def test_reap_lists_then_deletes_an_expired_managed_database(moto: str, env: dict[str, str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(MANAGED["postgres"].replace("disk_gb = 20", 'disk_gb = 20\nlifetime = "1s"'))
    made = dbarena("cloud", "up", str(study), env=env)
    assert made.returncode == 0, made.stderr
    run = _run_of(made.stdout)
    time.sleep(1.5)
    listed = dbarena("cloud", "reap", "--region", REGION, env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"would delete database {run}-postgres (postgres, db.m7g.large, available) of run {run}" in listed.stdout
    assert "expired at" in listed.stdout and "nothing deleted (--yes deletes them)" in listed.stdout
    assert list(databases(moto, run)) == [f"{run}-postgres"]  # listed, not deleted
    reaped = dbarena("cloud", "reap", "--region", REGION, "--yes", env=env)
    assert reaped.returncode == 0, reaped.stderr
    assert f"deleting database {run}-postgres" in reaped.stdout
    assert databases(moto, run) == {} and live(moto, run) == {}
    assert not list((Path(env["DBARENA_STATE_DIR"]) / "cloud").glob(f"{run}.*"))  # its record and password file


def test_sigkill_mid_provision_of_a_managed_database_leaves_nothing_after_reap(
        moto: str, env: dict[str, str], tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(MANAGED["postgres"])
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLER, str(study)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    run = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("creating "):
                run = line.split("of run ")[1].split()[0]
                break
        assert run is not None
        deadline = time.monotonic() + 120
        # Killed once the database exists, before the playbook returns (its host is made first).
        while not databases(moto, run) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert databases(moto, run), "the controller made no database"
    finally:
        proc.kill()
        proc.communicate()
    time.sleep(1)  # an ansible-playbook of the killed controller's may finish a call in flight
    after = dbarena("cloud", "reap", "--region", REGION, env=env)
    assert after.returncode == 0, after.stderr
    assert databases(moto, run) == {} and live(moto, run) == {}
    assert not any(d["DBInstanceIdentifier"].startswith(run) for d in rds(moto).describe_db_instances()["DBInstances"])
