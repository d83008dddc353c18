"""The exports' JSON Schema (schemas.py, docs/schema/): the files are what the records
make, each a valid 2020-12 schema, and every export of real stores validates against
its schema: the golden store (two labels, repeats) and the store-edge one (a failed
point, server series, a study).

A deliberate change: DBARENA_UPDATE_GOLDEN=1 rewrites the files, and the diff goes into
the commit that changed them (with schemas.VERSION bumped where a reader must know)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conftest import invoke
from dbarena import schemas
from storebuild import build
from test_golden_exports import store  # noqa: F401  (the fixture: labels main and pr)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schema"
COMMANDS = {
    "results": ["results", "--json"],
    "results-summary": ["results", "--summary", "--json"],
    "history": ["history", "--json"],
}


@pytest.mark.parametrize("name", sorted([*schemas.EXPORTS, *schemas.DOCUMENTS]))
def test_the_schema_file_is_what_the_records_make(name: str) -> None:
    made = json.dumps(schemas.schema(name), indent=2) + "\n"
    path = DOCS / f"{name}.schema.json"
    if os.environ.get("DBARENA_UPDATE_GOLDEN"):
        path.write_text(made)
    assert path.is_file(), f"{path} missing: DBARENA_UPDATE_GOLDEN=1 writes it"
    assert path.read_text() == made, f"{path} differs from what schemas.py makes"
    Draft202012Validator.check_schema(json.loads(made))


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("schema") / "edge.db")


def _valid(name: str, text: str) -> None:
    document = json.loads(text)
    assert document, f"{name}: an empty export proves nothing"
    errors = sorted(Draft202012Validator(schemas.schema(name)).iter_errors(document), key=str)
    assert not errors, f"{name}: {errors[0].message} at {list(errors[0].absolute_path)}"


@pytest.mark.parametrize("which", ["golden", "edge"])
def test_every_export_of_a_real_store_fits_its_schema(which: str, store: Path, edge_store: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path, pair = (store, ("main", "pr")) if which == "golden" else (edge_store, ("a", "b"))
    for name, argv in {**COMMANDS, "compare": ["compare", *pair, "--json"]}.items():
        status, out, err = invoke([*argv, "--store", str(path)], capsys)
        assert status == 0, err
        _valid(name, out)


def test_a_history_with_a_change_point_and_its_causes_fits_its_schema(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A step that the history finds, with the facts that changed there: every part of
    the history's schema (change points, causes) is checked against a real export."""
    from dbarena.store.database import Store
    from test_history_and_gate import add_run

    path = tmp_path / "step.db"
    with Store(path) as db:
        for day in range(5):
            add_run(db, "main", day, 1000.0 * (1 + 0.005 * (day % 2)))
        for day in range(5, 10):
            add_run(db, "main", day, 600.0 * (1 + 0.005 * (day % 2)), sync="on", server="17.4")
    status, out, err = invoke(["history", "--json", "--store", str(path)], capsys)
    assert status == 0, err
    document = json.loads(out)
    changes = [c for s in document["series"] for c in s["change_points"]]
    assert changes and changes[0]["causes"], out  # (else the schema of a change point goes untried)
    _valid("history", out)
    broken = {**document, "series": [{**document["series"][0], "change_points": [{**changes[0], "run": "7"}]}]}
    assert list(Draft202012Validator(schemas.schema("history")).iter_errors(broken))


def test_a_field_of_the_wrong_type_is_caught(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The schema is not vacuous: from a point that fits, a figure given as text, a
    missing field and a field no record has are each an error."""
    validator = Draft202012Validator(schemas.schema("results"))
    status, out, err = invoke(["results", "--json", "--store", str(store)], capsys)
    assert status == 0, err
    item = json.loads(out)[0]
    assert not list(validator.iter_errors([item]))
    wrong = [{**item, "tps": "fast"}, {k: v for k, v in item.items() if k != "label"}, {**item, "surprise": 1},
             {**item, "warnings": [{"code": 3}]}]
    for document in wrong:
        assert list(validator.iter_errors([document])), document
