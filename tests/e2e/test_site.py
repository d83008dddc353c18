"""`dbarena site` and `dbarena run --like` end to end (docs/exchange.md): bundles of real
throwaway PostgreSQL runs (one signed, one unsigned with a price and a hostile label, one
tampered), the site opened in the system Chromium (Playwright): filters in the URL, the
back button, the per-core and per-price views, the tampered bundle refused and never
shown, nothing fetched from anywhere, no markup from a bundle acting; then a bundle made
here run again with `run --like --quick` and decided against."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import cli_env, dbarena
# publish and site only read and write files: run in this process (tests/inprocess.py),
# not as `python -m dbarena`, half a second of CPU each to start. The runs, and the
# documented commands (a shell's, its glob expanded), stay processes of their own.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def made():
    base = Path(tempfile.mkdtemp(prefix="dbarena-site-", dir="/tmp"))
    base.chmod(0o755)  # (the unprivileged postgres user enters its TMPDIR)
    tmp = base / "tmp"
    tmp.mkdir()
    tmp.chmod(0o755)
    env = cli_env(tmp)
    store = base / "src.db"
    for label, extra in (("box-a", ()), (EVIL, ("--price-per-hour", "0.5"))):
        done = dbarena("run", "--engine", "postgres", "--workload", "pgbench-select-only", "--threads", "1,2",
                       "--duration", "3", "--scale", "1", "--label", label, "--store", str(store), *extra,
                       env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice@example.org", "-f",
                    str(base / "key")], check=True)
    a, b = base / "a.tar", base / "b.tar"
    for args, out in ((("--label", "box-a", "--key", str(base / "key")), a), (("--label", EVIL, "--unsigned"), b)):
        done = dbarena_here("publish", "--store", str(store), *args, "-o", str(out), env=env)
        assert done.returncode == 0, done.stderr
    data = bytearray(b.read_bytes())
    at = data.index(b'"tps": ') + 7
    data[at:at + 1] = b"8" if data[at:at + 1] != b"8" else b"7"  # a figure changed
    (base / "tampered.tar").write_bytes(bytes(data))
    yield {"base": base, "env": env, "a": a, "b": b, "tampered": base / "tampered.tar"}
    shutil.rmtree(base, ignore_errors=True)


def test_site_in_chromium_filters_back_views_refused(made, tmp_path):
    from playwright.sync_api import sync_playwright

    out = tmp_path / "site"
    done = dbarena_here("site", str(made["a"]), str(made["b"]), str(made["tampered"]), "-o", str(out), env=made["env"])
    assert done.returncode == 2, done.stderr
    assert "wrote " in done.stdout and "2 result(s) from 2 bundle(s), 1 refused" in done.stdout
    (refusal,) = done.stderr.strip().split("\n")
    assert re.fullmatch(r"dbarena: error: refused tampered\.tar: manifest\.json:\d+: tps of point \d+ is .+, but "
                        r"points/\d+/stdout\.txt:\d+ gives .+", refusal), refusal
    requests, dialogs, errors = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        index = (out / "index.html").as_uri()
        page.goto(index)
        rows = page.eval_on_selector_all("#results tbody tr", "els => els.map(e => e.textContent)")
        assert len(rows) == 2
        assert any(f"b.tar: {EVIL}" in r for r in rows)  # shown as text, never as markup
        assert page.locator("#results img").count() == 0
        trust = page.eval_on_selector_all("#results tbody tr td:last-child", "els => els.map(e => e.textContent)")
        assert any("UNSIGNED" in t for t in trust) and any("signed by key SHA256:" in t for t in trust)
        assert "tampered.tar: manifest.json:" in page.inner_text("#refused")
        assert "tampered" not in " ".join(rows)
        # Filters in the URL: a link shows the same rows.
        page.goto(index + "#managed=managed")
        assert page.locator("#results tbody tr").count() == 0
        assert page.inner_text("#shown").startswith("0 of 2")
        page.goto(index + "#workload=pgbench-select-only")
        assert page.locator("#results tbody tr").count() == 2
        # Choosing a filter puts it in the URL; the back button takes it back.
        page.select_option("select[name=managed]", "self-run")
        assert "managed=self-run" in page.url and page.locator("#results tbody tr").count() == 2
        page.select_option("select[name=view]", "price")
        assert "view=price" in page.url
        assert page.inner_text("#figure-head") == "peak per price unit an hour"
        figures = page.eval_on_selector_all("#results tbody td.figure", "els => els.map(e => e.textContent)")
        assert figures[1] == "no price" and re.match(r"[\d,.]+ at \d threads", figures[0]), figures
        page.go_back()
        assert "view=price" not in page.url and "managed=self-run" in page.url
        assert page.inner_text("#figure-head") == "peak"
        page.go_back()
        assert "managed" not in page.url and "workload=pgbench-select-only" in page.url
        page.goto(index + "#view=core")
        assert page.inner_text("#figure-head") == "peak per core"
        core = page.eval_on_selector_all("#results tbody td.figure", "els => els.map(e => e.textContent)")
        assert all(re.match(r"[\d,.]+ at \d threads", c) for c in core), core
        # A result's page: its decision against the other as baseline, and how to reproduce it.
        page.click(f"#results tbody tr:has-text('box-a') a")
        assert "/r/" in page.url
        page.wait_for_selector("div.vs:not([hidden]) table.decision")  # (unpacked by page.js)
        # Its baseline, the hostile label, put into the page as markup escaped when drawn.
        assert EVIL in page.inner_text("#baseline") and EVIL in page.inner_text("div.vs:not([hidden])")
        assert page.locator("div.vs:not([hidden]) table.decision").count() == 1
        assert "Against any of the 1 other result(s) of its engine and workload" in page.inner_text("body")
        assert "dbarena run --like bundles/" in page.inner_text("pre")
        # Its sweep drawn as serve draws one (serve's charts.js): axes named with their
        # units, a tick per level, the figure's scale, a point per level with its figure.
        chart = page.locator("div.chart svg.drawn")
        assert chart.count() == 1 and page.locator("div.chart svg.drawn polyline.line").count() == 1
        axes = page.locator("div.chart svg.drawn g.axes text").evaluate_all("ts => ts.map(t => t.textContent)")
        assert "threads" in axes and "TPS (steady state)" in axes, axes
        ticks = page.locator("div.chart svg.drawn g.axes text.xtick").evaluate_all("ts => ts.map(t => t.textContent)")
        assert ticks == ["1", "2"], ticks
        assert len([t for t in axes if re.fullmatch(r"[\d,.]+k?", t)]) >= 4  # the y axis' scale, and the levels
        tips = page.locator("div.chart svg.drawn circle title").evaluate_all("ts => ts.map(t => t.textContent)")
        assert len(tips) == 2 and all(re.fullmatch(r"a.tar: box-a, [12] threads: [\d,.]+ TPS", t) for t in tips), tips
        assert page.locator("div.chart ul.legend").inner_text() == "a.tar: box-a"
        assert chart.bounding_box()["width"] > 300
        page.screenshot(path=str(tmp_path / "result.png"), full_page=True)
        browser.close()
    assert not dialogs and not errors, (dialogs, errors)
    assert all(u.startswith("file://") for u in requests), [u for u in requests if not u.startswith("file://")]
    bundles = sorted((out / "bundles").iterdir())
    assert len(bundles) == 2 and {b.read_bytes() for b in bundles} == {made["a"].read_bytes(), made["b"].read_bytes()}


def test_run_like_a_bundle_made_here_quick(made, tmp_path):
    store = tmp_path / "like.db"
    done = dbarena("run", "--like", str(made["a"]), "--quick", "--store", str(store), env=made["env"], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stderr.split("\n")
    first = next(i for i, line in enumerate(said) if line.startswith("run: "))
    # What cannot be the same here is said before the run's first line (here: nothing).
    assert said[0].startswith("the same here as in the bundle: cores, hardware threads, memory"), said[:3]
    assert first > 0
    assert f"imported {made['a']} as the baseline: 1 run(s), 2 point(s) added" in done.stderr
    assert re.search(r"^decision, here against the bundle \(\"box-a\"\) as baseline:$", done.stdout, re.M), done.stdout
    assert re.search(r"^  postgres pgbench-select-only: [+-]\d+\.\d %", done.stdout, re.M), done.stdout
    # One session here against the bundle's one (issue 52): never a verdict, and why.
    decided = " ".join(done.stdout.split())
    assert " faster than " not in decided and " slower than " not in decided
    assert "one session a side" in decided or "ran under different interference" in decided, done.stdout
    assert "box-a-here" in done.stdout
    # The bundle's study, its label aside: the same workload and levels.
    assert re.search(r"box-a-here\s+postgres\s+pgbench-select-only\s+2\s", done.stdout), done.stdout


def test_run_like_a_tampered_bundle_is_refused_before_anything_runs(made, tmp_path):
    store = tmp_path / "none.db"
    done = dbarena("run", "--like", str(made["tampered"]), "--quick", "--store", str(store), env=made["env"])
    assert done.returncode == 2
    assert re.fullmatch(r"dbarena: error: --like: .*tampered\.tar: manifest\.json:\d+: tps of point .*\n",
                        done.stderr), done.stderr
    assert not store.exists()


def test_results_repository_commands_as_documented(made, tmp_path):
    """docs/exchange.md's CI commands, run as written in a results repository."""
    import os

    text = (Path(__file__).resolve().parents[2] / "docs" / "exchange.md").read_text()
    block = text.split("<!-- results-ci:start -->")[1].split("<!-- results-ci:end -->")[0]
    commands = [line for line in block.split("\n") if line.startswith("dbarena ")]
    assert len(commands) == 2
    repo = tmp_path / "results"
    (repo / "bundles").mkdir(parents=True)
    shutil.copy(made["a"], repo / "bundles" / "a.tar")
    pub = (made["base"] / "key.pub").read_text().split()
    (repo / "allowed_signers").write_text(f"alice@example.org {pub[0]} {pub[1]}\n")
    env = {**made["env"], "PATH": f"{Path(os.sys.executable).parent}:{made['env']['PATH']}"}
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stderr)
    assert (repo / "public" / "index.html").is_file()
    # A pull request adding an unsigned (or tampered) bundle fails both.
    shutil.copy(made["b"], repo / "bundles" / "b.tar")
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True)
        assert done.returncode == 2 and "b.tar: unsigned" in done.stderr, (command, done.stderr)
