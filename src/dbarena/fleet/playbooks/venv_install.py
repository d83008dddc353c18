"""dbarena in a fleet host's working directory, its dependencies installed once per host.

Run on the host by start.yml, by the host's own python3 (as `python3 -I -S -c <this
text>`), after workdir_check.py checked (and made) both directories below: standard
library only.

    python3 venv_install.py WORKDIR DEPS WHEEL SHA256

WORKDIR/venv gets dbarena's wheel (WORKDIR/wheels/WHEEL, whose hash is SHA256); the
wheel's dependencies (numpy, scipy, matplotlib, psycopg, ...: most of a minute to
install, and ~300 MB) live in one virtual environment under DEPS, named by what they
are (the wheel's requirements, this Python's version and machine), made once and then
imported by every working directory on this host whose wheel needs just those: a new
working directory, or a new dbarena wheel with the same requirements, costs seconds.
WORKDIR/venv is a small venv of its own (dbarena, its `dbarena` command) whose
site-packages holds DEPS_PTH, naming the shared environment's site-packages; Python
imports from there after the venv's own site-packages. workdir_check.py checks what
DEPS_PTH names on every play, before anything in the venv runs.

Two working directories of one host may install at once (two inventory hosts that are
one machine): one makes the shared environment while the other waits for it (a lock
file), and a half-made one (a killed install) is made again, never used. Prints
"installed" when it changed anything; a failure is one line on stderr (with the
installer's last lines under it) and exit status 1.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import zipfile

DEPS_PTH = "dbarena-deps.pth"  # as workdir_check.py reads it
COMPLETE = ".complete"         # written last into a shared environment: it is whole
WHEEL_MARK = ".wheel"          # in WORKDIR/venv: the hash of the wheel installed there
PIP = ["-m", "pip", "--disable-pip-version-check", "--no-input", "install", "--quiet"]


class Failed(Exception):
    pass


def requirements(wheel: str) -> list[str]:
    """The wheel's own requirements (Requires-Dist without an extra's marker), sorted."""
    with zipfile.ZipFile(wheel) as archive:
        name = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
        if name is None:
            raise Failed(f"{os.path.basename(wheel)} has no METADATA")
        text = archive.read(name).decode("utf-8", "replace")
    found = []
    for line in text.split("\n\n", 1)[0].splitlines():
        if line.startswith("Requires-Dist:"):
            requirement = line.split(":", 1)[1].strip()
            if "extra ==" not in requirement.replace("extra==", "extra =="):
                found.append(requirement)
    return sorted(found)


def shared_name(needs: list[str]) -> str:
    """The shared environment's name: what it holds, for which Python."""
    version = "%d.%d" % sys.version_info[:2]
    key = "\n".join([sys.implementation.name, version, platform.machine(), *needs])
    return f"py{version}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode != 0:
        tail = [line for line in done.stdout.splitlines() if line.strip()][-8:]
        raise Failed("\n".join([f"{what} failed (exit status {done.returncode})", *tail]))


def _site_packages(python: str) -> list[str]:
    done = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib')); "
                           "print(sysconfig.get_path('platlib'))"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise Failed(f"{python} did not start: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return list(dict.fromkeys(line for line in done.stdout.splitlines() if line))


def shared_environment(deps: str, needs: list[str]) -> tuple[str, bool]:
    """The shared environment holding `needs` (its directory), made if it is not whole;
    and whether it was made now."""
    env = os.path.join(deps, shared_name(needs))
    if os.path.isfile(os.path.join(env, COMPLETE)):
        return env, False
    with open(env + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another working directory of this host may be making it
        if os.path.isfile(os.path.join(env, COMPLETE)):
            return env, False
        shutil.rmtree(env, ignore_errors=True)  # a killed install's half
        _run([sys.executable, "-m", "venv", env], "python3 -m venv (is python3-venv installed?)")
        # --no-compile: byte-compiling all of scipy and matplotlib costs twice the install's
        # CPU time; what is imported is compiled when it first is.
        _run([os.path.join(env, "bin", "python"), *PIP, "--no-compile", *needs],
             "pip install of dbarena's dependencies (from the host's package index)")
        with open(os.path.join(env, COMPLETE), "w") as mark:
            mark.write("\n".join(needs) + "\n")
    return env, True


def _write(path: str, text: str) -> None:
    """Replace a file at once (an import that reads it sees the old or the new one)."""
    with open(path + ".new", "w") as handle:
        handle.write(text)
    os.replace(path + ".new", path)


def install(workdir: str, deps: str, wheel: str, sha256: str) -> bool:
    """dbarena's wheel in WORKDIR/venv over the shared environment; True when anything changed."""
    path = os.path.join(workdir, "wheels", wheel)
    venv = os.path.join(workdir, "venv")
    env, changed = shared_environment(deps, requirements(path))
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        # No pip of its own: the shared environment's is imported through DEPS_PTH.
        _run([sys.executable, "-m", "venv", "--without-pip", venv], "python3 -m venv")
        changed = True
    pth = "".join(f"{site}\n" for site in _site_packages(os.path.join(env, "bin", "python")))
    for site in _site_packages(python):
        target = os.path.join(site, DEPS_PTH)
        try:
            with open(target) as handle:
                same = handle.read() == pth
        except OSError:
            same = False
        if not same:
            _write(target, pth)  # before the venv's Python runs below, so it imports the checked one
            changed = True
    mark = os.path.join(venv, WHEEL_MARK)
    try:
        with open(mark) as handle:
            installed = handle.read().strip()
    except OSError:
        installed = ""
    if installed != sha256:
        # --force-reinstall: the wheel's version number stays 0.1.0 while its content changes.
        _run([python, *PIP, "--no-deps", "--force-reinstall", path], "pip install of dbarena's wheel")
        _write(mark, sha256 + "\n")
        changed = True
    return changed


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        sys.stderr.write("usage: venv_install.py WORKDIR DEPS WHEEL SHA256\n")
        return 2
    try:
        if install(*argv[1:]):
            print("installed")
    except (Failed, OSError) as exc:
        sys.stderr.write(f"installing dbarena: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
