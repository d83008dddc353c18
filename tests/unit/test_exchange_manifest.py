"""The manifest's JSON Schema (exchange/manifest.py, exchange/schema/manifest-1.json):
the shipped file is what the records make, each record's fields are exactly its
object's properties there, a real bundle's manifest fits it, and `verify` refuses a
manifest that does not, in one line naming the first field that does not fit.

A deliberate change: DBARENA_UPDATE_GOLDEN=1 rewrites the file (and a change a reader
must know of is a new bundle format version)."""

from __future__ import annotations

import copy
import json
import os
import shutil
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conftest import cli_env
from inprocess import dbarena

from dbarena.exchange import bundle, manifest
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.publish import publish
from dbarena.exchange.verify import json_schema, verify
from dbarena.records import StoredRun
from dbarena.store.database import Store

SHIPPED = Path(manifest.__file__).parent / manifest.SCHEMA_FILE
DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"


def _made() -> str:
    return json.dumps(manifest.schema(), indent=2) + "\n"


def test_the_shipped_schema_is_what_the_records_make() -> None:
    if os.environ.get("DBARENA_UPDATE_GOLDEN"):
        SHIPPED.write_text(_made())
    assert manifest.shipped() == _made(), f"{SHIPPED} differs from what manifest.py makes of the records"
    Draft202012Validator.check_schema(json.loads(manifest.shipped()))


VERIFY_SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "verify.schema.json"


def test_the_schema_of_verify_json_is_what_verify_makes() -> None:
    """docs/schema/verify.schema.json: `verify --json`'s shape (exchange/verify.json_schema;
    test_exchange_estimator.py checks real output against it)."""
    made = json.dumps(json_schema(), indent=2) + "\n"
    if os.environ.get("DBARENA_UPDATE_GOLDEN"):
        VERIFY_SCHEMA.write_text(made)
    assert VERIFY_SCHEMA.read_text() == made, f"{VERIFY_SCHEMA} differs from what verify.json_schema makes"
    Draft202012Validator.check_schema(json.loads(made))


def _at(schema: dict[str, Any], where: str) -> dict[str, Any]:
    """The object schema at a RECORDS location ("" the top, "points[]" a point)."""
    if not where:
        return schema
    return dict(schema["properties"][where.removesuffix("[]")]["items"])


@pytest.mark.parametrize("where", sorted(manifest.RECORDS))
def test_each_record_has_exactly_the_fields_its_schema_object_has(where: str) -> None:
    """Both ways: a field a record gains that the shipped schema lacks, or a property
    the schema keeps that the record lost, fails here."""
    record = manifest.RECORDS[where]
    shipped = _at(json.loads(manifest.shipped()), where)
    names = {f.name for f in fields(record)}
    assert set(shipped["properties"]) == names
    assert shipped["additionalProperties"] is False
    assert set(shipped["required"]) <= names


def test_a_field_added_to_a_record_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: a record with one field more makes another schema."""
    @dataclass(frozen=True)
    class Wider(manifest.Price):  # type: ignore[misc]
        discount: float | None = None

    monkeypatch.setattr(manifest, "Price", Wider)
    assert _made() != manifest.shipped()
    assert "discount" in _at(manifest.schema(), "prices[]")["properties"]
    assert "discount" not in _at(json.loads(manifest.shipped()), "prices[]")["properties"]


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """An unsigned bundle of the demo store's PostgreSQL run (a real seed-a --quick run), as members."""
    store = tmp_path_factory.mktemp("manifest") / "demo.db"
    shutil.copyfile(DEMO, store)
    with Store(store) as db:
        made = publish(db, run_ids=[1], signer=None, secrets={})
    members, _ = bundle.read_tar("demo", made.data)
    return members


def test_a_real_manifest_fits_and_every_part_of_it_is_tried(published: dict[str, bytes]) -> None:
    document = json.loads(published[bundle.MANIFEST])
    manifest.check(document)
    # (else a part of the schema goes untried)
    assert document["runs"] and document["studies"] and document["points"]
    assert {k for p in document["points"] for k in p["files"]} >= {"stdout", "stderr", "samples", "system_samples"}


def _edit(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
    at: Any = changed
    for part in parents:
        at = at[part]
    if value is KeyError:
        del at[last]
    else:
        at[last] = value
    return changed


@pytest.mark.parametrize(("path", "value", "said"), [
    ("points/3/result/tps", "fast", 'points[3].result.tps is "fast", not number or null'),
    ("points/0/result/label", KeyError, "points[0].result.label is missing"),
    ("points/1/result/surprise", 1, "points[1].result.surprise is no field of a manifest"),
    ("runs/0/options", [1], "runs[0].options is [1], not object"),
    ("runs/0/uuid", 7, "runs[0].uuid is 7, not string or null"),
    ("format_version", True, "format_version is true, not one of 1"),
    ("prices", None, "prices is null, not array"),
    ("signed", KeyError, "signed is missing"),
    ("points/2/files/stdout", "../../etc/passwd", 'points[2].files.stdout is "../../etc/passwd", which does not '
                                                 "fit (pattern)"),
    ("points/2/files/\u001b[2Jevil", "points/1/x.txt", "points[2].files names a file"),
    ("sha256sums", "00", 'sha256sums is "00", which does not fit (pattern)'),
])
def test_a_manifest_that_does_not_fit_is_refused_naming_the_field(published: dict[str, bytes], path: str,
                                                                    value: Any, said: str) -> None:
    document = _edit(json.loads(published[bundle.MANIFEST]), path, value)
    with pytest.raises(manifest.ManifestProblem) as refused:
        manifest.check(document)
    assert str(refused.value).startswith(said), str(refused.value)
    assert "\n" not in str(refused.value) and "\u001b" not in str(refused.value)


def test_the_first_field_in_the_manifests_order_is_named(published: dict[str, bytes]) -> None:
    document = json.loads(published[bundle.MANIFEST])
    document = _edit(_edit(document, "points/5/result/tps", "x"), "points/1/result/qps", "y")
    document = _edit(document, "runs/0/label", 3)
    with pytest.raises(manifest.ManifestProblem, match=r"^points\[1\]\.result\.qps is "):
        manifest.check(document)


def test_verify_refuses_a_bundle_whose_manifest_does_not_fit(published: dict[str, bytes], tmp_path: Path) -> None:
    """A bundle made consistent again (files, sums) around a manifest with a figure of the
    wrong type: `verify` refuses it in one line naming the field and the schema, exit 2."""
    members = dict(published)
    document = _edit(json.loads(members[bundle.MANIFEST]), "points/0/result/threads", "2")
    members[bundle.MANIFEST] = bundle.json_bytes(document)
    path = tmp_path / "wrong.tar"
    path.write_bytes(bundle.write_tar(members, bundle.epoch_of(document["date"])))
    with pytest.raises(BundleProblem, match=r"manifest\.json does not fit the manifest's schema "
                                            r"\(schema/manifest-1\.json\): points\[0\]\.result\.threads is \"2\", "
                                            r"not integer$"):
        verify(path)
    done = dbarena("verify", str(path), env=cli_env(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().split("\n")
    assert line.startswith(f"dbarena: error: {path}: manifest.json does not fit"), line
    # The same members, the manifest untouched: verified (the refusal was the field's).
    members[bundle.MANIFEST] = published[bundle.MANIFEST]
    path.write_bytes(bundle.write_tar(members, bundle.epoch_of(json.loads(published[bundle.MANIFEST])["date"])))
    assert verify(path).points == len(json.loads(published[bundle.MANIFEST])["points"])


def test_a_run_record_is_the_stores_run() -> None:
    """A manifest's run is records.StoredRun: the schema's run object is made from it."""
    assert manifest.RECORDS["runs[]"] is StoredRun


@pytest.mark.slow  # an import, a publish and a verify: seconds
def test_a_bundle_names_an_imported_file_and_a_study_file_not_where_they_were(tmp_path: Path) -> None:
    """The store keeps an imported file's whole path (which file to look at again); a
    bundle goes to strangers: the file's name only, and the same for a study's file."""
    home = tmp_path / "home" / "alice" / "results"
    home.mkdir(parents=True)
    source = home / "sysbench-mariadb-session.txt"
    shutil.copyfile(Path(__file__).parent.parent / "fixtures" / "import" / source.name, source)
    store = tmp_path / "s.db"
    done = dbarena("import", str(source), "--label", "theirs", "--store", str(store), env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    with Store(store) as db:
        (run,) = db.runs()
        assert run.options["imported"]["file"] == str(source)  # the store keeps it whole
        made = publish(db, run_ids=[run.id], signer=None, secrets={})
    members, _ = bundle.read_tar("theirs", made.data)
    manifest_text = members[bundle.MANIFEST].decode()
    assert str(home) not in manifest_text and "alice" not in manifest_text
    (stored,) = json.loads(manifest_text)["runs"]
    assert stored["options"]["imported"]["file"] == source.name
    (point,) = json.loads(manifest_text)["points"]
    assert point["result"]["source"]["path"] == source.name
    bundled = tmp_path / "theirs.tar"
    bundled.write_bytes(made.data)
    assert verify(bundled).points == 1  # the figures still come back from the bundle's own file


@pytest.mark.slow  # an import, a publish and a verify: seconds
def test_an_imported_output_of_a_workload_dbarena_does_not_run_is_read_again(tmp_path: Path) -> None:
    """Percona's sysbench TPC-C, imported: `verify` reads its output again as sysbench's,
    as `import` did (it said "checked from their series only"), so a figure changed in
    the manifest is refused, naming the output's line."""
    source = Path(__file__).parent.parent / "fixtures" / "import" / "percona-thp2019-tpcc-aborted-then-run.txt"
    store = tmp_path / "s.db"
    done = dbarena("import", str(source), "--label", "tpcc", "--store", str(store), env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    with Store(store) as db:
        made = publish(db, labels=["tpcc"], signer=None, secrets={})
    path = tmp_path / "tpcc.tar"
    path.write_bytes(made.data)
    checked = verify(path)
    assert checked.from_output == 1 and "series only" not in checked.summary(), checked.summary()
    members, _ = bundle.read_tar("tpcc", made.data)
    document = json.loads(members[bundle.MANIFEST])
    (ok,) = [i for i, p in enumerate(document["points"]) if p["result"]["status"] == "ok"]
    assert document["points"][ok]["result"]["workload"] == "sysbench-tpcc"
    document["points"][ok]["result"]["tps"] += 1
    members[bundle.MANIFEST] = bundle.json_bytes(document)
    path.write_bytes(bundle.write_tar(members, bundle.epoch_of(document["date"])))
    with pytest.raises(BundleProblem, match=r"tps of point \d+ is .*, but points/\d+/stdout\.txt:\d+ gives"):
        verify(path)
