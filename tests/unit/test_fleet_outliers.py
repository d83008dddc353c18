"""The fleet's probe-outlier rule (fleet/outliers.py): median +- 3 MADs within a kind of
machine, for groups of 3 or more hosts."""

from __future__ import annotations

import json
from pathlib import Path

from dbarena.fleet import outliers
from dbarena.fleet.outliers import HostProbe

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
    assert found.text == "probe: cannot tell with 2 hosts of Intel Xeon x 2 threads which one is off"
    assert outliers.group_of(other) == "aws c7g.large"


def test_free_probes_of_this_machine_do_not_flag_each_other_on_cpu_or_memory():
    """Real probes (dbarena probe --seconds 6, sysbench 1.0.20) of the shared 2-CPU build
    machine, one after the other: their CPU figures spread over 2x with the other
    engineers' load, and the rule does not take that spread for a bad host."""
    free = [HostProbe(f.stem, KIND, json.loads(f.read_text())) for f in sorted(FIXTURES.glob("free-*.json"))]
    assert len(free) >= outliers.MIN_HOSTS
    said = [f.text for f in outliers.findings(free)]
    assert not [t for t in said if "CPU" in t or "memory" in t], said
