"""What dbarena hands ansible-playbook reaches it as data, never as a template: a study's
[machines] values, an inventory's label and working directory, the hosts' arguments
(fleet/untemplated.py). Each test runs the real ansible-playbook, on this machine only
(a local connection); the marker a template would create must not appear."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dbarena import study as study_mod
from dbarena.cloud.aws import Aws
from dbarena.errors import EnvironmentProblem, UsageError
from dbarena.fleet import controller, untemplated
from dbarena.fleet.inventory import Host

pytestmark = pytest.mark.timeout(300)


def _lookup(marker: Path) -> str:
    return "{{ lookup('pipe', 'touch " + str(marker) + "') }}"


def test_every_string_comes_back_as_written_and_untemplated(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    values = {"dbarena_hosts": "localhost", "texts": [_lookup(marker), "café 😀 \"q\" \\ \n\t\x01 {% raw %}",
                        # What YAML would read as a boolean, a number, null or a date were it not quoted.
                        "yes", "on", "1", "0x1F", "1e3", "null", "~", "2026-01-01T00:00:00Z", ""],
              "numbers": [1, 2.5, 1e-05, -3e300, True, None], "nested": {"k": {_lookup(marker): "v"}}}
    untemplated.write(tmp_path / "vars.yml", values)
    book = tmp_path / "book.yml"
    book.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.copy:\n"
                    "        content: \"{{ {'texts': texts, 'numbers': numbers, 'nested': nested} | to_json }}\"\n"
                    f"        dest: {tmp_path / 'out.json'}\n")
    done = subprocess.run([controller.ansible_command("ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"@{tmp_path / 'vars.yml'}",
                           str(book)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists()
    back = json.loads((tmp_path / "out.json").read_text())
    assert back == {"texts": values["texts"], "numbers": values["numbers"], "nested": values["nested"]}


def test_a_fleet_hosts_label_and_working_directory_are_never_templated(tmp_path: Path) -> None:
    """An inventory's dbarena_label reaches the hosts' arguments and its dbarena_workdir
    the plays' `asked`: both were rendered by Ansible on the controller."""
    marker = tmp_path / "pwned"
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local",
                                                               "ansible_python_interpreter": sys.executable}}}}))
    work = tmp_path / "work"
    work.mkdir()
    host = Host(name="h1", label=_lookup(marker), price_per_hour=None, price_per_month=None, currency=None,
                workdir=f"{tmp_path}/{_lookup(marker)}")
    ansible = controller.Ansible(inventory, work, forks=1, passwords={})
    results = ansible.play("status.yml", [host], {"args": {"h1": ["--label", host.label]}}, timeout_s=240)
    assert not marker.exists()
    # The host was handed the directory as written, braces and all (where it found no
    # dbarena to run, and said so with that path).
    said = str(results["h1"].task("status").get("stderr"))
    assert f"{tmp_path}/{_lookup(marker)}/venv/bin/dbarena: No such file or directory" in said, said


def test_a_cloud_plays_values_are_never_templated(tmp_path: Path) -> None:
    """The study's [machines] values reach the provider's playbooks (here its region)."""
    marker = tmp_path / "pwned"
    with socket.socket() as s:  # a port nobody answers on: the play fails without a cloud
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(EnvironmentProblem):
        Aws(_lookup(marker), endpoint_url=dead)._play("aws-zones.yml", {"unused": _lookup(marker)})
    assert not marker.exists()


@pytest.mark.parametrize("key, value", [
    ("instance_types", '["{{ lookup(\'pipe\', \'id\') }}"]'),
    ("region", '"us-east-1{{ 7 * 7 }}"'),
    ("image", '"ami-{% if true %}1{% endif %}"'),
    ("key_name", '"my key"'),
    ("ssh_user", '"{{ lookup(\'pipe\', \'id\') }}"'),
    ("disk", '"gp3 {#"'),
])
def test_a_machines_value_not_shaped_as_a_providers_name_is_one_line(key: str, value: str) -> None:
    fields = {"provider": '"aws"', "region": '"us-east-1"', "instance_types": '["m7g.large"]'}
    fields[key] = value
    text = ('schema = 1\nname = "s"\n[sweep]\nlevels = [1]\nduration_s = 10\n[engines.postgres]\n'
            '[[workloads]]\nworkload = "pgbench-select-only"\n[machines]\n'
            + "".join(f"{k} = {v}\n" for k, v in fields.items()))
    with pytest.raises(UsageError) as caught:
        study_mod.parse(text, "s.toml")
    message = str(caught.value)
    assert message.startswith(f"s.toml: machines.{key}") and "is not a provider's name" in message
    assert "\n" not in message
