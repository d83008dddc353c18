"""The rule of names (limits.name_problem) holds for every label, whoever brings it: a
flag, a bundle (verify, import, site, run --like all read it through verify) or a
store merged in; and a bundle holds runs that ended only."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dbarena.errors import UsageError
from dbarena.exchange import bundle
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.publish import publish
from dbarena.exchange.verify import verify
from dbarena.limits import name_problem
from dbarena.store.database import Store
from dbarena.store.merge import merge

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"
HOSTILE = ["x" * 100_000, "a\x1b]0;owned\x07", "two\nlines", "\u202eevil", "rtl\u200fmark", "line\u2028sep",
           "arabic\u061cmark", "para\u2029sep", "zero\u200bwidth"]


@pytest.mark.parametrize("label", HOSTILE)
def test_the_rule_of_names_refuses_every_control_format_and_separator_character(label: str) -> None:
    assert name_problem(label) is not None
    assert name_problem("c7g.4xlarge pg17 — ünïcode 日本") is None


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("labels")
    shutil.copyfile(DEMO, base / "demo.db")
    with Store(base / "demo.db") as db:
        made = publish(db, run_ids=[1], signer=None, secrets={})
    members, _ = bundle.read_tar("demo", made.data)
    return {"base": base, "members": members}


def _bundle(members: dict[str, bytes], path: Path, edit: Any) -> Path:
    members = dict(members)
    manifest = json.loads(members[bundle.MANIFEST])
    edit(manifest)
    members[bundle.MANIFEST] = bundle.json_bytes(manifest)
    path.write_bytes(bundle.write_tar(members, bundle.epoch_of(manifest["date"])))
    return path


@pytest.mark.parametrize("label", HOSTILE)
def test_a_bundle_whose_label_breaks_the_rule_is_refused(demo: dict[str, Any], label: str, tmp_path: Path) -> None:
    def edit(manifest: dict[str, Any]) -> None:
        manifest["runs"][0]["label"] = label
        for point in manifest["points"]:
            point["result"]["label"] = label

    path = _bundle(demo["members"], tmp_path / "b.tar", edit)
    with pytest.raises(BundleProblem, match=r"manifest\.json: runs\[0\]\.label .* (holds control characters|is "
                                            r"100,000 characters long)") as refused:
        verify(path)
    assert "\n" not in str(refused.value) and "\x1b" not in str(refused.value)
    # import reads it through verify: nothing stored.
    with Store(tmp_path / "s.db") as db:
        from dbarena.exchange.importing import import_bundle

        with pytest.raises(BundleProblem):
            import_bundle(db, path)
        assert db.runs() == []


@pytest.mark.parametrize("status", ["running", "interrupted", "weird"])
def test_a_bundle_of_a_run_that_did_not_end_is_refused(demo: dict[str, Any], status: str, tmp_path: Path) -> None:
    path = _bundle(demo["members"], tmp_path / "b.tar", lambda m: m["runs"][0].update(status=status))
    with pytest.raises(BundleProblem, match=rf"runs\[0\] is '{status}', not a run that ended"):
        verify(path)
    assert verify(_bundle(demo["members"], tmp_path / "ok.tar", lambda m: None)).points


def test_publish_refuses_an_interrupted_run(demo: dict[str, Any], tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    shutil.copyfile(DEMO, store)
    with sqlite3.connect(store) as db:
        db.execute("UPDATE runs SET status = 'interrupted' WHERE id = 1")
    with Store(store) as db, pytest.raises(UsageError, match="run 1 is still running or was interrupted"):
        publish(db, run_ids=[1], signer=None, secrets={})


@pytest.mark.parametrize("label", ["two\nlines", "\u202eevil", "rtl\u200fmark", "x" * 100_000])
def test_a_merged_store_brings_no_label_that_breaks_the_rule(label: str, tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.db"
    shutil.copyfile(DEMO, theirs)
    with sqlite3.connect(theirs) as db:
        db.execute("UPDATE runs SET label = ? WHERE id = 1", (label,))
        kept = db.execute("SELECT count(*) FROM runs WHERE id != 1").fetchone()[0]
    said: list[str] = []
    import sys
    with Store(tmp_path / "mine.db") as mine:
        stderr = sys.stderr
        try:
            import io
            sys.stderr = io.StringIO()
            merge(mine, theirs)
            said = sys.stderr.getvalue().splitlines()
        finally:
            sys.stderr = stderr
        labels = [r.label for r in mine.runs()]
    assert label not in labels and len(labels) == kept
    assert any("label" in line and "holds control characters" in line or "characters long" in line
               for line in said), said


def test_a_published_bundle_holds_no_path_of_the_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/exchange.md: no path of the publisher's machine. The demo run's TMPDIR (/tmp:
    pgbench's --log-prefix, unix_socket_directories, the data directory), the publisher's
    TMPDIR and HOME: none in any byte of the bundle; and it still verifies."""
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "t"))
    store = tmp_path / "s.db"
    shutil.copyfile(DEMO, store)
    with sqlite3.connect(store) as db:  # a home path in what the run stored, as a user's study would put it
        (options,) = db.execute("SELECT options FROM runs WHERE id = 1").fetchone()
        options = json.loads(options)
        options["settings"]["stats_temp_directory"] = f"{home}/pg_stat_tmp"
        db.execute("UPDATE runs SET options = ? WHERE id = 1", (json.dumps(options),))
    with Store(store) as db:
        run = db.run(1)
        assert run is not None
        data_dir = run.options["data_dir"]["path"]
        made = publish(db, run_ids=[1], signer=None, secrets={})
    for path in ("/tmp", str(home), str(tmp_path / "t"), data_dir, "/root"):
        assert path.encode() not in made.data, path
    members, _ = bundle.read_tar("b", made.data)
    text = members[bundle.MANIFEST].decode()
    assert "$TMPDIR/dbarena-point-" in text and '"$HOME/pg_stat_tmp"' in text
    (tmp_path / "b.tar").write_bytes(made.data)
    assert verify(tmp_path / "b.tar").points
