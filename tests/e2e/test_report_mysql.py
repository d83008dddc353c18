"""`dbarena report` of a real MariaDB store: short sysbench OLTP and mysqlslap points
measured on a throwaway MariaDB for two labels (the committed store
tests/fixtures/stores/report-mysql-two-labels.db), rendered as HTML, Markdown, CSV and JSON; the
parameters, sysbench's p95/p99, mysqlslap's seconds (lower is better) and the server's
CPU appear with the values `dbarena results --json` reads back from the store."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import cli_env
# report and results only read the store: run in this process (tests/inprocess.py), not
# as `python -m dbarena`, half a second of CPU each to start.
from inprocess import dbarena as dbarena_here
from dbarena.report.tables import num, sig

pytestmark = pytest.mark.e2e

SYSBENCH, SLAP = "sysbench-read-write", "mysqlslap"
PRICES = {"maria-a": ("--price-per-hour", "0.5", 0.5), "maria-b": ("--price-per-month", "300", 300 / 730)}


# The real runs the reports are made of: two runs of sysbench-read-write and mysqlslap
# on throwaway MariaDB at 1 and 2 threads, labelled and priced as PRICES says, read from a
# copy of the committed store (tests/fixtures/stores/README.md: the command that made
# them, mysqlslap's points 5,000 queries twice so that the once-a-second system sampler
# sees each): what is tested is the reports of stored points; tests/e2e/test_mysql_sysbench.py
# makes such runs live.
STORE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "report-mysql-two-labels.db"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = tmp_path_factory.mktemp("report-mysql") / "r.db"
    shutil.copy(STORE, store)
    return store


@pytest.fixture(scope="module")
def rendered(stored, tmp_path_factory):
    """Each format of the report at --at-threads 2, and the stored points by
    (label, workload, threads) as `dbarena results --json` prints them."""
    folder = tmp_path_factory.mktemp("rendered")
    texts = {}
    for fmt in ("html", "md", "csv", "json"):
        out = folder / f"report.{fmt}"
        done = dbarena_here("report", "--store", str(stored), "--at-threads", "2", "-o", str(out), env=cli_env(folder))
        assert done.returncode == 0, done.stderr
        texts[fmt] = out.read_text()
    done = dbarena_here("results", "--store", str(stored), "--json", env=cli_env(folder))
    assert done.returncode == 0, done.stderr
    points = {(p["label"], p["workload"], p["threads"]): p for p in json.loads(done.stdout)}
    assert len(points) == 8 and all(p["status"] == "ok" for p in points.values())
    runs = {p["label"]: p for p in points.values()}
    return texts, points, runs


# ------------------------------------------------------------------ reading the tables back


# CommonMark's backslash escape: any ASCII punctuation after a backslash stands for itself.
_UNESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _md_tables(text: str) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(section, table title) -> rows as {header: cell} of the Markdown report."""
    tables: dict[tuple[str, str], list[dict[str, str]]] = {}
    section = title = ""
    headers: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif line.startswith("### "):
            title, headers = line[4:], []
            tables[(section, title)] = []
        elif line.startswith("| "):
            # A cell as a renderer shows it: the escapes of report/escaping.py undone.
            cells = [_UNESCAPE.sub(r"\1", c).replace("&lt;", "<").replace("&amp;", "&").strip()
                     for c in line[2:-2].split(" | ")]
            if not headers:
                headers = cells
            else:
                tables[(section, title)].append(dict(zip(headers, cells)))
    return tables


class _HTMLTables(HTMLParser):
    """The same from the HTML report: section heading (h2), table title (h3), cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[tuple[str, str], list[dict[str, str]]] = {}
        self.section = self.title = ""
        self.text: list[str] | None = None
        self.headers: list[str] = []
        self.row: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3", "th", "td"):
            self.text = []
        elif tag == "tr":
            self.row = []

    def handle_data(self, data):
        if self.text is not None:
            self.text.append(data)

    def handle_endtag(self, tag):
        if tag in ("h2", "h3", "th", "td") and self.text is not None:
            text, self.text = "".join(self.text).strip(), None
            if tag == "h2":
                self.section = text
            elif tag == "h3":
                self.title, self.headers = text, []
                self.tables[(self.section, self.title)] = []
            else:
                self.row.append(text)
        elif tag == "tr":
            if not self.headers:
                self.headers = self.row
            else:
                self.tables[(self.section, self.title)].append(dict(zip(self.headers, self.row)))


def _html_tables(text: str) -> dict[tuple[str, str], list[dict[str, str]]]:
    parser = _HTMLTables()
    parser.feed(text)
    return parser.tables


def _by_level(rows: list[dict[str, str]]) -> dict[tuple[str, int], dict[str, str]]:
    return {(r["label"], int(r["threads"])): r for r in rows}


# ------------------------------------------------------------------ tests


def test_html_and_markdown_show_the_same_tables(rendered):
    texts, _, _ = rendered
    md, page = _md_tables(texts["md"]), _html_tables(texts["html"])
    # The decision leads both: one Markdown table per label (a block to quote), one HTML
    # table for all labels; the rest is the same table for table.
    decided_md = [rows for (section, _), rows in md.items() if section == "Decision"]
    decided_html = [rows for (section, _), rows in page.items() if section == "Decision"]
    assert sum(map(len, decided_md)) == sum(map(len, decided_html)) > 0
    md = {k: v for k, v in md.items() if k[0] != "Decision"}
    page = {k: v for k, v in page.items() if k[0] != "Decision"}
    assert md == page
    sections = {section for section, _ in md}
    assert sections == {"What differs", f"mysql {SYSBENCH}", f"mysql {SLAP}", "Provenance"}
    # What differs holds only facts whose values differ (here at least the price each
    # label was given); the identical ones are folded below it.
    differing = md[("What differs", "What differs between the labels")]
    assert differing and all(len(set(list(r.values())[1:])) > 1 for r in differing)
    assert any(r[""] == "price" for r in differing)


def test_the_parameters_a_reader_needs_to_run_it_again(rendered):
    texts, _, runs = rendered
    tables = _md_tables(texts["md"])
    sysbench = {r["label"]: r for r in tables[(f"mysql {SYSBENCH}", "Parameters")]}
    slap = {r["label"]: r for r in tables[(f"mysql {SLAP}", "Parameters")]}
    assert set(sysbench) == set(slap) == set(PRICES)
    for label in PRICES:
        # sysbench: tables x table size, seconds per point, one client per thread
        assert sysbench[label]["dataset"] == "table_size=1000, tables=2"
        assert sysbench[label]["duration per point"] == "2 s" and sysbench[label]["warm-up"] == "0 s"
        assert sysbench[label]["clients per thread"] == "1" and sysbench[label]["thread levels"] == "1, 2"
        assert sysbench[label]["tool"].startswith("sysbench 1.") and sysbench[label]["repeats"] == "1"
        # mysqlslap: a number of queries, not a duration
        assert slap[label]["dataset"] == "iterations=2, queries=5000"
        assert slap[label]["duration per point"] == "bounded by queries"
        assert "mysqlslap" in slap[label]["tool"] and "Ver " in slap[label]["tool"] and "  " not in slap[label]["tool"]
    provenance = {r[""]: r for r in tables[("Provenance", "Provenance")]}
    for label in PRICES:
        assert runs[label]["server_version"] in provenance["mysql: server"][label]
        assert "sysbench 1." in provenance["mysql: tools"][label]
        # each tool named once, as printed: mysqlslap prints its path ("/usr/bin/mysqlslap  Ver ...")
        tools = provenance["mysql: tools"][label]
        assert "mysqlslap /" not in tools and "  " not in tools and "Ver " in tools
    assert "table_size=1000, tables=2" in texts["html"] and "iterations=2, queries=5000" in texts["html"]


def test_sysbench_p95_and_p99_appear_with_the_stored_values(rendered):
    texts, points, _ = rendered
    results = _by_level(_md_tables(texts["md"])[(f"mysql {SYSBENCH}", "Results")])
    rows = {(r["label"], r["workload"], int(r["threads"])): r for r in csv.DictReader(io.StringIO(texts["csv"]))}
    exported = {(r["label"], r["workload"], r["threads"]): r for r in json.loads(texts["json"])["rows"]}
    for label in PRICES:
        for n in (1, 2):
            stored = points[(label, SYSBENCH, n)]
            assert stored["latency_p95_ms"] and stored["latency_p99_ms"] >= stored["latency_p95_ms"]
            for field, header in (("latency_p95_ms", "p95 (ms)"), ("latency_p99_ms", "p99 (ms)"),
                                  ("latency_p50_ms", "p50 (ms)"), ("latency_avg_ms", "avg latency (ms)")):
                assert results[(label, n)][header] == num(stored[field], 2), (label, n, field)
                assert float(rows[(label, SYSBENCH, n)][field]) == pytest.approx(stored[field], rel=1e-9)
                assert exported[(label, SYSBENCH, n)][field] == pytest.approx(stored[field], rel=1e-9)
            # the percentiles' small multiples (one figure): the hover texts of its p95
            # and p99 axes carry the exact stored figures
            figure = texts["html"].split('<figure class="chart chart-latency_percentiles">')[1].split("</figure>")[0]
            for what, field in (("p95", "latency_p95_ms"), ("p99", "latency_p99_ms")):
                assert f"{label}, {n} threads: {stored[field]:,.3f} ms ({what})" in unescape(figure)


def test_mysqlslap_is_seconds_lower_is_better_with_the_stored_values(rendered):
    texts, points, _ = rendered
    tables = _md_tables(texts["md"])
    section = f"mysql {SLAP}"
    results = _by_level(tables[(section, "Results")])
    ranking = {r["label"]: r for r in tables[(section, "Points and best")]}
    rows = {(r["label"], r["workload"], int(r["threads"])): r for r in csv.DictReader(io.StringIO(texts["csv"]))}
    exported = {(r["label"], r["workload"], r["threads"]): r for r in json.loads(texts["json"])["rows"]}
    for label, (_, _, per_hour) in PRICES.items():
        seconds = {n: points[(label, SLAP, n)]["run_avg_s"] for n in (1, 2)}
        for n, took in seconds.items():
            assert took > 0
            assert results[(label, n)]["seconds to run the queries"] == f"{took:,.3f}"
            assert float(rows[(label, SLAP, n)]["seconds"]) == pytest.approx(took, rel=1e-9)
            assert rows[(label, SLAP, n)]["metric"] == "seconds" and rows[(label, SLAP, n)]["tps"] == ""
            assert exported[(label, SLAP, n)]["seconds"] == pytest.approx(took, rel=1e-9)
        # N clients share the same 5,000 queries: efficiency = seconds(1) / (N x seconds(N))
        assert float(rows[(label, SLAP, 2)]["scaling_efficiency"]) == pytest.approx(seconds[1] / (2 * seconds[2]))
        fewest = min(seconds, key=lambda n: seconds[n])
        assert ranking[label]["sum of seconds over levels"] == num(seconds[1] + seconds[2], 3)
        assert ranking[label]["fewest seconds"] == f"{num(seconds[fewest], 3)} at {fewest}"
    # ranked fewest first
    order = [r["label"] for r in tables[(section, "Points and best")]]
    assert order == sorted(PRICES, key=lambda l: sum(points[(l, SLAP, n)]["run_avg_s"] for n in (1, 2)))
    page = texts["html"].split(f'<section id="mysql-{SLAP}">')[1].split("</section>")[0]
    assert "seconds (lower is better)" in page and "sum of QPS" not in page and "steady-state" not in page


@pytest.mark.parametrize("workload", [SYSBENCH, SLAP])
def test_the_price_table_at_the_chosen_level_names_the_cheapest_by_hand(rendered, workload):
    texts, points, _ = rendered
    seconds = workload == SLAP
    # mysqlslap: hourly price x seconds / 3600 per run; sysbench: hourly price / (TPS / 100)
    # with TPS dbarena's steady-state mean (one repeat: the point's own).
    cost = {label: per_hour * points[(label, workload, 2)]["run_avg_s"] / 3600 if seconds
            else per_hour / (points[(label, workload, 2)]["steady_tps"] / 100)
            for label, (_, _, per_hour) in PRICES.items()}
    cheapest, other = sorted(cost, key=lambda label: cost[label])
    (table,) = [rows for (section, title), rows in _md_tables(texts["md"]).items()
                if section == f"mysql {workload}" and title == "Price / performance at 2 threads"]
    assert [(r["label"], r["threads"]) for r in table] == [(cheapest, "2"), (other, "2")]  # that level only
    column = "per run" if seconds else "per hour per 100 TPS"
    assert [r[column] for r in table] == [f"{sig(cost[cheapest])} USD", f"{sig(cost[other])} USD"]
    assert [r["against the cheapest"] for r in table] == ["cheapest", f"{(cost[other] / cost[cheapest] - 1) * 100:+.1f} %"]
    note = texts["md"].split(f"## mysql {workload}")[1].split("### Price / performance at 2 threads")[1]
    assert f"{cheapest} is cheapest {'per run' if seconds else 'for the same throughput'}: {other} costs " in note
    section = json.loads(texts["json"])["sections"]
    assert next(s for s in section if s["workload"] == workload)["cheapest"]["label"] == cheapest


def test_server_cpu_appears_with_the_stored_values(rendered):
    texts, points, _ = rendered
    tables = _md_tables(texts["md"])
    rows = {(r["label"], r["workload"], int(r["threads"])): r for r in csv.DictReader(io.StringIO(texts["csv"]))}
    for workload in (SYSBENCH, SLAP):
        system = _by_level(tables[(f"mysql {workload}", "System view")])
        assert set(system) == {(label, n) for label in PRICES for n in (1, 2)}
        for (label, n), row in system.items():
            stored = points[(label, workload, n)]
            assert row["server CPU (cores)"] == num(stored["server_cpu"], 2)
            assert row["machine CPU busy %"] == num(stored["cpu_busy_pct"], 0)
            if stored["server_cpu"] is not None:
                assert float(rows[(label, workload, n)]["server_cpu"]) == pytest.approx(stored["server_cpu"], rel=1e-9)
    # every point lasts over a second: the server's CPU is measured, not "-"
    assert all(p["server_cpu"] > 0 for p in points.values())
