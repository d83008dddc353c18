"""The fleet's probe-outlier rule (stats/outliers.py): median +- 3 MADs within a kind of
machine, for groups of 3 or more hosts."""

from __future__ import annotations

import json
from pathlib import Path

from dbarena.stats import outliers
from dbarena.stats.outliers import HostProbe

FIXTURES = Path(__file__).parents[1] / "fixtures" / "probe" / "fleet"
KIND = {"cpu_model": "Intel Xeon", "hardware_threads": 2}


def probe(cpu: float, memory: float = 10000.0, fsync: float = 2.0) -> dict:
    return {"cpu_events_per_s": cpu, "memory_mib_per_s": memory, "fsync_p99_ms": fsync}


def test_a_host_far_below_its_kind_is_flagged_with_how_far():
    hosts = [HostProbe("a", KIND, probe(1000)), HostProbe("b", KIND, probe(1040)),
             HostProbe("c", KIND, probe(980)), HostProbe("slow", KIND, probe(520))]
    (found,) = outliers.findings(hosts)
    assert found.flagged and found.host == "slow"
    # The median of the four is 990: 520 is 47 % below it.
    assert found.text.startswith("probe CPU 47 % below its group's median (4 hosts of Intel Xeon x 2 threads)")


def test_a_slow_fsync_is_said_as_a_multiple():
    hosts = [HostProbe(n, KIND, probe(1000, fsync=f)) for n, f in (("a", 2.0), ("b", 2.1), ("c", 7.0))]
    (found,) = outliers.findings(hosts)
    assert found.host == "c" and "fsync p99 3.3x its group's median" in found.text


def test_the_ordinary_spread_of_a_group_is_not_flagged():
    # Within 3 MADs of the median.
    assert outliers.findings([HostProbe(n, KIND, probe(v)) for n, v in (("a", 900), ("b", 1000), ("c", 1200))]) == []
    # Beyond 3 MADs of a tight group, but by less than MIN_SHARE: noise, not a bad machine.
    small = 1000 * (1 - outliers.MIN_SHARE / 2)
    assert outliers.findings([HostProbe(n, KIND, probe(v)) for n, v in (("a", 1000), ("b", 1001), ("c", small))]) == []


def test_two_hosts_cannot_tell_and_kinds_are_not_mixed():
    other = {"cloud": "aws", "instance_type": "c7g.large", "cpu_model": "Neoverse-V1", "hardware_threads": 2}
    hosts = [HostProbe("a", KIND, probe(1000)), HostProbe("b", KIND, probe(300)),
             HostProbe("g1", other, probe(3000)), HostProbe("g2", other, probe(3100)),
             HostProbe("g3", other, probe(2900)), HostProbe("none", KIND, {})]
    (found,) = outliers.findings(hosts)
    assert not found.flagged and found.host == "a and b"
    # Means only (probes of a dbarena before best seconds): a pair is never flagged.
    assert found.text == "probe: cannot tell with 2 hosts of Intel Xeon x 2 threads which one is off (CPU 3.3x apart)"
    assert outliers.group_of(other) == "aws c7g.large"


def test_free_probes_of_this_machine_do_not_flag_each_other_on_cpu_or_memory():
    """Real probes (dbarena probe --seconds 6, sysbench 1.0.20) of the shared 2-CPU build
    machine, one after the other: their CPU figures spread over 2x with the other
    engineers' load, and the rule does not take that spread for a bad host."""
    free = [HostProbe(f.stem, KIND, json.loads(f.read_text())) for f in sorted(FIXTURES.glob("free-*.json"))]
    assert not any("cpu_best_events_per_s" in h.probe for h in free)  # means: the rule's fallback
    assert len(free) >= outliers.MIN_HOSTS
    said = [f.text for f in outliers.findings(free)]
    assert not [t for t in said if "CPU" in t or "memory" in t], said


def best(cpu: float, cpu_best: float | None, memory: float = 10000.0, memory_best: float | None = None) -> dict:
    return {**probe(cpu, memory), "cpu_best_events_per_s": cpu_best, "memory_best_mib_per_s": memory_best}


def test_of_two_hosts_the_slower_is_flagged_beyond_the_pair_factor_of_best_seconds():
    hosts = [HostProbe("a", KIND, best(8000, 8800)), HostProbe("b", KIND, best(900, 1000))]
    (found,) = outliers.findings(hosts)
    assert found.flagged and found.host == "b"
    assert found.text == ("probe CPU (best second) 8.8x below a's, the other host of Intel Xeon x 2 threads "
                          "(2 hosts: the slower is flagged beyond 3x)")
    # Within the factor: said, not flagged; close: nothing said.
    (unsure,) = outliers.findings([HostProbe("a", KIND, best(8000, 8800)), HostProbe("b", KIND, best(4000, 4400))])
    assert not unsure.flagged and unsure.text.endswith("which one is off (CPU 2.0x apart)")
    assert outliers.findings([HostProbe("a", KIND, best(8000, 8800)), HostProbe("b", KIND, best(8000, 8000))]) == []


def test_best_seconds_are_used_only_where_every_host_has_one():
    # b's best second is missing (a probe of an older dbarena): the means decide, and a
    # pair is not flagged on means.
    (found,) = outliers.findings([HostProbe("a", KIND, best(8000, 8800)), HostProbe("b", KIND, best(900, None))])
    assert not found.flagged and "CPU 8.9x apart" in found.text
    # A group of three by best seconds, said so.
    hosts = [HostProbe("a", KIND, best(5000, 8800)), HostProbe("b", KIND, best(8000, 8700)),
             HostProbe("c", KIND, best(4000, 1000))]
    (flag,) = outliers.findings(hosts)
    assert flag.host == "c" and flag.text.startswith("probe CPU (best second) 89 % below its group's median")


def test_real_probes_a_host_given_a_quarter_cpu_is_flagged_against_any_free_one_and_free_ones_never():
    """Real probes (dbarena probe --seconds 6 --json) of this 2-CPU machine: idle, beside
    one or two CPU hogs, beside hogs that come and go, and one in a cgroup given a
    quarter of a CPU (cpu.cfs_quota_us 25000 of 100000)."""
    free = [HostProbe(f.stem, KIND, json.loads(f.read_text()))
            for f in sorted(FIXTURES.glob("best-second-free-*.json"))]
    slow = HostProbe("slow", KIND, json.loads((FIXTURES / "best-second-cgroup-quarter-cpu.json").read_text()))
    assert len(free) == 4 and all(h.probe["cpu_best_events_per_s"] for h in [*free, slow])
    for i, a in enumerate(free):
        for b in free[i + 1:]:
            assert not [f for f in outliers.findings([a, b]) if f.flagged], (a.host, b.host)
        (found,) = [f for f in outliers.findings([a, slow]) if f.flagged]
        assert found.host == "slow" and found.text.startswith("probe CPU (best second)")
    # And in a group of all five, by the median rule. (Not fsync's p99: two CPU hogs on
    # the same two CPUs delayed the fsync thread's wake-ups 25x, which a fleet of hosts
    # sharing one machine shows and one of separate machines would not.)
    flagged = [f for f in outliers.findings([*free, slow]) if f.flagged and ("CPU" in f.text or "memory" in f.text)]
    assert [f.host for f in flagged] == ["slow"]
