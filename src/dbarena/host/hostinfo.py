"""Facts about the machine the benchmark runs on, read from lscpu, /proc and /sys.

Study B was argued over because "32 vCPU" meant 32 cores on Graviton and 16 cores x 2
hyper-threads on x86: every run records sockets, physical cores, hardware threads and
threads per core separately. The parsers are pure (text in, dict out) and are tested
on captures from x86, ARM (Ampere Altra) and POWER9 machines; `host_facts()` is the
only part that reads the machine. The kernel's settings that decided real results
(huge pages, preemption, governor ...) are tuning.py's.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
from pathlib import Path
from typing import Any

from dbarena import execute
from dbarena.host import topology, tuning

# ARM /proc/cpuinfo names no model, only implementer and part numbers (lscpu decodes
# them, older lscpu does not). The parts one meets in database servers, from Arm's
# and Ampere's technical reference manuals.
ARM_PARTS = {
    ("0x41", "0xd0c"): "Neoverse-N1",  # AWS Graviton2, Ampere Altra
    ("0x41", "0xd40"): "Neoverse-V1",  # AWS Graviton3
    ("0x41", "0xd49"): "Neoverse-N2",
    ("0x41", "0xd4f"): "Neoverse-V2",  # AWS Graviton4, NVIDIA Grace
    ("0x41", "0xd8e"): "Neoverse-N3",
    ("0x41", "0xd84"): "Neoverse-V3",
    ("0x41", "0xd08"): "Cortex-A72",  # AWS Graviton (a1), Raspberry Pi 4
    ("0x41", "0xd0b"): "Cortex-A76",
    ("0xc0", "0xac3"): "AmpereOne",
    ("0xc0", "0xac4"): "AmpereOne",
}
ARM_IMPLEMENTERS = {"0x41": "ARM", "0xc0": "Ampere", "0x43": "Cavium", "0x48": "HiSilicon", "0x51": "Qualcomm",
                    "0x61": "Apple", "0x46": "Fujitsu"}

_SIZE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]i?B?|[KMGT])?\b", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


def _size_bytes(text: str | None) -> int | None:
    """'32 MiB (1 instance)', '10240K', '512 KiB' -> bytes."""
    if not text:
        return None
    m = _SIZE.match(text.strip())
    if m is None:
        return None
    unit = (m["unit"] or "").upper()[:1]
    return int(float(m["n"]) * _UNITS[unit])


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "", "-") else None
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "", "-") else None
    except ValueError:
        return None


def parse_lscpu(text: str) -> dict[str, Any]:
    """`lscpu` output (the flat form it prints into a pipe, or the indented one) as a
    dict of the fields we use; absent fields are left out."""
    raw: dict[str, str] = {}
    numa_with_cpus = 0
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if re.fullmatch(r"NUMA node\d+ CPU\(s\)", key):
            numa_with_cpus += bool(value)
            continue
        raw.setdefault(key, value)
    facts: dict[str, Any] = {}
    for name, key in (("architecture", "Architecture"), ("cpu_vendor", "Vendor ID"), ("cpu_model", "Model name"),
                      ("hypervisor", "Hypervisor vendor"), ("virtualization_type", "Virtualization type")):
        if raw.get(key) and raw[key] != "-":
            facts[name] = raw[key]
    for name, key in (("hardware_threads", "CPU(s)"), ("threads_per_core", "Thread(s) per core"),
                      ("cores_per_socket", "Core(s) per socket"), ("sockets", "Socket(s)"),
                      ("numa_nodes", "NUMA node(s)")):
        if _int(raw.get(key)) is not None:
            facts[name] = _int(raw[key])
    if "cores_per_socket" not in facts and (per_cluster := _int(raw.get("Core(s) per cluster"))) is not None:
        facts["cores_per_socket"] = per_cluster * (_int(raw.get("Cluster(s)")) or 1)
    if numa_with_cpus:
        facts["numa_nodes_with_cpus"] = numa_with_cpus
    for name, key in (("max_mhz", "CPU max MHz"), ("min_mhz", "CPU min MHz"), ("current_mhz", "CPU MHz")):
        if _float(raw.get(key)) is not None:
            facts[name] = _float(raw[key])
    for level in ("L2", "L3"):
        cache = raw.get(f"{level} cache") or raw.get(level)
        if _size_bytes(cache) is not None:
            # lscpu >= 2.34 prints the sum over all instances, older ones per core or
            # per cluster: keep its words next to the number.
            facts[f"{level.lower()}_cache"] = cache
    if "sockets" in facts and "cores_per_socket" in facts:
        facts["physical_cores"] = facts["sockets"] * facts["cores_per_socket"]
    elif "hardware_threads" in facts and facts.get("threads_per_core"):
        facts["physical_cores"] = facts["hardware_threads"] // facts["threads_per_core"]
    return facts


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """/proc/cpuinfo of x86 ('model name', 'physical id', 'core id'), ARM (implementer
    and part) or POWER ('cpu', 'clock')."""
    processors = 0
    cores: set[tuple[str, str]] = set()
    sockets: set[str] = set()
    first: dict[str, str] = {}
    current_socket = "0"
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "processor":
            processors += 1
        elif key == "physical id":
            current_socket = value
            sockets.add(value)
        elif key == "core id":
            cores.add((current_socket, value))
        first.setdefault(key, value)
    facts: dict[str, Any] = {}
    if processors:
        facts["hardware_threads"] = processors
    if cores:
        facts["physical_cores"] = len(cores)
        facts["sockets"] = len(sockets) or 1
    model = first.get("model name") or first.get("cpu") or first.get("Hardware")
    implementer, part = first.get("CPU implementer"), first.get("CPU part")
    if not model and implementer and part:
        decoded = ARM_PARTS.get((implementer.lower(), part.lower()))
        model = decoded or f"{ARM_IMPLEMENTERS.get(implementer.lower(), implementer)} part {part}"
    if model:
        facts["cpu_model"] = model
    vendor = first.get("vendor_id") or (ARM_IMPLEMENTERS.get(implementer.lower()) if implementer else None)
    if vendor:
        facts["cpu_vendor"] = vendor
    mhz = _float(first.get("cpu MHz")) or _float((first.get("clock") or "").removesuffix("MHz"))
    if mhz:
        facts["current_mhz"] = mhz
    if "platform" in first:
        facts["platform"] = first["platform"]
    return facts


def parse_meminfo(text: str) -> dict[str, int | None]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            values[key.strip()] = value.strip()
    facts: dict[str, int | None] = {}
    for name, key in (("memory_bytes", "MemTotal"), ("swap_bytes", "SwapTotal")):
        if key in values:
            facts[name] = _size_bytes(values[key].replace(" kB", "K"))
    return facts


def parse_os_release(text: str) -> str | None:
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip('"')
    return values.get("PRETTY_NAME") or " ".join(filter(None, (values.get("NAME"), values.get("VERSION")))) or None


def container_kind(cgroup: str, markers: set[str]) -> str | None:
    """'docker', 'podman', 'kubernetes', 'lxc' or None, from /proc/1/cgroup text and
    which marker files exist (/.dockerenv, /run/.containerenv)."""
    if "/.dockerenv" in markers:
        return "docker"
    if "/run/.containerenv" in markers:
        return "podman"
    for needle, kind in (("kubepods", "kubernetes"), ("docker", "docker"), ("libpod", "podman"), ("lxc", "lxc")):
        if needle in cgroup:
            return kind
    return None


def cloud_instance(dmi: dict[str, str]) -> dict[str, str]:
    """The cloud and instance type, where DMI tells them (AWS puts the instance type in
    product_name; other clouds name only themselves)."""
    vendor, product = dmi.get("sys_vendor", ""), dmi.get("product_name", "")
    if "Amazon EC2" in vendor and product:
        return {"cloud": "aws", "instance_type": product}
    if product == "Google Compute Engine":
        return {"cloud": "gcp"}
    if "Microsoft" in vendor and product == "Virtual Machine":
        return {"cloud": "azure"}
    if vendor.startswith("Alibaba"):
        return {"cloud": "alibaba", **({"instance_type": product} if product else {})}
    if vendor == "Hetzner":
        return {"cloud": "hetzner", **({"instance_type": product} if product else {})}
    if "OpenStack" in product or "OpenStack" in vendor:
        return {"cloud": "openstack"}
    return {}


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def parse_cpu_list(text: str) -> set[int]:
    """A kernel CPU list ('0-3,8,10-11', as in cpuset.cpus or Cpus_allowed_list)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part.strip():
            continue
        first, _, last = part.strip().partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def cpu_list(cpus: set[int] | list[int]) -> str:
    """The kernel's notation for a set of CPUs: {0, 1, 2, 5} -> '0-2,5'."""
    out: list[str] = []
    for cpu in sorted(cpus):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == cpu - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{cpu}"
        elif out and "-" not in out[-1] and int(out[-1]) == cpu - 1:
            out[-1] = f"{out[-1]}-{cpu}"
        else:
            out.append(str(cpu))
    return ",".join(out)


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2's cpu.max ('200000 100000': at most 2 CPUs' time per period; 'max
    100000': no quota) as cores, or None."""
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota, period = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return quota / period if period > 0 else None


def cgroup_path(proc_self_cgroup: str) -> str | None:
    """This process's cgroup v2 path ('0::/system.slice/x.service'), or None on v1."""
    for line in proc_self_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def usable_cpu_facts(affinity: set[int], quota_cores: float | None, cpus: list[topology.Cpu]) -> dict[str, Any]:
    """What this process may actually use: the CPUs of its affinity (taskset, a cgroup
    cpuset: the kernel narrows the affinity to the cpuset), the physical cores they
    belong to, and the cgroup's CPU quota; `effective_hardware_threads`, what the sweep's
    percentages, per-core figures and the load-generator warning count, is the smaller
    of the CPUs and the quota (rounded down, at least 1)."""
    facts: dict[str, Any] = {"usable_cpus": cpu_list(affinity), "usable_hardware_threads": len(affinity)}
    core_of = {c.cpu: (c.socket, c.core) for c in cpus}
    if affinity and all(c in core_of for c in affinity):  # else the topology is not known
        facts["usable_physical_cores"] = len({core_of[c] for c in affinity})
    effective = len(affinity)
    if quota_cores is not None:
        facts["cpu_quota_cores"] = round(quota_cores, 3)
        effective = max(1, min(effective, int(quota_cores)))
    facts["effective_hardware_threads"] = effective
    return facts


def read_usable_cpus() -> dict[str, Any]:
    """usable_cpu_facts for this process, read through psutil (affinity) and the cgroup
    file system (quota: psutil has no cgroup view)."""
    import psutil

    try:
        affinity = set(psutil.Process().cpu_affinity() or [])
    except (AttributeError, psutil.Error, OSError):  # a platform without affinity
        affinity = set(range(psutil.cpu_count() or 1))
    return usable_cpu_facts(affinity or {0}, _quota_cores(), topology.read_sysfs())


def _quota_cores() -> float | None:
    path = cgroup_path(_read("/proc/self/cgroup"))
    return parse_cpu_max(_read(f"/sys/fs/cgroup{path.rstrip('/')}/cpu.max")) if path is not None else None


def hardware_threads() -> int:
    """The hardware threads this process may use (its CPU affinity and cgroup quota):
    what the sweep's percentages refer to; the machine's total is in host_facts. Cheap
    (the --help text calls it): the affinity syscall psutil would make, no topology."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    quota = _quota_cores()
    return max(1, min(usable, int(quota))) if quota is not None else usable


def host_facts() -> dict[str, Any]:
    """Everything above, read from this machine. lscpu wins where it and /proc disagree
    (it knows sockets and cores on ARM and POWER); missing sources are skipped."""
    lscpu_text = ""
    if shutil.which("lscpu"):
        try:
            done = execute.run(["lscpu"], timeout=30, env={**os.environ, "LC_ALL": "C"})
            lscpu_text = done.stdout if done.returncode == 0 else ""
        except Exception:  # provenance must never stop a benchmark
            lscpu_text = ""
    facts = {**parse_cpuinfo(_read("/proc/cpuinfo")), **parse_lscpu(lscpu_text)}
    facts.setdefault("hardware_threads", os.cpu_count() or 1)
    # The machine's figures above; what this process may use beside them (taskset,
    # cpuset, quota): a run under `taskset -c 0` on 2 threads records both.
    facts.update(read_usable_cpus())
    facts.setdefault("architecture", platform.machine())
    if facts.get("threads_per_core") is None and facts.get("physical_cores"):
        facts["threads_per_core"] = facts["hardware_threads"] // facts["physical_cores"]
    cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq"
    # The kernel's settings (huge pages, THP, preemption, frequency governor and driver,
    # idle states, NUMA balancing, irqbalance), each "not exposed" where missing.
    facts.update(tuning.facts())
    base_khz = _int(_read(f"{cpufreq}/base_frequency").strip())
    if base_khz:
        facts["base_mhz"] = base_khz / 1000
    max_khz = _int(_read(f"{cpufreq}/cpuinfo_max_freq").strip())
    if max_khz and "max_mhz" not in facts:
        facts["max_mhz"] = max_khz / 1000
    facts.update(parse_meminfo(_read("/proc/meminfo")))
    dmi = {k: _read(f"/sys/class/dmi/id/{k}").strip() for k in ("sys_vendor", "product_name")}
    facts.update(cloud_instance(dmi))
    if dmi.get("product_name"):
        facts["dmi_product"] = " ".join(filter(None, (dmi["sys_vendor"], dmi["product_name"])))
    markers = {p for p in ("/.dockerenv", "/run/.containerenv") if os.path.exists(p)}
    container = container_kind(_read("/proc/1/cgroup"), markers)
    if container:
        facts["container"] = container
    facts.update({
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "distribution": parse_os_release(_read("/etc/os-release")),
        "python": platform.python_version(),
    })
    return facts


def cpu_model(cpuinfo: str) -> str | None:
    """The CPU model named by /proc/cpuinfo text (decoded for ARM)."""
    return parse_cpuinfo(cpuinfo).get("cpu_model")
