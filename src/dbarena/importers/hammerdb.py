"""HammerDB outputs -> points: a TPROC-C run's NOPM and TPM as HammerDB printed them.

HammerDB (the TPC's open-source kit: TPROC-C, derived from TPC-C) ends a timed run with one
line, `Vuser 1:TEST RESULT : System achieved 128176 NOPM from 298394 MariaDB TPM` (4.0 on;
3.x said `System achieved 60301 SQL Server TPM at 13122 NOPM`). NOPM, the new-order
transactions a minute, is the figure HammerDB says compares databases; TPM is the
database's own count of transactions a minute (commits and rollbacks), which does not.
A point holds both, as printed (details `nopm` and `tpm`), and is judged by NOPM
(stats/metric.py: not TPS, so never compared with a TPS).

Read around the result, where the console log (hammerdbcli, or the jobs interface's
`HAMMERDB RESULT`) says them: the virtual users (`24 Active Virtual Users configured`;
with asynchronous clients `5 VU * 10 AC = 50 Active Sessions configured`: 5 threads, 50
clients), the warehouses (the scale: `tpcc:..._count_ware`, or `Warehouses = 5 out of
120`), the timed minutes (the duration) and the ramp-up minutes (the warm-up), the
database (`Database set to MariaDB`, the TPM's name) and its version (`DBVersion:11.8.1`).
Per-transaction-type latencies where a time profile gives them: the jobs interface's
TRANSACTION RESPONSE TIMES, an xtprof report's SUMMARY (hdbxtprofile.log appended to its
run's log), or 4.x's per-interval `|neword|MIN-..|P50%-..` lines of one virtual user
(microseconds; their calls, minimum and maximum over the intervals). The point's own
latency figures are NEWORD's, the transaction NOPM counts.

A file that holds no result is refused in one line saying what it is: a time profile
report or a transaction counter log alone (their run's NOPM is in its console log).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from dbarena.importers.common import ImportedPoint, ImportProblem, result_fields
from dbarena.importers.durations import Duration
from dbarena.model import Measurement, PointResult, PointSpec

TOOL = "hammerdb"
WORKLOAD = "hammerdb-tprocc"

# 4.0 on, and 3.x's order.
_RESULT = re.compile(r"TEST RESULT : System achieved (?P<nopm>\d+) NOPM from (?P<tpm>\d+) (?P<db>.+?) TPM\b")
_RESULT_3 = re.compile(r"TEST RESULT : System achieved (?P<tpm>\d+) (?P<db>.+?) TPM at (?P<nopm>\d+) NOPM\b")
_VUSER = re.compile(r"^Vuser \d+:")
_VUS = re.compile(r"^\"?(?P<vu>\d+) Active Virtual Users configured")
_ASYNC = re.compile(r"^\"?(?P<vu>\d+) VU \* (?P<ac>\d+) AC = (?P<sessions>\d+) Active Sessions configured")
_VU_TEST = re.compile(r"^(?P<vu>\d+) VU TEST$")
_DATABASE = re.compile(r"^Database set to (?P<db>.+?)\s*$")
_WAREHOUSES = re.compile(r"tpcc:\w+_count_ware (?:from \S+ to (?P<to>\d+)|is the same)|"
                         r"^Value (?P<same>\d+) for tpcc:\w+_count_ware is the same|"
                         r"Warehouses = \d+ out of (?P<of>\d+)")
_SETTING = re.compile(r"^(?:Changed tpcc:\w+?_(?P<name>rampup|duration|allwarehouse) from \S+ to (?P<to>\S+)|"
                      r"Value (?P<same>\S+) for tpcc:\w+?_(?P<same_name>rampup|duration|allwarehouse) is the same)")
_RAMPUP = re.compile(r"Beginning rampup time of (?P<m>\d+) minutes")
_TIMED = re.compile(r"Timing test period of (?P<m>\d+) in minutes")
_DBVERSION = re.compile(r"^DBVersion:\s*(?P<v>\S+)")
_COUNTER = re.compile(r"^(?P<tpm>\d+) (?P<db>[A-Za-z][\w ]*?) tpm$")
_PROC = re.compile(r"^>>>>> PROC: (?P<proc>\w+)")
_CALLS = re.compile(r"^CALLS: (?P<calls>\d+)MIN: (?P<min>[\d.]+)msAVG: (?P<avg>[\d.]+)msMAX: (?P<max>[\d.]+)ms"
                    r"TOTAL: (?P<total>[\d.]+)ms")
_PCTS = re.compile(r"^P99: (?P<p99>[\d.]+)msP95: (?P<p95>[\d.]+)msP50: (?P<p50>[\d.]+)msSD: (?P<sd>[\d.]+)"
                   r"RATIO: (?P<ratio>[\d.]+)%")
_INTERVAL = re.compile(r"^\|(?P<proc>[a-z]+)\|MIN-(?P<min>[\d.]+)\|P50%-(?P<p50>[\d.]+)\|P95%-(?P<p95>[\d.]+)\|"
                       r"P99%-(?P<p99>[\d.]+)\|MAX-(?P<max>[\d.]+)\|SAMPLES-(?P<n>\d+)")
_TPROCH = re.compile(r"^query \d+ completed in [\d.]+ seconds")

# The database HammerDB names -> (dbarena's engine, the flavour).
_ENGINES = {"postgresql": ("postgres", None), "mysql": ("mysql", "mysql"), "mariadb": ("mysql", "mariadb"),
            "sql server": ("mssql", None), "mssqls": ("mssql", None), "oracle": ("oracle", None),
            "db2": ("db2", None)}
# The transaction types' names in the 4.x interval lines -> the time profile's.
_PROCS = {"neword": "NEWORD", "payment": "PAYMENT", "delivery": "DELIVERY", "slev": "SLEV", "ostat": "OSTAT"}


def _text(line: str) -> str:
    """A line without its `Vuser N:` prefix."""
    return _VUSER.sub("", line, count=1)


def ends_run(line: str) -> bool:
    """Whether a line ends a run: its result."""
    return "TEST RESULT : System achieved" in line


_CONTINUES = re.compile(r"^(?:\s*$|Vuser \d+|ALL VIRTUAL USERS COMPLETE|vudestroy success|TEST (?:SEQUENCE )?COMPLETE|"
                        r"Timer: |Transaction Counter|Stopping Transaction Counter|\d+ [A-Za-z][\w ]* tpm$|\+-\+|"
                        r">>>>>|CALLS: |P99: |.*Hammerdb Time Profile Report|[\]\[{}]|\s+\"|HAMMERDB RESULT)")


def continues_run(line: str) -> bool:
    """Whether a line after a result still belongs to its run: the virtual users
    finishing, the transaction counter stopping, a time profile report appended."""
    return _CONTINUES.match(line) is not None


@dataclass
class _Profile:
    """Per-transaction-type latencies a time profile gave, in ms."""

    of: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str | None = None


def _engine(db: str | None) -> tuple[str | None, str | None]:
    if db is None:
        return None, None
    return _ENGINES.get(db.strip().lower(), (None, None))


def _number(value: str) -> float:
    return float(value)


class Reader:
    """A file's HammerDB runs, one at a time; what it saw, for a file of none."""

    def __init__(self, name: str, label: str, engine: str | None, workload: str | None):
        self.name, self.label, self.engine, self.workload = name, label, engine, workload
        self.saw_report = False  # a time profile report
        self.saw_counter_log = False  # a transaction counter log
        self.saw_counter = False  # tpm lines
        self.first: int | None = None

    def read_run(self, lines: list[str], first: int, args: list[str] | None) -> list[ImportedPoint]:
        """The point of a run (lines from line `first` on), none where they hold none."""
        if self.first is None:
            self.first = first
        chunk = "\n".join(lines) + "\n"
        self.saw_report = self.saw_report or "Hammerdb Time Profile Report" in chunk
        self.saw_counter_log = self.saw_counter_log or "Hammerdb Transaction Counter Log" in chunk
        result = _RESULT.search(chunk) or _RESULT_3.search(chunk)
        running = re.search(r"^Vuser \d+:RUNNING$", chunk, re.M) is not None
        if result is None and not running:
            return []
        return [self._point(lines, first, args, chunk, result)]

    def nothing(self) -> str:
        """Why a file read as HammerDB's holds no point."""
        if self.saw_report:
            return ("a HammerDB time profile report (hdbxtprofile.log: each virtual user's latencies per transaction "
                    "type) holds no result: no 'TEST RESULT : System achieved N NOPM from M ... TPM' line. Import the "
                    "console log of its run (with the report appended to it, for the latencies)")
        if self.saw_counter_log:
            return ("a HammerDB transaction counter log (hdbtcount.log: the database's transactions per minute, "
                    "second by second) holds no result: no 'TEST RESULT : System achieved N NOPM ...' line. Import "
                    "the console log of its run")
        return "no HammerDB result found (no 'TEST RESULT : System achieved N NOPM from M ... TPM' line)"

    def _point(self, lines: list[str], first: int, args: list[str] | None, chunk: str,
               result: re.Match[str] | None) -> ImportedPoint:
        last = first + len(lines) - 1
        texts = [_text(l) for l in lines]
        facts = _facts(texts)
        db = result["db"] if result is not None else facts.get("database")
        engine, flavour = _engine(db if db is not None else facts.get("database"))
        if engine is None:
            engine, flavour = _engine(facts.get("database"))
        if engine is None:
            engine = self.engine
        if engine is None:
            raise ImportProblem(self.name, first, f"the HammerDB run on lines {first}-{last} names no database HammerDB "
                                                  "drove: pass --engine")
        duration = Duration(facts["timed_min"] * 60, "printed") if "timed_min" in facts else None
        threads = facts.get("vu") or 1
        spec = PointSpec(engine=engine, workload=self.workload or WORKLOAD, threads=threads,
                         clients=facts.get("sessions") or threads, duration_s=duration.asked_s if duration else 0,
                         params=(("scale", facts["warehouses"]),) if "warehouses" in facts else (),
                         options=(("all_warehouses", "true"),) if facts.get("all_warehouses") else (),
                         warmup_s=facts.get("rampup_min", 0) * 60)
        notes = []
        if "vu" not in facts:
            notes.append("HammerDB printed no count of its virtual users: stored as 1")
        if any(_TPROCH.match(t) for t in texts):
            notes.append("TPROC-H query times in a TPROC-C run's output are not imported (they are another run's)")
        fields = result_fields(args, TOOL, chunk)
        if result is None:
            error = next((t.strip() for t in texts if re.search(r"\berror\b", t, re.I)), None)
            return ImportedPoint(
                result=PointResult(spec=spec, status="failed", error=error or "no result: the output ends before "
                                   "HammerDB printed its TEST RESULT", **fields),
                label=self.label, first_line=first, last_line=last, tool=TOOL, server_version=facts.get("version"),
                flavour=flavour, note="; ".join(notes) or None, duration=duration)
        profile = _profile(texts)
        details: dict[str, Any] = {"nopm": int(result["nopm"]), "tpm": int(result["tpm"]), "tpm_of": result["db"],
                                   "result_line": result.group(0)}
        if profile.of:
            details["transaction_types"] = profile.of
            details["time_profile"] = profile.source
        counter = [int(m["tpm"]) for t in texts if (m := _COUNTER.match(t))]
        series = _tpm_series(chunk)
        if series:
            details["tpm_series"] = series
        elif counter:
            details["tpm_counter"] = counter
        neword = profile.of.get("NEWORD", {})
        measurement = Measurement(
            latency_avg_ms=neword.get("avg_ms"), latency_min_ms=neword.get("min_ms"),
            latency_max_ms=neword.get("max_ms"), latency_p50_ms=neword.get("p50_ms"),
            latency_p95_ms=neword.get("p95_ms"), latency_p99_ms=neword.get("p99_ms"), details=details)
        return ImportedPoint(result=PointResult(spec=spec, status="ok", measurement=measurement, **fields),
                             label=self.label, first_line=first, last_line=last, tool=TOOL,
                             server_version=facts.get("version"), flavour=flavour, note="; ".join(notes) or None,
                             duration=duration)


def _facts(texts: list[str]) -> dict[str, Any]:
    """What the run's log says of its configuration (the first statement of each)."""
    facts: dict[str, Any] = {}
    for t in texts:
        s = t.strip().strip('",')
        if (m := _ASYNC.match(s)) is not None:
            facts.setdefault("vu", int(m["vu"]))
            facts.setdefault("sessions", int(m["sessions"]))
        elif (m := _VUS.match(s)) is not None:
            facts.setdefault("vu", int(m["vu"]))
        elif (m := _VU_TEST.match(s)) is not None:
            facts.setdefault("vu_test", int(m["vu"]))
        elif (m := _DATABASE.match(s)) is not None:
            facts.setdefault("database", m["db"])
        elif (m := _DBVERSION.match(s)) is not None:
            facts.setdefault("version", m["v"])
        elif (m := _RAMPUP.search(s)) is not None:
            facts.setdefault("rampup_min", int(m["m"]))
        elif (m := _TIMED.search(s)) is not None:
            facts.setdefault("timed_min", int(m["m"]))
        elif (m := _WAREHOUSES.search(s)) is not None and (m["to"] or m["same"] or m["of"]):
            facts.setdefault("warehouses", int(m["to"] or m["same"] or m["of"]))
        elif (m := _SETTING.match(s)) is not None:
            name, value = (m["name"], m["to"]) if m["name"] else (m["same_name"], m["same"])
            if name == "allwarehouse":
                facts.setdefault("all_warehouses", value.lower() == "true")
            elif value.isdigit():
                facts.setdefault(f"{name}_setting", int(value))
    if "vu" not in facts and "vu_test" in facts:
        facts["vu"] = facts["vu_test"]
    # The settings where the run did not print its minutes (a log cut before them).
    facts.setdefault("rampup_min", facts.get("rampup_setting", 0))
    if "timed_min" not in facts and "duration_setting" in facts:
        facts["timed_min"] = facts["duration_setting"]
    return facts


def _profile(texts: list[str]) -> _Profile:
    """Per-transaction-type latencies: the jobs interface's TRANSACTION RESPONSE TIMES,
    else an xtprof report's SUMMARY, else 4.x's interval lines."""
    found = _Profile()
    jobs = _response_times(texts)
    if jobs:
        found.of, found.source = jobs, "TRANSACTION RESPONSE TIMES (jobs interface)"
        return found
    summary = _report_summary(texts)
    if summary:
        found.of, found.source = summary, "time profile report: summary of all active virtual users"
        return found
    intervals = _intervals(texts)
    if intervals:
        found.of, found.source = intervals, "time profile intervals of one virtual user (calls, minimum, maximum)"
    return found


def _response_times(texts: list[str]) -> dict[str, dict[str, Any]]:
    """The jobs interface's TRANSACTION RESPONSE TIMES: a JSON object after that line."""
    try:
        start = next(i for i, t in enumerate(texts) if t.strip() == "TRANSACTION RESPONSE TIMES")
    except StopIteration:
        return {}
    held: list[str] = []
    for t in texts[start + 1:]:
        held.append(t)
        if t.rstrip() == "}":
            break
    try:
        document = json.loads("\n".join(held))
    except ValueError:
        return {}
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(document, dict):
        return {}
    for proc, figures in document.items():
        if not isinstance(figures, dict):
            continue
        row: dict[str, Any] = {}
        for key, value in figures.items():
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            row[key] = int(number) if key == "calls" else number
        out[str(proc)] = row
    return out


def _report_summary(texts: list[str]) -> dict[str, dict[str, Any]]:
    """An xtprof report's `SUMMARY OF N ACTIVE VIRTUAL USERS` block."""
    out: dict[str, dict[str, Any]] = {}
    inside, proc = False, None
    for t in texts:
        if t.startswith(">>>>> SUMMARY OF"):
            inside, out = True, {}
            continue
        if not inside:
            continue
        if t.startswith(">>>>> VIRTUAL USER"):
            break
        if (m := _PROC.match(t)) is not None:
            proc = m["proc"]
        elif proc is not None and (m := _CALLS.match(t)) is not None:
            out[proc] = {"calls": int(m["calls"]), "min_ms": _number(m["min"]), "avg_ms": _number(m["avg"]),
                         "max_ms": _number(m["max"]), "total_ms": _number(m["total"])}
        elif proc is not None and (m := _PCTS.match(t)) is not None and proc in out:
            out[proc].update(p99_ms=_number(m["p99"]), p95_ms=_number(m["p95"]), p50_ms=_number(m["p50"]),
                             sd=_number(m["sd"]), ratio_pct=_number(m["ratio"]))
    return out


def _intervals(texts: list[str]) -> dict[str, dict[str, Any]]:
    """4.x's interval lines (`|neword|MIN-5028|...|SAMPLES-234`, microseconds): per
    type, the calls, the minimum and the maximum over the intervals, and how many."""
    out: dict[str, dict[str, Any]] = {}
    for t in texts:
        m = _INTERVAL.match(t)
        if m is None or m["proc"] not in _PROCS:
            continue
        row = out.setdefault(_PROCS[m["proc"]], {"calls": 0, "min_ms": None, "max_ms": None, "intervals": 0})
        row["calls"] += int(m["n"])
        row["intervals"] += 1
        low, high = float(m["min"]) / 1000, float(m["max"]) / 1000
        row["min_ms"] = low if row["min_ms"] is None else min(row["min_ms"], low)
        row["max_ms"] = high if row["max_ms"] is None else max(row["max_ms"], high)
    return out


def _tpm_series(chunk: str) -> list[list[Any]]:
    """The jobs interface's TRANSACTION COUNT (`{"MariaDB tpm": {"2025-04-14 17:09:41":
    "0", ...}}`): [timestamp, tpm] in order."""
    m = re.search(r"^TRANSACTION COUNT\n(\{.*?\n\s*\}\})", chunk, re.M | re.S)
    if m is None:
        return []
    try:
        document = json.loads(m[1])
    except ValueError:
        return []
    if not isinstance(document, dict) or len(document) != 1:
        return []
    (counts,) = document.values()
    if not isinstance(counts, dict):
        return []
    out = []
    for at, value in counts.items():
        try:
            out.append([str(at), int(value)])
        except (TypeError, ValueError):
            return []
    return out
