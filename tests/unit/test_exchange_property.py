"""Random bundles (hypothesis): tar members of every type and size, sparse members,
manifests with random values, labels and nesting, bytes cut or changed, each one made
consistent again (sha256 and SHA256SUMS) or not. Every command that reads bundles
(verify, import, site, and run --like up to before it measures) answers each in one
line, `dbarena: error: ...` or its verified line, within a memory bound (the address
space this process has plus 1 GiB, RLIMIT_AS set around each command: a sparse member
expanded to 1.5 GB of zeros, a read of /dev/zero, would end in MemoryError), never a
traceback."""

from __future__ import annotations

import copy
import io
import json
import resource
import shutil
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import cli_env
from inprocess import dbarena

from dbarena.errors import UsageError
from dbarena.exchange import bundle
from dbarena.exchange import like as like_mod
from dbarena.exchange.publish import publish
from dbarena.store.database import Store
from dbarena.study.flags import Overrides

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"
HEADROOM = 2**30


class Members(dict[str, bytes]):
    """The demo bundle's members (its repr short: hypothesis prints a failing example's)."""

    def __repr__(self) -> str:
        return f"<the demo bundle's {len(self)} members>"


@pytest.fixture(scope="module")
def members(tmp_path_factory: pytest.TempPathFactory) -> Members:
    base = tmp_path_factory.mktemp("property")
    shutil.copyfile(DEMO, base / "demo.db")
    with Store(base / "demo.db") as db:
        made = publish(db, run_ids=[1], signer=None, secrets={})
    return Members(bundle.read_tar("demo", made.data)[0])


def _address_space() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize")


@contextmanager
def bounded_memory() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + HEADROOM, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# ---------------------------------------------------------------- what is generated

TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["\x1b[2J", "a\nb", "\u202eevil", "\u200f", "\u2028", "\u061c", "x" * 100_000, "", " "])
JSONS = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                     max_leaves=12)
NAMES = st.sampled_from([bundle.MANIFEST, bundle.SIGNATURE, bundle.SUMS, "points/1/stdout.txt",
                         "points/99/samples.csv", "points/1/latency-histogram.json", "points/1/server-series.json",
                         "../x", "points/1/../../etc/passwd", "a" * 300])


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def manifests(draw: st.DrawFn, original: dict[str, Any]) -> dict[str, Any]:
    manifest = copy.deepcopy(original)
    for _ in range(draw(st.integers(0, 4))):
        what = draw(st.sampled_from(["label", "status", "field", "deep", "point"]))
        run = manifest["runs"][0]
        if what == "label":
            run["label"] = draw(TEXT)
            for point in manifest["points"]:
                point["result"]["label"] = run["label"]
        elif what == "status":
            run["status"] = draw(st.sampled_from(["running", "interrupted", "finished", "failed", "imported"]) | TEXT)
        elif what == "deep":
            # (A "field" draw before this one may have made the options any JSON value: a
            # value that is no object is replaced by one, or the draw itself would fail.)
            options = run["options"] if isinstance(run["options"], dict) else {}
            options["x"] = _deep(draw(st.integers(1, 400)))  # (deeper than any bundle: 32)
            run["options"] = options
        elif what == "point":
            point = draw(st.sampled_from(manifest["points"]))
            key = draw(st.sampled_from(sorted(point["result"])))
            point["result"][key] = draw(JSONS)
        else:
            key = draw(st.sampled_from(sorted(run)))
            run[key] = draw(JSONS)
    return manifest


def _member(name: str, data: bytes, kind: bytes = tarfile.REGTYPE, size: int | None = None) -> bytes:
    info = tarfile.TarInfo(name[:99])
    info.size, info.type, info.mode = len(data), kind, 0o644
    if kind == tarfile.SYMTYPE:
        info.linkname, info.size = "/dev/zero", 0
    header = bytearray(info.tobuf(format=tarfile.USTAR_FORMAT))
    if kind == tarfile.GNUTYPE_SPARSE:  # a sparse map that expands a few bytes to `size`
        real = size or 1536 * 2**20
        header[386:398] = b"%011o\0" % real
        header[398:410] = b"%011o\0" % 0
        header[483:495] = b"%011o\0" % real
    elif size is not None:  # a size the header declares, whatever the data
        header[124:136] = b"%011o\0" % size
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    padded = data + b"\0" * (-len(data) % 512) if kind not in (tarfile.SYMTYPE, tarfile.DIRTYPE) else b""
    return bytes(header) + padded


class Blob(bytes):
    """A bundle's bytes, its repr short (hypothesis prints a failing example's draws)."""

    def __repr__(self) -> str:
        return f"<a bundle of {len(self):,} bytes, sha256 {bundle.sha256(self)[:12]}>"


@st.composite
def bundles(draw: st.DrawFn, members: dict[str, bytes]) -> bytes:
    original = json.loads(members[bundle.MANIFEST])
    manifest = draw(manifests(original))
    chosen = dict(members)
    chosen[bundle.MANIFEST] = bundle.json_bytes(manifest)
    if draw(st.booleans()):  # consistent again: sha256 and SHA256SUMS of what it holds
        manifest["files"] = {n: bundle.sha256(d) for n, d in chosen.items() if n.startswith("points/")}
        chosen[bundle.SUMS] = bundle.sums_text(manifest["files"])
        manifest["sha256sums"] = bundle.sha256(chosen[bundle.SUMS])
        chosen[bundle.MANIFEST] = bundle.json_bytes(manifest)
    data = bundle.write_tar(chosen, bundle.epoch_of(str(manifest.get("date"))))
    extra = b""
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from([tarfile.REGTYPE, tarfile.GNUTYPE_SPARSE, tarfile.SYMTYPE, tarfile.DIRTYPE,
                                     tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.LNKTYPE, b"x"]))
        size = draw(st.none() | st.integers(0, 2**33 - 1))
        extra += _member(draw(NAMES), draw(st.binary(max_size=600)), kind, size)
    at = draw(st.sampled_from(["start", "end"]))
    body = data[:-1024]  # (before the two zero blocks that end a tar)
    data = (extra + body if at == "start" else body + extra) + b"\0" * 1024
    if draw(st.booleans()):  # bytes changed or the file cut
        offset = draw(st.integers(0, len(data) - 1))
        data = data[:offset] + draw(st.binary(max_size=64)) + (data[offset + 1:] if draw(st.booleans()) else b"")
    return Blob(data)


# ---------------------------------------------------------------- the commands


def _one_line(done: Any, what: str) -> None:
    assert "Traceback" not in done.stderr, f"{what}: {done.stderr[-6000:]}"
    errors = [line for line in done.stderr.splitlines() if line.startswith("dbarena: error: ")]
    if done.returncode == 0:
        assert not errors, f"{what}: {done.stderr[-2000:]}"
    else:
        assert done.returncode == 2 and errors, f"{what}: exit {done.returncode}: {done.stderr[-2000:]}"
        for line in errors:
            assert "\x1b" not in line and "\u202e" not in line, line


@pytest.mark.slow  # many bundles, each read by four commands: a minute
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_command_that_reads_bundles_answers_random_ones_in_one_line(data: st.DataObject,
                                                                         members: dict[str, bytes],
                                                                         tmp_path_factory: pytest.TempPathFactory
                                                                         ) -> None:
    tmp = tmp_path_factory.mktemp("b")
    path = tmp / "b.tar"
    path.write_bytes(data.draw(bundles(members)))
    env = cli_env(tmp)
    with bounded_memory():
        _one_line(dbarena("verify", str(path), env=env), "verify")
        _one_line(dbarena("import", str(path), "--store", str(tmp / "s.db"), env=env), "import")
        done = dbarena("site", str(path), "-o", str(tmp / "site"), "--jobs", "1", env=env)
        _one_line(done, "site")
        assert done.stdout.startswith(f"wrote {tmp / 'site'}/index.html"), done.stdout
        # run --like, up to before it measures: the bundle read and verified, its study
        # rebuilt with no flags given (what `run --like` does before anything starts).
        try:
            like_mod.read(path).study(Overrides())
        except UsageError as exc:
            assert "\n" not in " ".join(str(exc).split())
