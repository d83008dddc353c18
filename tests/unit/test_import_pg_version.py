"""The PostgreSQL server's version from a `SELECT version()` result in an output: pgbench
12 and 13 print no banner, and pgbench names the server only where it differs from
itself, so such outputs name the server there alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbarena.importers import reading, serverversion
from dbarena.stats import configkey

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# A public pgbench 13 output (no banner), after the lines psql prints for SELECT version()
# (the line's form: PostgreSQL's version(), src/backend/utils/adt/version.c, "PostgreSQL
# %s on %s, compiled by %s, %d-bit"; the packager's note is Debian's).
PG13 = FIXTURES / "pgbench" / "corpus" / "pg13-tpcb-progress-P60-incl-excl.txt"
VERSION = ("$ psql -c 'SELECT version()'\n"
           "                                                     version\n"
           "---------------------------------------------------------------------------------------------------------\n"
           " PostgreSQL 13.4 (Debian 13.4-1.pgdg100+1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 8.3.0-6) "
           "8.3.0, 64-bit\n(1 row)\n\n")


@pytest.mark.parametrize("line, version", [
    (" PostgreSQL 13.4 (Debian 13.4-1.pgdg100+1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 8.3.0-6) 8.3.0, "
     "64-bit", "13.4 (Debian 13.4-1.pgdg100+1)"),
    ("PostgreSQL 12.3 on x86_64-pc-linux-gnu, compiled by gcc (GCC) 4.8.5 20150623 (Red Hat 4.8.5-39), 64-bit",
     "12.3"),
    (" | PostgreSQL 16.2 on aarch64-unknown-linux-gnu, compiled by gcc 12.2.0, 64-bit |", "16.2"),
])
def test_version_result_names_the_server(line, version):
    assert serverversion.named(line) == serverversion.Server(version, "postgresql")


def test_a_pgbench_13_output_takes_the_version_its_text_names():
    (point,) = reading.read("pg13.txt", VERSION + PG13.read_text(), label="x")
    assert point.server_version == "13.4 (Debian 13.4-1.pgdg100+1)"
    assert configkey.server_major(point.server_version, "postgresql") == "13"
    (bare,) = reading.read("pg13.txt", PG13.read_text(), label="x")
    assert bare.server_version is None


def test_a_postgresql_version_names_no_mysql_server():
    text = VERSION + (FIXTURES / "sysbench" / "corpus" / "sysbench-1.0.20-oltp-read-only-pgsql.txt").read_text()
    (point,) = reading.read("s.txt", text, label="x", engine="mysql")
    assert point.server_version is None
    (pg,) = reading.read("s.txt", text, label="x", engine="postgres")
    assert pg.server_version == "13.4 (Debian 13.4-1.pgdg100+1)"
