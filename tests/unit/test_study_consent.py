"""A study file cannot run code by being checked, nor by being run without the user's
word (issue 46): each engine's settings that run commands or load code, a study's
bindir, and `study check` running nothing of a study."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from dbarena import engines, study
from dbarena.engines import mysql_family, postgres
from dbarena.engines.mariadb import MariaDB
from dbarena.engines.mysql import MySQL
from dbarena.engines.postgres import PostgresEngine
from dbarena.errors import UsageError
from dbarena.study import Overrides, StudyError, consent
from dbarena.study.arguments import make_study

import inprocess
from test_study import needs_postgres


def _study(body: str, tmp_path: Path, name: str = "s.toml") -> Path:
    path = tmp_path / name
    mysql = '[[workloads]]\nworkload = "mysqlslap"\n' if "[engines.mysql]" in body else ""
    postgres_ = '[[workloads]]\nworkload = "pgbench-select-only"\n' if "[engines.mysql]" not in body or \
        "[engines.postgres]" in body else ""
    path.write_text(f'schema = 1\nname = "s"\n{body}\n{postgres_}{mysql}')
    return path


# ------------------------------------------------------------------ each family's list


@pytest.mark.parametrize("name", [
    "archive_command", "archive_cleanup_command", "restore_command", "recovery_end_command",
    "ssl_passphrase_command", "archive_library", "shared_preload_libraries", "session_preload_libraries",
    "local_preload_libraries", "dynamic_library_path", "jit_provider",
    # PostgreSQL reads setting names case-insensitively.
    "ARCHIVE_COMMAND", "Shared_Preload_Libraries", " archive_command ",
])
def test_postgres_declares_what_runs_commands_or_loads_code(name):
    assert PostgresEngine().code_setting(name) is not None
    assert engines.first("postgres").code_setting(name) is not None


@pytest.mark.parametrize("name", ["shared_buffers", "work_mem", "archive_mode", "wal_level", "max_wal_size",
                                  "archive_timeout", "jit", "ssl", "pg_stat_statements.max"])
def test_postgres_ordinary_settings_pass(name):
    assert PostgresEngine().code_setting(name) is None


@pytest.mark.parametrize("name", [
    "plugin_load", "plugin-load", "plugin_load_add", "PLUGIN-LOAD-ADD", "early-plugin-load", "early_plugin_load",
    "plugin_dir", "Plugin-Dir", "init_file", "init-file", "wsrep_provider", "wsrep-notify-cmd",
    # my_getopt's prefixes, and abbreviations mysqld takes for a long option.
    "loose-plugin-load-add", "loose_init_file", "enable-plugin-load", "maximum-plugin-dir", "init-fil",
    "plugin_load_a", "plugin-lo",
])
@pytest.mark.parametrize("engine", [MariaDB(), MySQL()], ids=["mariadb", "mysql"])
def test_mysql_family_declares_what_runs_commands_or_loads_code(engine, name):
    assert engine.code_setting(name) is not None


@pytest.mark.parametrize("name", ["innodb_buffer_pool_size", "max-connections", "init_connect", "init-connect",
                                  "secure_file_priv", "plugin-maturity", "skip-name-resolve", "innodb_flush_log_at_trx_commit",
                                  "loose-innodb-buffer-pool-size", "log-bin", "sync_binlog"])
def test_mysql_family_ordinary_settings_pass(name):
    assert MariaDB().code_setting(name) is None


def test_each_family_spells_its_names_as_the_engine_does():
    # PostgreSQL's with underscores and lower case; the MySQL family's as its option files, with dashes.
    assert all(n == n.lower() and "-" not in n for n in postgres.CODE_SETTINGS)
    assert all(n == n.lower() and "_" not in n for n in mysql_family.CODE_SETTINGS)
    assert PostgresEngine.code_settings is postgres.CODE_SETTINGS
    assert MariaDB.code_settings is MySQL.code_settings is mysql_family.CODE_SETTINGS


# ------------------------------------------------------------------ a study's findings


def test_settings_variants_and_bindir_of_a_study_file_are_found(tmp_path):
    path = _study('[engines.postgres]\nbindir = "/tmp/evil"\n'
                  'settings = { archive_mode = "on", archive_command = "id > /tmp/x", work_mem = "8MB" }\n'
                  '[engines.mysql]\nsettings = { loose_plugin_load_add = "evil.so" }\n'
                  '[variants.a]\npostgres = { Shared_Preload_Libraries = "evil" }\n', tmp_path)
    found = consent.findings(study.load(str(path)))
    assert {f.key for f in found} == {
        "engines.postgres.settings.archive_command", "engines.postgres.bindir",
        "engines.mysql.settings.loose_plugin_load_add", "variants.a.postgres.Shared_Preload_Libraries"}
    line = consent.refusal(study.load(str(path)))
    assert line is not None and "\n" not in line and "--allow-commands" in line and str(path) in line
    with pytest.raises(UsageError, match="--allow-commands"):
        consent.check(study.load(str(path)), allowed=False)
    consent.check(study.load(str(path)), allowed=True)


def test_what_the_user_types_is_consent_already(tmp_path):
    # --pg-setting and --pg-bindir: the user's own; only the file's count.
    typed = Overrides(settings={"postgres": {"archive_command": "true"}}, bindirs={"postgres": "/usr/lib/x/bin"})
    assert consent.findings(make_study(None, typed)) == []
    path = _study('[engines.postgres]\nsettings = { archive_command = "id > /tmp/x", restore_command = "cp" }\n',
                  tmp_path)
    # The flag's value replaces the file's: that one is the user's; the other stays the file's.
    found = consent.findings(make_study(str(path), typed))
    assert [f.key for f in found] == ["engines.postgres.settings.restore_command"]
    # A bindir typed over the file's is the user's too.
    with_bindir = _study('[engines.postgres]\nbindir = "/tmp/evil"\n', tmp_path, "b.toml")
    assert [f.key for f in consent.findings(make_study(str(with_bindir), Overrides()))] == ["engines.postgres.bindir"]
    assert consent.findings(make_study(str(with_bindir), Overrides(bindirs={"postgres": "/usr/lib/x/bin"}))) == []


def test_checkable_drops_only_the_files_bindir(tmp_path):
    path = _study('[engines.postgres]\nbindir = "/tmp/evil"\n', tmp_path)
    assert consent.checkable(make_study(str(path), Overrides())).engine("postgres").bindir is None
    typed = make_study(str(path), Overrides(bindirs={"postgres": "/opt/pg/bin"}))
    assert consent.checkable(typed).engine("postgres").bindir == "/opt/pg/bin"


@pytest.mark.parametrize("name", sorted(study.bundled()))
def test_no_bundled_study_needs_the_flag(name):
    assert consent.findings(study.load(name)) == []


@pytest.mark.parametrize("settings, message", [
    ('{ max_connections = "100\\nplugin_load_add = evil.so" }', "one line"),
    ('{ "x\\n!include /tmp/evil.cnf" = "1" }', "not a setting name"),
    ('{ "[client]" = "1" }', "not a setting name"),
])
def test_a_setting_cannot_smuggle_another_line_into_the_configuration(settings, message, tmp_path):
    path = _study(f"[engines.mysql]\nsettings = {settings}\n", tmp_path)
    with pytest.raises(StudyError, match=message):
        study.load(str(path))


# ------------------------------------------------------------------ study check runs nothing


def _planted(tmp_path: Path) -> tuple[Path, Path]:
    """A bindir whose postgres and initdb write a marker file when run."""
    bindir, marker = tmp_path / "evilbin", tmp_path / "marker"
    bindir.mkdir()
    for name in ("postgres", "initdb", "mariadbd", "mysqld"):
        script = bindir / name
        script.write_text(f"#!/bin/sh\ntouch {marker}\necho 'postgres (PostgreSQL) 99.1'\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bindir, marker


def _check(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DBARENA_STORE"}
    return inprocess.dbarena("study", "check", *args, env=env)


@needs_postgres
@pytest.mark.parametrize("allow", [False, True])
def test_study_check_runs_nothing_from_the_studys_bindir(allow, tmp_path):
    bindir, marker = _planted(tmp_path)
    path = _study(f'[engines.postgres]\nbindir = "{bindir}"\nsettings = {{ archive_mode = "on", '
                  f'archive_command = "touch {marker}" }}\n[engines.mysql]\nbindir = "{bindir}"\n', tmp_path)
    done = _check(str(path), "--quick", *(["--allow-commands"] if allow else []))
    assert not marker.exists(), done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr == "", done.stderr
    # The plan is shown, with what runs commands and whether it is allowed; `run` would
    # refuse it without the flag, and so the status is 2 then.
    assert done.returncode == (0 if allow else 2), done.stdout
    assert f"the binaries in {bindir} (not run by this check)" in done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("runs commands or loads code: engines.postgres.settings.archive_command = ")
    assert "engines.postgres.bindir" in last and "engines.mysql.bindir" in last
    assert last.endswith("allowed (--allow-commands)" if allow else "refused without --allow-commands")


def test_run_of_a_study_with_a_bindir_refuses_before_running_it(tmp_path):
    bindir, marker = _planted(tmp_path)
    path = _study(f'[engines.postgres]\nbindir = "{bindir}"\n', tmp_path)
    done = inprocess.dbarena("run", "--study", str(path), "--quick", "--store", str(tmp_path / "r.db"))
    assert done.returncode == 2 and not marker.exists() and not (tmp_path / "r.db").exists()
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("dbarena: error: "), done.stderr
    assert f"engines.postgres.bindir = '{bindir}'" in done.stderr and "--allow-commands" in done.stderr


# ------------------------------------------------------------------ fleet run


def test_fleet_run_refuses_before_any_host_and_forwards_the_flag(tmp_path, capsys):
    import shutil

    from conftest import invoke
    from dbarena.cli.running import run
    from dbarena.fleet import controller
    from dbarena.fleet.inventory import Host
    from dbarena.study import arguments

    path = _study('[engines.postgres]\nsettings = { archive_command = "id" }\n', tmp_path)
    if shutil.which(controller.ansible_command("ansible-inventory")) is None:
        pytest.skip("needs ansible-inventory")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[hosts]\nnowhere ansible_host=192.0.2.1\n")  # TEST-NET: never reached
    code, out, err = invoke(["fleet", "run", "--inventory", str(inventory), "--study", str(path)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "engines.postgres.settings.archive_command" in err and "--allow-commands" in err
    # Given after `--`, the flag goes into each host's `dbarena run` command line, which
    # its run accepts (and the host's own reading of the study ignores).
    host = Host(name="h", label="h", price_per_hour=None, price_per_month=None, currency=None, workdir="/w")
    argv = controller.Fleet._host_args(host, str(path), ["--allow-commands"], None)
    assert "--allow-commands" in argv
    with run.make_context("run", list(argv)) as ctx:
        assert ctx.params["allow_commands"] is True
    assert arguments.study_from_args(argv).engine("postgres").settings == (("archive_command", "id"),)


# ------------------------------------------------------------------ tool options


def test_tool_options_that_run_commands_or_load_code_are_found(tmp_path):
    (tmp_path / "plain.sql").write_text("\\set aid random(1, 100000)\nSELECT 1;\n")
    (tmp_path / "shell.sql").write_text("SELECT 1;\n  \\setshell x id\n")
    path = tmp_path / "tools.toml"
    path.write_text('schema = 1\nname = "t"\n[engines.postgres]\n[engines.mysql]\n'
                    '[[workloads]]\nworkload = "pgbench-custom"\noptions = { file = ["plain.sql@2", "shell.sql"] }\n'
                    '[[workloads]]\nworkload = "mysqlslap"\n'
                    'options = { pre-system = "id > /tmp/x", default-auth = "evil", number-char-cols = 2 }\n')
    found = {f.key: f.what for f in consent.findings(study.load(str(path)))}
    assert set(found) == {"workloads[0] (pgbench-custom) options.file", "workloads[1] (mysqlslap) options.pre-system",
                          "workloads[1] (mysqlslap) options.default-auth"}
    assert "shell.sql" in found["workloads[0] (pgbench-custom) options.file"]
    # A script without them is an ordinary study.
    path.write_text('schema = 1\nname = "t"\n[[workloads]]\nworkload = "pgbench-custom"\n'
                    'options = { file = "plain.sql@2" }\n')
    assert consent.findings(study.load(str(path))) == []


def test_a_bundles_or_a_stored_runs_flags_are_not_typed_here(tmp_path):
    """A run's stored flags (a bundle's publisher's, a stored run's) came with what the
    user was handed: `run --like` and `run --resume` check them as a study file's; only
    what is typed with them now is the user's (issue 53)."""
    from dbarena.exchange.like import Like
    from dbarena.exchange.verify import Verified

    text = 'schema = 1\nname = "s"\n[engines.postgres]\n[[workloads]]\nworkload = "pgbench-select-only"\n'
    stored = {"settings": {"postgres": {"archive_command": "touch /tmp/pwned"}}, "bindirs": {"postgres": "/tmp/evil"}}
    rebuilt = study.rebuild(text, "theirs.toml", stored)  # as resume.stored_study rebuilds a stored run
    assert consent.findings(rebuilt) == []  # (the study's own flags: what `run --study` was typed with)
    found = consent.findings(rebuilt, typed={})
    assert [f.key for f in found] == ["engines.postgres.settings.archive_command", "engines.postgres.bindir"]
    line = consent.refusal(rebuilt, typed={}, where="--resume 3 (the stored run's study and flags)")
    assert line is not None and "\n" not in line and line.startswith("--resume 3 (the stored run's study and flags): ")
    assert "engines.postgres.settings.archive_command = 'touch /tmp/pwned' (runs a shell command) and 1 more" in line
    with pytest.raises(UsageError, match="--allow-commands"):
        consent.check(rebuilt, allowed=False, typed={}, where="--resume 3")
    consent.check(rebuilt, allowed=True, typed={}, where="--resume 3")
    # Typed again now, the same value is the user's.
    assert consent.findings(rebuilt, typed={"settings": {"postgres": {"archive_command": "touch /tmp/pwned"}},
                                            "bindirs": {"postgres": "/tmp/evil"}}) == []
    # run --like: the bundle's flags (but its bindirs, dropped as its publisher's) over its study.
    like = Like(verified=Verified.__new__(Verified), run={"options": {"flags": stored, "source": "theirs.toml"}},
                study_text=text, study_source="theirs.toml")
    given = Overrides()
    liked = like.study(given)
    assert liked.engine("postgres").settings == (("archive_command", "touch /tmp/pwned"),)
    assert [f.key for f in consent.findings(liked, given.flags())] == ["engines.postgres.settings.archive_command"]
