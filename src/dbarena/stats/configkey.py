"""Configuration keys: what must be equal for two points to be pooled or compared.

A point's key holds everything that decides its result apart from chance: engine and
flavour, the server's major version, the workload with its tool parameters and
options, threads and clients, duration (for timed tools) and warm-up, the server
settings the study applied, the variant, and the identity of the machine the server
ran on (CPU model, hardware threads, memory; for a --target, its address and the
cores and threads the user gave). Repeats of a point share a key; summaries never
pool points of different keys, and comparisons match keys apart from what they are
about (the host for a host comparison, the variant for an A/B), naming the field
that differs otherwise. Pure functions.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Iterable, Mapping, Sequence
from urllib.parse import urlsplit

from dbarena.records import JSON, JSONObject, json_object

# Fields of a key, in display order.
FIELDS = ("engine", "flavour", "server_major", "workload", "threads", "clients", "load_generators", "duration_s",
          "warmup_s", "params", "options", "instruments", "tls", "settings", "variant", "host")
# What a key without the field means (keys made before it existed say nothing of it):
# one load generator, not an unknown that would let a point of two pass for one; a
# plain connection (the tools' connections encrypted cost CPU on both ends: a point over
# TLS is another configuration, and a key that says nothing of it was not encrypted:
# store/migrations.py gave stored TLS points theirs).
DEFAULTS: JSONObject = {"load_generators": 1, "instruments": [], "tls": "off"}
# Fields whose entries are each known or not: a tool parameter one side's key does not
# hold (a CSV row without `scale`, an output that did not print it) is unknown there, not
# another value. Elsewhere an absent entry is a value: an option not given is the tool's
# default (pgbench's simple protocol), a setting not applied the server's.
_PER_ENTRY = ("params",)
# What a comparison may be "about" and the fields it then ignores.
ABOUT = {
    "host": ("host",),
    "variant": ("variant", "settings"),
    "server": ("server_major", "flavour"),
    "settings": ("settings",),
    "tls": ("tls",),
}

_MAJOR = re.compile(r"^(\d+)(?:\.(\d+))?")


def server_major(version: str | None, flavour: str | None) -> str | None:
    """'15.18 (Debian ...)' -> '15'; '10.11.6-MariaDB-0+deb12u1' -> '10.11': PostgreSQL's
    major is one number since 10, MySQL's and MariaDB's are two."""
    if not version:
        return None
    m = _MAJOR.match(version.strip())
    if m is None:
        return version.strip()
    if flavour == "postgresql" and int(m[1]) >= 10:
        return m[1]
    return f"{m[1]}.{m[2]}" if m[2] is not None else m[1]


def flavour_of(engine: str, version: str | None) -> str | None:
    """The flavour of a run stored before runs recorded theirs (store/migrations.py):
    known then only from the family's name and the server's version line."""
    if engine == "postgres":
        return "postgresql"
    if version is None:
        return None
    return "mariadb" if "mariadb" in version.lower() else "mysql"


def host_identity(host_facts: Mapping[str, JSON] | None, target_url: str | None = None,
                  server_cores: int | None = None, server_threads: int | None = None) -> JSONObject | None:
    """The machine the server ran on: this host for a throwaway instance; for a
    --target, its address and what the user said of it (its CPU is not visible)."""
    if target_url is not None:
        parts = urlsplit(target_url)
        return {"target": f"{parts.hostname}:{parts.port or ''}", "server_cores": server_cores,
                "server_threads": server_threads}
    if not host_facts:
        return None
    # What the machine is, not how its kernel was set: the kernel's version and its
    # settings (huge pages, transparent huge pages, the preemption model, the frequency
    # governor and driver, idle states, NUMA balancing, irqbalance: host/tuning.py) stay
    # out of the key, as the kernel and the governor always have. Repeats on one machine
    # across a kernel upgrade or a sysctl pool, and an A/B of two labels on it is not
    # refused for them; where one changed, stats/environment.py names it, so History's
    # causes and the report's "What differs" say so beside the figures. In the key, a
    # fact one run could not read ("not exposed": no debugfs, a container's view) would
    # split repeats of one configuration, and a run recorded before dbarena read them
    # would match none of its successors.
    memory = host_facts.get("memory_bytes")
    identity: JSONObject = {
        "cpu_model": host_facts.get("cpu_model"),
        "hardware_threads": host_facts.get("hardware_threads"),
        # Rounded: the kernel's MemTotal moves by a few MB between boots.
        "memory_gib": round(memory / 2 ** 30) if isinstance(memory, (int, float)) else None,
    }
    # A run confined to some of the machine's CPUs (taskset, a cpuset, a CPU quota)
    # measured another configuration; a run on the whole machine keeps the key it had
    # before dbarena recorded the CPUs a run may use.
    usable, threads = _count(host_facts.get("usable_hardware_threads")), _count(host_facts.get("hardware_threads"))
    if (usable is not None and usable < (threads or usable)) or host_facts.get("cpu_quota_cores") is not None:
        identity["usable_cpus"] = host_facts.get("usable_cpus")
        identity["cpu_quota_cores"] = host_facts.get("cpu_quota_cores")
    return identity


def build(*, engine: str, workload: str, threads: int, clients: int, duration_s: int | None, warmup_s: int,
          params: Mapping[str, JSON], options: Mapping[str, str], settings: Mapping[str, str], variant: str,
          server_version: str | None, flavour: str | None, host: Mapping[str, JSON] | None,
          load_generators: int = 1, instruments: Sequence[str] = (), tls: str | None = None) -> JSONObject:
    """A point's key. duration_s is None for a tool bounded by queries (mysqlslap).
    load_generators: the hosts that drove the point together (fleet run --together);
    in the key only when more than one, so that every other key stays as it was.
    instruments: what the tool measured beyond its bare run at a cost to its figures
    (Tool.instruments: pgbench's -P 1, its per-transaction log), in the key only when
    there is any: a bare run's key is the one it always was.
    tls: the protocol and cipher the tools' connections were encrypted with (tls_of), in
    the key only when they were: a plain run's key is the one it always was.
    The key is a JSON document: what the store keeps (points.config) and digests."""
    key: JSONObject = {
        "engine": engine,
        "flavour": flavour,
        "server_major": server_major(server_version, flavour),
        "workload": workload,
        "threads": threads,
        "clients": clients,
        "duration_s": duration_s,
        "warmup_s": warmup_s,
        "params": dict(sorted(params.items())),
        "options": dict(sorted(options.items())),
        # Setting names are case-insensitive in both engines.
        "settings": {k.lower(): str(v) for k, v in sorted(settings.items())},
        "variant": variant,
        "host": dict(host) if host is not None else None,
    }
    if load_generators > 1:
        key["load_generators"] = load_generators
    if instruments:
        key["instruments"] = list(instruments)
    if tls is not None:
        key["tls"] = tls
    return key


def tls_of(target_facts: Mapping[str, JSON] | None) -> str | None:
    """What a run's connection to its server was encrypted with, as its target facts
    recorded what the server saw ({"ssl": true, "version": "TLSv1.3", "cipher": ...}):
    'TLSv1.3 TLS_AES_256_GCM_SHA384'; None for a plain connection or one not asked about."""
    seen = (target_facts or {}).get("tls")
    if not isinstance(seen, dict) or seen.get("ssl") is not True:
        return None
    said = " ".join(str(seen[k]) for k in ("version", "cipher") if isinstance(seen.get(k), str) and seen[k])
    return said or "on"


def instruments_in(command: Sequence[str]) -> tuple[str, ...]:
    """What a stored pgbench command line measured beyond the bare tool, as
    Tool.instruments writes it: -P N (--progress=N), -l (--log), --sampling-rate X, in
    getopt's spellings; () for any other program. For points stored or imported before
    keys held them (store/migrations.py)."""
    words = list(command)
    if not words or words[0].rsplit("/", 1)[-1] != "pgbench":
        return ()
    progress: str | None = None
    logged = False
    rate: str | None = None
    for i, word in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else None
        if word in ("-P", "--progress") and following is not None:
            progress = following
        elif word.startswith("--progress="):
            progress = word.partition("=")[2]
        elif word.startswith("-P") and word[2:].isdigit():
            progress = word[2:]
        elif word in ("-l", "--log"):
            logged = True
        elif word == "--sampling-rate" and following is not None:
            rate = following
        elif word.startswith("--sampling-rate="):
            rate = word.partition("=")[2]
    found: tuple[str, ...] = (f"-P {progress}",) if progress is not None else ()
    if logged:
        share = _number(rate) if rate is not None else 1.0
        found += ("-l",) if share == 1 else ("-l", f"--sampling-rate {share!r}" if share is not None else
                                             f"--sampling-rate {rate}")
    return found


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def digest(key: Mapping[str, JSON]) -> str:
    """A short, stable hash of a key (12 hex digits)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def ignoring(key: Mapping[str, JSON], fields: Iterable[str]) -> JSONObject:
    skip = set(fields)
    return {k: v for k, v in key.items() if k not in skip}


def differing(a: Mapping[str, JSON], b: Mapping[str, JSON], ignore: Iterable[str] = ()) -> list[str]:
    """The fields in which two keys differ, in display order; nested ones as
    'settings.shared_buffers', 'params.scale'. A field one side does not know (None:
    an imported summary without a duration, a run without host facts) is not counted
    as differing: `unknown` lists those."""
    skip = set(ignore)
    out: list[str] = []
    for name in FIELDS:
        if name in skip:
            continue
        x, y = a.get(name, DEFAULTS.get(name)), b.get(name, DEFAULTS.get(name))
        if x == y or x is None or y is None:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            out.extend(f"{name}.{k}" for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)
                       and not (name in _PER_ENTRY and (k not in x or k not in y)))
        else:
            out.append(name)
    return out


def unknown(a: Mapping[str, JSON], b: Mapping[str, JSON], ignore: Iterable[str] = ()) -> list[str]:
    """Fields that one side of a comparison does not know, so could not be checked
    (for params, each entry one side holds and the other not: 'params.scale')."""
    skip = set(ignore)
    out = []
    for n in FIELDS:
        if n in skip:
            continue
        x, y = a.get(n, DEFAULTS.get(n)), b.get(n, DEFAULTS.get(n))
        if (x is None) != (y is None):
            out.append(n)
        elif n in _PER_ENTRY and isinstance(x, dict) and isinstance(y, dict):
            out.extend(f"{n}.{k}" for k in sorted(set(x) ^ set(y)))
    return out


def matches(a: Mapping[str, JSON], b: Mapping[str, JSON], ignore: Iterable[str] = ()) -> bool:
    return not differing(a, b, ignore)


def same_host(a: Mapping[str, JSON], b: Mapping[str, JSON]) -> bool:
    """Whether two keys name the same machine: both know its facts and they are equal."""
    return a.get("host") is not None and a.get("host") == b.get("host")


def describe(a: Mapping[str, JSON], b: Mapping[str, JSON], fields: list[str]) -> str:
    """'params.scale 5 vs 20; duration_s 60 vs 9': what differs, with both values."""
    parts = []
    for f in fields:
        head, _, sub = f.partition(".")
        x, y = (a.get(head, DEFAULTS.get(head)), b.get(head, DEFAULTS.get(head)))
        if sub:
            x = json_object(x).get(sub)
            y = json_object(y).get(sub)
        parts.append(f"{f} {_short(x)} vs {_short(y)}")
    return "; ".join(parts)


def _count(value: JSON) -> float | None:
    """A count among a host's facts (the store's edge checked them: numbers), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _short(value: JSON) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items()) or "{}"
    return str(value)
