"""The host probe's parsers, on sysbench 1.0.20's outputs captured on this project's
build machine (tests/fixtures/probe/, byte for byte), and its rule for how long it takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbarena.host import probe

FIXTURES = Path(__file__).parents[1] / "fixtures" / "probe"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_cpu_events_per_second():
    assert probe.parse_cpu(text("sysbench-1.0.20-cpu-2threads.txt")) == 2440.98
    assert probe.parse_version(text("sysbench-1.0.20-cpu-2threads.txt")) == "1.0.20"


def test_memory_mib_per_second():
    assert probe.parse_memory(text("sysbench-1.0.20-memory-2threads.txt")) == 13935.06


def test_best_seconds_from_the_interval_reports():
    # --report-interval=1: "[ 1s ] thds: 2 eps: 8754.95 ...", "[ 2s ] 56412.90 MiB/sec".
    assert probe.parse_cpu_seconds(text("sysbench-1.0.20-cpu-2threads-report-interval.txt")) == (8705.87, 8754.95)
    assert probe.parse_memory_seconds(text("sysbench-1.0.20-memory-2threads-report-interval.txt")) \
        == (49759.39, 56412.90)
    # A part shorter than a whole second reports none: no best second, the mean still.
    assert probe.parse_cpu_seconds(text("sysbench-1.0.20-cpu-2threads.txt")) == (2440.98, None)
    assert probe.parse_memory_seconds(text("sysbench-1.0.20-memory-2threads.txt")) == (13935.06, None)


def test_fileio_fsyncs_and_the_asked_percentile():
    assert probe.parse_fileio(text("sysbench-1.0.20-fileio-seqwr-fsync-all.txt")) == (199.71, 99, 16.12)


def test_one_output_is_not_taken_for_another():
    # The memory test prints no 'events per second'; fileio's prepare prints no fsyncs.
    with pytest.raises(probe.ProbeOutputError, match="events per second"):
        probe.parse_cpu(text("sysbench-1.0.20-memory-2threads.txt"))
    with pytest.raises(probe.ProbeOutputError, match="fsyncs/s"):
        probe.parse_fileio(text("sysbench-1.0.20-fileio-prepare.txt"))
    with pytest.raises(probe.ProbeOutputError, match="MiB transferred"):
        probe.parse_memory(text("sysbench-1.0.20-cpu-2threads.txt"))


def test_before_a_study_the_probe_is_a_share_of_it_at_most_the_default():
    assert probe.planned_seconds(None, 3600) == probe.DEFAULT_SECONDS
    share = int(120 * probe.SHARE_OF_STUDY)
    assert probe.planned_seconds(None, 120) == share < probe.DEFAULT_SECONDS
    # Too short a study for even the shortest probe: none.
    assert probe.planned_seconds(None, (probe.MIN_SECONDS - 1) / probe.SHARE_OF_STUDY) == 0
    # Asked: as asked, 0 none, at least the shortest.
    assert probe.planned_seconds(0, 3600) == 0
    assert probe.planned_seconds(45, 10) == 45
    assert probe.planned_seconds(1, 3600) == probe.MIN_SECONDS


@pytest.mark.parametrize("seconds", [probe.MIN_SECONDS, 4, 10, probe.DEFAULT_SECONDS, 301])
def test_the_parts_share_the_seconds_each_at_least_one(seconds):
    parts = probe.split(seconds)
    assert set(parts) == {"cpu", "memory", "fsync"}
    assert sum(parts.values()) == seconds and min(parts.values()) >= 1
    assert parts["fsync"] >= parts["cpu"] >= parts["memory"]


def test_a_probe_survives_its_json():
    p = probe.Probe(seconds=30, threads=2, cpu_events_per_s=1.5, memory_mib_per_s=2.0, fsync_per_s=3.0,
                    fsync_p99_ms=4.0, directory="/tmp", fs="ext4", tool="sysbench 1.0.20", problems=("x",))
    assert probe.Probe.from_dict(p.to_dict()) == p


def test_a_part_without_a_whole_second_says_so_in_the_table():
    # A real 6 s probe (tests/fixtures/probe/fleet/): its memory part of 1 s reported no second.
    import json

    p = probe.Probe.from_dict(json.loads((FIXTURES / "fleet" / "best-second-free-1.json").read_text()))
    rows = dict(probe.rows(p))
    assert rows["memory write, best second"] == "- (its 1 s part had no whole second)"
    assert rows["CPU, best second"] == "8,854 events/s"
