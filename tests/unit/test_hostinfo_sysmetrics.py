"""Host provenance readers on lscpu and /proc/cpuinfo captured from x86, ARM (Ampere
Altra) and POWER9 machines (tests/fixtures/hostinfo/SOURCES.tsv), and the /proc
parsers of the system-metrics sampler on this machine's own /proc captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbarena.host import hostinfo
from dbarena.host import sysmetrics

HOST = Path(__file__).parent.parent / "fixtures" / "hostinfo"


@pytest.mark.parametrize("name, want", [
    ("x86_64-this-vm.lscpu", dict(
        architecture="x86_64", cpu_vendor="AuthenticAMD", cpu_model="AMD EPYC", hardware_threads=2,
        threads_per_core=1, cores_per_socket=2, sockets=1, physical_cores=2, numa_nodes=1, hypervisor="KVM",
        virtualization_type="full", l2_cache="2 MiB (2 instances)", l3_cache="32 MiB (1 instance)")),
    ("aarch64-ampere-altra-q80.lscpu", dict(
        architecture="aarch64", cpu_vendor="ARM", cpu_model="Neoverse-N1", hardware_threads=80, threads_per_core=1,
        cores_per_socket=80, sockets=1, physical_cores=80, numa_nodes=1, max_mhz=3000.0, min_mhz=1000.0,
        l2_cache="80 MiB")),
    # Study C's point: 128 hardware threads, but 32 cores x SMT4.
    ("ppc64le-power9-smt4-2socket.lscpu", dict(
        architecture="ppc64le", cpu_model="POWER9, altivec supported", hardware_threads=128, threads_per_core=4,
        cores_per_socket=16, sockets=2, physical_cores=32, numa_nodes=6, numa_nodes_with_cpus=2, max_mhz=3800.0,
        l3_cache="10240K")),
    ("ppc64le-power9-powervm-lpar-smt8.lscpu", dict(
        architecture="ppc64le", hardware_threads=128, threads_per_core=8, sockets=2, physical_cores=16,
        hypervisor="pHyp", virtualization_type="para")),
])
def test_lscpu(name, want):
    facts = hostinfo.parse_lscpu((HOST / name).read_text())
    for key, value in want.items():
        assert facts[key] == value, key


@pytest.mark.parametrize("name, want", [
    ("x86_64-this-vm.cpuinfo", dict(cpu_model="AMD EPYC", cpu_vendor="AuthenticAMD", hardware_threads=2,
                                    physical_cores=2, sockets=1)),
    # ARM names no model in /proc/cpuinfo: implementer 0x41 part 0xd0c is a Neoverse-N1.
    ("aarch64-ampere-altra-grep.cpuinfo", dict(cpu_model="Neoverse-N1", cpu_vendor="ARM")),
    ("ppc64le-power9-qemu.cpuinfo", dict(cpu_model="POWER9 (architected), altivec supported", hardware_threads=1,
                                         current_mhz=2200.0, platform="pSeries")),
])
def test_cpuinfo(name, want):
    facts = hostinfo.parse_cpuinfo((HOST / name).read_text())
    for key, value in want.items():
        assert facts[key] == value, key


def test_unknown_arm_part_is_named_not_invented():
    facts = hostinfo.parse_cpuinfo("processor\t: 0\nCPU implementer\t: 0x48\nCPU part\t: 0xd01\n")
    assert facts["cpu_model"] == "HiSilicon part 0xd01"


def test_every_fixture_has_a_source():
    listed = {line.split("\t")[0] for line in (HOST / "SOURCES.tsv").read_text().splitlines()[1:]}
    assert listed == {p.name for p in HOST.iterdir() if p.name != "SOURCES.tsv"}


def test_meminfo_os_release_cloud_container():
    mem = hostinfo.parse_meminfo("MemTotal:       24684084 kB\nSwapTotal:       2097148 kB\n")
    assert mem == {"memory_bytes": 24684084 * 1024, "swap_bytes": 2097148 * 1024}
    assert hostinfo.parse_os_release('NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n') == \
        "Debian GNU/Linux 12 (bookworm)"
    assert hostinfo.cloud_instance({"sys_vendor": "Amazon EC2", "product_name": "m6gd.8xlarge"}) == {
        "cloud": "aws", "instance_type": "m6gd.8xlarge"}
    assert hostinfo.cloud_instance({"sys_vendor": "Google", "product_name": "Google Compute Engine"}) == {"cloud": "gcp"}
    assert hostinfo.cloud_instance({"sys_vendor": "QEMU", "product_name": "Standard PC"}) == {}
    assert hostinfo.container_kind("0::/kubepods/besteffort/pod1\n", set()) == "kubernetes"
    assert hostinfo.container_kind("0::/\n", {"/.dockerenv"}) == "docker"
    assert hostinfo.container_kind("0::/init.scope\n", set()) is None


def test_host_facts_of_this_machine_are_consistent():
    facts = hostinfo.host_facts()
    assert facts["hardware_threads"] >= 1 and facts["architecture"]
    assert facts["physical_cores"] * facts["threads_per_core"] == facts["hardware_threads"]
    assert facts["memory_bytes"] > 0 and facts["kernel"] and facts["hostname"]


# ------------------------------------------------------------------ system metrics (psutil)

def test_cpu_split():
    before = dict(zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"),
                      (100.0, 5.0, 50.0, 1000.0, 20.0, 1.0, 2.0, 0.0, 7.0, 0.0)))
    later = {k: v + {"user": 50, "system": 20, "softirq": 10, "idle": 100, "iowait": 10, "steal": 10,
                     "guest": 30}.get(k, 0) for k, v in before.items()}
    # guest time is inside user already: not counted twice.
    assert sysmetrics.cpu_split(before, later) == pytest.approx(
        {"user": 25.0, "system": 15.0, "iowait": 5.0, "steal": 5.0, "idle": 50.0})


def test_tree_seconds_follows_parents():
    stats = {1: (0, 5.0), 100: (1, 10.0), 101: (100, 20.0), 102: (100, 30.0), 103: (102, 40.0), 200: (1, 1000.0)}
    assert sysmetrics.tree_seconds(stats, 100) == 100.0
    assert sysmetrics.tree_seconds(stats, 999) == 0.0


def test_the_sampler_sees_a_busy_process_tree():
    import os
    import signal
    import subprocess
    import sys
    import time

    # A parent that does nothing and a child that spins: the tree's CPU is the child's.
    # The sampler runs at nice 19 and the machine is shared: it is given time to take
    # its samples, and the child's share of a busy machine may be well under a core.
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                               "'import time\\nend = time.time() + 30\\nwhile time.time() < end: pass'])"],
                              start_new_session=True)
    try:
        sampler = sysmetrics.Sampler(server_pid=parent.pid, interval_s=0.5).start()
        deadline = time.monotonic() + 20
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        samples = sampler.stop()
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()
    assert len(samples) >= 3
    busy = [s.server_cpu for s in samples[1:]]
    # The idle parent alone uses next to nothing: CPU in the tree is the grandchild's.
    assert max(busy) > 0.05
    s = samples[-1]
    assert 0 <= s.cpu_idle_pct <= 100 and s.memory_used_bytes > 0 and s.context_switches_per_s > 0
    assert abs(s.cpu_user_pct + s.cpu_system_pct + s.cpu_iowait_pct + s.cpu_steal_pct + s.cpu_idle_pct - 100) < 1


def test_the_client_libraries_a_tool_links_are_named_with_their_package():
    import shutil

    from dbarena import execute

    sysbench = shutil.which("sysbench")
    assert sysbench, "scripts/install-deps installs sysbench"
    libs = execute.linked_libraries(sysbench)
    # Debian's sysbench links both client libraries; dpkg names the package version.
    assert libs["libpq"].startswith("libpq.so.5.") and "(libpq5 " in libs["libpq"]
    assert libs["libmariadb"].startswith("libmariadb.so.")
    assert execute.linked_libraries("/nonexistent/pgbench") == {}


def test_cpu_lists_quotas_and_cgroup_paths():
    assert hostinfo.parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert hostinfo.cpu_list({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8" and hostinfo.cpu_list([3]) == "3"
    assert hostinfo.parse_cpu_max("200000 100000\n") == 2.0
    assert hostinfo.parse_cpu_max("150000 100000") == 1.5
    assert hostinfo.parse_cpu_max("max 100000\n") is None and hostinfo.parse_cpu_max("") is None
    assert hostinfo.cgroup_path("0::/system.slice/docker-1.scope\n") == "/system.slice/docker-1.scope"
    assert hostinfo.cgroup_path("12:cpu,cpuacct:/user.slice\n") is None  # cgroup v1


def test_the_cpus_a_run_may_use_make_its_thread_count_not_the_machines():
    # x86 with SMT: CPUs 0-3 are cores 0-3 of package 0, CPUs 4-7 their siblings.
    from dbarena.host.topology import Cpu

    topology = [Cpu(cpu=cpu, core=cpu % 4, socket=0) for cpu in range(8)]
    whole = hostinfo.usable_cpu_facts(set(range(8)), None, topology)
    assert whole == {"usable_cpus": "0-7", "usable_hardware_threads": 8, "usable_physical_cores": 4,
                     "effective_hardware_threads": 8}
    # taskset -c 0,4: one core with its sibling.
    pinned = hostinfo.usable_cpu_facts({0, 4}, None, topology)
    assert (pinned["usable_cpus"], pinned["usable_physical_cores"], pinned["effective_hardware_threads"]) == \
        ("0,4", 1, 2)
    # A container limited to 1.5 CPUs of 8: 1 thread counts.
    quota = hostinfo.usable_cpu_facts(set(range(8)), 1.5, topology)
    assert quota["cpu_quota_cores"] == 1.5 and quota["effective_hardware_threads"] == 1
    assert hostinfo.usable_cpu_facts({0}, None, [])["effective_hardware_threads"] == 1  # no topology known


def test_a_confined_run_is_another_configuration_a_whole_machine_run_keeps_its_key():
    from dbarena.stats import configkey

    machine = {"cpu_model": "EPYC", "hardware_threads": 2, "memory_bytes": 24 * 2 ** 30}
    before = configkey.host_identity(machine)
    assert configkey.host_identity({**machine, "usable_cpus": "0-1", "usable_hardware_threads": 2}) == before
    confined = configkey.host_identity({**machine, "usable_cpus": "0", "usable_hardware_threads": 1})
    assert confined != before and confined["usable_cpus"] == "0"


def test_taskset_narrows_what_dbarena_records_and_counts():
    import os
    import subprocess
    import sys

    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPUs to confine a process to one")
    code = ("import json; from dbarena.host import hostinfo; f = hostinfo.host_facts(); "
            "print(json.dumps([f['hardware_threads'], f['usable_cpus'], f['usable_hardware_threads'], "
            "f['effective_hardware_threads'], hostinfo.hardware_threads()]))")
    done = subprocess.run(["taskset", "-c", "1", sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    machine, cpus, usable, effective, levels_of = json.loads(done.stdout)
    assert machine == os.cpu_count() and (cpus, usable, effective, levels_of) == ("1", 1, 1, 1)


def test_the_servers_tree_walked_down_from_its_root_counts_what_the_whole_proc_scan_counts():
    import subprocess
    import time

    # A shell with three children, one of them busy: the server's processes as the
    # system sampler counts them each second.
    tree = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & while :; do :; done & wait"])
    try:
        # Until the busy child has run a while (on a loaded machine it may wait for a CPU).
        deadline = time.monotonic() + 30
        while (sysmetrics.server_tree_seconds(tree.pid) or 0) < 0.3 and time.monotonic() < deadline:
            time.sleep(0.1)
        # The busy child runs on between the readings: the walk's figure lies between a
        # scan just before and one just after it (CPU time only grows; a clock tick apart).
        before = sysmetrics.tree_seconds(sysmetrics.all_process_seconds(), tree.pid)
        walked = sysmetrics.server_tree_seconds(tree.pid)
        after = sysmetrics.tree_seconds(sysmetrics.all_process_seconds(), tree.pid)
        assert walked is not None and walked >= 0.3
        assert before - 0.02 <= walked <= after + 0.02, (before, walked, after)
        assert sysmetrics.server_tree_seconds(2 ** 22 + 7) == 0.0  # no such process: nothing
    finally:
        subprocess.run(["pkill", "-P", str(tree.pid)], check=False)
        tree.kill()
        tree.wait()
