"""The kernel's settings recorded with every run (host/tuning.py): each parser on the
real text of its file, captured from this machine and composed from documented values
(tests/fixtures/hostinfo/SOURCES.tsv), and the whole reading on trees of those files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from dbarena.host import hostinfo, tuning
from dbarena.host.tuning import NOT_EXPOSED

HOST = Path(__file__).parent.parent / "fixtures" / "hostinfo"


def files(name: str) -> dict[str, str]:
    """A fixture of `grep -rsH .` lines ("path:text") as each file's text."""
    out: dict[str, str] = {}
    for line in (HOST / name).read_text().splitlines():
        path, _, text = line.partition(":")
        out[path] = out.get(path, "") + text + "\n"
    return out


def tree(tmp_path: Path, name: str) -> Path:
    """The fixture's files under tmp_path, as the machine had them (config.gz gzipped)."""
    for path, text in files(name).items():
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.endswith(".gz"):
            target.write_bytes(gzip.compress(text.encode()))
        else:
            target.write_text(text)
    return tmp_path


VM, SKX, OLD = (files(n) for n in ("x86_64-this-vm.tuning", "x86_64-intel-skx-documented.tuning",
                                     "older-kernels-documented.tuning"))


def test_huge_pages_from_meminfo_and_the_sysctl():
    assert tuning.parse_hugepages(VM["/proc/meminfo"], VM["/proc/sys/vm/nr_hugepages"]) == {
        "hugepages_total": 0, "hugepages_free": 0, "hugepage_size_kib": 2048, "nr_hugepages": 0}
    assert tuning.parse_hugepages(SKX["/proc/meminfo"], SKX["/proc/sys/vm/nr_hugepages"]) == {
        "hugepages_total": 3170, "hugepages_free": 3170, "hugepage_size_kib": 2048, "nr_hugepages": 3170}
    # A kernel without hugetlbfs prints no HugePages_ lines and has no sysctl.
    assert tuning.parse_hugepages("MemTotal:       24684084 kB\n", "") == dict.fromkeys(
        ("hugepages_total", "hugepages_free", "hugepage_size_kib", "nr_hugepages"), NOT_EXPOSED)


@pytest.mark.parametrize("text, choice", [
    (VM["/sys/kernel/mm/transparent_hugepage/enabled"], "madvise"),
    (VM["/sys/kernel/mm/transparent_hugepage/defrag"], "madvise"),
    (SKX["/sys/kernel/mm/transparent_hugepage/enabled"], "always"),
    (OLD["/sys/kernel/mm/redhat_transparent_hugepage/enabled"], "always"),
    ("", NOT_EXPOSED),
])
def test_the_bracketed_choice(text, choice):
    assert tuning.bracketed(text) == choice


def test_preemption_from_debugfs_the_boot_line_the_config_or_uname():
    vm = (VM["/proc/cmdline"], VM["/proc/config.gz"], VM["/proc/sys/kernel/version"])
    # This machine: PREEMPT_DYNAMIC, no debugfs mounted, no preempt= on the boot line:
    # the config's CONFIG_PREEMPT_NONE is the model it booted with.
    assert tuning.preemption("", *vm) == ("none", "kernel config (the boot default)")
    assert tuning.parse_config_preempt(VM["/proc/config.gz"]) == ("none", True)
    assert tuning.parse_uname_preempt(VM["/proc/sys/kernel/version"]) == (None, True)
    # debugfs, where mounted, is the kernel's answer now (a switch since boot included).
    assert tuning.parse_sched_preempt(SKX["/sys/kernel/debug/sched/preempt"]) == "full"
    assert tuning.preemption(SKX["/sys/kernel/debug/sched/preempt"], *vm) == ("full", "debugfs")
    assert tuning.parse_sched_preempt("(none) voluntary full \n") == "none"  # 5.12 to 6.12: no lazy
    assert tuning.preemption("", "preempt=full " + vm[0], *vm[1:]) == ("full", "boot parameter preempt=")
    # After "--" the words are init's.
    assert tuning.parse_boot_preempt(VM["/proc/cmdline"].replace("--", "-- preempt=full")) is None
    # A kernel that cannot switch: its config, else uname.
    assert tuning.preemption("", "", OLD["/proc/config.gz"], "#1 SMP PREEMPT") == ("full", "kernel config")
    assert tuning.preemption("", "", "", "#1 SMP PREEMPT Debian 4.19") == ("full or lazy", "uname")
    assert tuning.preemption("", "", "", "#1 SMP Debian 5.10.209-2") == ("none or voluntary", "uname")
    assert tuning.preemption("", "", "", "#1 SMP PREEMPT_RT Debian 6.1") == ("rt", "uname")
    assert tuning.preemption("", "", "", "#1 SMP PREEMPT_DYNAMIC") == (
        "switchable (PREEMPT_DYNAMIC), model not exposed", "uname")
    assert tuning.preemption("", "", "", "") == (NOT_EXPOSED, NOT_EXPOSED)


def test_governor_and_driver_over_every_cpu():
    governors = {n: SKX[f"/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_governor"] for n in range(4)}
    assert tuning.per_cpu(governors) == "performance (0-1), powersave (2-3)"
    assert tuning.per_cpu({n: SKX[f"/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_driver"]
                           for n in range(4)}) == "intel_pstate"
    assert tuning.per_cpu({0: "", 1: ""}) == NOT_EXPOSED  # a VM: no cpufreq at all
    assert tuning.per_cpu({0: "a", 1: "a", 2: "b", 3: "a", 5: "a"}) == "a (0-1,3,5), b (2)"


def test_idle_states_in_order_with_the_disabled_ones():
    def states(f):
        return [(f[f"/sys/devices/system/cpu/cpu0/cpuidle/state{n}/name"],
                 f[f"/sys/devices/system/cpu/cpu0/cpuidle/state{n}/disable"])
                for n in range(4) if f"/sys/devices/system/cpu/cpu0/cpuidle/state{n}/name" in f]
    assert tuning.idle_states(states(VM)) == "POLL, haltpoll idle"
    assert tuning.idle_states(states(SKX)) == "POLL, C1, C1E, C6 (disabled)"
    assert tuning.idle_states([]) == NOT_EXPOSED


@pytest.mark.parametrize("text, said", [
    (VM["/proc/sys/kernel/numa_balancing"], "off"), (SKX["/proc/sys/kernel/numa_balancing"], "on"),
    ("2\n", "memory tiering"), ("3\n", "on, memory tiering"), ("", NOT_EXPOSED)])
def test_numa_balancing(text, said):
    assert tuning.numa_balancing(text) == said


def test_irqbalance_and_what_a_container_cannot_see():
    assert tuning.irqbalance(["systemd", "kthreadd", "irqbalance"]) == "running"
    assert tuning.irqbalance(["systemd", "kthreadd", "sshd"]) == "not running"
    assert tuning.irqbalance(["python", "postgres"]) == "not visible (a PID namespace of its own)"


def test_the_whole_reading_of_this_machines_tree(tmp_path):
    read = tuning.read(tree(tmp_path, "x86_64-this-vm.tuning"), process_names=["kthreadd"])
    assert read.facts() == {
        "hugepages_total": 0, "hugepages_free": 0, "hugepage_size_kib": 2048, "nr_hugepages": 0,
        "transparent_hugepage": "madvise", "transparent_hugepage_defrag": "madvise",
        "kernel_preemption": "none", "kernel_preemption_source": "kernel config (the boot default)",
        "frequency_governor": NOT_EXPOSED, "frequency_driver": NOT_EXPOSED,
        "idle_driver": "haltpoll", "idle_governor": "haltpoll", "idle_states": "POLL, haltpoll idle",
        "numa_balancing": "off", "irqbalance": "not running"}


def test_the_whole_reading_of_a_documented_host_and_of_nothing(tmp_path):
    read = tuning.read(tree(tmp_path / "skx", "x86_64-intel-skx-documented.tuning"), process_names=[])
    assert (read.hugepages_total, read.transparent_hugepage, read.kernel_preemption, read.frequency_governor,
            read.frequency_driver, read.idle_driver, read.idle_states, read.numa_balancing) == (
        3170, "always", "full", "performance (0-1), powersave (2-3)", "intel_pstate", "intel_idle",
        "POLL, C1, C1E, C6 (disabled)", "on")
    old = tuning.read(tree(tmp_path / "old", "older-kernels-documented.tuning"), process_names=[])
    assert (old.transparent_hugepage, old.transparent_hugepage_defrag, old.kernel_preemption) == (
        "always", NOT_EXPOSED, "full")
    # An empty root: every fact there, every one not exposed.
    (tmp_path / "empty").mkdir()
    empty = tuning.read(tmp_path / "empty", process_names=[]).facts()
    assert set(empty) == set(tuning.FIELDS)
    assert set(empty.values()) == {NOT_EXPOSED, "not visible (a PID namespace of its own)"}


def test_host_facts_carry_them():
    facts = hostinfo.host_facts()
    assert set(tuning.FIELDS) <= set(facts)
    assert facts["transparent_hugepage"] in ("always", "madvise", "never", NOT_EXPOSED)
