"""A fleet host's working directory, made safe before anything in it is run.

Run on the host by every playbook (workdir.yml; step.yml with --run), by the host's own
python3 (as `python3 -I -S -c <this text>`), before dbarena is installed there: so it
uses the standard library only and runs on any Python 3 a host may have.

    python3 workdir_check.py PATH create|check [DEPS]
    python3 workdir_check.py PATH check --run ARG...

PATH is absolute, or starts with ~ (the login user's home). The answer, on stdout, is
the absolute path; a refusal is one line on stderr and exit status 1. With DEPS (start.yml
gives it, in create mode), the directory of the dependencies the hosts' virtual
environments share (venv_install.py) is checked and made the same way, and its absolute
path is a second line. With --run (step.yml), nothing is printed: once the directory
passed, this process becomes `<path>/venv/bin/dbarena fleet ARG...` (PATH as given
replaced by the absolute path in every ARG, as the other playbooks rewrite the hosts'
arguments), so that a step that needs nothing else is one task and one program start
on the host; a refusal runs nothing.

Why: the playbooks run `<workdir>/venv/bin/pip` and `<workdir>/venv/bin/dbarena`, as
the login user (often root), and put the passwords a run needs there. A directory that
another local user created first, or can write into (or whose parent they can rename or
replace), would let them run code as that user. So every existing component of the
path, followed through symbolic links, must be owned by root or by the login user and
not writable by group or others; an ancestor that others may write to is accepted only
when it is root's and sticky (/tmp, /var/tmp): there, no one else can remove or rename
what the login user made. The working directory itself must be the login user's own.
Missing components are created 0700 in "create" mode (an existing directory's mode is
left as it is: it may be one the user chose, such as their home).

The working directory's venv imports dbarena's dependencies from a directory outside
it, shared by the working directories of one host (venv_install.py names it in the
venv's DEPS_PTH). What that file names is checked by the same rules, on every play:
code another user could plant there would run as well. In "check" mode a directory it
names that is gone is refused too (another user could make it before the next import);
in "create" mode start.yml's installer points the file at the checked DEPS before the
venv's Python runs.
"""

from __future__ import annotations

import os
import stat
import sys

WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
# In the venv's site-packages: one directory a line that the venv imports from too.
DEPS_PTH = "dbarena-deps.pth"


class Refused(Exception):
    pass


def _owner_name(uid: int) -> str:
    try:
        import pwd
        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def _check_component(path: str, info: os.stat_result, me: int, final: bool) -> None:
    """One existing component (its lstat), trusted or refused with why."""
    if info.st_uid not in (0, me):
        trusted = "root" if me == 0 else f"root or {_owner_name(me)}"
        raise Refused(f"{path} is owned by {_owner_name(info.st_uid)}, not by {trusted}: "
                      "another user could plant programs there")
    if stat.S_ISLNK(info.st_mode):
        return  # its target is checked when the path is followed (the second walk)
    if not stat.S_ISDIR(info.st_mode):
        raise Refused(f"{path} is not a directory")
    if final:
        if info.st_uid != me:
            raise Refused(f"{path} is owned by {_owner_name(info.st_uid)}, not by {_owner_name(me)} who runs there")
        if info.st_mode & WRITABLE_BY_OTHERS:
            raise Refused(f"{path} is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'}")
        return
    if info.st_mode & WRITABLE_BY_OTHERS and not (info.st_uid == 0 and info.st_mode & stat.S_ISVTX):
        raise Refused(f"{path} is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'} "
                      "(and not a sticky directory of root's): another user could replace what is in it")


def _walk(path: str, me: int, create: bool) -> None:
    """Every component of `path` from / down, checked; missing ones made 0700 (create)
    or, without create, the walk ends at the first missing one."""
    parts = [p for p in path.split("/") if p]
    current = "/"
    _check_component("/", os.lstat("/"), me, final=False)
    for index, part in enumerate(parts):
        current = os.path.join(current, part)
        final = index == len(parts) - 1
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            if not create:
                return
            try:
                os.mkdir(current, 0o700)
            except FileExistsError:
                pass  # made by someone else in between: its owner is checked just below
            info = os.lstat(current)
        _check_component(current, info, me, final)


def settle(asked: str, create: bool) -> str:
    """The checked absolute working directory for `asked`, or Refused."""
    path = os.path.expanduser(asked)
    if not os.path.isabs(path):
        raise Refused(f"{asked}: not an absolute path (and ~ could not be expanded)")
    if ".." in path.split("/"):
        raise Refused(f"{asked}: a working directory may not hold '..'")
    path = os.path.normpath(path)
    if path == "/":
        raise Refused(f"{asked}: the root directory cannot be a working directory")
    me = os.geteuid()
    _walk(path, me, create)  # as given: no symbolic link there is another user's
    real = os.path.realpath(path)
    if real != path:
        _walk(real, me, create=False)  # and where its links lead
    return real


def imported(workdir: str) -> list[str]:
    """The directories outside the working directory that its venv imports from, as
    its DEPS_PTH names them (none before venv_install.py made one)."""
    venv = os.path.join(workdir, "venv")
    found: list[str] = []
    for lib in ("lib", "lib64"):
        try:
            versions = sorted(os.listdir(os.path.join(venv, lib)))
        except OSError:
            continue
        for version in versions:
            try:
                with open(os.path.join(venv, lib, version, "site-packages", DEPS_PTH)) as handle:
                    lines = handle.read().splitlines()
            except OSError:
                continue
            found += [line.strip() for line in lines if line.strip() and line.strip() not in found]
    return found


def check_imported(workdir: str, create: bool) -> None:
    """What the venv imports from outside the working directory, checked (Refused)."""
    me = os.geteuid()
    for path in imported(workdir):
        if not os.path.isabs(path) or ".." in path.split("/"):
            raise Refused(f"{workdir}/venv imports from {path}: not an absolute path")
        if not os.path.isdir(path):
            if create:
                continue  # the installer points the venv at the checked DEPS before its Python runs
            raise Refused(f"{path}, which {workdir}/venv imports from, is gone: `dbarena fleet run` installs it again")
        path = os.path.normpath(path)
        _walk(path, me, create=False)
        real = os.path.realpath(path)
        if real != path:
            _walk(real, me, create=False)


def run(workdir: str, asked: str, args: list[str]) -> int:
    """This process replaced by the working directory's dbarena (or why it cannot be)."""
    program = os.path.join(workdir, "venv", "bin", "dbarena")
    try:
        os.execv(program, [program, "fleet", *(arg.replace(asked, workdir) for arg in args)])
    except OSError as exc:
        sys.stderr.write(f"{program}: {exc.strerror or exc}\n")
    return 127  # as a shell says a program it could not start


def main(argv: list[str]) -> int:
    args: list[str] | None = None  # --run: what the dbarena it becomes is given
    if len(argv) >= 4 and argv[2] == "check" and argv[3] == "--run":
        argv, args = argv[:3], argv[4:]
    if len(argv) not in (3, 4) or argv[2] not in ("create", "check"):
        sys.stderr.write("usage: workdir_check.py PATH create|check [DEPS]\n"
                         "       workdir_check.py PATH check --run ARG...\n")
        return 2
    try:
        workdir = settle(argv[1], create=argv[2] == "create")
        check_imported(workdir, create=argv[2] == "create")
        deps = settle(argv[3], create=argv[2] == "create") if len(argv) == 4 else None
        if args is not None:
            return run(workdir, argv[1], args)
        print(workdir)
        if deps is not None:
            print(deps)
    except Refused as exc:
        sys.stderr.write(f"unsafe working directory: {exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"working directory {argv[1]}: {exc.strerror or exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
