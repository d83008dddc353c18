"""A bundle published by a dbarena of another estimator version (issue 57): its manifest
records the version its derived figures were computed with (`estimator_version`); where
it is not this dbarena's (or none is recorded), `verify` recomputes them, says in one
line how many differ and lists them in --json, and the bundle holds if nothing else
fails; `import` and `site` show the recomputed figures. The same change under this
version is refused as tampering, and the raw data (files, the tool's figures, stored
fields) is checked under any version as under this one.

Real bundles: the demo store's PostgreSQL run (seed-a --quick) and a real profiled
store's run with server series (its bound derived from them)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
from jsonschema import Draft202012Validator

from conftest import cli_env
from inprocess import dbarena

from dbarena.exchange import bundle, site
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.publish import publish
from dbarena.exchange.verify import DERIVED, Difference, json_schema, verify
from dbarena.stats import analysis
from dbarena.store.database import Store

from bundles import rewritten

STORES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
NOW = analysis.ESTIMATOR_VERSION
OLDER = NOW - 1

Change = Callable[[dict[str, bytes], dict[str, Any]], None]


def _published(store: Path, tmp: Path) -> dict[str, bytes]:
    copy = tmp / "s.db"
    shutil.copyfile(store, copy)
    with Store(copy) as db:
        made = publish(db, run_ids=[1], signer=None, secrets={})
    members, _ = bundle.read_tar("b", made.data)
    return members


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """An unsigned bundle of the demo store's run 1 (a real seed-a --quick run), as members."""
    return _published(STORES / "demo-seed-a-quick.db", tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """An unsigned bundle of a real profiled point with its server series (bound: locks)."""
    return _published(STORES / "profiled-sync-async.db", tmp_path_factory.mktemp("profiled"))


def _rewritten(members: dict[str, bytes], path: Path, change: Change) -> Path:
    """The bundle changed as one who rewrites it would: the manifest (and files) edited,
    every sha256 and SHA256SUMS made consistent again (unsigned: no signature to redo)."""
    return rewritten(members, path, change)


def _version(version: int | None) -> Change:
    def change(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
        if version is None:
            del manifest["estimator_version"]
        else:
            manifest["estimator_version"] = version
    return change


def _both(*changes: Change) -> Change:
    def change(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
        for one in changes:
            one(members, manifest)
    return change


def _steady_up(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
    manifest["points"][0]["result"]["steady_tps"] += 100.0


def test_a_bundle_records_the_estimator_its_figures_were_derived_with(demo: dict[str, bytes], tmp_path: Path) -> None:
    assert json.loads(demo[bundle.MANIFEST])["estimator_version"] == NOW
    checked = verify(_rewritten(demo, tmp_path / "b.tar", lambda m, d: None))
    assert not checked.recomputed and checked.differences == [] and checked.recomputed_line() is None
    assert checked.lines() == [checked.summary()] and checked.derived > 0


def test_an_older_estimators_figure_is_recomputed_said_and_imported_as_recomputed(demo: dict[str, bytes],
                                                                                   tmp_path: Path) -> None:
    original = json.loads(demo[bundle.MANIFEST])["points"][0]["result"]
    pid, steady = original["point_id"], original["steady_tps"]
    path = _rewritten(demo, tmp_path / "older.tar", _both(_version(OLDER), _steady_up))
    checked = verify(path)
    assert checked.recomputed and checked.published_estimator == OLDER
    (difference,) = checked.differences
    assert difference == Difference(pid, "steady_tps", steady + 100.0, steady, difference.where)
    line = int(difference.where.removeprefix("manifest.json:"))
    written = bundle.read_tar("x", path.read_bytes())[0][bundle.MANIFEST].decode().split("\n")
    assert written[line - 1].strip() == f'"steady_tps": {steady + 100.0},'
    said = (f"{path}: figures recomputed with estimator {NOW}; published with {OLDER}: 1 of {checked.derived} "
            f"differ (the recomputed ones are what import and site show; `verify --json` lists them)")
    assert checked.recomputed_line() == said
    # Every derived figure of every point, all compared: the same count as under this version.
    assert checked.derived == verify(_rewritten(demo, tmp_path / "now.tar", lambda m, d: None)).derived

    env = cli_env(tmp_path)
    done = dbarena("verify", str(path), env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    first, second = done.stdout.rstrip("\n").split("\n")
    assert first == checked.summary() and "derived ones recomputed" in first
    assert second == said
    done = dbarena("verify", "--json", str(path), env=env)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    Draft202012Validator(json_schema()).validate(document)
    (found,) = document
    assert found["verified"] is True and found["estimator"] == {
        "published": OLDER, "recomputed_with": NOW, "recomputed": True, "figures": checked.derived,
        "differ": [{"point": pid, "figure": "steady_tps", "published": steady + 100.0, "recomputed": steady,
                    "where": difference.where}]}

    # Imported: the store shows the recomputed figure, never the published one.
    store = tmp_path / "into.db"
    done = dbarena("import", str(path), "--store", str(store), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[1] == said
    done = dbarena("results", "--json", "--store", str(store), env=env)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    (point,) = [p for p in shown if p["started_at"] == original["started_at"] and p["threads"] == original["threads"]
                and p["workload"] == original["workload"]]
    assert point["steady_tps"] == steady != steady + 100.0
    with Store(store) as db:
        (run,) = db.runs()
    assert run.options["bundle"]["estimator_version"] == OLDER and run.options["bundle"]["differed"] == 1


def test_the_same_change_under_this_estimator_is_refused_as_today(demo: dict[str, bytes], tmp_path: Path) -> None:
    pid = json.loads(demo[bundle.MANIFEST])["points"][0]["result"]["point_id"]
    path = _rewritten(demo, tmp_path / "now.tar", _steady_up)
    with pytest.raises(BundleProblem, match=rf"manifest\.json:\d+: steady_tps of point {pid} is [0-9.]+, but "
                                            rf"[0-9.]+ recomputed from points/{pid}/samples\.csv$"):
        verify(path)
    env = cli_env(tmp_path)
    for command in (["verify"], ["verify", "--json"], ["import", "--store", str(tmp_path / "into.db")]):
        done = dbarena(*command, str(path), env=env)
        assert done.returncode == 2, command
        (line,) = done.stderr.strip().split("\n")
        assert line.startswith(f"dbarena: error: {path}: manifest.json:") and "steady_tps" in line
    assert json.loads(dbarena("verify", "--json", str(path), env=env).stdout)[0]["verified"] is False
    with Store(tmp_path / "into.db") as db:
        assert db.runs() == []


def test_a_bundle_that_records_no_estimator_is_recomputed_and_says_so(demo: dict[str, bytes], tmp_path: Path) -> None:
    """A bundle published before the version was recorded: it still reads (the field is
    optional in the schema), and its figures are recomputed."""
    checked = verify(_rewritten(demo, tmp_path / "none.tar", _version(None)))
    assert checked.published_estimator is None and checked.recomputed and checked.differences == []
    line = checked.recomputed_line()
    assert line is not None and f"recomputed with estimator {NOW}; published with none recorded: 0 of " in line
    assert "verify --json" not in line  # (nothing to list)


@pytest.mark.parametrize(("change", "said"), [
    # What the tool printed is raw data, read again from its output under any estimator.
    (lambda members, manifest: manifest["points"][0]["result"].update(tps=1.5), r"tps of point \d+ is 1\.5, but "
                                                                                r"points/\d+/stdout\.txt:\d+ gives"),
    (lambda members, manifest: manifest["points"][0]["result"].update(threads=3), r"threads of point \d+ is 3, but "
                                                                                  r"points/\d+/stdout\.txt:\d+ gives"),
], ids=["printed-figure", "printed-threads"])
def test_the_raw_data_is_checked_under_another_estimator_as_under_this_one(demo, tmp_path, change, said) -> None:
    older = _rewritten(demo, tmp_path / "older.tar", _both(_version(OLDER), change))
    now = _rewritten(demo, tmp_path / "now.tar", change)
    for path in (older, now):
        with pytest.raises(BundleProblem, match=said):
            verify(path)


def test_a_file_changed_without_its_sha256_is_refused_under_another_estimator(demo, tmp_path) -> None:
    members = dict(demo)
    manifest = json.loads(members[bundle.MANIFEST])
    manifest["estimator_version"] = OLDER
    members[bundle.MANIFEST] = bundle.json_bytes(manifest)
    members["points/1/samples.csv"] = members["points/1/samples.csv"].replace(b"4", b"5", 1)
    path = tmp_path / "b.tar"
    path.write_bytes(bundle.write_tar(members, bundle.epoch_of(manifest["date"])))
    with pytest.raises(BundleProblem, match=r"points/1/samples\.csv does not match its sha256"):
        verify(path)


@pytest.mark.parametrize(("value", "said"), [("7", 'estimator_version is "7", not integer'),
                                             (0, "estimator_version is 0, which does not fit (minimum)"),
                                             (True, "estimator_version is true, not integer")])
def test_an_estimator_version_that_is_no_version_is_refused(demo, tmp_path, value, said) -> None:
    path = _rewritten(demo, tmp_path / "b.tar", _version(value))
    with pytest.raises(BundleProblem, match=f"schema .*: {re.escape(said)}$"):
        verify(path)


def test_a_bound_of_another_estimator_differs_in_the_manifest_and_its_file_and_the_derived_one_is_shown(
        profiled: dict[str, bytes], tmp_path: Path) -> None:
    """An unsigned bundle claiming an older estimator to carry a verdict its series do not
    give: verify passes, naming both published copies; what import and site show is the
    verdict derived from the series."""
    manifest = json.loads(profiled[bundle.MANIFEST])
    (entry,) = manifest["points"]
    pid, derived = entry["result"]["point_id"], entry["result"]["bound"]
    assert derived not in (None, "I/O")
    member = f"points/{pid}/server-series.json"

    def claim(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
        manifest["points"][0]["result"]["bound"] = "I/O"
        members[member] = bundle.json_bytes({**json.loads(members[member]), "bound": "I/O"})

    path = _rewritten(profiled, tmp_path / "older.tar", _both(_version(OLDER), claim))
    checked = verify(path)
    assert [(d.figure, d.published, d.recomputed, d.where.split(":")[0]) for d in checked.differences] == \
        [("bound", "I/O", derived, "manifest.json"), ("bound", "I/O", derived, member)]
    with pytest.raises(BundleProblem, match=r"bound of point \d+ is \"I/O\""):
        verify(_rewritten(profiled, tmp_path / "now.tar", claim))
    env = cli_env(tmp_path)
    assert dbarena("import", str(path), "--store", str(tmp_path / "into.db"), env=env).returncode == 0
    (shown,) = json.loads(dbarena("results", "--json", "--store", str(tmp_path / "into.db"), env=env).stdout)
    assert shown["bound"] == derived
    # The site's row: the derived verdict, and its trust says the figures were recomputed.
    examined = site._examine(str(path), None, 0)
    assert examined.refused is None
    (result,) = examined.results
    assert [p.bound for p in result.points] == [derived]
    trust = result.figures["trust"]
    assert isinstance(trust, dict) and str(trust["text"]).endswith(
        f"figures recomputed with estimator {NOW}; published with {OLDER}: 2 of {checked.derived} differ")


def test_the_derived_figures_are_what_analysis_adds_to_a_stored_point() -> None:
    """What may differ between estimators is exactly what a read derives: none of what
    the store keeps of a point (its printed figures, options, times ...)."""
    from dbarena.records import STORED_FIELDS

    assert DERIVED and not DERIVED & set(STORED_FIELDS)
    assert {"steady_tps", "tps_ci_low", "warnings", "bound", "bound_evidence", "cv"} <= DERIVED
    assert not {"tps", "latency_p95_ms", "threads", "warmup_s"} & DERIVED
