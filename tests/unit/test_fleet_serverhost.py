"""Who a `fleet run --together` server lets in: the load generators' addresses as the
server host resolves them (fleet/serverhost.clients_of), written as pg_hba lines
(engines/postgres.remote_hba) and MariaDB accounts (engines/mysql_family.remote_grants)
that name those addresses and nothing else."""

from __future__ import annotations

import pytest

from dbarena.engines.mysql_family import REMOTE_PRIVILEGES, local_grants, remote_grants
from dbarena.engines.postgres import REMOTE_ADMIN, remote_hba
from dbarena.fleet.serverhost import clients_of
from dbarena.workloads import mysqlslap


def test_an_ip_address_is_taken_as_it_is_and_a_name_is_resolved_here():
    found = clients_of({"alpha": "10.0.0.5", "beta": "fd00::7", "gamma": "localhost"})
    assert found["alpha"] == ["10.0.0.5"] and found["beta"] == ["fd00::7"]
    assert "127.0.0.1" in found["gamma"] and all(a in ("127.0.0.1", "::1") for a in found["gamma"])


def test_a_name_that_does_not_resolve_on_the_server_host_is_one_line_naming_the_fix():
    with pytest.raises(RuntimeError, match=r"^load generator alpha's address no-such-host\.invalid does not "
                                           r"resolve on the server host .*dbarena_server_address=<its IP address>"):
        clients_of({"alpha": "no-such-host.invalid"})


def test_pg_hba_names_the_load_generators_and_the_local_administrator_only():
    hba = remote_hba(["10.0.0.6", "10.0.0.5", "10.0.0.5", "fd00::7"], "scram-sha-256")
    rules = [line.split() for line in hba.splitlines() if line and not line.startswith("#")]
    assert rules == [["local", "all", REMOTE_ADMIN, "scram-sha-256"],
                     ["host", "all", REMOTE_ADMIN, "127.0.0.1/32", "scram-sha-256"],
                     ["host", "dbarena", "dbarena", "10.0.0.5/32", "scram-sha-256"],
                     ["host", "dbarena", "dbarena", "10.0.0.6/32", "scram-sha-256"],
                     ["host", "dbarena", "dbarena", "fd00::7/128", "scram-sha-256"]]
    assert "0.0.0.0" not in hba and "::/0" not in hba and " trust" not in hba


@pytest.mark.parametrize("bad", [[], ["lg1.example.com"], ["10.0.0.0/8"], ["0.0.0.0/0"]])
def test_a_listening_server_takes_ip_addresses_of_single_hosts_only(bad):
    with pytest.raises(ValueError):
        remote_hba(bad, "scram-sha-256")
    with pytest.raises(ValueError):
        remote_grants(bad)


def test_mariadb_accounts_one_per_address_with_the_tools_databases_only():
    grants = remote_grants(["10.0.0.6", "10.0.0.5", "10.0.0.5"])
    assert sorted({host for host, _ in grants}) == ["10.0.0.5", "10.0.0.6"]
    assert all(privileges in REMOTE_PRIVILEGES for _, privileges in grants)
    # One global privilege only: RELOAD, which the FLUSH TABLES after a warm-up needs.
    assert [privileges for privileges in REMOTE_PRIVILEGES if " ON *.*" in privileges] == ["RELOAD ON *.*"]
    # mysqlslap makes and drops its own schema: the user may do that there, and only there.
    assert f"ALL PRIVILEGES ON `{mysqlslap.SCHEMA}`.*" in REMOTE_PRIVILEGES
    assert local_grants() == [("127.0.0.1", "ALL PRIVILEGES ON *.*")]


def test_the_lease_file_is_quoted_for_the_hosts_shell_its_home_left_to_expand():
    from dbarena.fleet.togetherserver import shell_path

    assert shell_path("~/.dbarena-fleet/db 1/server/lease") == "~/'.dbarena-fleet/db 1/server/lease'"
    assert shell_path("/var/x;rm -rf y/server/lease") == "'/var/x;rm -rf y/server/lease'"
    assert shell_path("~") == "~/"
