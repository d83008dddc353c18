"""CPU topology: parsing lscpu's per-CPU listing (this machine's capture and public ones
in tests/fixtures/topology), choosing the CPUs of N whole cores, and the [cpus] axis of
a study: its variants, placements and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbarena import study
from dbarena.run import placement, plan
from dbarena.host import smt
from dbarena.host import topology
from dbarena.errors import UsageError

FIXTURES = Path(__file__).parent.parent / "fixtures" / "topology"

# Two sockets x 2 cores x 2 threads, Linux's usual x86 numbering: the first thread of
# every core first (0-3), then their siblings (4-7); cores 0 and 1 on socket 0.
TWO_SOCKETS = [topology.Cpu(cpu=c, core=(c % 4) % 2, socket=(c % 4) // 2) for c in range(8)]


def test_this_machines_listing_parses():
    cpus = topology.parse_lscpu_p("# The following is the parsable format\n# CPU,Core,Socket,Node\n0,0,0,0\n1,1,0,0\n")
    assert cpus == [topology.Cpu(0, 0, 0, 0), topology.Cpu(1, 1, 0, 0)]
    assert topology.threads_per_core(cpus) == 1
    # An offline CPU has no core: left out.
    assert len(topology.parse_lscpu_p("# CPU,Core,Socket,Node\n0,0,0,0\n1,,,\n")) == 1


def test_whole_cores_spread_over_sockets_with_or_without_their_siblings():
    assert topology.cores(TWO_SOCKETS)[(0, 0)] == [0, 4]
    assert topology.whole_cores(TWO_SOCKETS, 1) == [0, 4]
    assert topology.whole_cores(TWO_SOCKETS, 2) == [0, 2, 4, 6]  # a core on each socket
    assert topology.whole_cores(TWO_SOCKETS, 2, smt=False) == [0, 2]  # SMT off by affinity
    assert topology.whole_cores(TWO_SOCKETS, 4) == list(range(8))
    # Only cores whose every thread the process may use (taskset -c 0-2,4-6: both cores
    # of socket 0 whole, of socket 1 only core 0).
    usable = {0, 1, 2, 4, 5, 6}
    assert topology.whole_cores(TWO_SOCKETS, 3, usable=usable) == [0, 1, 2, 4, 5, 6]
    with pytest.raises(UsageError, match=r"4 physical core\(s\) asked for; this machine lets dbarena use 3"):
        topology.whole_cores(TWO_SOCKETS, 4, usable=usable)


def test_smt_control(tmp_path):
    (tmp_path / "control").write_text("notsupported\n")
    assert smt.read(tmp_path / "control") == "notsupported"
    (tmp_path / "control").write_text("")
    assert smt.read(tmp_path / "control") == "unknown" and smt.read(tmp_path / "missing") == "unknown"


HEAD = 'schema = 1\nname = "c"\n[sweep]\nlevels = [1]\nduration_s = 2\n[[workloads]]\nworkload = "pgbench-select-only"\n'


def test_the_cpus_axis_makes_a_variant_per_core_count_and_smt_mode():
    s = study.parse(HEAD + '[cpus]\nserver = [1, 2]\nsmt = ["off", "on"]\nsmt_emulate = true\n', "c.toml")
    assert [(v.name, v.cores, v.smt) for v in s.variants] == [
        ("1core_smt-off", 1, "off"), ("1core_smt-on", 1, "on"), ("2cores_smt-off", 2, "off"),
        ("2cores_smt-on", 2, "on")]
    assert s.smt_emulate and s.load_generator == "rest"
    crossed = study.parse(HEAD + '[variants.a]\npostgres = { work_mem = "8MB" }\n[cpus]\nserver = [1]\n', "c.toml")
    assert [(v.name, v.settings_for("postgres")) for v in crossed.variants] == [("a_1core", {"work_mem": "8MB"})]


@pytest.mark.parametrize("text, fragment", [
    ('[cpus]\nserver = []\n', "cpus.server"),
    ('[cpus]\nserver = [0]\n', "cpus.server"),
    ('[cpus]\nserver = [1]\nsmt = ["maybe"]\n', "cpus.smt"),
    ('[cpus]\nserver = [1]\nload_generator = "elsewhere"\n', "cpus.load_generator"),
    ('[engines.postgres]\ntarget = "postgresql://u@db/x"\n[cpus]\nserver = [1]\n', "needs throwaway instances"),
])
def test_a_bad_cpus_table_is_one_line_naming_the_key(text, fragment):
    with pytest.raises(study.StudyError, match=fragment.replace(".", r"\.")):
        study.parse(HEAD + text, "c.toml")


def test_placements_choose_the_cpus_and_put_the_load_generator_on_the_rest(monkeypatch):
    monkeypatch.setattr(topology, "read", lambda: TWO_SOCKETS)
    monkeypatch.setattr(placement.os, "sched_getaffinity", lambda pid: set(range(8)))
    s = study.parse(HEAD + '[cpus]\nserver = [1, 4]\n', "c.toml")
    where = placement.placements(s, plan.expand(s, lambda e: 8))
    one, four = where[("postgres", "1core")], where[("postgres", "4cores")]
    assert (one.server, one.loadgen, one.note) == ((0, 4), (1, 2, 3, 5, 6, 7), "")
    # Nothing left: the load generator shares the server's CPUs, and the run says so.
    assert four.server == tuple(range(8)) and four.loadgen == tuple(range(8)) and "no CPU left" in four.note
    assert one.key() == {"cpus.server": "0,4", "cpus.load_generator": "1-3,5-7"}


def test_an_emulated_smt_axis_picks_threads_by_affinity(monkeypatch):
    monkeypatch.setattr(topology, "read", lambda: TWO_SOCKETS)
    emulated = study.parse(HEAD + '[cpus]\nserver = [1]\nsmt = ["off", "on"]\nsmt_emulate = true\n', "c.toml")
    monkeypatch.setattr(placement.os, "sched_getaffinity", lambda pid: set(range(8)))
    where = placement.placements(emulated, plan.expand(emulated, lambda e: 8))
    assert where[("postgres", "1core_smt-off")].server == (0,) and where[("postgres", "1core_smt-on")].server == (0, 4)
    assert where[("postgres", "1core_smt-off")].facts()["smt_by"] == "affinity (one thread per core)"


# file -> (CPUs online, sockets, physical cores, threads per core), as SOURCES.tsv reads
# each machine; whole_cores(2): two cores on two sockets where there are two.
REAL = {
    "x86_64-2socket-xeon-gold-6138-smt.lscpu-e": (80, 2, 40, 2, [0, 20, 40, 60]),
    "x86_64-2socket-xeon-e5-2670-smt.lscpu-e": (32, 2, 16, 2, [0, 8, 16, 24]),
    "x86_64-2socket-xeon-platinum-8360y-smt.lscpu-e": (144, 2, 72, 2, [0, 36, 72, 108]),
    "x86_64-2socket-xeon-nehalem-dell-r710-smt.lscpu-p": (16, 2, 8, 2, [0, 1, 8, 9]),  # sockets interleave
    "x86_64-2socket-xeon-x5670-smt.lscpu-p-cpu-core-socket": (24, 2, 12, 2, [0, 1, 12, 13]),
    "x86_64-2socket-epyc-7451-smt.lscpu-p": (96, 2, 48, 2, [0, 24, 48, 72]),
    "x86_64-4socket-xeon-x7550-smt.lscpu-p": (64, 4, 32, 2, [0, 1, 32, 33]),
    "x86_64-1socket-core-i7-1165g7-smt.lscpu-p": (8, 1, 4, 2, [0, 1, 4, 5]),
    "x86_64-1socket-core-i5-m560-smt.lscpu-p": (4, 1, 2, 2, [0, 1, 2, 3]),
    "x86_64-1socket-epyc-milan-noctua2-login-smt.lscpu-e": (128, 1, 64, 2, [0, 1, 64, 65]),
    "x86_64-1socket-core-i9-13900h-hybrid-smt.lscpu-e": (20, 1, 14, 2, [0, 1, 2, 3]),  # P-cores first
    "aarch64-1socket-neoverse-n1-80c.lscpu-e": (80, 1, 80, 1, [0, 1]),
    "aarch64-1socket-ampere-emag-32c.lscpu-p-cpu-core-socket": (32, 1, 32, 1, [0, 1]),
    "aarch64-2socket-thunderx2-smt4.lscpu-e": (256, 2, 64, 4, [0, 32, 64, 96, 128, 160, 192, 224]),
    "ppc64-power7-lpar-64cpu-smt4.lscpu-p": (64, 16, 16, 4, [0, 1, 2, 3, 4, 5, 6, 7]),
    "ppc64le-2socket-power9-smt-off.lscpu-p-cpu-core-socket": (32, 2, 32, 1, [0, 64]),
    "ppc64le-4socket-power8e-smt-off.lscpu-p-cpu-core-socket": (20, 4, 20, 1, [0, 40]),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_topologies(name):
    online, sockets, cores, per_core, two = REAL[name]
    cpus = topology.parse((FIXTURES / name).read_text())
    assert (len(cpus), topology.sockets(cpus), len(topology.cores(cpus)), topology.threads_per_core(cpus)) == \
        (online, sockets, cores, per_core)
    assert topology.whole_cores(cpus, 2) == two
    # SMT off by affinity: one thread of each of the same cores.
    assert len(topology.whole_cores(cpus, 2, smt=False)) == 2
    with pytest.raises(UsageError, match=f"this machine lets dbarena use {cores} whole core"):
        topology.whole_cores(cpus, cores + 1)


def test_offline_cpus_are_left_out():
    cpus = topology.parse((FIXTURES / "aarch64-a64fx-fugaku-offline-cpus.lscpu-e").read_text())
    assert len(cpus) == 50 and not {c.cpu for c in cpus} & set(range(2, 12))


@pytest.mark.parametrize("name, said", [("s390x-kvm-nested-guest.smt-control", "notsupported"),
                                        ("loongarch64-kvm-guest.smt-control", "notimplemented")])
def test_what_a_vms_kernel_says_of_smt(name, said):
    assert smt.read(FIXTURES / name) == said


def test_power_smt_modes_are_threads_per_core_by_affinity(monkeypatch):
    # POWER7 under PowerVM, SMT4: CPUs 0-3 are one core.
    power = topology.parse((FIXTURES / "ppc64-power7-lpar-64cpu-smt4.lscpu-p").read_text())
    assert topology.whole_cores(power, 1, smt=2) == [0, 1]
    assert topology.whole_cores(power, 2, smt=4) == [0, 1, 2, 3, 4, 5, 6, 7]
    with pytest.raises(UsageError, match="SMT8 asked for; these cores have 4 hardware thread"):
        topology.whole_cores(power, 1, smt=8)
    s = study.parse(HEAD + '[cpus]\nserver = [4]\nsmt = [1, 2, 4]\nsmt_emulate = true\n', "c.toml")
    assert [v.name for v in s.variants] == ["4cores_smt-1", "4cores_smt-2", "4cores_smt-4"]
    monkeypatch.setattr(topology, "read", lambda: power)
    monkeypatch.setattr(placement.os, "sched_getaffinity", lambda pid: set(range(64)))
    where = placement.placements(s, plan.expand(s, lambda e: 64))
    assert len(where[("postgres", "4cores_smt-2")].server) == 8
    assert where[("postgres", "4cores_smt-2")].facts()["smt_by"] == "affinity (2 threads per core)"
    # Without smt_emulate they are the kernel's modes (smt.py decides whether it can).
    assert [v.smt for v in study.parse(HEAD + '[cpus]\nserver = [4]\nsmt = [1, 2]\n', "c.toml").variants] == ["1", "2"]
