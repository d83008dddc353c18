"""The pgbench parser over real outputs, byte for byte: the public corpus (pgbench
9.3 to 18, copied from ../shared/corpus/pgbench with its SOURCES.tsv) and our own
captures of pgbench 15.18 (stdout and stderr kept apart, as dbarena runs it).

Expected values were read off the text of each file, not produced by the parser.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbarena.errors import ParseError
from dbarena.interfaces import Client
from dbarena.model import Connection, PointSpec
from dbarena.workloads import pgbench

FIXTURES = Path(__file__).parent.parent / "fixtures" / "pgbench"
CORPUS = FIXTURES / "corpus"
CAPTURED = FIXTURES / "captured"
SHARED_CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "pgbench"

# file -> fields read off the file. Fields not listed must be None (never 0).
# "samples": number of progress lines, "first": the first progress line's values.
CORPUS_EXPECTED = {
    "pg9.3-select-only-S-r-koding.txt": dict(
        tps=67927.429654, tps_including_connections=67918.405521, transactions=8151446,
        transaction_type="SELECT only", scale=32, clients=16, threads=8, duration_s=120, query_mode="simple",
    ),
    "pg9.3-tpcb-r-l-scale-ignored-koding.txt": dict(
        tps=589.544342, tps_including_connections=589.443877, transactions=70762,
        transaction_type="TPC-B (sort of)", scale=32, clients=16, threads=8, duration_s=120, query_mode="simple",
    ),
    "pg95-tpcb-r-stdout-pkb.txt": dict(
        tps=13.062579, tps_including_connections=12.580114, transactions=77, latency_avg_ms=1108.418,
        latency_stddev_ms=760.944, transaction_type="TPC-B (sort of)", scale=1, clients=16, threads=16,
        duration_s=5, query_mode="simple",
    ),
    "pg9.6-13-custom-script-incl-excl-pgbench-tools.txt": dict(
        tps=540.578481, tps_including_connections=540.479109, transactions=32484, latency_avg_ms=22.203,
        transaction_type="/Users/gsmith/repos/pgbench-tools/tests/select-pages.sql", scale=4250, clients=12,
        threads=12, duration_s=60, query_mode="simple",
    ),
    "pg10-custom-script-t-vacuum-errors.txt": dict(
        tps=11.856866, tps_including_connections=11.856389, transactions=1000, transactions_planned=1000,
        transactions_per_client=1000, latency_avg_ms=84.343, transaction_type="test.sql", scale=1, clients=1,
        threads=1, query_mode="simple",
    ),
    "pg11-tpcb-progress-P60-incl-excl.txt": dict(
        tps=1608.348409, tps_including_connections=1608.340352, transactions=965036, latency_avg_ms=4.974,
        latency_stddev_ms=0.681, transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=8, threads=1,
        duration_s=600, query_mode="simple", samples=10,
        first=dict(second=60.0, tps=1611.9, latency_ms=4.961, latency_stddev_ms=0.592),
    ),
    "pg12-select-only-S-on-replica-vacuum-errors.txt": dict(
        tps=247.556199, tps_including_connections=247.553623, transactions=148638, latency_avg_ms=201.815,
        latency_stddev_ms=169.752, transaction_type="<builtin: select only>", scale=150, clients=50, threads=2,
        duration_s=600, query_mode="simple", samples=10,
        first=dict(second=60.0, tps=170.8, latency_ms=291.310, latency_stddev_ms=115.079),
    ),
    "pg12-simple-update-N-progress-password-prompt.txt": dict(
        tps=82.006115, tps_including_connections=82.005351, transactions=49527, latency_avg_ms=606.825,
        latency_stddev_ms=608.772, transaction_type="<builtin: simple update>", scale=150, clients=50, threads=2,
        duration_s=600, query_mode="simple", samples=10,
        first=dict(second=60.0, tps=113.8, latency_ms=436.492, latency_stddev_ms=228.613),
    ),
    "pg13-tpcb-progress-P60-incl-excl.txt": dict(
        tps=532.055085, tps_including_connections=532.052542, transactions=319233, latency_avg_ms=1.879,
        latency_stddev_ms=1.951, transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=1, threads=1,
        duration_s=600, query_mode="simple", samples=10,
        first=dict(second=60.0, tps=474.6, latency_ms=2.106, latency_stddev_ms=2.139),
    ),
    "pg13.22-client-pg15-server-summary-incl-excl.txt": dict(
        tps=1375.734979, tps_including_connections=1375.667649, transactions=82565, latency_avg_ms=5.807,
        latency_stddev_ms=4.255, transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=8, threads=1,
        duration_s=60, query_mode="simple",
    ),
    "pg14.0-tpcb-progress-P10.txt": dict(
        version="14.0", server_version="14.0", tps=570.673235, transactions=342407, latency_avg_ms=14.004, latency_stddev_ms=23.398,
        initial_connection_ms=24.421, transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=8,
        threads=1, duration_s=600, query_mode="simple", samples=60,
        first=dict(second=10.0, tps=901.6, latency_ms=8.838, latency_stddev_ms=4.979),
    ),
    "pg14.1-tpcb-debug-progress-r-stackgres.txt": dict(
        version="14.1", server_version="14.1", tps=439.565233, transactions=4394, latency_avg_ms=2.269, latency_stddev_ms=2.440,
        initial_connection_ms=4.538, transaction_type="<builtin: TPC-B (sort of)>", scale=4, clients=1,
        threads=1, duration_s=10, query_mode="simple", samples=10,
        first=dict(second=1.0, tps=266.0, latency_ms=3.736, latency_stddev_ms=9.689),
    ),
    "pg14.3-client-yugabyte-server-select-only-r.txt": dict(
        version="14.3", server_version="11.2-YB-2024.2.0.0-b0", tps=1221.977158, transactions=144220,
        latency_avg_ms=40.917, initial_connection_ms=2009.740, transaction_type="<builtin: select only>",
        scale=100, clients=50, threads=4, duration_s=120, query_mode="simple",
    ),
    "pg15.2-tpcb-progress-P6-failed-col.txt": dict(
        version="15.2", server_version="15.2", tps=650.597861, transactions=39051, failed_transactions=0, max_tries=1,
        latency_avg_ms=12.293, latency_stddev_ms=18.234, initial_connection_ms=14.823,
        transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=8, threads=1, duration_s=60,
        query_mode="simple", samples=10,
        first=dict(second=6.0, tps=691.7, latency_ms=11.528, latency_stddev_ms=10.036, failed=0),
    ),
    "pg15.3-tpcb-progress-j8.txt": dict(
        version="15.3", server_version="15.3", tps=3503.217767, transactions=210186, failed_transactions=0, max_tries=1,
        latency_avg_ms=2.283, latency_stddev_ms=1.060, initial_connection_ms=13.605,
        transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=8, threads=8, duration_s=60,
        query_mode="simple", samples=10,
        first=dict(second=6.0, tps=3533.1, latency_ms=2.258, latency_stddev_ms=0.721, failed=0),
    ),
    "pg15rc2-max-tries-failures-detailed-r.txt": dict(
        version="15rc2", server_version="15rc2", tps=158.170940, transactions=4743, failed_transactions=0, serialization_failures=0,
        deadlock_failures=0, retried_transactions=0, retries=0, max_tries=3, latency_avg_ms=12.645,
        initial_connection_ms=33.538, transaction_type="<builtin: TPC-B (sort of)>", scale=1000, clients=2,
        threads=2, duration_s=30, query_mode="simple",
    ),
    "DOCEXAMPLE-pg15plus-serializable-failures-retries-r.txt": dict(
        tps=186.792667, transactions=6317, transactions_planned=10000, transactions_per_client=1000,
        failed_transactions=3683, retried_transactions=7667, retries=45339, max_tries=10,
        latency_avg_ms=17.016, latency_stddev_ms=13.283, initial_connection_ms=45.017,
        transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=10, threads=1, query_mode="simple",
    ),
    "pg16.14-connect-C-reconnection-times.txt": dict(
        version="16.14", server_version="16.14", tps=3369.004756, tps_basis="including reconnection times", transactions=33695,
        failed_transactions=0, max_tries=1, latency_avg_ms=2.968, average_connection_ms=1.180,
        transaction_type="/tmp/select1.sql", scale=1, clients=10, threads=4, duration_s=10, query_mode="simple",
    ),
    "pg16.3-select-only-prepared-cedardb.txt": dict(
        version="16.3", server_version="16.3", tps=60178.442808, transactions=601721, failed_transactions=0, max_tries=1,
        latency_avg_ms=0.017, initial_connection_ms=1.080, transaction_type="<builtin: select only>", scale=1,
        clients=1, threads=1, duration_s=10, query_mode="prepared",
    ),
    "pg16.3-simple-update-N-prepared-cedardb.txt": dict(
        version="16.3", server_version="16.3", tps=1492.543731, transactions=14926, failed_transactions=0, max_tries=1,
        latency_avg_ms=0.670, initial_connection_ms=0.234, transaction_type="<builtin: simple update>", scale=1,
        clients=1, threads=1, duration_s=10, query_mode="prepared",
    ),
    "pg16.4-custom-script-f-no-vacuum.txt": dict(
        version="16.4", server_version="16.4", tps=83260.933160, transactions=832224, failed_transactions=0, max_tries=1,
        latency_avg_ms=0.096, initial_connection_ms=4.826, transaction_type="/var/lib/postgresql/workload.sql",
        scale=1, clients=8, threads=4, duration_s=10, query_mode="simple",
    ),
    "pg16.6-select-only-S-r.txt": dict(
        version="16.6", server_version="16.6", tps=32665.40961, transactions=3921733, failed_transactions=0, max_tries=1,
        latency_avg_ms=1.531, initial_connection_ms=77.431, transaction_type="<builtin: select only>",
        scale=100, clients=50, threads=4, duration_s=120, query_mode="simple",
    ),
    "pg16.6-tpcb-r-failures-column.txt": dict(
        version="16.6", server_version="16.6", tps=2543.571797, transactions=305742, failed_transactions=0, max_tries=1,
        latency_avg_ms=19.657, initial_connection_ms=62.886, transaction_type="<builtin: TPC-B (sort of)>",
        scale=100, clients=50, threads=4, duration_s=120, query_mode="simple",
    ),
    "pg17.9-tpcb-file-redirect-2to1.txt": dict(
        version="17.9", server_version="17.9", tps=1140.065890, transactions=684014, failed_transactions=0, max_tries=1,
        latency_avg_ms=7.017, initial_connection_ms=37.942, transaction_type="<builtin: TPC-B (sort of)>",
        scale=100, clients=8, threads=4, duration_s=600, query_mode="simple",
    ),
    "pg18.1-tpcb-progress-P200.txt": dict(
        version="18.1", server_version="18.1", tps=136.387648, transactions=81833, failed_transactions=0, max_tries=1,
        latency_avg_ms=7.331, latency_stddev_ms=7.124, initial_connection_ms=3.799,
        transaction_type="<builtin: TPC-B (sort of)>", scale=1, clients=1, threads=1, duration_s=600,
        query_mode="simple", samples=3,
        first=dict(second=200.0, tps=138.8, latency_ms=7.202, latency_stddev_ms=6.220, failed=0),
    ),
}

# Files that hold no finished run: the parser must say so, not invent figures.
CORPUS_NOT_A_RUN = {
    "pg13plus-init-i-output-pgbench-tools.txt": "number of transactions actually processed",
    "pg14.3-aborted-run-yugabyte-fragment.txt": "number of transactions actually processed",
    "pg15.4-client-crdb-server-progress-retries-FRAGMENT.txt": "number of transactions actually processed",
    "pg95-tpcb-progress-stderr-pkb.txt": "number of transactions actually processed",
}

# Progress-only files: their series.
PROGRESS_ONLY = {
    "pg95-tpcb-progress-stderr-pkb.txt": (5, dict(second=1.0, tps=7.0, latency_ms=435.396, latency_stddev_ms=120.347)),
    "pg15.4-client-crdb-server-progress-retries-FRAGMENT.txt": (
        12, dict(second=5.0, tps=358.8, latency_ms=65.289, latency_stddev_ms=44.672, failed=0, retried=0, retries=0)
    ),
}

CAPTURED_EXPECTED = {
    "pg15.18-tpcb-P1-j2-c4": dict(
        version="15.18", server_version="15.18", tps=3211.920419, transactions=9588, failed_transactions=0, max_tries=1,
        latency_avg_ms=1.238, latency_stddev_ms=0.431, initial_connection_ms=20.568,
        transaction_type="<builtin: TPC-B (sort of)>", scale=2, clients=4, threads=2, duration_s=3,
        query_mode="simple", samples=3,
        first=dict(second=1.0, tps=3092.0, latency_ms=1.260, latency_stddev_ms=0.442, failed=0),
    ),
    "pg15.18-select-only-S-P1": dict(
        version="15.18", server_version="15.18", tps=20601.327056, transactions=40937, failed_transactions=0, max_tries=1,
        latency_avg_ms=0.095, latency_stddev_ms=0.041, initial_connection_ms=13.004,
        transaction_type="<builtin: select only>", scale=2, clients=2, threads=1, duration_s=2,
        query_mode="simple", samples=2,
        first=dict(second=1.0, tps=19319.1, latency_ms=0.100, latency_stddev_ms=0.043, failed=0),
    ),
    "pg15.18-simple-update-N-P1": dict(
        version="15.18", server_version="15.18", tps=2825.397463, transactions=5630, failed_transactions=0, max_tries=1,
        latency_avg_ms=0.705, latency_stddev_ms=0.162, initial_connection_ms=11.317,
        transaction_type="<builtin: simple update>", scale=2, clients=2, threads=1, duration_s=2,
        query_mode="simple", samples=2,
        first=dict(second=1.0, tps=2649.9, latency_ms=0.743, latency_stddev_ms=0.167, failed=0),
    ),
    "pg15.18-tpcb-max-tries-P1-repeatable-read": dict(
        version="15.18", server_version="15.18", tps=1161.191575, transactions=3461, failed_transactions=2716,
        serialization_failures=2716, deadlock_failures=0, retried_transactions=4363, retries=7744, max_tries=3,
        latency_avg_ms=2.629, latency_stddev_ms=1.447, initial_connection_ms=28.332,
        transaction_type="<builtin: TPC-B (sort of)>", scale=2, clients=8, threads=2, duration_s=3,
        query_mode="simple", samples=3,
        first=dict(second=1.0, tps=1153.0, latency_ms=2.630, latency_stddev_ms=1.424, failed=893,
                   retried=1460, retries=2587),
    ),
    "pg15.18-select-only-connect-C": dict(
        version="15.18", server_version="15.18", tps=162.097027, tps_basis="including reconnection times", transactions=325,
        failed_transactions=0, max_tries=1, latency_avg_ms=12.338, average_connection_ms=6.027,
        transaction_type="<builtin: select only>", scale=2, clients=2, threads=1, duration_s=2,
        query_mode="simple",
    ),
    "pg15.18-tpcb-rate-limit-R-L-P1": dict(
        version="15.18", server_version="15.18", tps=200.441373, transactions=599, failed_transactions=0, skipped_transactions=0,
        max_tries=1, latency_avg_ms=0.788, latency_stddev_ms=0.204, initial_connection_ms=9.900,
        transaction_type="<builtin: TPC-B (sort of)>", scale=2, clients=2, threads=1, duration_s=3,
        query_mode="simple", samples=2,
        first=dict(second=1.0, tps=200.0, latency_ms=0.795, latency_stddev_ms=0.261, failed=0, lag_ms=0.087,
                   skipped=0),
    ),
}

_REPORT_FIELDS = [
    "version", "server_version", "transaction_type", "scale", "query_mode", "clients", "threads", "max_tries",
    "duration_s", "transactions_per_client", "transactions_planned", "failed_transactions",
    "serialization_failures", "deadlock_failures", "retried_transactions", "retries", "skipped_transactions",
    "latency_avg_ms", "latency_stddev_ms", "initial_connection_ms", "average_connection_ms",
    "tps_including_connections",
]


def _check(report: pgbench.PgbenchReport, expected: dict) -> None:
    expected = dict(expected)
    assert report.tps == pytest.approx(expected.pop("tps"), abs=1e-6)
    assert report.transactions == expected.pop("transactions")
    default_basis = "excluding connections establishing" if "tps_including_connections" in expected else \
        "without initial connection time"
    assert report.tps_basis == expected.pop("tps_basis", default_basis)
    n_samples = expected.pop("samples", 0)
    first = expected.pop("first", None)
    for name in _REPORT_FIELDS:
        want = expected.pop(name, None)
        got = getattr(report, name)
        if isinstance(want, float):
            assert got == pytest.approx(want, abs=1e-9), name
        else:
            assert got == want, name
    assert not expected, f"unchecked expectations: {expected}"
    assert len(report.samples) == n_samples
    if first is not None:
        s = report.samples[0]
        for name in ("second", "tps", "latency_ms", "latency_stddev_ms", "failed", "lag_ms", "skipped",
                     "retried", "retries"):
            assert getattr(s, name) == first.get(name), name


@pytest.mark.parametrize("name", sorted(CORPUS_EXPECTED))
def test_corpus_sample(name):
    _check(pgbench.parse((CORPUS / name).read_text()), CORPUS_EXPECTED[name])


@pytest.mark.parametrize("name", sorted(CORPUS_NOT_A_RUN))
def test_corpus_sample_without_a_finished_run_is_a_parse_error(name):
    with pytest.raises(ParseError, match=CORPUS_NOT_A_RUN[name]):
        pgbench.parse((CORPUS / name).read_text())


@pytest.mark.parametrize("name", sorted(PROGRESS_ONLY))
def test_progress_only_samples(name):
    count, first = PROGRESS_ONLY[name]
    samples = pgbench.parse_progress((CORPUS / name).read_text())
    assert len(samples) == count
    for key, value in first.items():
        assert getattr(samples[0], key) == value


def test_every_corpus_file_is_covered():
    files = {p.name for p in CORPUS.glob("*.txt")}
    assert files == set(CORPUS_EXPECTED) | set(CORPUS_NOT_A_RUN)


@pytest.mark.skipif(not SHARED_CORPUS.is_dir(), reason="../shared/corpus not beside this checkout")
def test_fixtures_are_the_shared_corpus_byte_for_byte():
    for shared in SHARED_CORPUS.glob("*.txt"):
        assert (CORPUS / shared.name).read_bytes() == shared.read_bytes(), shared.name


@pytest.mark.parametrize("name", sorted(CAPTURED_EXPECTED))
def test_captured_pgbench_15(name):
    stdout = (CAPTURED / f"{name}.stdout").read_text()
    stderr = (CAPTURED / f"{name}.stderr").read_text()
    _check(pgbench.parse(stdout, stderr), CAPTURED_EXPECTED[name])


def test_read_gives_measurement_and_series():
    stdout = (CAPTURED / "pg15.18-tpcb-P1-j2-c4.stdout").read_text()
    stderr = (CAPTURED / "pg15.18-tpcb-P1-j2-c4.stderr").read_text()
    m, samples = pgbench.read(stdout, stderr)
    assert (m.tps, m.transactions, m.failed_transactions) == (3211.920419, 9588, 0)
    assert (m.latency_avg_ms, m.latency_stddev_ms, m.initial_connection_ms) == (1.238, 0.431, 20.568)
    assert m.details["transaction_type"] == "<builtin: TPC-B (sort of)>"
    assert [s.second for s in samples] == [1.0, 2.0, 3.0]


# ---------------------------------------------------------------- broken input

GOOD = (CAPTURED / "pg15.18-tpcb-P1-j2-c4.stdout").read_text()


@pytest.mark.parametrize(
    "old, new, line_fragment",
    [
        ("tps = 3211.920419 (without", "tps = 3211,920419 (without", "tps = 3211,920419"),
        ("latency average = 1.238 ms", "latency average = fast ms", "latency average = fast"),
        ("number of clients: 4", "number of clients: four", "number of clients: four"),
        ("number of transactions actually processed: 9588", "number of transactions actually processed: -1",
         "actually processed: -1"),
        ("initial connection time = 20.568 ms", "initial connection time = 20.568 s", "20.568 s"),
    ],
)
def test_unreadable_field_names_the_line(old, new, line_fragment):
    broken = GOOD.replace(old, new)
    with pytest.raises(ParseError) as info:
        pgbench.parse(broken)
    assert line_fragment in str(info.value)
    assert info.value.lineno == broken.splitlines().index(next(l for l in broken.splitlines() if line_fragment in l)) + 1


def test_missing_tps_is_an_error_not_a_zero():
    without_tps = "\n".join(l for l in GOOD.splitlines() if not l.startswith("tps ="))
    with pytest.raises(ParseError, match="tps"):
        pgbench.parse(without_tps)


def test_unreadable_progress_line_is_an_error():
    with pytest.raises(ParseError) as info:
        pgbench.parse(GOOD, "starting vacuum...end.\nprogress: 1.0 s, many tps\n")
    assert info.value.lineno == 2


def test_nan_latency_in_an_empty_interval_is_none():
    s = pgbench.parse_progress_line("progress: 3.0 s, 0.0 tps, lat -nan ms stddev -nan")
    assert s.tps == 0.0 and s.latency_ms is None and s.latency_stddev_ms is None
    s = pgbench.parse_progress_line("progress: 3.0 s, 0.0 tps, lat NaN ms stddev NaN, 0 failed")
    assert s.latency_ms is None and s.failed == 0


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_random_text_only_ever_raises_parse_error(text):
    for candidate in (text, GOOD[: len(text) % len(GOOD)] + text):
        try:
            report = pgbench.parse(candidate)
        except ParseError:
            continue
        assert report.tps >= 0 and not math.isnan(report.tps)


def test_command_lines():
    spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=4, clients=8, duration_s=60,
                     params=(("scale", 10),))
    url = "postgresql://bench@127.0.0.1:5432/db"
    conn = Connection(protocol="postgresql", host="127.0.0.1", port=5432, user="bench", dbname="db", url=url)
    client = Client(binary="pgbench", conn=conn)
    tool = pgbench.TOOL_IMPL
    assert tool.point_argv(client, spec, ["-S"]) == [
        "pgbench", "-j", "4", "-c", "8", "-T", "60", "-P", "1", "-S", url,
    ]
    assert tool.prepare_argv(client, spec) == [["pgbench", "-i", "-q", "-s", "10", url]]
    # pgbench -i recreates its tables: nothing to clean up.
    assert tool.cleanup_argv(client, spec) == []


def test_a_sample_read_by_a_parser_is_a_sample_in_every_way():
    """Sample.read skips the frozen dataclass's setattr per field (import speed): the
    object must be the one Sample(...) makes, frozen, hashable, comparable, copyable."""
    import dataclasses
    import pickle

    from dbarena.model import Sample

    made = Sample(12.0, 886.4, 9.016, 5.058, failed=0, threads=4)
    read = Sample.read(12.0, 886.4, 9.016, 5.058, failed=0, threads=4)
    assert read == made and hash(read) == hash(made) and repr(read) == repr(made)
    assert dataclasses.asdict(read) == dataclasses.asdict(made) and pickle.loads(pickle.dumps(read)) == made
    assert dataclasses.replace(read, tps=1.0) == dataclasses.replace(made, tps=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.tps = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field"):
        Sample.read(1.0, 2.0, tsp=3.0)
    with pytest.raises(TypeError, match="second and tps"):
        Sample.read(1.0, latency_ms=3.0)
    # Figures not given read as the dataclass's defaults, as Sample(...)'s do.
    sparse = Sample.read(1.0, 2.0)
    assert sparse == Sample(1.0, 2.0) and sparse.qps is None and sparse.reconnects_per_s is None


def _progress_lines() -> list[str]:
    """Every progress line of the corpus and the captures, and shapes none of them has."""
    lines = [line.rstrip("\r") for folder in ("corpus", "captured")
             for path in sorted((Path(__file__).parent.parent / "fixtures" / "pgbench" / folder).glob("*.txt"))
             for line in path.read_text().splitlines() if line.startswith("progress: ")]
    return [*lines,
            "progress: 1.0 s, 0.0 tps, lat nan ms stddev nan",
            "progress: 1.0 s, 0.0 tps, lat NaN ms stddev NaN, 0 failed",
            "progress: 2.0 s, -1.0 tps, lat -0.5 ms stddev 0.0",
            "progress: 3 s, 10 tps, lat 1 ms stddev 0",
            "progress: 3.0 s, 10.0 tps, lat 1.0 ms stddev 0.0, lag 0.2 ms, 4 skipped",
            "progress: 3.0 s, 10.0 tps, lat 1.0 ms stddev 0.0, 0 failed, 2 retried, 3 retries",
            "progress: 4.0 s, 10.0 tps, lat 1" + "0" * 400 + " ms stddev 0.0",  # infinite as a float: None
            "progress: 5.0 s, 10.0 tps, lat 123456789012345.5 ms stddev 0.0"]


def test_the_plain_progress_shortcut_reads_as_the_full_expression():
    """parse_progress_line reads the common shape by a shorter expression (import
    speed): every line of every shape gives what the full expression gives."""
    lines = _progress_lines()
    assert len(lines) > 150
    plain = 0
    for line in lines:
        full = pgbench.read_progress_line(line)
        assert pgbench.parse_progress_line(line) == full, line
        plain += pgbench._PLAIN_PROGRESS.fullmatch(line) is not None
    assert 0 < plain < len(lines)  # both ways were taken
