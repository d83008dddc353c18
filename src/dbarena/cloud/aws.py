"""AWS as a Provider: EC2 instances for hosts, RDS for managed databases, through
Ansible's amazon.aws collection (the playbooks in playbooks/aws-*.yml), driven by the
same ansible-playbook the fleet uses.

Credentials: only where the AWS SDK looks for them (AWS_ACCESS_KEY_ID and the rest of
the environment, ~/.aws profiles, an instance role); dbarena never reads, stores,
shows or passes them. DBARENA_AWS_ENDPOINT_URL points the modules at another endpoint
(the tests' moto server). A managed database's master password is made here, handed
to the playbook in a private vars file (never in an argument), and kept in a private
file of the run's record for the clients.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from dbarena.cloud.provider import TAG_HOST, TAG_RUN, CapacityError, Resource, utc
from dbarena.errors import EnvironmentProblem
from dbarena.fleet import playforks, untemplated
from dbarena.fleet.controller import ansible_command
from dbarena.masking import masked
from dbarena.study.model import Machines

ENDPOINT_ENV = "DBARENA_AWS_ENDPOINT_URL"
# RDS's engine names for dbarena's.
RDS_ENGINES = {"postgres": "postgres", "mysql": "mysql"}
MASTER_USER = "dbarena"
# A play that has not ended in this long has hung (RDS creation takes up to ~20 min).
PLAY_TIMEOUT_S = 3600
# The error codes of a zone without room for what was asked: another zone of the region
# may have it (EC2's and RDS's API references, "Common causes" of each).
CAPACITY_CODES = ("InsufficientInstanceCapacity", "InsufficientHostCapacity", "InsufficientReservedInstanceCapacity",
                  "InsufficientDBInstanceCapacity", "InsufficientStorageClusterCapacity", "Unsupported")


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """A private working directory for one playbook (its variables, which may hold a
    master password, and its output), in TMPDIR. Recorded in the state directory before
    it is made (lifecycle/state.py), so that a `cloud up` killed with SIGKILL leaves
    nothing there: its watchdog, or the next command, removes it; removed here
    otherwise, however the play ends."""
    from dbarena.lifecycle import state

    folder = Path(tempfile.gettempdir()) / f"dbarena-cloud-{secrets.token_hex(8)}"
    record = state.scratch(folder)
    try:
        state.make_dir(folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            record.remove()


class Aws:
    name = "aws"

    def __init__(self, region: str, endpoint_url: str | None = None):
        self.region = region
        self.endpoint_url = endpoint_url if endpoint_url is not None else os.environ.get(ENDPOINT_ENV, "")
        self.passwords: dict[str, str] = {}  # database identifier -> its master password, made here
        self.plays: playforks.PlayForks | None = None  # (made at the first play)

    def _play(self, book: str, variables: Mapping[str, Any]) -> Any:
        """Run one playbook with `variables` (in a private file), return what it wrote
        to `out`; a one-line EnvironmentProblem with the failed task's message."""
        with _scratch() as folder:
            out = folder / "out.json"
            vars_file = folder / "vars.yml"
            # As data Ansible never templates: the study's [machines] values (untemplated.py).
            untemplated.write(vars_file, {"region": self.region, "endpoint_url": self.endpoint_url,
                                          "out": str(out), **variables})
            env = dict(os.environ)
            env.update({"ANSIBLE_STDOUT_CALLBACK": "dbarena_json", "ANSIBLE_NOCOLOR": "1",
                        "ANSIBLE_RETRY_FILES_ENABLED": "False", "ANSIBLE_DEPRECATION_WARNINGS": "False",
                        "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"})
            with resources.as_file(resources.files("dbarena.cloud") / "playbooks" / book) as path, \
                    resources.as_file(resources.files("dbarena.fleet") / "callbacks") as callbacks:
                env["ANSIBLE_CALLBACK_PLUGINS"] = str(callbacks)
                # The modules run in this Python, where boto3 is (the venv dbarena runs in).
                args = [ansible_command("ansible-playbook"), "-i", "localhost,", "-c", "local",
                        "-e", f"ansible_python_interpreter={os.environ.get('DBARENA_ANSIBLE_PYTHON', _python())}",
                        "-e", f"@{vars_file}", str(path)]
                code, stdout, stderr = self._run(args, env, folder)
            if code != 0 or not out.exists():
                raise EnvironmentProblem(f"aws: {book.removesuffix('.yml')} failed: {self._why(stdout, stderr)}")
            return json.loads(out.read_text())

    def _run(self, args: list[str], env: dict[str, str], folder: Path) -> tuple[int, str, str]:
        """ansible-playbook's exit code and output (fleet/playforks.py: Ansible imported
        once for every play of this command where it can be). Ctrl-C or the timeout: the
        play stops with us at once, with all it started, and we go on unwinding (the
        caller deletes what was made)."""
        if self.plays is None:
            self.plays = playforks.for_playbook(args[0])
        played = self.plays.play(args, env, folder=folder, timeout_s=PLAY_TIMEOUT_S, let_end_s=0)
        if played is None:
            raise EnvironmentProblem(f"aws: {Path(args[-1]).stem} did not end within {PLAY_TIMEOUT_S} s")
        return played.returncode, played.stdout, played.stderr

    def _why(self, stdout: str, stderr: str) -> str:
        """The failed task's message, one line, passwords masked."""
        try:
            report = json.loads(stdout[stdout.index("{"):])
        except ValueError:
            lines = stderr.strip().splitlines() or ["no output"]
            return masked(next((line for line in lines if "ERROR" in line), lines[-1]).strip())
        for play in report.get("plays", []):
            for task in play.get("tasks", []):
                for result in task.get("hosts", {}).values():
                    if result.get("failed") or result.get("unreachable"):
                        msg = result.get("msg") or next(
                            (r.get("msg") for r in result.get("results", []) if r.get("failed")), "failed")
                        text = " ".join(str(msg).split())
                        for password in self.passwords.values():
                            text = text.replace(password, "***")
                        return f"{task['task']['name']}: {masked(text)}"
        return "failed"

    def zones(self) -> list[str]:
        found = self._play("aws-zones.yml", {})
        return [str(z) for z in found.get("zones", [])]

    def host_vars(self, host: Resource, machines: Machines) -> dict[str, object]:
        # The image's login is [machines] ssh_user (in the inventory already); the key
        # and Python are the user's own SSH configuration and the image's python3.
        return {"ansible_python_interpreter": "/usr/bin/python3"}

    def create(self, machines: Machines, tags: Mapping[str, str], zone: str | None = None) -> list[Resource]:
        if machines.instance_types and machines.image is None:
            raise EnvironmentProblem("aws: [machines] image is missing: the AMI every host starts from")
        run = tags[TAG_RUN]
        databases = []
        for m in machines.managed:
            identifier = f"{run}-{m.engine}"[:63]
            self.passwords[identifier] = secrets.token_urlsafe(24)
            databases.append({"identifier": identifier, "name": m.engine, "engine": RDS_ENGINES[m.engine],
                              "version": m.version, "instance_class": m.instance_class, "storage_gb": m.storage_gb,
                              "storage_type": m.storage_type, "iops": m.iops, "ha": m.ha, "user": MASTER_USER,
                              "password": self.passwords[identifier]})
        try:
            made = self._play("aws-up.yml", {
                "tags": dict(tags), "hosts": [{"name": n, "type": t} for n, t in machines.hosts],
                "image": machines.image, "key_name": machines.key_name, "disk": machines.disk,
                "disk_gb": machines.disk_gb, "disk_iops": machines.disk_iops, "databases": databases,
                "zone": zone or ""})
        except EnvironmentProblem as exc:
            if any(code in str(exc) for code in CAPACITY_CODES):
                raise CapacityError(str(exc), zone) from None
            raise
        # (What the region holds once they are made, listed by the same play.)
        return [r for r in _resources(made.get("found", {})) if r.run == run]

    def describe(self) -> list[Resource]:
        return _resources(self._play("aws-describe.yml", {}))

    def delete(self, resources: Sequence[Resource]) -> None:
        if not resources:
            return
        self._play("aws-delete.yml", {"instance_ids": [r.id for r in resources if r.kind == "instance"],
                                      "database_ids": [r.id for r in resources if r.kind == "database"]})


def _resources(found: Mapping[str, Any]) -> list[Resource]:
    """The instances and databases a play listed (aws-list.yml)."""
    return [*map(_instance, found.get("hosts", [])), *map(_database, found.get("databases", []))]


def _python() -> str:
    import sys

    return sys.executable


def _tags(raw: Any) -> dict[str, str]:
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    if isinstance(raw, list):  # the API's [{"Key": ..., "Value": ...}]
        return {str(t.get("Key", t.get("key"))): str(t.get("Value", t.get("value"))) for t in raw}
    return {}


def _instance(raw: Mapping[str, Any]) -> Resource:
    tags = _tags(raw.get("tags"))
    launched = raw.get("launch_time")
    return Resource(kind="instance", id=str(raw["instance_id"]), name=tags.get(TAG_HOST, str(raw["instance_id"])),
                    type=str(raw.get("instance_type", "")),
                    zone=(raw.get("placement") or {}).get("availability_zone"),
                    # A public address where there is one, else the private one (a VPN, the same VPC).
                    address=raw.get("public_ip_address") or raw.get("private_ip_address"), port=None, engine=None,
                    created=utc(str(launched)) if launched else None,
                    state=str((raw.get("state") or {}).get("name", "")), tags=tags)


def _database(raw: Mapping[str, Any]) -> Resource:
    tags = _tags(raw.get("tags"))
    endpoint = raw.get("endpoint") or {}
    created = raw.get("instance_create_time")
    engine = next((k for k, v in RDS_ENGINES.items() if v == raw.get("engine")), raw.get("engine"))
    return Resource(kind="database", id=str(raw["db_instance_identifier"]), name=tags.get(TAG_HOST, str(engine)),
                    type=str(raw.get("db_instance_class", "")), zone=raw.get("availability_zone"),
                    address=endpoint.get("address"), port=endpoint.get("port"), engine=engine,
                    created=utc(str(created)) if created else None, state=str(raw.get("db_instance_status", "")),
                    tags=tags)
