"""What `dbarena fleet` takes from an Ansible inventory, checked before anything starts:
labels, prices, working directories, --limit; bad input is one line and exit 2."""

from __future__ import annotations

import subprocess

import pytest

from dbarena.errors import UsageError
from dbarena.fleet import controller, inventory
from dbarena.fleet.progress import ProgressFile
from dbarena.model import PointSpec
from dbarena import study as study_mod

import inprocess

LISTING = {
    "_meta": {"hostvars": {
        "c7g": {"ansible_host": "10.0.0.5", "dbarena_price_per_hour": 0.58},
        "m6i": {"ansible_host": "10.0.0.6", "dbarena_price_per_month": "420", "dbarena_currency": "EUR"},
        "old": {"ansible_host": "10.0.0.7", "dbarena_label": "legacy", "dbarena_workdir": "/srv/bench"},
    }},
    "all": {"children": ["ungrouped", "arm", "x86"]},
    "arm": {"hosts": ["c7g"]},
    "x86": {"hosts": ["m6i", "old"]},
}


def test_hosts_take_their_label_price_and_workdir_from_host_vars():
    hosts = {h.name: h for h in inventory.read(LISTING, None)}
    assert set(hosts) == {"c7g", "m6i", "old"}
    assert (hosts["c7g"].label, hosts["c7g"].price_per_hour, hosts["c7g"].currency) == ("c7g", 0.58, "USD")
    assert hosts["m6i"].price_per_month == 420 and hosts["m6i"].price_per_hour == pytest.approx(420 / 730)
    assert hosts["m6i"].currency == "EUR"
    assert (hosts["old"].label, hosts["old"].workdir, hosts["old"].price_per_hour) == ("legacy", "/srv/bench", None)
    # In the login user's home on the host (expanded there), not in a world-writable /var/tmp.
    assert hosts["c7g"].workdir == "~/.dbarena-fleet/c7g"


def test_the_workdir_defaults_per_inventory_host_so_hosts_on_one_machine_never_share_one():
    """Two inventory hosts that are one machine (two ports, two addresses): each its own
    directory under the base; an explicit dbarena_workdir wins."""
    listing = {"_meta": {"hostvars": {
        "db-a": {"ansible_host": "10.0.0.5", "ansible_port": 22},
        "db-b": {"ansible_host": "10.0.0.5", "ansible_port": 2222},
        "db-c": {"ansible_host": "10.0.0.5", "dbarena_workdir_base": "/srv/bench/"},
        "db-d": {"ansible_host": "10.0.0.5", "dbarena_workdir_base": "/srv/bench", "dbarena_workdir": "/opt/d"},
        "10.0.0.9:2200": {},
    }}, "all": {"hosts": ["db-a", "db-b", "db-c", "db-d", "10.0.0.9:2200"]}}
    workdirs = {h.name: h.workdir for h in inventory.read(listing, None)}
    assert workdirs == {"db-a": "~/.dbarena-fleet/db-a", "db-b": "~/.dbarena-fleet/db-b",
                        "db-c": "/srv/bench/db-c", "db-d": "/opt/d",
                        "10.0.0.9:2200": "~/.dbarena-fleet/10.0.0.9_2200"}
    assert inventory.default_workdir("../etc") == "~/.dbarena-fleet/_etc"
    assert inventory.default_workdir("x", "/var/tmp/dbarena-fleet") == "/var/tmp/dbarena-fleet/x"
    # The dependencies the working directories share: beside them under the base (an
    # explicit dbarena_workdir too), where no working directory can be (no name starts
    # with a dot: default_workdir), unless dbarena_deps_dir says where.
    deps = {h.name: h.deps for h in inventory.read(listing, None)}
    assert deps == {"db-a": "~/.dbarena-fleet/.deps", "db-b": "~/.dbarena-fleet/.deps", "db-c": "/srv/bench/.deps",
                    "db-d": "/srv/bench/.deps", "10.0.0.9:2200": "~/.dbarena-fleet/.deps"}
    assert inventory.default_workdir(".deps") == "~/.dbarena-fleet/deps"
    listing["_meta"]["hostvars"]["db-a"]["dbarena_deps_dir"] = "/srv/shared-deps"
    assert inventory.read(listing, "db-a")[0].deps == "/srv/shared-deps"


def test_limit_takes_names_groups_and_patterns():
    assert [h.name for h in inventory.read(LISTING, "arm")] == ["c7g"]
    assert [h.name for h in inventory.read(LISTING, "x86,c7g")] == ["m6i", "old", "c7g"]
    assert [h.name for h in inventory.read(LISTING, "m*")] == ["m6i"]
    # Each host knows its groups (a --together run's server is the one in [server]).
    assert {h.name: h.groups for h in inventory.read(LISTING, None)} == {"c7g": ("arm",), "m6i": ("x86",),
                                                                         "old": ("x86",)}


@pytest.mark.parametrize("limit, message", [
    ("nosuch", "--limit 'nosuch': no such host or group"),
])
def test_an_unknown_limit_is_refused(limit, message):
    with pytest.raises(UsageError, match=message):
        inventory.read(LISTING, limit)


@pytest.mark.parametrize("hostvars, message", [
    ({"dbarena_price_per_hour": "cheap"}, "dbarena_price_per_hour='cheap' is not a number"),
    ({"dbarena_price_per_month": -3}, "must be positive"),
    ({"dbarena_price_per_hour": 1, "dbarena_price_per_month": 700}, "not both"),
    ({"dbarena_workdir": "relative/dir"}, "must be an absolute path or one under ~/"),
    ({"dbarena_workdir": "~other/bench"}, "must be an absolute path or one under ~/"),
    ({"dbarena_workdir": "/srv/../etc"}, "may not hold '..'"),
    ({"dbarena_workdir_base": "bench"}, "dbarena_workdir_base='bench' must be an absolute path"),
    ({"dbarena_deps_dir": "deps"}, "dbarena_deps_dir='deps' must be an absolute path"),
])
def test_bad_host_vars_are_one_line_errors(hostvars, message):
    listing = {"_meta": {"hostvars": {"h": hostvars}}, "all": {"hosts": ["h"]}}
    with pytest.raises(UsageError, match=message):
        inventory.read(listing, None)


def test_two_hosts_with_one_label_are_refused():
    listing = {"_meta": {"hostvars": {"a": {"dbarena_label": "same"}, "b": {"dbarena_label": "same"}}},
               "all": {"hosts": ["a", "b"]}}
    with pytest.raises(UsageError, match="share the label 'same'"):
        inventory.read(listing, None)


def _fleet(*args: str) -> subprocess.CompletedProcess:
    """`dbarena fleet ARGS`, in process (tests/inprocess.py)."""
    return inprocess.dbarena("fleet", *args)


def test_bad_inventories_and_limits_exit_2_with_one_line_before_anything_starts(tmp_path):
    good = tmp_path / "hosts.ini"
    good.write_text("[fleet]\nalpha ansible_host=127.0.0.2 dbarena_price_per_hour=0.5\n")
    cases = [
        (["run", "-i", str(tmp_path / "none.ini"), "--study", "seed-a"], "no such inventory file"),
        (["run", "-i", str(good), "--limit", "gamma", "--study", "seed-a"], "--limit 'gamma'"),
        (["run", "-i", str(good), "--study", "no-such-study"], "no-such-study"),
        (["run", "-i", str(good), "--study", "seed-a", "--", "--label", "x"], "--label is not a run option"),
    ]
    bad_price = tmp_path / "price.ini"
    bad_price.write_text("[fleet]\nalpha ansible_host=127.0.0.2 dbarena_price_per_hour=cheap\n")
    cases.append((["run", "-i", str(bad_price), "--study", "seed-a"], "is not a number"))
    # A study with [fleet] together = true is a --together run: --serial does not go with it.
    together = tmp_path / "together.toml"
    together.write_text('schema = 1\nname = "tg"\n[fleet]\ntogether = true\n'
                        '[[workloads]]\nworkload = "pgbench-select-only"\nlevels = [2]\n')
    cases.append((["run", "-i", str(good), "--study", str(together), "--serial"], "--serial does not go with it"))
    cases.append((["run", "-i", str(good), "--study", "seed-a", "--label", "x"], "--label is the label of a --together"))
    garbage = tmp_path / "garbage.ini"
    garbage.write_text("[fleet\nthis is = not [an inventory\n")
    cases.append((["status", "-i", str(garbage)], "-i"))
    for args, message in cases:
        done = _fleet(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_the_packages_a_study_needs_on_a_host():
    seed_a = study_mod.load("seed-a")
    assert controller.packages(seed_a) == ["mariadb-client", "mariadb-server", "postgresql", "python3-venv",
                                           "sysbench"]


def test_progress_file_counts_points_and_estimates_what_is_left(tmp_path):
    import json

    from dbarena.model import PointResult
    from datetime import datetime, timezone

    now = [1000.0]
    path = tmp_path / "progress.json"
    reporter = ProgressFile(path, clock=lambda: now[0])
    plan = [PointSpec(engine="postgres", workload="pgbench-select-only", threads=t, clients=t, duration_s=60)
            for t in (1, 2, 4)]
    # Before the plan there is no ETA at all (not "0m00s").
    assert (json.loads(path.read_text())["eta_s"], json.loads(path.read_text())["eta_basis"]) == (None, "unknown")
    reporter.begin(plan, lambda spec: 70.0)
    reporter.point_started(0, plan[0])
    now[0] += 30
    reporter.stage("running")
    data = json.loads(path.read_text())
    assert (data["planned"], data["done"], data["eta_s"], data["eta_basis"]) == (3, 0, 180, "estimate")
    # Repeat numbers are shown from 1 (the store keeps repeat 0 for the first).
    assert plan[0].repeat == 0 and data["current"] == "postgres pgbench-select-only threads=1 repeat 1"
    at = datetime.now(timezone.utc)
    now[0] += 40  # the point took 70 s, as estimated
    reporter.point_finished(0, PointResult(spec=plan[0], status="ok", started_at=at, ended_at=at, command=(),
                                           exit_code=0, stdout="", stderr=""))
    data = json.loads(path.read_text())
    assert (data["done"], data["failed"], data["current"], data["eta_s"], data["eta_basis"]) == \
        (1, 0, None, 140, "measured")
    # The second point takes twice its estimate: what is left is scaled by the pace so far.
    reporter.point_started(1, plan[1])
    now[0] += 140
    reporter.point_finished(1, PointResult(spec=plan[1], status="ok", started_at=at, ended_at=at, command=(),
                                           exit_code=0, stdout="", stderr=""))
    assert json.loads(path.read_text())["eta_s"] == round(70 * (210 / 140))


def test_the_wheel_for_the_hosts_is_reproducible(tmp_path):
    """Same source, same wheel, byte for byte: a host that has it installed is not
    reinstalled by the next fleet run."""
    import hashlib

    root = controller.project_root()
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        controller._build(root, tmp_path / name)
    [first], [second] = (list((tmp_path / name).glob("dbarena-*.whl")) for name in ("a", "b"))
    assert first.name == second.name
    assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()


def test_the_wheel_is_built_once_per_source_tree(tmp_path, monkeypatch):
    """A fleet run of an unchanged tree takes the wheel built before (by the hash of its
    sources); any change of a source file is another wheel."""
    first = controller.build_wheel(tmp_path / "a")

    def build(root, dest):
        raise AssertionError("built again")
    monkeypatch.setattr(controller, "_build", build)
    again = controller.build_wheel(tmp_path / "b")
    assert again.parent == tmp_path / "b" and again.read_bytes() == first.read_bytes()

    tree = tmp_path / "tree"
    (tree / "src" / "dbarena").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        (tree / name).write_text(name)
    module = tree / "src" / "dbarena" / "m.py"
    module.write_text("x = 1\n")
    digest = controller.source_digest(tree)
    (tree / "src" / "dbarena" / "__pycache__").mkdir()
    (tree / "src" / "dbarena" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"compiled")
    assert controller.source_digest(tree) == digest  # what is not built into the wheel does not count
    module.write_text("x = 2\n")
    assert controller.source_digest(tree) != digest
