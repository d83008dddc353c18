"""The tpcc-like output (sysbench's report plus the script's per-thread lines),
on real runs captured on PostgreSQL 15 and MariaDB 10.11 (sysbench 1.0.20)."""

from pathlib import Path

import pytest

from dbarena.errors import ParseError
from dbarena.interfaces import Client
from dbarena.model import Connection, PointSpec
from dbarena.workloads import tpcc

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tpcc"
PG2 = (FIXTURES / "sysbench-1.0.20-tpcc-like-postgres-2threads.stdout").read_text()


def test_per_thread_lines_are_summed():
    threads = tpcc.parse_threads(PG2)
    assert threads.threads == 2 and threads.rollbacks == 3 + 1
    no = threads.per_kind["new_order"]
    assert no.count == 306 + 308 and no.sum_ms == pytest.approx(1892.961 + 1836.944) and no.max_ms == 14.148
    assert threads.per_kind["delivery"].max_ms == 34.858


def test_read_gives_the_tpm_and_the_mix():
    m, samples = tpcc.read(PG2, "")
    assert (m.transactions, m.tps) == (1360, 452.23)
    d = m.details
    assert sum(t["count"] for t in d["per_type"].values()) == 1360  # every sysbench event is one transaction
    assert d["rollbacks"] == 4 and d["new_orders_committed"] == 614 - 4
    assert d["tpm_new_order"] == pytest.approx(610 / (3.0070 / 60))
    assert d["per_type"]["payment"]["count"] == 599
    assert d["per_type"]["payment"]["latency_avg_ms"] == pytest.approx((756.806 + 681.616) / 599)
    assert len(samples) == 3


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.stdout")))
def test_every_capture_reads(name):
    m, _ = tpcc.read((FIXTURES / name).read_text(), "")
    assert m.tps > 0 and m.details["tpm_new_order"] > 0


def test_missing_or_broken_per_thread_lines_are_errors():
    without = "\n".join(l for l in PG2.splitlines() if not l.startswith("dbarena-tpcc"))
    with pytest.raises(ParseError, match="per-thread lines"):
        tpcc.read(without, "")
    with pytest.raises(ParseError, match="unreadable per-thread line"):
        tpcc.read(PG2.replace("rollbacks=3", "rollbacks=three"), "")


def test_command_lines():
    conn = Connection(protocol="mysql", host="127.0.0.1", port=3306, user="u", dbname="db",
                      url="mysql://u@127.0.0.1/db")
    client = Client(binary="sysbench", conn=conn, secret_file="/private/sb.cnf")
    spec = PointSpec(engine="mysql", workload="tpcc-like", threads=4, clients=4, duration_s=30,
                     params=(("warehouses", 2),))
    tool = tpcc.TOOL_IMPL
    steps = tool.prepare_argv(client, spec)
    assert [s[-3:] for s in steps][0] == ["--tpcc_step=schema", "--threads=1", "prepare"]
    assert steps[1][-3] == "--tpcc_step=load" and steps[2][-3] == "--tpcc_step=index"
    run = tool.point_argv(client, spec, ())
    assert run[1] == str(tpcc.SCRIPT) and "--config-file=/private/sb.cnf" in run and "--warehouses=2" in run
    assert run[-1] == "run" and "--threads=4" in run and "--time=30" in run
