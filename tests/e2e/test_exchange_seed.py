"""The exchange seeded (docs/exchange.md, "Seeding the exchange"):

- study A run here with --quick (both engines: the session's run, conftest.seed_a_quick,
  which tests/e2e/test_study_run.py checks as a run), published signed with a key
  ssh-keygen made, verified against its allowed-signers file, imported into a fresh
  store, and `results --json` of that store the same;
- scripts/seed-exchange run as documented on two of the public result repositories
  (tests/fixtures/external-truth: PostgreSQL's pgbench and MariaDB's sysbench), their
  bundles unsigned and said to be imported, and the site of them opened in the system
  Chromium: every row unsigned and marked "imported, not measured by dbarena", the
  engine filter, a result's page with its mark, nothing fetched from elsewhere."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import SEED_A, cli_env
# results, publish, verify and import only read and write stores and files: run in this
# process (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to
# start. scripts/seed-exchange runs as documented, its dbarena a program of its own.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ET = ROOT / "tests" / "fixtures" / "external-truth"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
ID = "seeder@example.org"


@pytest.fixture()
def base():
    made = Path(tempfile.mkdtemp(prefix="dbarena-seed-", dir="/tmp"))
    made.chmod(0o755)  # (the unprivileged postgres user enters its TMPDIR)
    (made / "tmp").mkdir()
    (made / "tmp").chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _results(store: Path, env: dict) -> list[dict]:
    done = dbarena_here("results", "--json", "--store", str(store), env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.timeout(900)  # (with the wait for the session's run, made by test_study_run's worker maybe)
def test_a_seed_a_quick_bundle_signed_verified_imported_gives_the_same_results(base, seed_a_quick):
    env = cli_env(base / "tmp")
    assert seed_a_quick.returncode == 0, seed_a_quick.stderr[-3000:]
    store = seed_a_quick.copy_to(base / "seed.db")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", ID, "-f", str(base / "key")], check=True)
    kind, key = (base / "key.pub").read_text().split()[:2]
    (base / "allowed_signers").write_text(f"{ID} {kind} {key}\n")
    bundle = base / "seed-a-quick.tar"
    done = dbarena_here("publish", "--store", str(store), "--label", "seed-a-quick", "--key", str(base / "key"), "-o",
                        str(bundle), env=env)
    assert done.returncode == 0, done.stderr
    source = _results(store, env)
    # Study A: its ten workloads (six on PostgreSQL, four on MariaDB) at two levels each,
    # every point ok, a run per engine.
    assert {(r["engine"], r["workload"]) for r in source} == {(e, w) for e, ws in SEED_A.items() for w in ws}
    assert all(r["status"] == "ok" and r["study"] == "seed-a" for r in source), source
    assert re.search(rf"2 run\(s\), {len(source)} point\(s\), [\d,]+ bytes, signed with ED25519 key", done.stdout)
    done = dbarena_here("verify", str(bundle), "--allowed-signers", str(base / "allowed_signers"), env=env)
    assert done.returncode == 0, done.stderr
    assert f"verified: signed by {ID} (ED25519 key SHA256:" in done.stdout
    assert f"{len(source)} point(s) of 2 run(s): every figure recomputed" in done.stdout
    assert "imported, not measured" not in done.stdout  # (measured here, by dbarena)
    into = base / "fresh.db"
    done = dbarena_here("import", str(bundle), "--store", str(into), "--allowed-signers", str(base / "allowed_signers"),
                        env=env)
    assert done.returncode == 0, done.stderr
    assert _results(into, env) == source
    # The bundle carries the study it was run from, verbatim.
    members = subprocess.run(["tar", "xOf", str(bundle), "manifest.json"], capture_output=True, check=True).stdout
    (study,) = json.loads(members)["studies"]
    assert study["name"] == "seed-a" and "pgbench-simple-update" in study["text"], study


def _wrapper(base: Path) -> Path:
    """A `dbarena` program for the script: this Python's dbarena (the one under test)."""
    program = base / "bin" / "dbarena"
    program.parent.mkdir()
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dbarena "$@"\n')
    program.chmod(0o755)
    return program


def test_the_site_of_external_truth_bundles_in_chromium(base):
    from playwright.sync_api import sync_playwright

    env = {**cli_env(base / "tmp"), "DBARENA": str(_wrapper(base))}
    out = base / "seeded"
    repositories = ["felipebrgs1-pg13vs18", "hgxl64-mariadb"]
    done = subprocess.run([str(ROOT / "scripts" / "seed-exchange"), str(ET), str(out), *repositories], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    for name in repositories:
        line = next(line for line in done.stdout.split("\n") if line.startswith(f"{out}/bundles/{name}.tar: "))
        assert "verified: UNSIGNED" in line and "imported, not measured by dbarena" in line, line
    # Accepted as unsigned only: whoever asks for a signer gets a refusal.
    (base / "allowed").write_text("")
    refused = dbarena_here("verify", str(out / "bundles" / f"{repositories[0]}.tar"), "--allowed-signers",
                           str(base / "allowed"), env=env)
    assert refused.returncode == 2 and "unsigned (published with --unsigned)" in refused.stderr
    assert re.search(r"wrote .+/index\.html: \d+ result\(s\) from 2 bundle\(s\)\n", done.stdout), done.stdout
    requests, errors, dialogs = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        index = (out / "site" / "index.html").as_uri()
        page.goto(index)
        names = page.eval_on_selector_all("#results tbody tr td:first-child", "els => els.map(e => e.textContent)")
        assert {n.split(":")[0] for n in names} == {f"{r}.tar" for r in repositories}, names
        trust = page.eval_on_selector_all("#results tbody tr td:last-child", "els => els.map(e => e.textContent)")
        assert trust and all("UNSIGNED" in t and "imported, not measured by dbarena" in t for t in trust), trust
        # The labels the authors compared, a row each per workload: pg13, pg18, the MariaDB series.
        assert any(n.endswith(": pg13") for n in names) and any(n.endswith(": mariadb-10.0.1") for n in names)
        # A sweep imported file by file is one result: MariaDB 10.0.1's eleven levels.
        page.goto(index + "#engine=mysql")
        rows = page.locator("#results tbody tr")
        assert rows.count() == 3 and all(n.startswith("hgxl64-mariadb.tar") for n in rows.all_inner_texts())
        title = page.eval_on_selector("#results tbody tr:has-text('mariadb-10.0.1') svg title", "e => e.textContent")
        assert len(title.split(";")) == 11, title
        page.click("#results tbody tr:has-text('mariadb-10.0.1') a")
        assert "/r/" in page.url
        text = page.inner_text("body")
        assert "imported, not measured by dbarena" in text and "UNSIGNED" in text
        # Its decisions, shipped packed (site.packed), unpacked by page.js; the baseline
        # chosen kept in the URL's fragment, the back button showing the one before.
        page.wait_for_selector("div.vs:not([hidden]) table.decision")
        options = page.eval_on_selector_all("#baseline option", "os => os.map(o => o.value)")
        assert len(options) == 2, options
        shown = "div.vs:not([hidden])"
        assert page.locator(shown).count() == 1 and page.get_attribute(shown, "id") == f"vs-{options[0]}"
        page.select_option("#baseline", options[1])
        page.wait_for_function("id => !document.getElementById('vs-' + id).hidden", arg=options[1])
        assert page.url.endswith(f"#vs={options[1]}") and page.locator(shown).count() == 1
        page.go_back()
        page.wait_for_function("id => !document.getElementById('vs-' + id).hidden", arg=options[0])
        assert page.locator(shown).count() == 1
        browser.close()
    assert not errors and not dialogs, (errors, dialogs)
    assert all(u.startswith("file://") for u in requests), [u for u in requests if not u.startswith("file://")]
