"""Where a throwaway instance keeps its data: the mount of a path (from a real
/proc/mounts of this project's Debian 12 VM), dataset estimates, and the refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbarena import workloads
from dbarena.host import datadir
from dbarena.errors import UsageError

MOUNTS = (Path(__file__).parent.parent / "fixtures" / "datadir" / "proc-mounts-debian12-vm.txt").read_text()


def test_the_mount_holding_a_path_is_the_longest_prefix():
    assert datadir.mount_of("/dev/shm/dbarena-pg-x/data", MOUNTS)["fs"] == "tmpfs"
    assert datadir.mount_of("/dev/shm", MOUNTS)["mount_point"] == "/dev/shm"
    root = datadir.mount_of("/tmp/dbarena-pg-y", MOUNTS)
    assert (root["fs"], root["device"], root["mount_point"]) == ("ext4", "/dev/vda", "/")
    assert "relatime" in root["mount_options"]
    assert datadir.mount_of("/devx", MOUNTS)["mount_point"] == "/"  # /dev is not a prefix of /devx


def test_dataset_estimates_come_from_each_tools_parameters():
    tools = workloads.TOOLS
    assert tools["pgbench"].dataset_bytes({"scale": 100}) == 1_600_000_000
    assert tools["sysbench"].dataset_bytes({"tables": 4, "table_size": 1_000_000}) == 1_000_000_000
    assert tools["tpcc-like"].dataset_bytes({"warehouses": 2}) == 200_000_000
    assert tools["mysqlslap"].dataset_bytes({"iterations": 1, "queries": 1000}) == 0


def test_what_cannot_hold_the_data_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(UsageError, match="absolute path"):
        datadir.resolve("fast-disk")
    with pytest.raises(UsageError, match="no such directory"):
        datadir.resolve(str(tmp_path / "nope"))
    assert datadir.resolve(str(tmp_path)) == tmp_path and datadir.resolve(None) is None
    if datadir.RAM_DISK.is_dir():
        assert datadir.resolve("tmpfs") == datadir.RAM_DISK
        # A RAM disk's room is also the memory available.
        assert 0 < datadir.free_bytes(datadir.RAM_DISK, "tmpfs") <= datadir.free_bytes(datadir.RAM_DISK, None)
    facts = datadir.facts(tmp_path, str(tmp_path))
    assert facts["choice"] == str(tmp_path) and facts["fs"]
