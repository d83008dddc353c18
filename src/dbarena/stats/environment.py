"""What a run ran on and with, as named facts, and what changed between two runs.

One derivation of "what changed", so that every view that names a cause names the same
ones. A fact counts when its value differs, and also when it appears or disappears
between two runs that both recorded that kind of fact in full: a server that reported
its non-default settings and lacks commit_delay ran it at its default, so a run that
then sets commit_delay = 10 ms changed it ("default -> 10000"); a run on the whole
machine and a run confined to CPU 0 differ in the CPUs they could use ("all -> 0"). A
fact of a kind one run did not record (an import without settings, an older store) is
unknown there, not a change.

Facts of one throwaway instance that differ on every run and explain nothing (its port,
socket and data directories, its files) never count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from dbarena.records import JSON, StoredRun, json_object

# Settings of a throwaway instance that differ on every run and explain nothing.
PER_INSTANCE = frozenset({
    "port", "unix_socket_directories", "data_directory", "hba_file", "ident_file", "config_file",
    "external_pid_file", "listen_addresses", "log_directory", "socket", "pid_file", "datadir",
    "general_log_file", "log_error", "tmpdir"})

# Kinds of fact a run records all of or none of, and the value a fact of that kind has
# where a run that recorded the kind does not list it.
SETTING, OPTION, MACHINE = "setting", "option", "machine"
ABSENT = {SETTING: "default", OPTION: "the tool's default", MACHINE: "-"}

# The machine facts of a point's configuration key (stats/configkey.host_identity), in
# words; those with a value of their own when absent: a run not confined to some CPUs
# could use them all, one without a CPU quota had none.
MACHINE_FACTS = {
    "memory_gib": ("memory (GiB)", None), "usable_cpus": ("usable CPUs", "all"),
    "cpu_quota_cores": ("CPU quota (cores)", "none"), "target": ("target", None),
    "server_cores": ("server cores", None), "server_threads": ("server threads", None),
}
_MACHINE_ABSENT = {words: absent for words, absent in MACHINE_FACTS.values() if absent is not None}

# The kernel's settings among a host's facts (host/tuning.py records them, "not exposed"
# where the machine has no such file), in words. Facts of the host, not of the
# configuration: a change of one is a cause History names and the report's "What differs"
# shows, never a reason two points are not comparable (stats/configkey.py says why). A run
# recorded before dbarena read them lacks them: unknown there, not a change. Left out:
# hugepages_free (it moves with whatever else holds huge pages when a run starts),
# nr_hugepages (the pool asked for; HugePages_Total is the pool there is) and
# kernel_preemption_source (how the model was read, not the model).
HOST_SETTINGS = (
    ("hugepages_total", "huge pages (kernel pool)"), ("hugepage_size_kib", "huge page size (KiB)"),
    ("transparent_hugepage", "transparent huge pages"), ("transparent_hugepage_defrag", "THP defrag"),
    ("kernel_preemption", "kernel preemption"), ("frequency_governor", "CPU frequency governor"),
    ("frequency_driver", "CPU frequency driver"), ("idle_driver", "CPU idle driver"),
    ("idle_governor", "CPU idle governor"), ("idle_states", "CPU idle states"),
    ("numa_balancing", "NUMA balancing"), ("irqbalance", "irqbalance"),
)


@dataclass(frozen=True)
class Environment:
    """fact -> value, and the kinds of fact recorded in full (see the module's text)."""

    facts: Mapping[str, str]
    complete: frozenset[str] = frozenset()

    def absent(self, fact: str) -> str | None:
        """The value of a fact this run does not list: its default when the run recorded
        the fact's kind in full, else None (not known)."""
        found = kind(fact)
        if found not in self.complete:
            return None
        return _MACHINE_ABSENT.get(fact, ABSENT[found]) if found == MACHINE else ABSENT[found]


@dataclass(frozen=True)
class Change:
    fact: str
    before: str
    after: str

    def text(self) -> str:
        return f"{self.fact} {self.before} -> {self.after}"


def kind(fact: str) -> str | None:
    if fact.startswith("setting "):
        return SETTING
    if fact.startswith("option "):
        return OPTION
    if fact in _MACHINE_WORDS or fact.startswith("machine "):
        return MACHINE
    return None


_MACHINE_WORDS = frozenset(words for words, _ in MACHINE_FACTS.values())


def of_run(run: StoredRun, config: Mapping[str, JSON]) -> Environment:
    """A run's environment, from its record (store.runs()) and one of its points'
    configuration key: the server's version, the tools' and client libraries' versions,
    dbarena's, the kernel and the machine, the server's settings (those the study set, and
    every other non-default one the server reported), the duration, warm-up and tool
    options of the point; the kernel's settings (HOST_SETTINGS) and the server's huge
    pages."""
    out: dict[str, str] = {}
    complete: set[str] = set()
    if run.server_version:
        out["server version"] = run.server_version
    for tool, version in sorted(run.tool_versions.items()):
        out[f"{tool} version"] = str(version)
    if run.dbarena_version:
        out["dbarena version"] = run.dbarena_version
    facts = run.host_facts
    for fact in ("kernel", "cpu_model", "hardware_threads", "distribution"):
        if facts.get(fact) is not None:
            out[fact.replace("_", " ")] = str(facts[fact])
    for fact, words in HOST_SETTINGS:
        if facts.get(fact) is not None:
            out[words] = str(facts[fact])
    if run.host:
        out["host"] = run.host
    huge = server_huge_pages(run.target_facts)
    if huge is not None:
        out["server huge pages"] = huge
    # MySQL's and MariaDB's key variables (engines/mysql_target.py), each at its value
    # whether or not that is the default: not every setting, so not recorded in full (a
    # variable one run lacks is unknown there).
    for name, value in json_object(run.target_facts.get("key_variables")).items():
        if str(name).lower() not in PER_INSTANCE:
            out[f"setting {str(name).lower()}"] = str(value)
    reported = run.target_facts.get("non_default_settings")
    if isinstance(reported, Mapping):
        complete.add(SETTING)  # the server listed every setting not at its default
        for name, value in reported.items():
            if str(name).lower() not in PER_INSTANCE:
                out[f"setting {str(name).lower()}"] = str(value)
    for name, value in json_object(config.get("settings")).items():
        if str(name).lower() not in PER_INSTANCE:
            out[f"setting {str(name).lower()}"] = str(value)
    for fact in ("duration_s", "warmup_s"):
        if config.get(fact) is not None:
            out[fact] = str(config[fact])
    if isinstance(options := config.get("options"), dict):
        complete.add(OPTION)
        for name, value in options.items():
            out[f"option {name}"] = str(value)
    host = config.get("host")
    if isinstance(host, dict):
        complete.add(MACHINE)
        for name, value in host.items():
            if value is None or name in ("cpu_model", "hardware_threads"):  # the host's facts above
                continue
            words = MACHINE_FACTS.get(str(name), (f"machine {name}", None))[0]
            # A throwaway server's address differs by its port on every run.
            out[words] = str(value).rsplit(":", 1)[0] if name == "target" else str(value)
    return Environment(out, frozenset(complete))


def server_huge_pages(target_facts: Mapping[str, JSON]) -> str | None:
    """The server's huge pages in a few words, as its target facts recorded them:
    PostgreSQL's huge_pages, its page size where not the default, and from 17 what it
    got ('try (got off)': no kernel pool to take them from); MariaDB's and MySQL's
    large_pages. None where the run did not record them (before dbarena asked)."""
    asked = json_object(target_facts.get("huge_pages"))
    if asked:
        words = str(asked.get("huge_pages", "?"))
        if str(asked.get("huge_page_size", "0")) not in ("0", "0kB"):
            words += f", {asked['huge_page_size']} pages"
        return f"{words} (got {asked['huge_pages_status']})" if "huge_pages_status" in asked else words
    variables = json_object(target_facts.get("key_variables"))
    if "large_pages" not in variables:
        return None
    size = variables.get("large_page_size")
    return f"large_pages {variables['large_pages']}" + (
        f", large_page_size {size}" if size not in (None, 0, "0") else "")


def _weight(fact: str) -> tuple[int, str]:
    # What most often explains a step first: the settings, the CPUs, the server, the kernel
    # and its settings.
    order = ("setting ", "server huge pages", "usable CPUs", "CPU quota", "server version", "kernel", *(w for _, w in HOST_SETTINGS))
    return next((i for i, head in enumerate(order) if fact.startswith(head)), len(order)), fact


def changes(before: Environment, after: Environment) -> list[Change]:
    """Every fact that changed from `before` to `after`, settings first."""
    out = []
    for fact in sorted(set(before.facts) | set(after.facts), key=_weight):
        old = before.facts.get(fact, before.absent(fact))
        new = after.facts.get(fact, after.absent(fact))
        if old is not None and new is not None and old != new:
            out.append(Change(fact, old, new))
    return out
