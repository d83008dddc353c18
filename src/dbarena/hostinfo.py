"""Facts about the machine the load generator runs on."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path


def hardware_threads() -> int:
    """Logical CPUs of the machine (what the sweep's percentages refer to)."""
    return os.cpu_count() or 1


def cpu_model(cpuinfo: str) -> str | None:
    """The CPU model from /proc/cpuinfo text (x86 'model name', ARM/POWER 'cpu'/'Hardware')."""
    for key in ("model name", "cpu model", "cpu", "Hardware"):
        for line in cpuinfo.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return None


def host_facts() -> dict:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        cpuinfo = ""
    return {
        "hostname": socket.gethostname(),
        "architecture": platform.machine(),
        "hardware_threads": hardware_threads(),
        "cpu_model": cpu_model(cpuinfo),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }
