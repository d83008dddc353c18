"""A result's page in `dbarena site` (exchange/site.py): its decision against every
other result of its engine and workload, each the decision `dbarena compare` makes of
the pair; the nearest MAX_BASELINES where more share the key, and the page says which.

The bundles: the demo store's PostgreSQL run (a real seed-a --quick run), published,
then copied as bench/site copies it (another label and UUID, another instance type),
unsigned; built in this process (one worker), no browser."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import cli_env
from inprocess import dbarena

from dbarena.exchange import bundle, site
from dbarena.exchange.publish import publish
from dbarena.store.database import Store

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("baselines")
    shutil.copyfile(DEMO, base / "demo.db")
    with Store(base / "demo.db") as db:
        made = publish(db, run_ids=[1], signer=None, secrets={})
    members, mtime = bundle.read_tar("demo", made.data)
    out = []
    for i, instance in enumerate(("c7g.large", "m7i.large", "c7g.large")):
        manifest = json.loads(members[bundle.MANIFEST])
        label = f"{instance}-{i}"
        for run in manifest["runs"]:
            run["label"], run["uuid"] = label, f"00000000-0000-4000-8000-{i:012d}"
            run["host_facts"].update(cloud="aws", instance_type=instance)
        for point in manifest["points"]:
            point["result"]["label"] = label
        path = base / f"{label}.tar"
        path.write_bytes(bundle.write_tar({**members, bundle.MANIFEST: bundle.json_bytes(manifest)}, mtime))
        out.append(path)
    return out


def _page(out: Path, stem: str, workload: str) -> str:
    data = json.loads((out / "data.js").read_text().split(" = ", 1)[1].rstrip(";\n"))
    (rid,) = [r["id"] for r in data["results"] if r["label"].startswith(stem) and r["workload"] == workload]
    return (out / "r" / f"{rid}.html").read_text()


def test_a_page_decides_against_every_other_result_of_its_workload(bundles: list[Path], tmp_path: Path) -> None:
    built = site.build(bundles, tmp_path / "site", workers=1)
    assert built.results == 3 * 6 and not built.refused  # (six workloads in each)
    page = _page(tmp_path / "site", "c7g.large-0", "pgbench-tpcb")
    options = re.findall(r'<option value="([^"]+)">([^<]+)</option>', site.unpacked(page).options)
    assert [o[1].split(":")[0] for o in options] == ["c7g.large-2.tar", "m7i.large-1.tar"]  # nearest first
    assert all("pgbench-tpcb" in o[0] for o in options)  # only its workload's
    assert "Against any of the 2 other result(s) of its engine and workload" in page
    # The decisions shipped packed (gzip, base64), as page.js unpacks them.
    decisions = site.unpacked(page).decisions
    assert decisions.count('<div class="vs"') == 2 and decisions.count('class="decision"') == 2
    assert '<div class="vs"' not in page and "<option" not in page and 'type="application/x-dbarena-gzip-base64"' in page
    # What a change is, said once on the page, after the decisions, not under each.
    assert page.count("Change: the geometric mean") == 1 and "Change: the geometric mean" not in decisions
    assert page.index("Change: the geometric mean") > page.index('<script id="packed"')
    # Each is the decision `dbarena compare` makes of the pair (the verdict's words).
    into = tmp_path / "both.db"
    for path in bundles[:2]:
        done = dbarena("import", str(path), "--store", str(into), env=cli_env(tmp_path))
        assert done.returncode == 0, done.stderr
    done = dbarena("compare", "m7i.large-1", "c7g.large-0", "--json", "--store", str(into), env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    levels = [c for c in json.loads(done.stdout) if c["workload"] == "pgbench-tpcb"]
    assert len(levels) == 2 and all(c["ratio"] == 1.0 and c["verdict_text"] == "inconclusive: 1 session a side" for c in levels)
    m7i = next(o[0] for o in options if o[1].startswith("m7i"))
    section = decisions.split(f'<div class="vs" id="vs-{m7i}" hidden>')[1].split('<div class="vs"')[0]
    assert "inconclusive: one session a side" in section and "+0.0 %" in section, section


def test_beyond_the_bound_the_nearest_and_the_page_says_so(bundles: list[Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(site, "MAX_BASELINES", 1)
    site.build(bundles, tmp_path / "site", workers=1)
    page = _page(tmp_path / "site", "c7g.large-0", "sysbench-read-only")
    options = re.findall(r'<option value="([^"]+)">([^<]+)</option>', site.unpacked(page).options)
    assert [o[1].split(":")[0] for o in options] == ["c7g.large-2.tar"]  # the same instance type
    assert "Against the 1 nearest of the 2 other results of its engine and workload" in page
    assert "<code>dbarena compare</code>" in page
