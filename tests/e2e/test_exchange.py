"""Bundles end to end (docs/exchange.md): a real throwaway PostgreSQL run (pgbench and
sysbench, 3 s points) published, verified, imported, and `results --json` of the
import equal to the source's; the same runs published twice give the same bytes; the
documented tar / ssh-keygen / sha256sum commands run as written; every kind of
tampering refused in one line; secrets masked and refused; encrypted keys."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import LIGHT, cli_env, dbarena, error_line
# publish, verify, import and results only read and write files and stores: run in this
# process (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to
# start. The run that makes the store stays a process of its own.
from inprocess import dbarena as dbarena_here

from dbarena.exchange import bundle, sshsig
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.verify import verify
from dbarena.store.encoding import pack, unpack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ID = "alice@example.org"


def _keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", ID, "-f", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def made():
    """A store of one real run, a key, its allowed-signers file and a signed bundle."""
    base = Path(tempfile.mkdtemp(prefix="dbarena-exchange-", dir="/tmp"))
    base.chmod(0o755)  # (the unprivileged postgres user enters its TMPDIR)
    tmp = base / "tmp"
    tmp.mkdir()
    tmp.chmod(0o755)
    env = cli_env(tmp)
    store = base / "src.db"
    done = dbarena("run", "--engine", "postgres", "--workload", "pgbench-select-only,sysbench-read-only",
                   "--threads", "1,2", "--duration", "3", "--scale", "1", *LIGHT, "--label", "src",
                   "--store", str(store), env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    key = _keygen(base / "key")
    (base / "allowed_signers").write_text(f"{ID} {(base / 'key.pub').read_text().split()[0]} "
                                          f"{(base / 'key.pub').read_text().split()[1]}\n")
    out = base / "bundle.tar"
    done = dbarena_here("publish", "--store", str(store), "--label", "src", "--key", str(key), "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"wrote .+bundle\.tar: 1 run\(s\), 4 point\(s\), [\d,]+ bytes, signed with ED25519 key "
                        r"SHA256:\S+\n", done.stdout), done.stdout
    yield {"base": base, "env": env, "store": store, "key": key, "allowed": base / "allowed_signers", "bundle": out}
    shutil.rmtree(base, ignore_errors=True)


def _results(store: Path, env: dict, *extra: str) -> list[dict]:
    done = dbarena_here("results", "--json", "--store", str(store), *extra, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_round_trip_publish_verify_import_gives_the_same_results_json(made, tmp_path):
    env = made["env"]
    done = dbarena_here("verify", str(made["bundle"]), "--allowed-signers", str(made["allowed"]), env=env)
    assert done.returncode == 0, done.stderr
    assert f"verified: signed by {ID} (ED25519 key SHA256:" in done.stdout
    assert "4 point(s) of 1 run(s): every figure recomputed" in done.stdout
    into = tmp_path / "into.db"
    done = dbarena_here("import", str(made["bundle"]), "--store", str(into), "--allowed-signers", str(made["allowed"]),
                        env=env)
    assert done.returncode == 0, done.stderr
    assert "imported 1 run(s), 4 point(s)" in done.stdout
    source = _results(made["store"], env)
    assert len(source) == 4 and _results(into, env) == source  # ids and all: a fresh store, one run
    # Where it came from, with its signer.
    (options,) = [json.loads(o) for (o,) in sqlite3.connect(into).execute("SELECT options FROM runs")]
    assert options["bundle"]["signer"] == [ID] and options["bundle"]["signed"] is True
    assert options["bundle"]["key"] == sshsig.fingerprint(sshsig.load_key(made["key"], None).public_blob)
    # Twice, or into the store it came from: nothing added.
    for store in (into, made["store"]):
        done = dbarena_here("import", str(made["bundle"]), "--store", str(store), env=env)
        assert done.returncode == 0 and "imported 0 run(s), 0 point(s)" in done.stdout, done.stderr


def test_import_beside_other_runs_gives_the_same_records_but_ids(made, tmp_path):
    env = made["env"]
    into = tmp_path / "other.db"
    # Another run there first (an unsigned bundle of the same store under another label
    # would share its UUID: a tool's output imported instead).
    output = tmp_path / "pgbench.txt"
    (blob,) = sqlite3.connect(made["store"]).execute("SELECT stdout FROM raw_outputs WHERE point_id = 1").fetchone()
    output.write_text(unpack("zlib", blob))
    done = dbarena_here("import", str(output), "--label", "theirs", "--tool", "pgbench", "--workload",
                        "pgbench-select-only", "--store", str(into), env=env)
    assert done.returncode == 0, done.stderr
    done = dbarena_here("import", str(made["bundle"]), "--store", str(into), env=env)
    assert done.returncode == 0, done.stderr

    def without_ids(records):
        return [{k: v for k, v in r.items() if k not in ("point_id", "run_id")} for r in records]
    mine = _results(into, env, "--label", "src")
    assert {r["run_id"] for r in mine} == {2}
    assert without_ids(mine) == without_ids(_results(made["store"], env))


def test_publishing_again_gives_the_same_bytes_signed_or_not(made, tmp_path):
    env = made["env"]
    again = tmp_path / "again.tar"
    done = dbarena_here("publish", "--store", str(made["store"]), "--run", "1", "--key", str(made["key"]), "-o",
                        str(again), env=env)
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == made["bundle"].read_bytes()
    plain = [tmp_path / "u1.tar", tmp_path / "u2.tar"]
    for path in plain:
        done = dbarena_here("publish", "--store", str(made["store"]), "--label", "src", "--unsigned", "-o", str(path),
                            env=env)
        assert done.returncode == 0 and "UNSIGNED" in done.stdout, done.stderr
    assert plain[0].read_bytes() == plain[1].read_bytes() != again.read_bytes()
    done = dbarena_here("verify", str(plain[0]), env=env)
    assert done.returncode == 0 and "verified: UNSIGNED" in done.stdout, done.stderr
    done = dbarena_here("verify", str(plain[0]), "--allowed-signers", str(made["allowed"]), env=env)
    assert done.returncode == 2 and "unsigned" in error_line(done.stderr)


def _documented_block() -> str:
    text = (ROOT / "docs" / "exchange.md").read_text()
    (block,) = re.findall(r"```sh\n(.*?)```", text, re.S)
    return block


def test_the_documented_commands_check_a_bundle_as_written(made, tmp_path):
    block = _documented_block()
    assert "ssh-keygen -Y verify" in block and "sha256sum -c" in block and "tar xf bundle.tar" in block

    def run_block(tar: bytes) -> subprocess.CompletedProcess:
        work = Path(tempfile.mkdtemp(dir=tmp_path))
        (work / "bundle.tar").write_bytes(tar)
        shutil.copy(made["allowed"], work / "allowed_signers")
        return subprocess.run(["bash", "-e", "-c", block], cwd=work, capture_output=True, text=True)
    data = made["bundle"].read_bytes()
    done = run_block(data)
    assert done.returncode == 0, done.stderr
    assert f'Good "dbarena-bundle" signature for {ID} with ED25519 key SHA256:' in done.stderr + done.stdout
    assert "SHA256SUMS: the signed manifest's" in done.stdout
    # Each part changed: the commands fail.
    members, _ = bundle.read_tar("b", data)
    manifest = json.loads(members[bundle.MANIFEST])
    mtime = bundle.epoch_of(manifest["date"])
    for member in (bundle.MANIFEST, "points/3/stdout.txt", bundle.SUMS):
        changed = dict(members)
        changed[member] = changed[member].replace(b"1", b"2", 1)
        assert run_block(bundle.write_tar(changed, mtime)).returncode != 0, member


def _rebuild(members: dict[str, bytes], key: Path | None, edit=None) -> bytes:
    """A tampered bundle made consistent again, as its publisher could: files' sha256,
    SHA256SUMS and the signature made anew (`edit` changes the manifest first)."""
    members = dict(members)
    manifest = json.loads(members[bundle.MANIFEST])
    if edit is not None:
        edit(manifest)
    manifest["files"] = {n: bundle.sha256(d) for n, d in members.items() if n.startswith("points/")}
    members[bundle.SUMS] = bundle.sums_text(manifest["files"])
    manifest["sha256sums"] = bundle.sha256(members[bundle.SUMS])
    members[bundle.MANIFEST] = bundle.json_bytes(manifest)
    members.pop(bundle.SIGNATURE, None)
    if key is not None:
        members[bundle.SIGNATURE] = sshsig.sign(sshsig.load_key(key, None), members[bundle.MANIFEST], bundle.NAMESPACE)
    return bundle.write_tar(members, bundle.epoch_of(manifest["date"]))


def _refused(data: bytes, tmp_path: Path, allowed: Path | None = None) -> str:
    path = tmp_path / f"t{len(list(tmp_path.iterdir()))}.tar"
    path.write_bytes(data)
    with pytest.raises(BundleProblem) as refused:
        verify(path, allowed)
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_one_byte_changed_anywhere_is_refused(made, tmp_path):
    data = made["bundle"].read_bytes()
    # Every 101st byte (headers, contents, the signature, the padding and the end):
    # each changed alone, each refused.
    for at in [*range(0, len(data), 101), len(data) - 1]:
        changed = bytearray(data)
        changed[at] ^= 0x01
        path = tmp_path / "flip.tar"
        path.write_bytes(bytes(changed))
        with pytest.raises(BundleProblem):
            verify(path, made["allowed"])
    # From the command line: one line, exit 2.
    changed = bytearray(data)
    changed[len(data) // 2] ^= 0x01
    (tmp_path / "cli.tar").write_bytes(bytes(changed))
    done = dbarena_here("verify", str(tmp_path / "cli.tar"), env=made["env"])
    assert done.returncode == 2 and error_line(done.stderr).startswith(f"dbarena: error: {tmp_path / 'cli.tar'}: ")


def test_each_part_tampered_is_refused_in_one_line(made, tmp_path):
    data = made["bundle"].read_bytes()
    members, _ = bundle.read_tar("b", data)
    key, allowed = made["key"], made["allowed"]
    manifest = json.loads(members[bundle.MANIFEST])
    points = {p["result"]["point_id"]: p for p in manifest["points"]}
    pg = next(i for i, p in points.items() if p["result"]["workload"] == "pgbench-select-only")
    sb = next(i for i, p in points.items() if p["result"]["workload"] == "sysbench-read-only")

    def figure(name, point, value):
        def edit(m):
            next(p for p in m["points"] if p["result"]["point_id"] == point)["result"][name] = value
        return edit

    # A printed figure changed, not signed again: the signature.
    unsigned_edit = dict(members)
    unsigned_edit[bundle.MANIFEST] = members[bundle.MANIFEST].replace(
        f'"tps": {points[pg]["result"]["tps"]!r}'.encode(), b'"tps": 1.5', 1)
    assert unsigned_edit[bundle.MANIFEST] != members[bundle.MANIFEST]
    assert "signature does not match" in _refused(bundle.write_tar(unsigned_edit, bundle.epoch_of(manifest["date"])),
                                                  tmp_path)
    # ... and signed again by its publisher: the figure, its line, and the output's.
    message = _refused(_rebuild(members, key, figure("tps", pg, 1.5)), tmp_path, allowed)
    assert re.search(rf"manifest\.json:\d+: tps of point {pg} is 1\.5, but points/{pg}/stdout\.txt:\d+ gives "
                     rf"{points[pg]['result']['tps']}$", message), message
    # What the output says of the point itself (its threads), changed and signed again.
    message = _refused(_rebuild(members, key, figure("threads", sb, 64)), tmp_path)
    assert re.search(rf"threads of point {sb} is 64, but points/{sb}/stdout\.txt:\d+ gives \d+$", message), message
    # A figure derived from the series: named with the series' file.
    message = _refused(_rebuild(members, key, figure("steady_tps", sb, 1.5)), tmp_path)
    assert re.search(rf"steady_tps of point {sb} is 1\.5, but .+ recomputed from points/{sb}/samples\.csv$",
                     message), message
    # Raw outputs swapped between two points of one workload: their figures disagree.
    other = next(i for i, p in points.items() if p["result"]["workload"] == "pgbench-select-only" and i != pg)
    swapped = dict(members)
    swapped[f"points/{pg}/stdout.txt"], swapped[f"points/{other}/stdout.txt"] = \
        members[f"points/{other}/stdout.txt"], members[f"points/{pg}/stdout.txt"]
    message = _refused(_rebuild(swapped, key), tmp_path)
    assert re.search(rf"of point {pg} is .+, but points/{pg}/stdout\.txt:\d+ gives", message), message
    # A secret inserted (in stderr, which no figure is read from).
    secret = dict(members)
    secret[f"points/{pg}/stderr.txt"] += b"PGPASSWORD=hunter2 pgbench -S\n"
    message = _refused(_rebuild(secret, key), tmp_path)
    assert re.search(rf"points/{pg}/stderr\.txt:\d+: a password is spelled out there$", message), message
    # A file missing; a file added.
    missing = dict(members)
    del missing[f"points/{sb}/samples.csv"]
    assert _refused(bundle.write_tar(missing, bundle.epoch_of(manifest["date"])), tmp_path).endswith(
        f"points/{sb}/samples.csv is missing (manifest.json names it)")
    extra = {**members, f"points/{sb}/extra.txt": b"x\n"}
    assert "points/%d/extra.txt is not named by manifest.json" % sb in _refused(
        bundle.write_tar(extra, bundle.epoch_of(manifest["date"])), tmp_path)
    # A file changed, its sha256 left: named.
    changed = dict(members)
    changed[f"points/{sb}/system_samples.csv"] += b"\n"
    assert f"points/{sb}/system_samples.csv does not match its sha256" in _refused(
        bundle.write_tar(changed, bundle.epoch_of(manifest["date"])), tmp_path)
    # Signed by a key the allowed-signers file does not name.
    stranger = _keygen(tmp_path / "stranger")
    assert "does not allow" in _refused(_rebuild(members, stranger), tmp_path, allowed)
    # The untouched members rebuilt: accepted (the checks above refused the change, not the rebuild).
    path = tmp_path / "same.tar"
    path.write_bytes(_rebuild(members, key))
    assert path.read_bytes() == data and verify(path, allowed).principals == [ID]


def test_secrets_are_masked_and_a_secret_value_refuses_the_bundle(made, tmp_path):
    env = made["env"]
    store = tmp_path / "secret.db"
    shutil.copy(made["store"], store)
    # A password the store should never have held, spelled out in a raw output.
    db = sqlite3.connect(store)
    with db:
        db.execute("UPDATE raw_outputs SET stderr = ? WHERE point_id = 1",
                   (pack("connecting to postgresql://bench:hunter2@db.example/bench\n"),))
    out = tmp_path / "masked.tar"
    done = dbarena_here("publish", "--store", str(store), "--label", "src", "--unsigned", "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    assert b"hunter2" not in out.read_bytes() and b"postgresql://bench:***@db.example" in out.read_bytes()
    assert dbarena_here("verify", str(out), env=env).returncode == 0
    # The value of a secret of the environment found in what would be written: refused, nothing written.
    refused = tmp_path / "refused.tar"
    done = dbarena_here("publish", "--store", str(store), "--label", "src", "--unsigned", "-o", str(refused),
                        env={**env, "BENCH_PASSWORD": "select only"})
    assert done.returncode == 2 and not refused.exists()
    assert re.fullmatch(r"dbarena: error: publish: nothing written: the value of \$BENCH_PASSWORD would be in "
                        r"\S+ \(line \d+\)\n", error_line(done.stderr)), done.stderr


def test_an_encrypted_key_takes_its_passphrase_from_the_environment_never_argv(made, tmp_path):
    env = made["env"]
    key = _keygen(tmp_path / "locked", "correct horse")
    out = tmp_path / "locked.tar"
    done = dbarena_here("publish", "--store", str(made["store"]), "--run", "1", "--key", str(key), "-o", str(out),
                        env=env)
    assert done.returncode == 2 and "is encrypted: set DBARENA_KEY_PASSPHRASE" in error_line(done.stderr)
    done = dbarena_here("publish", "--store", str(made["store"]), "--run", "1", "--key", str(key), "-o", str(out),
                        env={**env, "DBARENA_KEY_PASSPHRASE": "wrong horse"})
    assert done.returncode == 2 and "wrong passphrase" in error_line(done.stderr) and not out.exists()
    done = dbarena_here("publish", "--store", str(made["store"]), "--run", "1", "--key", str(key), "-o", str(out),
                        env={**env, "DBARENA_KEY_PASSPHRASE": "correct horse"})
    assert done.returncode == 0, done.stderr
    assert b"correct horse" not in out.read_bytes()
    assert dbarena_here("verify", str(out), env=env).returncode == 0
