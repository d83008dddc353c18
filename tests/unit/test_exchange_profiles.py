"""On-CPU profiles in bundles: a profiled point's folded stacks travel as
points/ID/profile.txt (its frequency and symbols in its record), verify makes its
samples and top functions again from them, and import brings the profile into the
store it merges into; a profile file changed, removed or not folded is refused in one
line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from dbarena.exchange import bundle
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.importing import import_bundle
from dbarena.exchange.publish import publish
from dbarena.exchange.verify import verify
from dbarena.stats import profiles
from dbarena.store.database import Store

from bundles import rewritten

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"
PG = Path(__file__).resolve().parents[1] / "fixtures" / "perf" / "pg15-tpcb-2x8-5s.perf-script.txt"
SYMBOLS = "perf version 6.1.187; /usr/lib/postgresql/15/bin/postgres: dynamic symbols only"


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo store's run 1, its first two points profiled (a real profile), published."""
    base = tmp_path_factory.mktemp("profiles")
    shutil.copyfile(DEMO, base / "demo.db")
    folded = profiles.folded_text(profiles.fold(PG.read_text()))
    with Store(base / "demo.db") as db:
        ids = [p.point_id for p in db.points(run_id=1)][:2]
        with db._writing():
            for pid in ids:
                db.add_profile(pid, folded, 99.0, SYMBOLS)
        made = publish(db, run_ids=[1], signer=None, secrets={})
    (base / "b.tar").write_bytes(made.data)
    members, _ = bundle.read_tar("b", made.data)
    return {"base": base, "path": base / "b.tar", "members": members, "ids": ids, "folded": folded}


def test_a_profile_travels_as_folded_text_and_verifies(published: dict[str, Any]) -> None:
    members, ids = published["members"], published["ids"]
    manifest = json.loads(members[bundle.MANIFEST])
    entries = {e["result"]["point_id"]: e for e in manifest["points"]}
    for pid in ids:
        assert entries[pid]["files"]["profile"] == f"points/{pid}/profile.txt"
        assert members[f"points/{pid}/profile.txt"].decode() == published["folded"]
        record = entries[pid]["result"]["profile"]
        stacks = profiles.parse_folded(published["folded"])
        assert record == {"samples": profiles.samples(stacks), "top": profiles.top(stacks), "frequency_hz": 99.0,
                          "symbols": SYMBOLS}
    others = [e for pid, e in entries.items() if pid not in ids]
    assert others and all("profile" not in e["files"] and "profile" not in e["result"] for e in others)
    assert verify(published["path"]).points == len(entries)


def test_import_brings_the_profiles_into_the_store(published: dict[str, Any], tmp_path: Path) -> None:
    with Store(tmp_path / "mine.db") as db:
        import_bundle(db, published["path"])
        found = db.profiles([p.point_id for p in db.points()], folded=True)
        assert len(found) == 2
        assert all(f.folded == published["folded"] and f.frequency_hz == 99.0 for f in found.values())


def _edited(published: dict[str, Any], path: Path, change: Callable[[dict[str, bytes], dict[str, Any]], None]
            ) -> Path:
    """The bundle with `change` made to its members and manifest, its sha256 and SHA256SUMS
    made consistent again (unsigned: nothing else ties it together)."""
    return rewritten(published["members"], path, change)


def test_a_profile_changed_is_refused_naming_what_it_recomputed(published: dict[str, Any], tmp_path: Path) -> None:
    pid = published["ids"][0]
    name = f"points/{pid}/profile.txt"

    def change(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
        members[name] = members[name] + b"postgres;main;sneaky 1000\n"

    with pytest.raises(BundleProblem, match=rf"profile of point {pid} is .*, but .* recomputed from {name}"):
        verify(_edited(published, tmp_path / "x.tar", change))


@pytest.mark.parametrize("what, said", [
    ("not folded", "profile.txt: not folded stacks (line 1 is not 'stack count')"),
    ("file gone", "has a profile in its record but no profile file"),
    ("record gone", "has a profile file (points/{pid}/profile.txt) but no profile in its record"),
])
def test_a_profile_without_its_parts_is_refused(published: dict[str, Any], tmp_path: Path, what: str,
                                                said: str) -> None:
    pid = published["ids"][0]
    name = f"points/{pid}/profile.txt"

    def change(members: dict[str, bytes], manifest: dict[str, Any]) -> None:
        entry = next(e for e in manifest["points"] if e["result"]["point_id"] == pid)
        if what == "not folded":
            members[name] = b"this is not folded\n"
        elif what == "file gone":
            del members[name]
            del entry["files"]["profile"]
        else:
            del entry["result"]["profile"]

    with pytest.raises(BundleProblem, match=said.format(pid=pid).replace("(", r"\(").replace(")", r"\)")):
        verify(_edited(published, tmp_path / "x.tar", change))
