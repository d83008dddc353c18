"""The fleet hosts' installer (fleet/playbooks/venv_install.py, run there by python3):
which dependencies a wheel needs, and the name of the environment that holds them,
shared by every working directory of a host whose wheel needs just those. The install
itself (venv, pip) runs in the fleet's end-to-end tests, on real "hosts"."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path

import dbarena.fleet

SCRIPT = Path(dbarena.fleet.__file__).parent / "playbooks" / "venv_install.py"
spec = importlib.util.spec_from_file_location("venv_install", SCRIPT)
assert spec is not None and spec.loader is not None
venv_install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(venv_install)

METADATA = """Metadata-Version: 2.1
Name: dbarena
Version: 0.1.0
Requires-Dist: scipy>=1.10
Requires-Dist: click>=8.1
Requires-Dist: psycopg[binary]>=3.1.18
Requires-Dist: ansible-core>=2.15; extra == "fleet"
Requires-Dist: tomli>=2; python_version < "3.11"
Provides-Extra: fleet

Requires-Dist: this is the long description, not a requirement
"""


def _wheel(path: Path, metadata: str = METADATA) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("dbarena-0.1.0.dist-info/METADATA", metadata)
        archive.writestr("dbarena/__init__.py", "")
    return path


def test_a_wheels_requirements_are_its_own_not_its_extras(tmp_path):
    assert venv_install.requirements(str(_wheel(tmp_path / "dbarena-0.1.0-py3-none-any.whl"))) == [
        "click>=8.1", "psycopg[binary]>=3.1.18", "scipy>=1.10", 'tomli>=2; python_version < "3.11"']


def test_the_shared_environment_is_named_by_what_it_holds_and_for_which_python():
    needs = ["click>=8.1", "scipy>=1.10"]
    name = venv_install.shared_name(needs)
    assert name.startswith("py%d.%d-" % sys.version_info[:2])
    assert venv_install.shared_name(list(needs)) == name            # a new wheel, the same needs: shared
    assert venv_install.shared_name([*needs, "numpy>=2"]) != name    # other needs: another environment
    assert venv_install.shared_name(["click>=8.2", "scipy>=1.10"]) != name


def test_a_wheel_without_metadata_is_one_line(tmp_path):
    broken = tmp_path / "dbarena-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(broken, "w") as archive:
        archive.writestr("dbarena/__init__.py", "")
    workdir = tmp_path / "w"
    (workdir / "wheels").mkdir(parents=True)
    broken.rename(workdir / "wheels" / broken.name)
    assert venv_install.main(["venv_install.py", str(workdir), str(tmp_path / "deps"), broken.name, "0" * 64]) == 1
