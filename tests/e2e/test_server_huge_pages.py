"""The server's huge pages in its target facts, on real throwaway servers of this
machine (PostgreSQL 15, MariaDB 10.11): what each asked for, as History and the run
diff name it (stats/environment.server_huge_pages). This VM's kernel has no huge page
pool (tests/fixtures/hostinfo/x86_64-this-vm.tuning): 'try' falls back to ordinary
pages, and huge_pages = on refuses to start."""

from __future__ import annotations

import pytest

from dbarena import execute
from dbarena.errors import DbarenaError
from dbarena.stats import environment

pytestmark = pytest.mark.e2e


def test_postgresql_records_its_huge_pages_and_what_on_asks_of_a_kernel_without_a_pool():
    from dbarena.engines import postgres

    with postgres.throwaway(executor=execute.LOCAL) as target:
        facts = target.facts()
    # 15 has huge_page_size (14+) but no huge_pages_status (17+).
    assert facts["huge_pages"] == {"huge_page_size": "0", "huge_pages": "try"}
    assert environment.server_huge_pages(facts) == "try"
    with pytest.raises(DbarenaError), postgres.throwaway(settings={"huge_pages": "on"}, executor=execute.LOCAL):
        pass


def test_mariadb_records_large_pages_among_its_key_variables():
    from dbarena.engines.mariadb import MariaDB

    with MariaDB().throwaway(settings={}, max_connections=151, bindir=None, keep=False,
                             executor=execute.LOCAL) as target:
        facts = target.facts()
    assert facts["key_variables"]["large_pages"] == "OFF"
    said = environment.server_huge_pages(facts)
    assert said is not None and said.startswith("large_pages OFF")
