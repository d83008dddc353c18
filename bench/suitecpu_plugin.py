"""A pytest plugin for bench/suite-cpu: each pytest-xdist worker in a CPU-accounting
cgroup of its own, and every test's CPU (the worker's, and that of every process its
tests started: servers, benchmark tools, CLIs, sshd hosts, Ansible) written to the file
named by SUITE_CPU_LOG, one line per test: node id, CPU seconds, wall seconds.

A module's tests run on one worker one after another (--dist loadfile), so a test's
figure is its group's usage between its start and its end; a process a test left running
is counted in the next test's figure.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path("/sys/fs/cgroup")


def _accounting_root() -> tuple[Path, str] | None:
    """(the hierarchy that counts CPU, "v2" or "v1"), or None."""
    if (ROOT / "cgroup.controllers").is_file():
        return ROOT, "v2"
    if (ROOT / "cpuacct" / "cpuacct.usage").is_file():
        return ROOT / "cpuacct", "v1"
    return None


class Group:
    """This process's CPU-accounting group, while the worker lives."""

    def __init__(self, root: Path, version: str, name: str):
        self.root, self.version, self.path = root, version, root / name
        self.path.mkdir(exist_ok=True)
        (self.path / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def usage_s(self) -> float:
        if self.version == "v2":
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
            raise RuntimeError(f"no usage_usec in {self.path / 'cpu.stat'}")
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def leave(self) -> None:
        with contextlib.suppress(OSError):
            (self.root / "cgroup.procs").write_text(f"{os.getpid()}\n")
            self.path.rmdir()  # (kept, with what is still in it, if a test left a process)


GROUP = pytest.StashKey[Group]()


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    found = _accounting_root()
    if worker and found and os.environ.get("SUITE_CPU_LOG"):
        config.stash[GROUP] = Group(*found, f"dbarena-suite-cpu-{os.getpid()}")


def pytest_unconfigure(config: pytest.Config) -> None:
    if GROUP in config.stash:
        config.stash[GROUP].leave()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    group = item.config.stash.get(GROUP, None)
    if group is None:
        yield
        return
    cpu, wall = group.usage_s(), time.monotonic()
    yield
    with open(os.environ["SUITE_CPU_LOG"], "a") as log:
        log.write(f"{item.nodeid}\t{group.usage_s() - cpu:.3f}\t{time.monotonic() - wall:.3f}\n")
