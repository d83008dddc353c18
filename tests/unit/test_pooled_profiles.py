"""The report's profiles pooled by level (report/levelprofiles.py): every ok profiled
point of a label and level summed per transaction, in the HTML report and Decide as
flame graphs with what they pooled said under them (report/profileview.py), in the
Markdown and JSON reports as each pool's top functions and each label's largest changes
against the baseline, the same changes `compare` lists. Over tests/profiledstore.py:
real stacks, two points a level, one of them at another frequency, a failed point."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conftest import invoke
from dbarena.report import assemble, levelprofiles, schemas
from dbarena.stats import profiles
from dbarena.store.database import Store
from profiledstore import LABELS, build, halved, real_stacks


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("pooled") / "pooled.db")


def _expected_us(stacks: dict[str, int], committed: tuple[int, int]) -> dict[str, float]:
    """Each function's self time a transaction over the two repeats, as the fixture made them."""
    out: dict[str, float] = {}
    for found, hz in ((stacks, 99.0), (halved(stacks), 50.0)):
        for stack, count in found.items():
            name = stack.rsplit(";", 1)[-1]
            out[name] = out.get(name, 0.0) + count * 1e6 / hz
    return {name: us / sum(committed) for name, us in out.items()}


def test_a_pool_is_its_levels_ok_points_summed_per_transaction(pooled: Path, tmp_path: Path) -> None:
    with Store(pooled, readonly=True) as db:
        report, shown = assemble.build_shown(db, assemble.Selection(labels=("sync", "async")))
        chosen = shown.profiled
        pools = {p.key: p for p in levelprofiles.read(db, chosen)}
    assert sorted(pools) == [("postgres", "pgbench-tpcb", label, n) for label in ("async", "sync") for n in (1, 2)]
    sync = pools[("postgres", "pgbench-tpcb", "sync", 2)]
    assert len(sync.point_ids) == 2  # the failed point's profile is no pool's
    stacks = real_stacks(tmp_path)["sync"][0]
    assert sync.samples == profiles.samples(stacks) + profiles.samples(halved(stacks))
    assert sync.transactions == sum(LABELS["sync"][2])
    (summary,) = levelprofiles.summaries([sync])
    expected = _expected_us(stacks, LABELS["sync"][2])
    assert summary.us_per_tx == pytest.approx(sum(expected.values()))
    assert summary.top and summary.top[0]["us_per_tx"] == pytest.approx(expected[str(summary.top[0]["function"])])
    counts = sync.counts()
    own = sum(c for s, c in counts.items() if s.rsplit(";", 1)[-1] == summary.top[0]["function"])
    assert summary.top[0]["share"] == pytest.approx(own / sync.samples)
    assert "failed_only_function" not in {str(f["function"]) for f in summary.top}


def test_the_reports_json_has_each_pool_and_the_changes_compare_lists(
        pooled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.json"
    # (The labels differ in a setting: compared about it, as compare is below.)
    status, _, err = invoke(["report", "--store", str(pooled), "-o", str(target), "--baseline", "sync",
                             "--about", "settings"], capsys)
    assert status == 0, err
    document = json.loads(target.read_text())
    errors = list(Draft202012Validator(schemas.schema("report")).iter_errors(document))
    assert not errors, errors[0].message
    assert [(p["label"], p["threads"], len(p["point_ids"])) for p in document["profiles"]] == [
        ("sync", 1, 2), ("sync", 2, 2), ("async", 1, 2), ("async", 2, 2)]
    assert all(len(p["top"]) == levelprofiles.TOP for p in document["profiles"])
    changes = {d["threads"]: d for d in document["profile_changes"]}
    assert sorted(changes) == [1, 2] and changes[2]["a"] == "sync" and changes[2]["b"] == "async"
    assert changes[2]["a_points"] == 2 and changes[2]["b_points"] == 2
    # The same functions and figures as compare's, which pools a level's profiles alike.
    status, out, err = invoke(["compare", "sync", "async", "--about", "settings", "--json", "--store", str(pooled)],
                              capsys)
    assert status == 0, err
    compared = {row["threads"]: row["profile_changes"] for row in json.loads(out)}
    for n in (1, 2):
        assert [c["function"] for c in changes[n]["changes"]] == [c["function"] for c in compared[n]]
        assert [c["change_us_per_tx"] for c in changes[n]["changes"]] == pytest.approx(
            [c["change_us_per_tx"] for c in compared[n]], rel=1e-9)


def test_the_markdown_report_lists_the_pools_and_the_changes(
        pooled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.md"
    status, _, err = invoke(["report", "--store", str(pooled), "-o", str(target), "--about", "settings"], capsys)
    assert status == 0, err
    text = target.read_text()
    assert "### On CPU: the functions that took most of the time (self time)" in text
    assert "### On CPU: the functions whose time per transaction changed most against the baseline" in text
    first = re.search(r"^\| sync \| 2 \| 2 points, ([\d,]+) samples, ([\d.,]+) us/tx \| ", text, re.M)
    assert first is not None
    assert re.search(r"^\| async against sync \| 2 \| 2 points against 2 points, ", text, re.M)
    assert "failed_only_function" not in text


def test_the_html_report_and_decide_draw_the_pools(pooled: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r.html"
    status, _, err = invoke(["report", "--store", str(pooled), "-o", str(target), "--at-threads", "1"], capsys)
    assert status == 0, err
    # Without --about settings the labels (synchronous_commit on and off) are not
    # comparable: each pool drawn, no differential.
    section = target.read_text().split('<section id="profiles">', 1)[1]
    assert len(re.findall(r'<svg [^>]*class="flamegraph"', section)) == 2
    assert 'class="flamegraph differential"' not in section
    status, _, err = invoke(["report", "--store", str(pooled), "-o", str(target), "--at-threads", "1",
                             "--about", "settings"], capsys)
    assert status == 0, err
    page = target.read_text()
    section = page[page.index('<section id="profiles">'):]
    assert "<h3>postgres pgbench-tpcb at 1 thread</h3>" in section  # the level the per-second chart shows
    assert len(re.findall(r'<svg [^>]*class="flamegraph"', section)) == 2
    assert len(re.findall(r'<svg [^>]*class="flamegraph differential"', section)) == 1
    assert "sync at 1 thread: 2 points pooled (points 1, 2), " in section
    assert re.search(r"samples at 50, 99 Hz over 13,000 transactions: [\d.,]+ us a transaction on CPU", section)
    assert "async against sync at 1 thread: 2 points against 2 points pooled" in section
    titles = re.findall(r"<title>([^<]*)</title>", section)
    assert any(t.endswith(" %") and " us/tx, " in t for t in titles)

    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from dbarena.serve import app as serve_app

    with TestClient(serve_app.create_app(pooled), base_url="http://127.0.0.1:8642") as c:
        apart = c.get("/decide?baseline=sync&label=sync&label=async").text
        decide = c.get("/decide?baseline=sync&label=sync&label=async&about=settings").text
        wrong = c.get("/decide?baseline=sync&label=sync&label=async&about=colour")
    assert "sync at 2 threads: 2 points pooled" in apart and 'class="flamegraph differential"' not in apart
    assert "sync at 2 threads: 2 points pooled" in decide  # the highest level both measured
    assert 'class="flamegraph differential"' in decide and "async against sync at 2 threads" in decide
    assert 'value="settings" checked' in decide and "--about settings" in decide
    assert wrong.status_code == 400 and "--about &#x27;colour&#x27;: expected one of" in wrong.text


def test_a_report_without_profiles_has_none() -> None:
    assert levelprofiles.profiled([]) == {}
    assert levelprofiles.differences([], "a", lambda *_: True) == []
