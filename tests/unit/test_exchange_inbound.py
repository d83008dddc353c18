"""Every file a command reads from outside goes through one reader (dbarena.inbound): a
FIFO or a device (/dev/zero) is refused in one line before it is read, a file beyond
its bound before it is held. Each command runs in its own process under a memory limit
and a timeout: before, /dev/zero grew each of them to the OOM killer and a FIFO blocked
each for ever."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_env

from dbarena import inbound
from dbarena.exchange import sshsig
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.publish import publish
from dbarena.exchange.verify import read_bundle
from dbarena.store.database import Store

# A process of this many bytes of address space imports dbarena and reads a small file;
# a read of /dev/zero fails within it (MemoryError) rather than the machine's memory.
MEMORY = 1536 * 2**20


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run_limited(args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """dbarena ARGS in a process of at most MEMORY bytes; a timeout fails the test."""
    return subprocess.run([sys.executable, "-m", "dbarena", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, preexec_fn=_limited)


DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"


@pytest.fixture(scope="module")
def demo_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An unsigned bundle of the demo store's PostgreSQL run."""
    base = tmp_path_factory.mktemp("inbound")
    shutil.copyfile(DEMO, base / "demo.db")
    with Store(base / "demo.db") as db:
        made = publish(db, run_ids=[1], signer=None, secrets={})
    (base / "demo.tar").write_bytes(made.data)
    return base / "demo.tar"


def _commands(path: str, tmp: Path, real: Path) -> dict[str, list[str]]:
    """Each command and where it reads `path` (`real`: a bundle, where another file is read)."""
    return {
        "verify": ["verify", path],
        "site": ["site", path, "-o", str(tmp / "site")],
        "run --like": ["run", "--like", path, "--store", str(tmp / "s.db")],
        "verify --allowed-signers": ["verify", str(real), "--allowed-signers", path],
        "import --allowed-signers": ["import", str(real), "--store", str(tmp / "s.db"), "--allowed-signers", path],
        "publish --key": ["publish", "--store", str(tmp / "s.db"), "--label", "x", "--key", path,
                          "-o", str(tmp / "out.tar")],
        "cloud prices --refresh-from": ["cloud", "prices", "--provider", "aws", "--region", "us-east-1",
                                        "--refresh-from", path, "-o", str(tmp / "cat.json")],
        "cloud prices --catalogue": ["cloud", "prices", "--provider", "aws", "--region", "us-east-1",
                                     "--catalogue", path],
    }


@pytest.mark.slow  # a process per command: seconds
@pytest.mark.parametrize("kind", ["a FIFO", "a character device"])
@pytest.mark.parametrize("command", [
    "verify", "site", "run --like", "verify --allowed-signers", "import --allowed-signers", "publish --key",
    "cloud prices --refresh-from", "cloud prices --catalogue"])
def test_a_fifo_or_a_device_is_refused_in_one_line_by_every_command(command: str, kind: str, tmp_path: Path,
                                                                    demo_bundle: Path) -> None:
    if kind == "a FIFO":
        path = tmp_path / "pipe"
        os.mkfifo(path)  # no writer: opening it to read would wait for one
    else:
        path = Path("/dev/zero")  # endless
    args = _commands(str(path), tmp_path, demo_bundle)[command]
    done = run_limited(args, cli_env(tmp_path))
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and lines, done.stderr[-2000:]
    error = [line for line in lines if line.startswith("dbarena: error: ")]
    assert len(error) == 1 and f"{path.name}: {kind}, not a regular file" in error[0], done.stderr[-2000:]


def test_the_reader_bounds_a_regular_file_before_holding_it(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(inbound.Unreadable, match=r"big: 1,001 bytes, more than such a file may be \(1,000 at most\)"):
        inbound.read_bytes(big, 1000)
    assert inbound.read_bytes(big, 1001) == b"x" * 1001
    with pytest.raises(inbound.Unreadable, match="not UTF-8 text"):
        (tmp_path / "bin").write_bytes(b"ok\xff")
        inbound.read_text(tmp_path / "bin", 10)
    with pytest.raises(inbound.Unreadable, match="a directory, not a regular file"):
        inbound.read_bytes(tmp_path, 10)
    with pytest.raises(inbound.Unreadable, match=r"cannot be read \(No such file"):
        inbound.read_bytes(tmp_path / "absent", 10)


def test_the_library_refuses_them_too(tmp_path: Path) -> None:
    """verify's, the key's and the allowed-signers' readers, without the command line."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a character device")):
        with pytest.raises(BundleProblem, match=f"{path}: {kind}, not a regular file"):
            read_bundle(path)
        with pytest.raises(sshsig.SignatureProblem, match=f"--key {path}: {kind}, not a regular file"):
            sshsig.load_key(path, None)
        with pytest.raises(sshsig.SignatureProblem, match=f"--allowed-signers {path}: {kind}, not a regular file"):
            sshsig.principals(path, b"", "dbarena-bundle")
