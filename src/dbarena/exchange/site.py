"""`dbarena site`: a static comparison site of bundles (docs/exchange.md), like
ClickBench's but for OLTP sweeps.

Every bundle is verified first (verify.py); one that does not hold is listed as refused
with its one-line reason and never shown as a result. A result is one run of a bundle
at one engine and workload (the imported runs of one label together: an import stores a
run per file it reads): its sweep (a level a thread count), throughput per core and
per unit of price, its trust (verified, signed by which key or unsigned, imported from a
tool's output rather than measured by dbarena, its host probe against the others of its
machine type), and a page of its own with its decision against the others of the same
engine and workload and the command that reproduces it.

One derivation per answer: a level's throughput, per core and per price come from
report.data.build (what `dbarena report` shows), a decision from analysis.compare and
stats.decision (what `report` and `compare` decide), rendered by report.decision.html,
a probe's standing from stats.outliers (what a fleet flags). The site only lays them
out.

What a browser gets: index.html, site.js (the filters and curves, shipped in the
package), data.js (every result's figures, as a script: a page opened from file:// may
not fetch a file), r/ID.html (a page per result, drawn here, its curve drawn by serve's
charts.js from report/chartspecs.py's spec, as `dbarena serve` draws a sweep; its decisions
shipped packed, unpacked by page.js: `packed`), charts.js and
bundles/ (the verified bundles, so that a result can be reproduced from the site).
Nothing is fetched from anywhere else, so it opens from file:// and from any static
host. Values from bundles are hostile: HTML gets them through escaping.html_text, the
index's script sets them as text (textContent), never as markup.
"""

from __future__ import annotations

import base64
import concurrent.futures
import concurrent.futures.process
import contextlib
import gzip
import json
import math
import multiprocessing
import multiprocessing.util
import os
import re
import shutil
import signal
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import NamedTuple
from importlib import resources
from pathlib import Path

from dbarena import atomic
from dbarena.errors import EnvironmentProblem, UsageError
from dbarena.exchange import bundle
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.verify import Verified, throwaway_store, verify
from dbarena.lifecycle import state
from dbarena.stats import outliers
from dbarena.records import JSON, AnalysedPoint, JSONObject, LevelSummary, StoredRun
from dbarena.report import data
from dbarena.report import decision as decision_view
from dbarena.report.escaping import html_text
from dbarena.report.levels import LevelRow
from dbarena.report import chartspecs as chart_specs
from dbarena.report.chartspecs import html as chart
from dbarena.stats import analysis, decision
from dbarena.stats.decision import Decision

__all__ = ["build", "check_output", "Built", "MAX_BASELINES", "MARKER", "PACKED_TYPE", "Packed", "WRITES", "packed",
           "unpacked"]

# A result's page holds its decision against every other result of its workload key:
# the same engine and workload, the only others a decision can be made against (a
# decision compares the levels both measured with one configuration; another workload
# has none). Each is decided when the site is built, by analysis.compare and
# stats.decision as `dbarena compare` and `report` decide, and drawn as `report` draws
# it: a static page cannot ask for a pair later, and a decision computed by the page's
# script would be a second derivation of it. Where more results share a key than this,
# the page holds the nearest this many (the same machine type, then CPU model,
# architecture, engine version, cloud) and says so: every pair of a thousand results of
# one key is a million decisions (0.14 ms each measured, 1.3 kB drawn), beyond the
# minute and the size a site of a thousand bundles may take (bench/site).
MAX_BASELINES = 99
# Managed services whose name a target's host or version string carries: a result is
# "managed" where one does (or where its run's options say so); a throwaway server that
# dbarena started, or another server, "self-run".
_MANAGED = re.compile(r"rds\.amazonaws|aurora|cloudsql|azure|neon\.tech|supabase|timescale\.com|crunchy|aiven|"
                      r"planetscale|alloydb|digitalocean|render\.com", re.IGNORECASE)


@dataclass
class Result:
    """One row of the site: a run of a bundle at one engine and workload."""

    id: str
    bundle: str  # the bundle's file name under bundles/
    label: str  # the result's name in the site: the bundle's stem and the run's label
    figures: JSONObject  # what data.js holds of it (see _row)
    points: list[AnalysedPoint] = field(default_factory=list)
    groups: list[LevelSummary] = field(default_factory=list)
    run: StoredRun | None = None


@dataclass
class Examined:
    """What a worker made of one bundle: its results, or the one line refusing it."""

    path: str
    results: list[Result] = field(default_factory=list)
    refused: str | None = None
    signed: bool = False
    sha256: str = ""


@dataclass(frozen=True)
class Built:
    results: int
    bundles: int
    refused: list[str]


def _text(value: JSON) -> str:
    return "" if value is None else str(value)


def _managed(run: StoredRun) -> bool:
    said = run.options.get("managed")
    if isinstance(said, bool):
        return said
    return bool(_MANAGED.search(f"{run.target} {run.target_facts.get('version_string') or ''}"))


def _trust(verified: Verified) -> JSONObject:
    # A bundle of another estimator: its figures shown are this one's (the rows are read
    # from its raw data), and the page says they were recomputed.
    said = verified.recomputation()
    also = f"; {said}" if said is not None else ""
    if not verified.signed:
        return {"signed": False, "key": None, "signer": None,
                "text": f"verified, UNSIGNED (nothing ties it to anyone){also}"}
    who = ", ".join(verified.principals) if verified.principals else None
    return {"signed": True, "key": verified.key, "signer": who,
            "text": (f"verified, signed by {who} (key {verified.key})" if who
                     else f"verified, signed by key {verified.key} (not in the allowed-signers file given)") + also}


def _examine(path: str, allowed_signers: str | None, index: int) -> Examined:
    """Verify one bundle and derive its results (runs in a worker process)."""
    out = Examined(path)
    try:
        verified = verify(Path(path), Path(allowed_signers) if allowed_signers else None)
    except BundleProblem as exc:
        said = " ".join(str(exc).split())
        out.refused = said[len(path) + 2:] if said.startswith(f"{path}: ") else said
        return out
    out.signed, out.sha256 = verified.signed, bundle.sha256(verified.bundle.data)
    stem = Path(path).name
    name = f"{index:04d}-{out.sha256[:12]}.tar"
    with throwaway_store(verified.bundle) as (db, _):
        rows, runs = analysis.load(db), db.runs()
    trust = _trust(verified)
    # A result is a run; but `dbarena import` stores each file it reads as a run of its
    # own (a published sweep is a file a level), so the imported runs of one label are
    # one result, their levels its sweep.
    together: dict[tuple[str, str | int], list[StoredRun]] = {}
    for run in runs:
        together.setdefault(("label", run.label) if run.status == "imported" else ("run", run.id), []).append(run)
    for group in together.values():
        first = group[0]
        label = f"{stem}: {first.label}"
        ids = {run.id for run in group}
        mine = [replace(r, label=label, series_label=label) for r in rows if r.run_id in ids]
        if not mine:
            continue
        relabelled = [replace(run, label=label) for run in group]
        report = data.build(mine, relabelled)
        groups = analysis.summaries(mine)
        for engine, workload in dict.fromkeys((r.engine, r.workload) for r in mine):
            levels = sorted((row for row in report.rows if (row.engine, row.workload) == (engine, workload)),
                            key=lambda row: row.threads)
            rid = f"{out.sha256[:12]}-{first.id}-{re.sub(r'[^a-z0-9]+', '-', f'{engine}-{workload}'.lower())[:60]}"
            points = [p for p in mine if (p.engine, p.workload) == (engine, workload)]
            out.results.append(Result(
                id=rid, bundle=name, label=label, points=points,
                groups=[g for g in groups if (g.engine, g.workload) == (engine, workload)], run=relabelled[0],
                figures=_row(rid, name, label, first, engine, workload, levels, trust)))
    return out


def _row(rid: str, name: str, label: str, run: StoredRun, engine: str, workload: str,
         levels: Sequence[LevelRow], trust: JSONObject) -> JSONObject:
    facts, target = run.host_facts, run.target_facts
    memory = facts.get("memory_bytes")
    imported = run.options.get("imported")
    version = _text(run.server_version)
    major = version.split(".")[0].split(" ")[0] if version else ""
    curve: list[JSON] = [[row.threads, row.value, row.tps_per_core, row.tps_per_dollar_hour] for row in levels]
    values = [row.value for row in levels if row.value is not None]
    best = max(levels, key=lambda row: row.value if row.value is not None else -math.inf) if values else None
    lower = bool(levels and levels[0].metric == "seconds")
    return {
        "id": rid, "bundle": name, "label": label, "engine": engine, "flavour": _text(run.flavour),
        "version": major, "server_version": version, "workload": workload,
        "metric": levels[0].metric if levels else "tps", "lower_is_better": lower,
        "arch": _text(facts.get("architecture")), "cpu": _text(facts.get("cpu_model")),
        "cloud": _text(facts.get("cloud")), "instance": _text(facts.get("instance_type")),
        "managed": "managed" if _managed(run) else "self-run",
        "cores": best.physical_cores if best else None, "threads_hw": best.hardware_threads if best else None,
        "memory_gib": round(memory / 2**30, 1) if isinstance(memory, int) else None,
        "price": best.price if best else None,
        "peak": best.value if best else None, "peak_threads": best.threads if best else None,
        "peak_per_core": best.tps_per_core if best else None,
        "peak_per_price": best.tps_per_dollar_hour if best else None,
        "curve": curve, "trust": trust,
        "imported": bool(imported), "probe": None, "probe_text": "",
        "date": _text(run.ended_at or run.started_at)[:10], "study": _text(run.options.get("study")),
        "dataset": json.loads(json.dumps(target.get("datasets") or {})),
    }


def _probes(results: Sequence[Result]) -> None:
    """Each result's probe against the others of its machine type (stats.outliers)."""
    by_run: dict[str, Result] = {}
    hosts = []
    for r in results:
        assert r.run is not None
        key = f"{r.bundle}/{r.run.id}"
        probe = r.run.options.get("probe")
        if key in by_run or not isinstance(probe, dict):
            by_run.setdefault(key, r)
            continue
        by_run[key] = r
        hosts.append(outliers.HostProbe(key, r.run.host_facts, probe))
    kinds: dict[str, int] = {}
    for h in hosts:
        kinds[outliers.group_of(h.facts)] = kinds.get(outliers.group_of(h.facts), 0) + 1
    said = {f.host: f for f in outliers.findings(hosts)}
    for r in results:
        assert r.run is not None
        key = f"{r.bundle}/{r.run.id}"
        probe = r.run.options.get("probe")
        if not isinstance(probe, dict):
            r.figures["probe_text"] = "no probe"
            continue
        group = outliers.group_of(r.run.host_facts)
        r.figures["probe"] = probe.get("cpu_best_events_per_s") or probe.get("cpu_events_per_s")
        if key in said:
            r.figures["probe_text"] = ("FAR FROM ITS KIND: " if said[key].flagged else "") + said[key].text
        elif kinds[group] < 2:
            r.figures["probe_text"] = f"probed; the only {group} here"
        else:
            r.figures["probe_text"] = f"in line with the {kinds[group] - 1} other(s) of {group}"


def _nearness(a: JSONObject, b: JSONObject) -> tuple[int, ...]:
    return (a["instance"] != b["instance"] or not a["instance"], a["cpu"] != b["cpu"], a["arch"] != b["arch"],
            a["version"] != b["version"], a["cloud"] != b["cloud"])


def _decisions(result: Result, others: Sequence[Result]) -> tuple[list[tuple[Result, str]], str]:
    """The result against each other of its workload key as baseline (the nearest
    MAX_BASELINES where there are more), rendered as `report` does, and what a change
    in them is (decision_view.change_note), said once on the page rather than under each
    of them (it was two fifths of a page of 99)."""
    out = []
    every: list[Decision] = []
    for other in sorted(others, key=lambda o: (*_nearness(result.figures, o.figures), o.id))[:MAX_BASELINES]:
        rows = other.points + result.points
        decided = decision.decide(analysis.compare(rows, other.label, result.label,
                                                   groups=other.groups + result.groups), rows)
        every += decided
        line = decision.overall(decided)
        out.append((other, decision_view.html(decided, [line] if line else [], note=False)
                    or "<p>Nothing to decide: no level of one was measured with the other's configuration.</p>"))
    return out, decision_view.change_note(every) if every else ""


# The results and their keys, set before the pages' workers are forked (which inherit
# them: a result's points are not sent to a worker for each page).
_SHARED: list[Result] = []
_KINDS: dict[tuple[str, str], list[int]] = {}


def _kind(result: Result) -> tuple[str, str]:
    return str(result.figures["engine"]), str(result.figures["workload"])


def _write_pages(indices: Sequence[int], output: str) -> None:
    """The pages of these results (in a worker, or in this process)."""
    for i in indices:
        r = _SHARED[i]
        others = [_SHARED[j] for j in _KINDS[_kind(r)] if j != i]
        decided, note = _decisions(r, others)
        (Path(output) / "r" / f"{r.id}.html").write_text(_page(r, decided, len(others), note))


# The result page's chart is drawn as `dbarena serve` draws its charts: serve's
# charts.js and its look.
SERVE_STATIC = resources.files("dbarena.serve") / "static"
_CHART_STYLE = SERVE_STATIC.joinpath("charts.css").read_text()
_STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}table{border-collapse:collapse}
td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}.num{text-align:right}
code,pre{background:#f4f4f4;padding:2px 4px}.refused{color:#a00}.unsigned{color:#a60}.imported{color:#a60}
.verdict-slower{color:#a00}.verdict-faster{color:#060}select{margin-right:1em}svg{vertical-align:middle}"""


def _chart(f: JSONObject, curve: Sequence[JSON]) -> str:
    """The sweep as `dbarena serve` draws one: report/chartspecs.py's spec in the page, drawn
    by its charts.js (written beside page.js) with axes, their units and each level's
    figure on hover; its look is serve's charts.css, in the page's style."""
    levels = [(c[0], float(c[1])) for c in curve if isinstance(c, list) and isinstance(c[0], int)
              and not isinstance(c[0], bool) and isinstance(c[1], (int, float)) and not isinstance(c[1], bool)
              and math.isfinite(c[1])]
    spec = chart_specs.curve(_text(f["engine"]), _text(f["workload"]), _text(f["label"]), _text(f["metric"]), levels)
    return chart(spec) if spec is not None else "<p>no level with a figure</p>"


def _page(result: Result, decided: list[tuple[Result, str]], of: int, note: str = "") -> str:
    f = result.figures
    trust = f["trust"]
    assert isinstance(trust, dict)
    e = html_text
    facts = [("engine", f"{f['engine']} {f['server_version']}"), ("workload", f["workload"]),
             ("architecture", f["arch"]), ("CPU model", f["cpu"]), ("cores", f["cores"]),
             ("hardware threads", f["threads_hw"]), ("memory GiB", f["memory_gib"]),
             ("cloud / instance type", f"{f['cloud'] or '-'} / {f['instance'] or '-'}"), ("managed", f["managed"]),
             ("price", f["price"] or "not given"), ("study", f["study"]), ("measured", f["date"]),
             ("trust", trust["text"]), ("probe", f["probe_text"])]
    if f["imported"]:
        facts.insert(0, ("source", "imported, not measured by dbarena (a tool's output read by `dbarena import`)"))
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e('-' if v is None else v)}</td></tr>" for k, v in facts)
    curve = f["curve"]
    assert isinstance(curve, list)
    levels = "".join(f'<tr><td class="num">{e(c[0])}</td><td class="num">{e(_fmt(c[1]))}</td>'
                     f'<td class="num">{e(_fmt(c[2]))}</td><td class="num">{e(_fmt(c[3]))}</td></tr>'
                     for c in curve if isinstance(c, list))
    options = "".join(f'<option value="{e(o.id)}">{e(o.label)} ({e(o.figures["instance"] or o.figures["cpu"])})'
                      f"</option>" for o, _ in decided)
    shipped = packed(Packed(options=options, decisions="".join(f'<div class="vs" id="vs-{e(o.id)}" hidden>{html}</div>'
                                                               for o, html in decided)))
    which = (f"any of the {of} other result(s) of its engine and workload" if len(decided) == of else
             f"the {len(decided)} nearest of the {of} other results of its engine and workload (the same machine "
             f"type first); any other: <code>dbarena import</code> both bundles, then <code>dbarena compare</code>")
    against = (f'<p><label>Baseline: <select id="baseline"></select></label></p>'
               f"<p>Against {which}: the results a decision can be made against (it compares the levels both "
               f"measured with one configuration), each decided when the site was built, as <code>dbarena "
               f"compare</code> decides.</p>"
               f'<div id="decisions"><noscript>The decisions are unpacked by the page\'s script.</noscript></div>'
               f'<script id="packed" type="{PACKED_TYPE}">{shipped}</script>'
               + (f'<p class="note">{e(note)}</p>' if note else "") if decided
               else "<p>No other result of this engine and workload to decide against.</p>")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src data:">
<title>{e(f['label'])}: {e(f['workload'])}</title><link rel="stylesheet" href="../site.css"></head><body>
<p><a href="../index.html">all results</a></p>
<h1>{e(f['label'])}</h1><h2>{e(f['engine'])} {e(f['workload'])}</h2>
{_chart(f, curve)}
<table><thead><tr><th>threads</th><th>{e(f['metric'])}</th><th>per core</th><th>per price unit (per hour)</th></tr></thead>
<tbody>{levels}</tbody></table>
<h2>What it ran on, and trust</h2><table>{rows}</table>
<h2>Decision against a baseline</h2>{against}
<h2>Reproduce it</h2>
<pre>dbarena verify bundles/{e(result.bundle)}
dbarena run --like bundles/{e(result.bundle)}    # here; or --target URL for another server</pre>
<p><a href="../bundles/{e(result.bundle)}">the bundle</a></p>
<script src="../page.js"></script><script src="../charts.js"></script></body></html>
"""


# A page's baselines and their decisions, as JSON, gzipped and in base64, in a script
# element of a type no browser runs (so the page's policy, script-src 'self', allows it),
# unpacked by page.js (DecompressionStream): a page holds up to MAX_BASELINES decisions
# drawn in full, 1.4 kB each and alike, so that 1,000 bundles' pages took 150 MiB as
# HTML and 3.6 kB a page packed. The decisions are the same; only their transport differs.
PACKED_TYPE = "application/x-dbarena-gzip-base64"
_PACKED = re.compile(r'<script id="packed" type="' + re.escape(PACKED_TYPE) + r'">([A-Za-z0-9+/=]*)</script>')


class Packed(NamedTuple):
    """What a result's page ships packed: its baselines' <option>s and their decisions
    (a <div class="vs"> each), both as drawn."""

    options: str
    decisions: str


def packed(shipped: Packed) -> str:
    """What a page ships, as it ships it (mtime 0: a site built twice from the same
    bundles is the same bytes)."""
    text = json.dumps(shipped._asdict(), separators=(",", ":"))
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode("ascii")


def unpacked(page: str) -> Packed:
    """What a result's page ships, as page.js puts it into the page (empty where it has
    no baseline): for readers of a site other than a browser."""
    found = _PACKED.search(page)
    if found is None:
        return Packed(options="", decisions="")
    return Packed(**json.loads(gzip.decompress(base64.b64decode(found.group(1)))))


def _fmt(value: JSON) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"
    return "-" if value is None else str(value)


def _index(refused: list[tuple[str, str]], count: int, bundles: int) -> str:
    e = html_text
    refusals = "".join(f'<li class="refused">{e(Path(p).name)}: {e(reason)}</li>' for p, reason in refused)
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src data:">
<title>dbarena results</title><link rel="stylesheet" href="site.css"></head><body>
<h1>dbarena results</h1>
<p>{count} result(s) from {bundles} verified bundle(s). Each was checked by <code>dbarena verify</code> before it
was shown: its signature, every file's sha256 and every figure recomputed from its raw outputs.</p>
<form id="filters"></form>
<p id="shown"></p>
<table id="results"><thead><tr><th>result</th><th>engine</th><th>workload</th><th>machine</th>
<th id="figure-head">peak</th><th>sweep</th><th>trust</th></tr></thead><tbody></tbody></table>
<h2>Refused</h2><ul id="refused">{refusals or '<li>none</li>'}</ul>
<script src="data.js"></script><script src="site.js"></script></body></html>
"""


# What a site writes at the top of its directory, and nothing else: all that it removes
# there when it writes the directory again. MARKER says the directory is a site's, so
# that a directory holding anything else (the working directory of `-o .`, with the
# bundles themselves under bundles/) is refused rather than emptied; a site is written
# into STAGING... first, then each entry swapped in by rename, so that a site killed
# while written leaves the previous one and a STAGING... directory the next one removes.
WRITES = ("index.html", "data.js", "site.js", "page.js", "charts.js", "site.css", "r", "bundles")
MARKER = ".dbarena-site"
STAGING = ".dbarena-site-new-"
_FOLDERS = ("r", "bundles")


def check_output(output: Path, inputs: Sequence[Path]) -> None:
    """A usage error of one line unless `output` may be written as a site: absent, an
    empty directory, or a directory a site was written into (MARKER) holding none of
    the `inputs` (bundles, the allowed-signers file) and nothing of another kind where
    a site's entries go."""
    try:
        info = os.lstat(output)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"site: -o {output}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"site: -o {output} is {atomic.kind_of(info.st_mode)}, not a directory"
                         + (" (dbarena writes nothing through one: give the directory it names)"
                            if stat.S_ISLNK(info.st_mode) else ""))
    home = output.resolve()
    for given in inputs:
        if home in given.resolve().parents:
            raise UsageError(f"site: -o {output} holds {given}, which the site is made from (a site's directory "
                             f"holds only what the site writes): give another directory")
    try:
        entries = {entry.name: entry for entry in os.scandir(output)}
        if not entries:
            return
        marker = entries.get(MARKER)
        if marker is None or not marker.is_file(follow_symlinks=False):
            raise UsageError(f"site: -o {output} holds files no dbarena site wrote (it has no {MARKER}): give a "
                             f"new or empty directory")
        for name in WRITES:
            if name in entries:
                mode = os.lstat(output / name).st_mode
                if not (stat.S_ISDIR(mode) if name in _FOLDERS else stat.S_ISREG(mode)):
                    raise UsageError(f"site: {output / name} is {atomic.kind_of(mode)}, not what a site writes "
                                     f"there: remove it, or give another directory")
    except OSError as exc:
        raise UsageError(f"site: -o {output}: {exc.strerror or exc}") from None


def _quiet_worker() -> None:
    """A worker leaves Ctrl-C and SIGTERM to the command: it cancels what is queued and
    waits for what runs (each bundle's temporary store removed as it ends); a worker
    stopped where it waits for work would print a traceback, and one stopped midway
    would break the pool. Its bundles' throwaway stores are recorded (state.temporary),
    which starts a watchdog of the worker's own; a worker ends without atexit, where an
    exiting dbarena collects its watchdog, so its finalizers do (else each worker's
    watchdog would be left to PID 1, a zombie under one that does not reap)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    multiprocessing.util.Finalize(None, state.collect_watchdog, exitpriority=0)


@contextmanager
def _pool(workers: int, context: multiprocessing.context.BaseContext | None = None
          ) -> Iterator[concurrent.futures.ProcessPoolExecutor]:
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=_quiet_worker)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)  # nothing queued starts once interrupted
        raise
    pool.shutdown(wait=True)


def build(paths: Sequence[Path], output: Path, allowed_signers: Path | None = None,
          workers: int | None = None) -> Built:
    """Verify every bundle, derive its results and write the site into `output`
    (check_output says which directories may be; it is checked again before writing)."""
    check_output(output, [*paths, *([allowed_signers] if allowed_signers else [])])
    workers = workers or min(len(paths), os.cpu_count() or 1) or 1
    examined: list[Examined] = []
    args = [(str(p), str(allowed_signers) if allowed_signers else None, i) for i, p in enumerate(paths)]
    try:
        if workers > 1:
            with _pool(workers) as pool:
                examined = list(pool.map(_examine, *zip(*args), chunksize=max(1, len(args) // (workers * 8))))
        else:
            examined = [_examine(*a) for a in args]
    except concurrent.futures.process.BrokenProcessPool:
        raise EnvironmentProblem("site: a worker process verifying the bundles died (out of memory?)") from None
    results = [r for x in examined for r in x.results]
    refused = [(x.path, x.refused) for x in examined if x.refused is not None]
    _probes(results)
    check_output(output, [*paths, *([allowed_signers] if allowed_signers else [])])
    try:
        staging = _staging(output)
    except OSError as exc:
        raise EnvironmentProblem(f"site: cannot write {output}: {exc.strerror or exc}") from None
    try:
        _write(staging, examined, results, refused, workers)
        _swap(staging, output)
    except OSError as exc:
        raise EnvironmentProblem(f"site: cannot write {output}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Built(results=len(results), bundles=sum(1 for x in examined if not x.refused),
                 refused=[f"{Path(p).name}: {reason}" for p, reason in refused])


def _staging(output: Path) -> Path:
    """The directory, marked as a site's (before anything else is written in it), with
    what killed sites left removed, and a new staging directory in it."""
    output.mkdir(parents=True, exist_ok=True)
    os.close(os.open(output / MARKER, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
    if not (output / MARKER).stat().st_size:
        (output / MARKER).write_text("A site written by `dbarena site`; it replaces "
                                     + ", ".join(WRITES) + " here, and nothing else.\n")
    for entry in os.scandir(output):
        if entry.name.startswith(STAGING) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=STAGING, dir=output))


def _swap(staging: Path, output: Path) -> None:
    """Each entry of the new site in place of the old one's, by rename (the old one
    moved into the staging directory, removed with it)."""
    for name in WRITES:
        with contextlib.suppress(FileNotFoundError):
            os.rename(output / name, staging / f".old-{name}")
        os.rename(staging / name, output / name)


def _write(output: Path, examined: Sequence[Examined], results: list[Result], refused: list[tuple[str, str]],
           workers: int) -> None:
    """The whole site into `output` (a new directory)."""
    for sub in _FOLDERS:
        (output / sub).mkdir()
    for x in examined:
        if x.refused is None and x.results:
            shutil.copyfile(x.path, output / "bundles" / x.results[0].bundle)
    _SHARED[:] = results
    _KINDS.clear()
    for i, r in enumerate(results):
        _KINDS.setdefault(_kind(r), []).append(i)
    # The pages in forked workers where there are many (a page is up to MAX_BASELINES
    # decisions): fork, so that each inherits the results rather than receive them.
    chunks = [list(range(i, len(results), workers)) for i in range(workers)]
    try:
        if workers > 1 and len(results) > workers and "fork" in multiprocessing.get_all_start_methods():
            with _pool(workers, multiprocessing.get_context("fork")) as pool:
                list(pool.map(_write_pages, chunks, [str(output)] * len(chunks)))
        else:
            _write_pages(range(len(results)), str(output))
    except concurrent.futures.process.BrokenProcessPool:
        raise EnvironmentProblem("site: a worker process writing the pages died (out of memory?)") from None
    finally:
        _SHARED.clear()
    site = {"results": [r.figures for r in results],
            "refused": [{"bundle": Path(p).name, "reason": reason} for p, reason in refused]}
    # A script, not a JSON file: a page opened from file:// may not fetch one. JSON is a
    # JavaScript literal; "</" cannot close anything in a file of its own.
    (output / "data.js").write_text("window.DBARENA_SITE = " + json.dumps(site, separators=(",", ":"),
                                                                           allow_nan=False) + ";\n")
    assets = resources.files("dbarena.exchange") / "assets"
    for asset in ("site.js", "page.js"):
        (output / asset).write_text(assets.joinpath(asset).read_text())
    (output / "charts.js").write_text(SERVE_STATIC.joinpath("charts.js").read_text())  # (serve's: one chart code)
    # One style sheet for every page (its chart's look is serve's charts.css): written
    # in each of a thousand pages it was a seventh of them.
    (output / "site.css").write_text(f"{_STYLE}\n{_CHART_STYLE}")
    (output / "index.html").write_text(_index(refused, len(results), sum(1 for x in examined if not x.refused)))
