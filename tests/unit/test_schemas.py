"""The exports' JSON Schema (schemas.py, docs/schema/): the files are what the records
make, each a valid 2020-12 schema, and every export of real stores validates against
its schema: the golden store (two labels, repeats) and the store-edge one (a failed
point, server series, a study); the report's JSON of those, of the demo store and an
older one, and of a store with five levels and mysqlslap, with and without a baseline,
prices (in one currency and in two) and a single label.

A deliberate change: DBARENA_UPDATE_GOLDEN=1 rewrites the files, and the diff goes into
the commit that changed them (with schemas.VERSION bumped where a reader must know)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conftest import invoke
from dbarena.report import schemas
from storebuild import build
from test_golden_exports import store, wide_store  # noqa: F401  (the fixtures: labels main and pr; and few)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "schema"
STORES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
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


# The report's JSON of real stores: name -> (store, options). Together they hold every
# part of the report's schema (test_the_reports_cover_every_part_of_the_schema).
REPORTS: dict[str, tuple[str, list[str]]] = {
    "golden": ("golden", []),
    "golden-priced": ("golden", ["--price", "main=1", "--price", "pr=0.8", "--at-threads", "2"]),
    "golden-one-label": ("golden", ["--label", "pr"]),
    "wide-priced": ("wide", ["--baseline", "pr", "--price", "main=1", "--price", "pr=1.3", "--price", "few=2",
                             "--at-threads", "4"]),
    "wide-two-currencies": ("wide", ["--price", "main=1", "--price", "pr=0.8 EUR/h", "--at-threads", "4"]),
    "edge": ("edge", ["--baseline", "b"]),
    "demo-priced": ("demo-seed-a-quick.db", ["--price", "vm=420/month", "--at-threads", "2"]),
    "v11-imported-baseline": ("v11.db", ["--baseline", "imported"]),
    "fixed-rate": ("fixed-rate-three-labels.db", ["--about", "settings"]),
}


@pytest.fixture(scope="module")
def reports(store: Path, edge_store: Path, wide_store: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    """Each of REPORTS, exported (`report -o FILE.json`) and read back."""
    from dbarena.cli import main

    folder = tmp_path_factory.mktemp("reports")
    built = {"golden": store, "edge": edge_store, "wide": wide_store}
    out: dict[str, Any] = {}
    for name, (source, options) in REPORTS.items():
        path = built.get(source)
        if path is None:  # a checked-in store: a copy, which opening may migrate
            path = folder / source
            if not path.exists():
                shutil.copy(STORES / source, path)
        target = folder / f"{name}.json"
        with pytest.raises(SystemExit) as ended:
            main(["report", "--store", str(path), "-o", str(target), *options])
        assert ended.value.code in (0, None), name
        out[name] = json.loads(target.read_text())
    return out


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_the_reports_json_of_a_real_store_fits_its_schema(name: str, reports: dict[str, Any]) -> None:
    _valid("report", json.dumps(reports[name]))


def test_the_reports_cover_every_part_of_the_schema(reports: dict[str, Any]) -> None:
    """What the reports above validate is not only empty lists: each part of the schema
    (a decision with a verdict and a price, the line across workloads, a USL fit, a
    cheapest label, prices in two currencies, seconds, a single label) is there."""
    documents = list(reports.values())
    decisions = [d for doc in documents for d in doc["decisions"]]
    sections = [s for doc in documents for s in doc["sections"]]
    assert {d["verdict"] for d in decisions} >= {"faster", "slower", "no verdict", "not comparable"}
    assert any(d["price"] for d in decisions) and any(d["why"] for d in decisions)
    assert any(level for d in decisions for level in d["levels"])
    assert any(doc["overall"] for doc in documents)
    assert any(s["usl"] for s in sections) and all(s["ranking"] for s in sections)
    assert any(r["verdict"] == "faster" for doc in documents for r in doc.get("rate_levels", ()))
    cheapest = [s["cheapest"] for s in sections if s["cheapest"]]
    assert any(c["label"] and c["others"] for c in cheapest) and any("currencies" in c for c in cheapest)
    assert any(r["metric"] == "seconds" and r["price_per_run"] for doc in documents for r in doc["rows"])
    assert reports["golden-one-label"]["labels"] == ["pr"] and not reports["golden-one-label"]["decisions"]


def test_a_report_of_the_wrong_shape_is_caught(reports: dict[str, Any]) -> None:
    """The report's schema is not vacuous: from a report that fits, a verdict outside
    the vocabulary, a fit without its lambda, a ranking entry with a field no record has,
    a cheapest label's share given as text and a row's figure given as text are each an
    error."""
    validator = Draft202012Validator(schemas.schema("report"))
    document = reports["wide-priced"]
    assert not list(validator.iter_errors(document))
    section = next(s for s in document["sections"] if s["usl"] and s["cheapest"])
    label, fit = next(iter(section["usl"].items()))

    def with_section(**changed: Any) -> dict[str, Any]:
        return {**document, "sections": [{**section, **changed}]}

    wrong = [
        {**document, "decisions": [{**document["decisions"][0], "verdict": "better"}]},
        with_section(usl={label: {k: v for k, v in fit.items() if k != "lambda"}}),
        with_section(ranking=[{**section["ranking"][0], "surprise": 1}]),
        with_section(cheapest={**section["cheapest"], "others": {"main": "12 %"}}),
        {**document, "rows": [{**document["rows"][0], "tps": "fast"}]},
    ]
    for broken in wrong:
        assert list(validator.iter_errors(broken)), broken
