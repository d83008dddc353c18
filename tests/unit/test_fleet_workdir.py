"""A fleet host's working directory is checked on the host before anything in it runs
(fleet/playbooks/workdir_check.py, the first task of every playbook): one that another
user could have planted programs in is refused in one line, whatever the way in (the
directory itself, a parent, a group- or world-writable component, a symbolic link).
The script runs here as the hosts run it, by python3 with the path and a mode."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import dbarena.fleet

SCRIPT = Path(dbarena.fleet.__file__).parent / "playbooks" / "workdir_check.py"
NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="gives directories to another user: needs root")


def check(path: str | Path, mode: str = "create", home: Path | None = None,
          as_user: int | None = None, script: Path = SCRIPT, deps: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if home is not None:
        env["HOME"] = str(home)
    # Another user cannot reach this checkout's Python: the system's, as on a host.
    python = sys.executable if as_user is None else "/usr/bin/python3"
    return subprocess.run([python, str(script), str(path), mode, *([str(deps)] if deps else [])],
                          capture_output=True, text=True,
                          env=env, timeout=30, user=as_user, cwd="/")


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A directory only root writes to, under pytest's own (root's, 0700)."""
    tmp_path.chmod(0o755)
    return tmp_path


def refused(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr.strip()


def test_a_new_directory_is_made_private_and_its_absolute_path_printed(base):
    done = check(base / "fleet" / "alpha")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(base / "fleet" / "alpha")
    for made in (base / "fleet", base / "fleet" / "alpha"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700


def test_a_leading_tilde_is_the_login_users_home(base):
    home = base / "home"
    home.mkdir(mode=0o750)
    done = check("~/.dbarena-fleet/alpha", home=home)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(home / ".dbarena-fleet" / "alpha")
    assert (home / ".dbarena-fleet" / "alpha").is_dir()


def test_check_mode_makes_nothing_and_still_answers_the_path(base):
    done = check(base / "absent", mode="check")
    assert done.returncode == 0 and done.stdout.strip() == str(base / "absent")
    assert not (base / "absent").exists()


def test_a_directory_another_user_made_first_is_refused_and_nothing_in_it_runs(base):
    """The probe's repro: a local user plants the working directory with a venv of their own."""
    planted = base / "alpha"
    (planted / "venv" / "bin").mkdir(parents=True)
    pip = planted / "venv" / "bin" / "pip"
    pip.write_text(f"#!/bin/sh\ntouch {base}/pwned\n")
    pip.chmod(0o755)
    for path in (planted, planted / "venv", planted / "venv" / "bin", pip):
        os.chown(path, NOBODY, NOBODY)
    line = refused(check(planted))
    assert f"{planted} is owned by nobody, not by root" in line
    assert line.startswith("unsafe working directory: ")
    assert not (base / "pwned").exists()


def test_a_parent_owned_by_another_user_is_refused(base):
    parent = base / "theirs"
    parent.mkdir(mode=0o755)
    os.chown(parent, NOBODY, NOBODY)
    line = refused(check(parent / "alpha"))
    assert f"{parent} is owned by nobody" in line
    assert not (parent / "alpha").exists()  # refused before anything was made under it


@pytest.mark.parametrize("mode, word", [(0o777, "others"), (0o775, "its group")])
def test_a_parent_others_may_write_to_is_refused(base, mode, word):
    parent = base / "open"
    parent.mkdir()
    parent.chmod(mode)
    line = refused(check(parent / "alpha"))
    assert f"{parent} is writable by {word}" in line and "not a sticky directory of root's" in line


def test_a_sticky_directory_of_roots_such_as_tmp_is_a_fine_parent(base):
    sticky = base / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    done = check(sticky / "dbarena-fleet" / "alpha")
    assert done.returncode == 0, done.stderr
    # ... but there, another user's directory of that name is refused (the probe's case).
    os.chown(sticky / "dbarena-fleet", NOBODY, NOBODY)
    assert "is owned by nobody" in refused(check(sticky / "dbarena-fleet" / "alpha"))


def test_the_working_directory_itself_writable_by_its_group_is_refused(base):
    workdir = base / "alpha"
    workdir.mkdir()
    workdir.chmod(0o770)
    assert f"{workdir} is writable by its group" in refused(check(workdir))


def test_a_symbolic_link_of_another_users_or_into_their_directory_is_refused(base):
    theirs = base / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)
    link = base / "alpha"
    link.symlink_to(theirs)
    # root's own link, but it leads into another user's directory
    assert f"{theirs} is owned by nobody" in refused(check(link))
    link.unlink()
    mine = base / "mine"
    mine.mkdir(mode=0o700)
    link.symlink_to(mine)
    os.lchown(link, NOBODY, NOBODY)
    assert f"{link} is owned by nobody" in refused(check(link))


@pytest.mark.parametrize("asked, message", [
    ("relative/alpha", "not an absolute path"),
    ("/srv/../etc", "may not hold '..'"),
    ("/", "the root directory cannot be a working directory"),
])
def test_paths_that_are_no_working_directory_are_refused(asked, message):
    assert message in refused(check(asked))


def test_a_file_in_the_way_is_refused(base):
    (base / "alpha").write_text("")
    assert f"{base / 'alpha'} is not a directory" in refused(check(base / "alpha"))


def test_a_login_user_other_than_root_trusts_root_and_itself_only():
    """A host logged into as an ordinary user (here nobody): its own directory under
    root's is fine; one of root's as the working directory itself is not its own."""
    if not Path("/usr/bin/python3").is_file():
        pytest.skip("no /usr/bin/python3 to run as another user")
    # Not under pytest's directories (root's, 0700): nobody could not pass through them.
    with tempfile.TemporaryDirectory(prefix="dbarena-workdir-") as made:
        base = Path(made)
        base.chmod(0o755)
        _as_another_user(base)


def _as_another_user(base: Path) -> None:
    script = base / "workdir_check.py"
    script.write_bytes(SCRIPT.read_bytes())
    mine = base / "nobody-home"
    mine.mkdir(mode=0o755)
    os.chown(mine, NOBODY, NOBODY)
    done = check(mine / "alpha", as_user=NOBODY, script=script)
    assert done.returncode == 0, done.stderr
    assert (mine / "alpha").stat().st_uid == NOBODY
    roots = base / "roots"
    roots.mkdir(mode=0o755)
    line = refused(check(roots, as_user=NOBODY, script=script))
    assert f"{roots} is owned by root, not by nobody who runs there" in line


def _imports_from(workdir: Path, *paths: Path) -> None:
    """A venv in workdir whose site-packages imports from paths (as venv_install.py makes it)."""
    site = workdir / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "dbarena-deps.pth").write_text("".join(f"{p}\n" for p in paths))


def test_the_shared_dependencies_are_made_private_beside_the_working_directory(base):
    """start.yml's check: the working directory, then the shared dependencies' directory
    (made 0700 as it is), each path a line."""
    done = check(base / "fleet" / "alpha", deps=base / "fleet" / ".deps")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(base / "fleet" / "alpha"), str(base / "fleet" / ".deps")]
    assert stat.S_IMODE((base / "fleet" / ".deps").stat().st_mode) == 0o700
    os.chown(base / "fleet" / ".deps", NOBODY, NOBODY)
    assert f"{base / 'fleet' / '.deps'} is owned by nobody" in refused(check(base / "fleet" / "alpha",
                                                                               deps=base / "fleet" / ".deps"))


def test_what_the_venv_imports_from_outside_the_working_directory_is_checked_on_every_play(base):
    """The venv imports dbarena's dependencies from a shared directory (its
    dbarena-deps.pth): code another user could plant there would run as the login
    user, so every play refuses one they own or may write to, or one that is gone."""
    workdir, shared = base / "alpha", base / "deps" / "py3.11-x" / "site-packages"
    shared.mkdir(parents=True)
    _imports_from(workdir, shared)
    assert check(workdir, mode="check").returncode == 0
    (base / "deps").chmod(0o777)
    assert f"{base / 'deps'} is writable by others" in refused(check(workdir, mode="check"))
    (base / "deps").chmod(0o755)
    os.chown(shared, NOBODY, NOBODY)
    assert f"{shared} is owned by nobody" in refused(check(workdir, mode="check"))
    assert f"{shared} is owned by nobody" in refused(check(workdir, mode="create"))  # before the installer runs it
    os.chown(shared, 0, 0)
    theirs = base / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)
    link = base / "deps" / "link"
    link.symlink_to(theirs)
    (workdir / "venv" / "lib" / "python3.11" / "site-packages" / "dbarena-deps.pth").write_text(f"{link}\n")
    assert f"{theirs} is owned by nobody" in refused(check(workdir, mode="check"))
    gone = base / "deps" / "gone"
    (workdir / "venv" / "lib" / "python3.11" / "site-packages" / "dbarena-deps.pth").write_text(f"{gone}\n")
    line = refused(check(workdir, mode="check"))
    assert f"{gone}, which {workdir}/venv imports from, is gone" in line
    # start.yml's check lets it pass: the installer points the venv elsewhere before it runs.
    assert check(workdir, mode="create").returncode == 0


def _planted_dbarena(workdir: Path) -> Path:
    """<workdir>/venv/bin/dbarena: a program that prints the arguments it was given."""
    program = workdir / "venv" / "bin" / "dbarena"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    program.chmod(0o755)
    return program


def run_mode(asked: str | Path, *args: str) -> subprocess.CompletedProcess:
    """step.yml's use: `python3 -I -S -c <the script> PATH check --run ARG...`."""
    return subprocess.run([sys.executable, "-I", "-S", "-c", SCRIPT.read_text(), str(asked), "check", "--run", *args],
                          capture_output=True, text=True, timeout=30, cwd="/")


def test_run_mode_becomes_the_working_directorys_dbarena_with_the_path_rewritten(base):
    """step.yml: once the directory passed, the step's command (the path as asked
    rewritten to the checked one in its arguments, as the other playbooks rewrite them)."""
    real = base / "real"
    (real / "alpha").mkdir(parents=True)
    (base / "link").symlink_to(real)
    _planted_dbarena(real / "alpha")
    asked = base / "link" / "alpha"
    done = run_mode(asked, "host-point-ctl", "--workdir", str(asked), "status", "--request", f"{asked}/request.json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["fleet", "host-point-ctl", "--workdir", str(real / "alpha"), "status",
                                       "--request", f"{real / 'alpha'}/request.json"]


def test_run_mode_runs_nothing_in_a_refused_directory(base):
    planted = base / "planted"
    _planted_dbarena(planted)
    for path in (planted, *planted.rglob("*")):
        os.chown(path, NOBODY, NOBODY)
    line = refused(run_mode(planted, "host-status", "--workdir", str(planted)))
    assert line == f"unsafe working directory: {planted} is owned by nobody, not by root: " \
                   "another user could plant programs there"


def test_run_mode_without_dbarena_says_so_in_one_line(base):
    (base / "alpha").mkdir()
    done = run_mode(base / "alpha", "host-status")
    assert done.returncode == 127 and done.stdout == ""
    assert done.stderr.strip() == f"{base / 'alpha' / 'venv' / 'bin' / 'dbarena'}: No such file or directory"
