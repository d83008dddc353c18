"""report/flamegraph.py: folded stacks -> an SVG flame graph (icicle: callers above,
widths by samples, names cut to fit, a <title> a frame); the differential coloured by
the change in time a transaction; a profiled point's page in serve shows its flame graph."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dbarena.report import flamegraph

PROFILED = Path(__file__).parent.parent / "fixtures" / "stores" / "profiled-sync-async.db"
NS = "{http://www.w3.org/2000/svg}"
STACKS = {"postgres;main;PostgresMain;exec_simple_query": 60, "postgres;main;PostgresMain;XLogFlush": 30,
          "postgres;main;ServerLoop": 10, "pgbench;[pgbench]": 0}


def _frames(svg: str) -> dict[str, tuple[float, float, str, str]]:
    """title's name -> (x, width, fill, the text drawn)."""
    out = {}
    for g in ET.fromstring(svg).iter(f"{NS}g"):
        title, rect = g.find(f"{NS}title"), g.find(f"{NS}rect")
        assert title is not None and rect is not None
        text = g.find(f"{NS}text")
        out[(title.text or "").split(":")[0]] = (float(rect.get("x", 0)), float(rect.get("width", 0)),
                                                 rect.get("fill", ""), text.text or "" if text is not None else "")
    return out


def test_frames_are_as_wide_as_their_samples_callers_above() -> None:
    svg = flamegraph.flame_svg(STACKS, "on CPU", width=1006)
    frames = _frames(svg)
    assert frames["all"][1] == pytest.approx(1000, abs=0.1)
    assert frames["exec_simple_query"][1] == pytest.approx(600, abs=0.1)
    assert frames["XLogFlush"][1] == pytest.approx(300, abs=0.1)
    assert frames["PostgresMain"][1] == pytest.approx(900, abs=0.1)
    # Siblings by name, left to right: PostgresMain before ServerLoop.
    assert frames["PostgresMain"][0] < frames["ServerLoop"][0]
    ys = {m[1]: int(m[2]) for m in re.finditer(r'<title>([^:<]+):[^<]*</title><rect x="[^"]*" y="(\d+)"', svg)}
    assert ys["all"] < ys["postgres"] < ys["main"] < ys["PostgresMain"] < ys["XLogFlush"]
    assert "pgbench" not in frames  # no samples: no frame
    assert "<title>exec_simple_query: 60 samples, 60.00 %</title>" in svg


def test_a_name_is_cut_to_its_frame_and_none_written_in_a_narrow_one() -> None:
    long = "a_function_with_a_very_long_name_indeed"
    frames = _frames(flamegraph.flame_svg({f"p;{long}": 50, "p;short": 950}, width=2000))
    assert frames[long][3].endswith("..") and len(frames[long][3]) < len(long)
    frames = _frames(flamegraph.flame_svg({f"p;{long}": 1, "p;short": 999}, width=1200))
    assert frames[long][3] == ""


def test_names_are_escaped() -> None:
    svg = flamegraph.flame_svg({"p;<script>alert(1)</script>": 5})
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    ET.fromstring(svg)


def test_the_differential_is_red_where_b_spends_more_and_blue_where_less() -> None:
    a = {"postgres;XLogFlush": 50, "postgres;exec": 50}
    b = {"postgres;XLogFlush": 5, "postgres;exec": 80}
    svg = flamegraph.differential_svg(a, b, 1.0, 1.0, "sync", "async")
    frames = _frames(svg)
    red, green, blue = (int(v) for v in re.findall(r"\d+", frames["exec"][2]))
    assert red > blue
    red, green, blue = (int(v) for v in re.findall(r"\d+", frames["XLogFlush"][2]))
    assert blue > red
    assert "XLogFlush: sync 50.00 us/tx, async 5.00 us/tx, change -45.00 us/tx" in svg


def test_a_profiled_points_page_shows_its_flame_graph(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from dbarena.serve import app as serve_app

    copy = tmp_path / "profiled.db"
    shutil.copy(PROFILED, copy)
    with TestClient(serve_app.create_app(copy), base_url="http://127.0.0.1:8642") as c:
        page = c.get("/point/1").text
    assert 'id="profile"' in page
    (svg,) = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph".*?</svg>', page, re.S)
    names = _frames(svg)
    assert "PostgresMain" in names or "[postgres]" in names


def _profiled(tmp_path: Path) -> Path:
    copy = tmp_path / "profiled.db"
    shutil.copy(PROFILED, copy)
    return copy


def test_the_html_report_shows_each_labels_flame_graph_and_the_differential(tmp_path: Path) -> None:
    from dbarena.report import assemble
    from dbarena.store.database import Store

    with Store(_profiled(tmp_path), readonly=True) as db:
        report, shown = assemble.build_shown(db, assemble.Selection(labels=("sync", "async"), about=("settings",)))
        drawn = assemble.draw(db, report, "html", profiled=shown.profiled)
    page = assemble.render(report, "html", tmp_path / "r.html", drawn)
    assert '<section id="profiles">' in page and '<a href="#profiles">' in page
    svgs = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg" class="flamegraph[^"]*".*?</svg>', page, re.S)
    assert len(svgs) == 3
    assert 'aria-label="sync at 2 threads: 1 point pooled' in svgs[0]
    assert 'aria-label="async at 2 threads: 1 point pooled' in svgs[1]
    assert "differential" in svgs[2] and "async against sync a transaction" in svgs[2]
    assert "sync at 2 threads: 1 point pooled (point 1), 381 samples at 99 Hz over 6,617 transactions" in page
    titles = re.findall(r"<title>([^<]*)</title>", svgs[2])
    assert any(" us/tx, async " in t and "change " in t for t in titles)
    # Without the report's points, nothing to pool: the report as before --profile.
    with Store(_profiled(tmp_path), readonly=True) as db:
        bare = assemble.draw(db, assemble.build(db, assemble.Selection(labels=("sync", "async"))), "html")
    assert bare.profiles == ""


def test_decide_shows_the_differential_of_the_labels_compared(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from dbarena.serve import app as serve_app

    with TestClient(serve_app.create_app(_profiled(tmp_path)), base_url="http://127.0.0.1:8642") as c:
        page = c.get("/decide?baseline=sync&label=sync&label=async&about=settings").text
    assert '<section id="profiles">' in page
    assert 'class="flamegraph differential"' in page and "async against sync" in page
