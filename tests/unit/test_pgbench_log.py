"""pgbench's per-transaction logs (`pgbench -l`) read into latency distributions
(dbarena.workloads.pgbench_log), and the distributions themselves (dbarena.stats.latency).

Real logs of pgbench 15, captured byte for byte with their stdout by
tests/fixtures/pgbench-logs/capture.py (see the README there): what the reader finds
in them must agree with what pgbench printed about the same run. The documentation
examples of older formats are copied from ../shared/corpus/pgbench-logs into
tests/fixtures/pgbench-logs/corpus (with their SOURCES.tsv lines).
Every figure compared is either read off pgbench's own output or computed here by a
plain line-by-line reading of the file, never by the code under test.
"""

from __future__ import annotations

import io
import re
from collections import Counter, deque
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dbarena.stats import latency
from dbarena.errors import ParseError
from dbarena.stats.latency import Latencies
from dbarena.workloads import pgbench_log

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "pgbench-logs"
SHARED = LOGS / "corpus"  # copied from ../shared/corpus/pgbench-logs, with its SOURCES.tsv lines
DOC_SKIPPED = SHARED / "DOCEXAMPLE-pg-per-transaction-log-rate-latency-limit-skipped.txt"
DOC_HEADER = SHARED / "pg17devel-log-file-with-log-header-patch.txt"
DOC_AGGREGATE = SHARED / "DOCEXAMPLE-pg-aggregate-interval-log.txt"

RUNS = sorted(p.name[: -len(".stdout.txt")] for p in LOGS.glob("pg*.stdout.txt"))
OUTCOME_WORDS = {w.decode() for w in pgbench_log.OUTCOMES}
# What each captured case is there to show: outcome words that must occur in its logs.
MUST_SHOW = {
    "select-only": set(),
    "rate-latency-limit": {"skipped"},
    "max-tries": {"failed"},
    "max-tries-detailed": {"serialization"},
    "deadlock-detailed": {"serialization", "deadlock"},
}
FAST = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ helpers


def reference(data: bytes) -> dict:
    """The plain reading of a log: every line split on spaces. Latencies, outcome
    counts, the columns per line, the retries column's values."""
    lines = data.split(b"\n")
    truncated = lines.pop() != b""  # text after the last newline
    if lines and lines[0].startswith(b"client_id "):
        lines = lines[1:]
    values, outcomes, widths, retries = [], Counter(), set(), []
    for line in lines:
        cols = line.decode().split(" ")
        widths.add(len(cols))
        if cols[2].isdigit():
            values.append(int(cols[2]))
        else:
            outcomes[cols[2]] += 1
        retries.append(int(cols[-1]))
    if truncated:
        outcomes["truncated"] += 1
    return {"values": values, "outcomes": dict(outcomes), "lines": len(lines), "columns": widths,
            "retries": retries}


def read_bytes(data: bytes, name: str = "log") -> Latencies:
    out = Latencies(source="pgbench log")
    pgbench_log.read_stream(io.BytesIO(data), out, name=name)
    return out


def printed(run: str) -> dict:
    """The numbers pgbench printed about a run (stdout)."""
    text = (LOGS / f"{run}.stdout.txt").read_text()

    def number(pattern: str, default=None):
        m = re.search(pattern, text, re.M)
        return (float(m[1]) if "." in m[1] else int(m[1])) if m else default

    above = re.search(r"^number of transactions above the ([\d.]+) ms latency limit: (\d+)/(\d+)", text, re.M)
    return {
        "processed": number(r"^number of transactions actually processed: (\d+)"),
        "failed": number(r"^number of failed transactions: (\d+)", 0),
        "skipped": number(r"^number of transactions skipped: (\d+)", 0),
        "serialization": number(r"^number of serialization failures: (\d+)"),
        "deadlock": number(r"^number of deadlock failures: (\d+)"),
        "latency_average_ms": number(r"^latency average = ([\d.]+) ms"),
        "max_tries": number(r"^maximum number of tries: (\d+)"),
        "retried": number(r"^number of transactions retried: (\d+)"),
        "retries": number(r"^total number of retries: (\d+)"),
        "rate": "rate limit schedule lag:" in text,  # --rate
        "limit_us": round(float(above[1]) * 1000) if above else None,
        "above_limit": int(above[2]) if above else None,
    }


def thread_logs(run: str) -> list[Path]:
    return sorted(LOGS.glob(f"{run}.thread*.log"))


def summary(lat: Latencies) -> dict:
    return {"count": lat.count, "sum_us": lat.sum_us, "min_us": lat.min_us, "max_us": lat.max_us,
            "outcomes": dict(lat.outcomes)}


def from_values(values, via: str = "array") -> Latencies:
    out = Latencies()
    if via == "array":
        out.record_array(np.asarray(values, dtype=np.int64))
    else:
        c = Counter(values)
        out.record_counts(list(c), list(c.values()))
    return out


# ------------------------------------------------------------------ captured logs


def test_the_captured_runs_are_there():
    assert {r.split("-", 1)[1] for r in RUNS} >= set(MUST_SHOW), RUNS
    for run in RUNS:
        assert len(thread_logs(run)) == 2, run  # -j 2: two log files per run


def _case(run: str) -> str:
    return run.split("-", 1)[1]


@pytest.mark.parametrize("path", [p for r in RUNS for p in thread_logs(r)], ids=lambda p: p.name)
def test_each_captured_file_parses_and_counts_every_line(path):
    data = path.read_bytes()
    ref = reference(data)
    lat = pgbench_log.read_files([path])
    assert data.endswith(b"\n")
    assert lat.count + sum(lat.outcomes.values()) == ref["lines"] == data.count(b"\n")
    assert set(lat.outcomes) <= OUTCOME_WORDS
    assert summary(lat) == {"count": len(ref["values"]), "sum_us": sum(ref["values"]),
                            "min_us": min(ref["values"]), "max_us": max(ref["values"]),
                            "outcomes": ref["outcomes"]}
    assert lat.source == "pgbench log"


@pytest.mark.parametrize("run", RUNS)
def test_a_run_agrees_with_what_pgbench_printed(run):
    p = printed(run)
    lat = pgbench_log.read_files(thread_logs(run))
    refs = [reference(f.read_bytes()) for f in thread_logs(run)]
    lines = sum(r["lines"] for r in refs)
    outcomes = lat.outcomes

    assert set(outcomes) >= MUST_SHOW[_case(run)]
    # pgbench's own total: processed + skipped + failed (the percentages it prints
    # after "failed" and "skipped" are of that sum).
    assert lat.count == p["processed"]
    assert outcomes.get("skipped", 0) == p["skipped"]
    failed = sum(outcomes.get(w, 0) for w in ("failed", "serialization", "deadlock"))
    assert failed == p["failed"]
    assert lines == p["processed"] + p["skipped"] + p["failed"]
    if p["serialization"] is not None:  # --failures-detailed
        assert "failed" not in outcomes
        assert outcomes.get("serialization", 0) == p["serialization"]
        assert outcomes.get("deadlock", 0) == p["deadlock"]
    else:
        assert "serialization" not in outcomes and "deadlock" not in outcomes

    # Columns: 6, plus the schedule lag with --rate, plus the retries with --max-tries > 1.
    columns = set().union(*(r["columns"] for r in refs))
    assert columns == {6 + p["rate"] + (p["max_tries"] != 1)}
    if p["max_tries"] != 1:  # the last column is tries - 1, for failed transactions too
        retries = [n for r in refs for n in r["retries"]]
        assert sum(retries) == p["retries"]
        assert sum(n > 0 for n in retries) == p["retried"]
        assert max(retries) <= p["max_tries"] - 1
    if p["limit_us"] is not None:
        values = [v for r in refs for v in r["values"]]
        assert sum(v > p["limit_us"] for v in values) == p["above_limit"]

    assert p["latency_average_ms"] is not None
    assert lat.mean_ms == pytest.approx(p["latency_average_ms"], rel=0.02)
    pct = lat.percentiles_ms()
    order = [pct[k] for k in ("p50", "p90", "p95", "p99", "p999", "max")]
    assert None not in order
    assert lat.min_us / 1000 <= order[0]
    assert order == sorted(order)
    assert pct["max"] == lat.max_us / 1000 == max(v for r in refs for v in r["values"]) / 1000


@pytest.mark.parametrize("run", RUNS)
def test_reading_the_thread_files_together_equals_merging_them(run):
    together = pgbench_log.read_files(thread_logs(run))
    parts = [pgbench_log.read_files([f]) for f in thread_logs(run)]
    assert together.encode() == latency.merged(parts).encode()
    into = Latencies(source="pgbench log")
    assert pgbench_log.read_files(thread_logs(run), into=into) is into


@pytest.mark.parametrize("block", [64, 1, 7, 100, 4096])
@pytest.mark.parametrize("run", RUNS)
def test_small_blocks_read_as_one_block(run, block, monkeypatch):
    whole = [pgbench_log.read_files([f]).encode() for f in thread_logs(run)]
    monkeypatch.setattr(pgbench_log, "BLOCK_BYTES", block)
    assert [pgbench_log.read_files([f]).encode() for f in thread_logs(run)] == whole


# ------------------------------------------------------------------ documentation examples


def test_documentation_example_with_skipped_lines():
    lat = pgbench_log.read_files([DOC_SKIPPED])
    assert lat.count == 5
    assert lat.outcomes == {"skipped": 2}
    assert (lat.sum_us, lat.min_us, lat.max_us) == (4621 + 6173 + 4722 + 4142 + 2465, 2465, 6173)
    assert lat.mean_ms == pytest.approx(22123 / 5 / 1000)


def test_log_with_a_header_line():
    lat = pgbench_log.read_files([DOC_HEADER])
    assert lat.count == 2 and lat.outcomes == {}
    assert (lat.sum_us, lat.min_us, lat.max_us) == (8435 + 1130, 1130, 8435)


@pytest.mark.parametrize("block", [pgbench_log.BLOCK_BYTES, 16, 1])
def test_documentation_examples_in_small_blocks(block, monkeypatch):
    whole = [pgbench_log.read_files([p]).encode() for p in (DOC_SKIPPED, DOC_HEADER)]
    monkeypatch.setattr(pgbench_log, "BLOCK_BYTES", block)
    assert [pgbench_log.read_files([p]).encode() for p in (DOC_SKIPPED, DOC_HEADER)] == whole


def test_an_aggregate_interval_log_is_refused():
    # interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency:
    # six whole numbers, like a per-transaction line, but not one.
    with pytest.raises(ParseError):
        pgbench_log.read_files([DOC_AGGREGATE])


# ------------------------------------------------------------------ malformed input

GOOD6 = [b"0 81 4621 0 1412881037 912698", b"0 82 6173 0 1412881037 914578", b"0 83 4722 0 1412881037 916203",
         b"1 84 4142 0 1412881037 918023", b"1 85 2465 0 1412881037 919759"]
GOOD7 = DOC_SKIPPED.read_bytes().splitlines() if DOC_SKIPPED.exists() else []


def _with_line(lines: list[bytes], index: int, line: bytes) -> bytes:
    lines = list(lines)
    lines[index] = line
    return b"\n".join(lines) + b"\n"


BAD = {
    # name: (the good lines, index of the bad line, the bad line)
    "missing column (6-column log)": (GOOD6, 2, b"0 83 4722 0 1412881037"),
    "missing column (7-column log)": (GOOD7, 4, b"0 83 4722 0 1412881037 916203"),
    "extra column": (GOOD6, 3, b"1 84 4142 0 1412881037 918023 12 13 14"),
    "letter inside the time": (GOOD6, 2, b"0 83 47a2 0 1412881037 916203"),
    "letter inside the time (7-column log)": (GOOD7, 4, b"0 83 47x2 0 1412881037 916203 3108"),
    "letter inside another number": (GOOD6, 2, b"0 83 4722 0 1412881037 91b203"),
    "letter inside the client id": (GOOD6, 3, b"1x 84 4142 0 1412881037 918023"),
    "negative time": (GOOD6, 2, b"0 83 -4722 0 1412881037 916203"),
    "unknown word as the time": (GOOD6, 2, b"0 83 aborted 0 1412881037 916203"),
    "outcome word with a capital": (GOOD6, 3, b"1 84 Skipped 0 1412881037 918023"),
    "empty column (double space)": (GOOD6, 2, b"0 83  4722 0 1412881037 916203"),
    "empty column (7-column log)": (GOOD7, 4, b"0 83 4722 0 1412881037  916203"),
    "empty last column": (GOOD6, 3, b"1 84 4142 0 1412881037 918023 "),
    "leading space": (GOOD6, 3, b" 1 84 4142 0 1412881037 918023"),
    "tab for a space": (GOOD6, 2, b"0 83 4722\t0 1412881037 916203"),
    "empty line": (GOOD6, 2, b""),
    "time too long to be one": (GOOD6, 2, b"0 83 1234567890123456789 0 1412881037 916203"),
    "punctuation inside the time": (GOOD6, 2, b"0 83 47.2 0 1412881037 916203"),
    "punctuation inside an outcome word": (GOOD6, 2, b"0 83 skip-ped 0 1412881037 916203"),
    "punctuation before the time": (GOOD6, 2, b"0 83 :4722 0 1412881037 916203"),
    "minus before another number": (GOOD6, 2, b"0 83 4722 0 -1412881037 916203"),
    "carriage return before the newline": (GOOD6, 2, b"0 83 4722 0 1412881037 916203\r"),
}
COLUMNS = "(client, transaction, time, script, epoch, microseconds[, lag][, retries])"
NOT_TIME = "is not a number or an outcome (skipped, failed, serialization, deadlock)"
# Why each is refused, whatever the block size: a line without the log's shape first,
# then a time that is no number and no outcome word, then any other byte out of place.
REASONS = {
    "missing column (6-column log)": f"5 columns where the log has 6 {COLUMNS}",
    "missing column (7-column log)": f"6 columns where the log has 7 {COLUMNS}",
    "extra column": f"9 columns where the log has 6 {COLUMNS}",
    "letter inside the time": f"transaction time '47a2' {NOT_TIME}",
    "letter inside the time (7-column log)": f"transaction time '47x2' {NOT_TIME}",
    "letter inside another number": "column 6 '91b203' is not a number",
    "letter inside the client id": "column 1 '1x' is not a number",
    "negative time": "unknown transaction time '-4722'",
    "unknown word as the time": "unknown transaction time 'aborted'",
    "outcome word with a capital": "unknown transaction time 'Skipped'",
    "empty column (double space)": f"7 columns where the log has 6 {COLUMNS}",
    "empty column (7-column log)": "column 6 '' is not a number",
    "empty last column": f"7 columns where the log has 6 {COLUMNS}",
    "leading space": f"7 columns where the log has 6 {COLUMNS}",
    "tab for a space": f"5 columns where the log has 6 {COLUMNS}",
    "empty line": f"1 columns where the log has 6 {COLUMNS}",
    "time too long to be one": "a transaction time too long to be one",
    "punctuation inside the time": f"transaction time '47.2' {NOT_TIME}",
    "punctuation inside an outcome word": "unknown transaction time 'skip-ped'",
    "punctuation before the time": "unknown transaction time ':4722'",
    "minus before another number": "column 5 '-1412881037' is not a number",
    "carriage return before the newline": "column 6 '916203\\r' is not a number",
}


@pytest.mark.parametrize("block", [pgbench_log.BLOCK_BYTES, 64, 1])
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_line_is_named_by_its_number(case, block, monkeypatch):
    lines, index, bad = BAD[case]
    monkeypatch.setattr(pgbench_log, "BLOCK_BYTES", block)
    with pytest.raises(ParseError) as info:
        read_bytes(_with_line(lines, index, bad), name="x.log")
    assert info.value.lineno == index + 1, str(info.value)
    assert info.value.line == bad.decode(), str(info.value)
    assert f"line {index + 1}" in str(info.value) and "x.log" in str(info.value)
    assert info.value.tool == pgbench_log.TOOL
    assert info.value.reason == f"x.log: {REASONS[case]}"


def _with_time(line: bytes, time: bytes) -> bytes:
    fields = line.split(b" ")
    fields[2] = time
    return b" ".join(fields)


# Times of every length pgbench could write (1 to 18 digits: up to 8 are read as one
# 64-bit word, longer ones digit by digit), small and large digits.
TIMES = [t[:width].encode() for width in range(1, 19) for t in ("9" * 18, "1" + "0" * 17, "123456789012345678")]


@pytest.mark.parametrize("block", [pgbench_log.BLOCK_BYTES, 64])
def test_times_of_every_length_are_read_exactly(block, monkeypatch):
    lines = (LOGS / f"{RUNS[0].split('-')[0]}-max-tries.thread1.log").read_bytes().splitlines()
    monkeypatch.setattr(pgbench_log, "BLOCK_BYTES", block)
    data = b"".join(_with_time(line, time) + b"\n" for line, time in zip(lines, TIMES))
    ref = reference(data)
    assert summary(read_bytes(data)) == {"count": len(TIMES), "sum_us": sum(map(int, TIMES)),
                                         "min_us": 1, "max_us": 999_999_999_999_999_999, "outcomes": {}}
    assert sorted(ref["values"]) == sorted(map(int, TIMES))


@pytest.mark.parametrize("time", TIMES[::3] + [b"1", b"12", b"0", b"007"])
def test_the_first_time_of_a_file_is_read_exactly(time):
    # The first line's time starts a few bytes into the block: the 8 bytes read from it
    # are the block's first line, whatever its length.
    lines = (LOGS / f"{RUNS[0].split('-')[0]}-select-only.thread0.log").read_bytes().splitlines()
    data = _with_line(lines, 0, _with_time(lines[0], time))
    ref = reference(data)
    assert ref["values"][0] == int(time)
    assert summary(read_bytes(data)) == {"count": len(ref["values"]), "sum_us": sum(ref["values"]),
                                         "min_us": min(ref["values"]), "max_us": max(ref["values"]),
                                         "outcomes": ref["outcomes"]}


@pytest.mark.parametrize("block", [64, 4096])
def test_a_block_stays_as_read_until_its_buffer_comes_round_again(block, monkeypatch):
    # read_stream keeps at most `buffers - 1` blocks in flight while it reads the next
    # one into the buffer of the oldest: the blocks still in flight must be untouched.
    monkeypatch.setattr(pgbench_log, "BLOCK_BYTES", block)
    path = thread_logs(RUNS[0])[0]
    kept: deque = deque()
    read = b""
    with open(path, "rb") as f:
        for view, _, _ in pgbench_log._blocks(f, Latencies(), path.name, buffers=3):
            kept.append((view, bytes(view)))
            read += bytes(view)
            if len(kept) > 3:
                kept.popleft()
            assert [bytes(v) for v, _ in kept] == [copy for _, copy in kept]
    assert read == path.read_bytes()


@pytest.mark.parametrize("block", [pgbench_log.BLOCK_BYTES, 64])
@pytest.mark.parametrize("bad", [b"1 40 9x9 0 1795362329 96037 0", b"1 40 999 0 17953x2329 96037 0",
                                 b"1 40 aborted 0 1795362329 96037 0", b"1 40 999 0 1795362329  96037"])
def test_a_bad_line_deep_in_a_real_log_is_named_by_its_number(bad, block, monkeypatch):
    lines = (LOGS / f"{RUNS[0].split('-')[0]}-max-tries.thread1.log").read_bytes().splitlines()
    monkeypatch.setattr(pgbench_log, "BLOCK_BYTES", block)
    with pytest.raises(ParseError) as info:
        read_bytes(_with_line(lines, 39, bad))
    assert (info.value.lineno, info.value.line) == (40, bad.decode()), str(info.value)


def test_line_numbers_count_the_header_line():
    lines = DOC_HEADER.read_bytes().splitlines() + [b"0 3 12o4 0 1699902315 905000"]
    with pytest.raises(ParseError) as info:
        read_bytes(b"\n".join(lines) + b"\n")
    assert (info.value.lineno, info.value.line) == (4, "0 3 12o4 0 1699902315 905000"), str(info.value)
    lines = DOC_HEADER.read_bytes().splitlines() + [b"0 3 sometimes 0 1699902315 905000"]
    with pytest.raises(ParseError) as info:
        read_bytes(b"\n".join(lines) + b"\n")
    assert (info.value.lineno, info.value.line) == (4, "0 3 sometimes 0 1699902315 905000"), str(info.value)


@pytest.mark.parametrize("block", [pgbench_log.BLOCK_BYTES, 64, 1])
def test_a_last_line_without_newline_is_truncated_not_recorded(block, monkeypatch):
    monkeypatch.setattr(pgbench_log, "BLOCK_BYTES", block)
    data = b"\n".join(GOOD6) + b"\n" + b"1 86 9999 0 1412881"
    lat = read_bytes(data)
    assert lat.count == 5
    assert lat.outcomes == {"truncated": 1}
    assert lat.max_us == 6173 and lat.sum_us == 4621 + 6173 + 4722 + 4142 + 2465
    # A complete last line that only lacks its newline is cut off all the same.
    lat = read_bytes(b"\n".join(GOOD6))
    assert (lat.count, lat.outcomes, lat.max_us) == (4, {"truncated": 1}, 6173)
    # Even a truncated line that could not be a log line is only counted.
    lat = read_bytes(b"\n".join(GOOD6) + b"\n1 86 garbage")
    assert (lat.count, lat.outcomes) == (5, {"truncated": 1})


def test_empty_input_records_nothing():
    lat = read_bytes(b"")
    assert (lat.count, lat.outcomes, lat.mean_ms) == (0, {}, None)
    lat = read_bytes(DOC_HEADER.read_bytes().splitlines(keepends=True)[0])
    assert (lat.count, lat.outcomes) == (0, {})


# A random log: one number of columns for every line, times or outcome words, maybe a
# header line, maybe a truncated last line; read whole and in random block sizes.
@st.composite
def logs(draw):
    columns = draw(st.sampled_from([6, 7, 8]))
    times = draw(st.lists(st.one_of(st.integers(1, 10**8), st.integers(1, 3000),
                                    st.sampled_from(sorted(OUTCOME_WORDS))), max_size=40))
    rows = []
    for i, t in enumerate(times):
        extra = draw(st.lists(st.integers(0, 10**6), min_size=columns - 3, max_size=columns - 3))
        rows.append(" ".join(map(str, [i % 3, i, t, *extra])).encode())
    header = b"client_id transaction_no time script_no time_epoch time_us" if draw(st.booleans()) else None
    data = b"".join(line + b"\n" for line in ([header] if header else []) + rows)
    if draw(st.booleans()):
        data += draw(st.sampled_from([b"2 99 12", b"2", b"2 99 skipped 0 1412881037 9"]))
    return data


@FAST
@given(data=logs(), block=st.integers(1, 300))
def test_random_logs_read_as_a_plain_reading_does(data, block):
    ref = reference(data)
    expected = {"count": len(ref["values"]), "sum_us": sum(ref["values"]),
                "min_us": min(ref["values"], default=None), "max_us": max(ref["values"], default=None),
                "outcomes": ref["outcomes"]}
    whole = read_bytes(data)
    assert summary(whole) == expected
    saved = pgbench_log.BLOCK_BYTES
    pgbench_log.BLOCK_BYTES = block
    try:
        small = read_bytes(data)
    finally:
        pgbench_log.BLOCK_BYTES = saved
    assert small.encode() == whole.encode()


# ------------------------------------------------------------------ latency.Latencies

values_lists = st.lists(st.one_of(st.integers(1, 5000), st.integers(1, latency.HIGHEST_US)), max_size=60)


@FAST
@given(a=values_lists, b=values_lists, c=values_lists,
       via=st.lists(st.sampled_from(["array", "counts"]), min_size=4, max_size=4))
def test_merging_is_associative_and_equals_recording_all_at_once(a, b, c, via):
    left = from_values(a, via[0]).merge(from_values(b, via[1])).merge(from_values(c, via[2]))
    right = from_values(a, via[0]).merge(from_values(b, via[1]).merge(from_values(c, via[2])))
    once = from_values(a + b + c, via[3])
    assert left.encode() == right.encode() == once.encode()
    assert left.percentiles_ms() == right.percentiles_ms() == once.percentiles_ms()
    assert (left.count, left.sum_us) == (len(a + b + c), sum(a + b + c))


@FAST
@given(a=values_lists, b=values_lists, oa=st.dictionaries(st.sampled_from(sorted(OUTCOME_WORDS)), st.integers(1, 9)),
       ob=st.dictionaries(st.sampled_from(sorted(OUTCOME_WORDS)), st.integers(1, 9)))
def test_merging_adds_outcomes_and_keeps_exact_figures(a, b, oa, ob):
    x, y = from_values(a), from_values(b)
    for k, n in oa.items():
        x.add_outcome(k, n)
    for k, n in ob.items():
        y.add_outcome(k, n)
    m = latency.merged([x, y])
    assert m.outcomes == dict(Counter(oa) + Counter(ob))
    assert (m.count, m.sum_us) == (len(a) + len(b), sum(a) + sum(b))
    assert (m.min_us, m.max_us) == (min(a + b, default=None), max(a + b, default=None))


@FAST
@given(values=st.lists(st.one_of(st.integers(1, 5000), st.integers(1, latency.HIGHEST_US)), min_size=1,
                       max_size=200),
       via=st.sampled_from(["array", "counts"]))
@example(values=list(range(1, 10)), via="array")  # p90 of 9 values: the 9th (ceil(8.1)), not the 8th
def test_percentiles_are_within_precision_above_the_exact_ones(values, via):
    pct = from_values(values, via).percentiles_ms()
    for name, p in latency.PERCENTILES:
        exact = float(np.percentile(values, p, method="inverted_cdf"))
        got = round(pct[name] * 1000)
        assert exact <= got <= exact * (1 + latency.PRECISION), (name, exact, got)
    assert pct["max"] == max(values) / 1000


def test_an_empty_distribution_has_no_percentiles():
    lat = Latencies()
    assert lat.percentiles_ms() == {"p50": None, "p90": None, "p95": None, "p99": None, "p999": None, "max": None}
    assert lat.mean_ms is None
    back = Latencies.decode(lat.encode())
    assert back.count == 0 and back.percentiles_ms() == lat.percentiles_ms()
    lat.record_array(np.array([], dtype=np.int64))
    lat.record_counts([5], [0])
    assert lat.count == 0 and lat.percentiles_ms()["p50"] is None


@FAST
@given(value=st.one_of(st.integers(1, 5000), st.integers(1, latency.HIGHEST_US)), n=st.integers(1, 1000),
       via=st.sampled_from(["array", "counts"]))
def test_a_single_value_is_every_percentile(value, n, via):
    pct = from_values([value] * n, via).percentiles_ms()
    assert set(pct.values()) == {value / 1000}


@FAST
@given(values=values_lists, outcomes=st.dictionaries(st.sampled_from(sorted(OUTCOME_WORDS) + ["truncated"]),
                                                     st.integers(1, 10**6)),
       rate=st.one_of(st.none(), st.floats(0.01, 1)), via=st.sampled_from(["array", "counts"]))
def test_encode_decode_round_trip(values, outcomes, rate, via):
    lat = from_values(values, via)
    lat.sampling_rate, lat.source = rate, "pgbench log"
    for k, n in outcomes.items():
        lat.add_outcome(k, n)
    record = lat.encode()
    back = Latencies.decode(record)
    assert back.encode() == record
    assert summary(back) == summary(lat)
    assert back.percentiles_ms() == lat.percentiles_ms()
    assert back.hdr.get_total_count() == len(values)
    if values:
        assert record["hdr"].startswith("HISTF")
    # Still mergeable after the round trip.
    assert back.merge(from_values(values)).count == 2 * len(values)


_HDR = None


def _hdr():
    global _HDR
    if _HDR is None:
        from hdrh.histogram import HdrHistogram

        _HDR = HdrHistogram(1, 3_600_000_000, 3)
    return _HDR


BOUNDARIES = sorted({v for k in range(33) for v in (2**k - 1, 2**k, 2**k + 1)
                     if 1 <= v <= latency.HIGHEST_US} | {latency.HIGHEST_US, 2047, 2048, 2049, 4095, 4096})


def test_bucket_index_equals_hdrh_at_powers_of_two():
    ours = latency.bucket_index(np.array(BOUNDARIES, dtype=np.int64))
    assert ours.tolist() == [_hdr()._counts_index_for(v) for v in BOUNDARIES]
    assert int(ours.max()) < latency.COUNTS_LEN


@FAST
@given(values=st.lists(st.one_of(st.integers(1, latency.HIGHEST_US), st.integers(1, 10**5)), min_size=1,
                       max_size=100))
def test_bucket_index_equals_hdrh(values):
    ours = latency.bucket_index(np.array(values, dtype=np.int64))
    assert ours.tolist() == [_hdr()._counts_index_for(v) for v in values]
