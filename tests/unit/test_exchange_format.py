"""The bundle's parts without a database: SSH signatures against the real ssh-keygen
(both ways, byte for byte), allowed-signers files as ssh-keygen reads them, keys that
cannot sign, and tar files that are no bundle, each refused in one line."""

from __future__ import annotations

import datetime
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from dbarena.exchange import bundle, sshsig
from dbarena.exchange.bundle import BundleProblem
from dbarena.exchange.verify import read_bundle

NS = bundle.NAMESPACE


def _key(path: Path, passphrase: str = "", kind: str = "ed25519") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", "me@here", "-f", str(path)],
                   check=True)
    return path


def test_a_signature_is_byte_for_byte_ssh_keygens_and_each_checks_the_others(tmp_path):
    key = _key(tmp_path / "k")
    message = tmp_path / "manifest.json"
    message.write_bytes(b'{"a": 1}\n')
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", NS, str(message)], check=True)
    theirs = (tmp_path / "manifest.json.sig").read_bytes()
    signer = sshsig.load_key(key, None)
    mine = sshsig.sign(signer, message.read_bytes(), NS)
    assert mine == theirs
    found = sshsig.verify(theirs, message.read_bytes(), NS)
    assert sshsig.fingerprint(found.public_blob) in subprocess.run(
        ["ssh-keygen", "-lf", str(key) + ".pub"], capture_output=True, text=True, check=True).stdout
    allowed = tmp_path / "allowed"
    allowed.write_text(f"me@here {sshsig.public_line(signer.public_blob)}\n")
    (tmp_path / "mine.sig").write_bytes(mine)
    with message.open("rb") as stdin:
        done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "me@here", "-n", NS,
                               "-s", str(tmp_path / "mine.sig")], stdin=stdin, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # Another message, another namespace: refused.
    with pytest.raises(sshsig.SignatureProblem, match="does not match"):
        sshsig.verify(mine, b'{"a": 2}\n', NS)
    with pytest.raises(sshsig.SignatureProblem, match="namespace 'dbarena-bundle', not 'git'"):
        sshsig.verify(mine, message.read_bytes(), "git")
    for damaged in (mine[:-40] + mine[-30:], b"hello", mine.replace(b"SSH SIGNATURE", b"PGP SIGNATURE")):
        with pytest.raises(sshsig.SignatureProblem):
            sshsig.verify(damaged, message.read_bytes(), NS)



def test_every_byte_of_a_signature_changed_alone_is_refused(tmp_path):
    """Base64 decoding passes over some changes (the unused low bits of the character
    before the padding, a line break turned into a vertical tab): the signature is the one
    member of a bundle neither summed nor signed, so its text must be exactly ssh-keygen's.
    (Seen in CI: a bundle with one bit changed in its signature verified.)"""
    signer = sshsig.load_key(_key(tmp_path / "k"), None)
    message = b'{"a": 1}\n'
    mine = sshsig.sign(signer, message, NS)
    sshsig.verify(mine, message, NS)
    for at in range(len(mine)):
        for bit in (0x01, 0x02, 0x04):
            changed = bytearray(mine)
            changed[at] ^= bit
            with pytest.raises(sshsig.SignatureProblem):
                sshsig.verify(bytes(changed), message, NS)
    for extra in (b" " + mine, mine + b"\n", mine.replace(b"\n", b"\r\n")):
        with pytest.raises(sshsig.SignatureProblem, match="not as ssh-keygen writes it"):
            sshsig.verify(extra, message, NS)

def test_allowed_signers_as_ssh_keygen_reads_them(tmp_path):
    signer = sshsig.load_key(_key(tmp_path / "k"), None)
    line = sshsig.public_line(signer.public_blob)
    other = sshsig.public_line(sshsig.load_key(_key(tmp_path / "o"), None).public_blob)
    allowed = tmp_path / "allowed"
    allowed.write_text("# a comment\n\n"
                       f"alice@example.org,bob@example.org {line} alice's laptop\n"
                       f'carol@example.org namespaces="git,file" {line}\n'
                       f'dave@example.org namespaces="dbarena-*",valid-before="20300101" {line}\n'
                       f'erin@example.org valid-after="20290101Z" {line}\n'
                       f"mallory@example.org {other}\n"
                       f"ca@example.org cert-authority {line}\n")
    at = datetime.datetime(2028, 6, 1, tzinfo=datetime.timezone.utc)
    assert sshsig.principals(allowed, signer.public_blob, NS, now=at) == \
        ["alice@example.org", "bob@example.org", "dave@example.org"]
    later = datetime.datetime(2029, 6, 1, tzinfo=datetime.timezone.utc)
    assert "erin@example.org" in sshsig.principals(allowed, signer.public_blob, NS, now=later)
    allowed.write_text(f"broken {line.split()[0]}\n")
    with pytest.raises(sshsig.UsageError, match=r"allowed:1: not `principals \[options\] keytype key`"):
        sshsig.principals(allowed, signer.public_blob, NS)


def test_keys_that_cannot_sign_are_one_line_each(tmp_path):
    with pytest.raises(sshsig.SignatureProblem, match="an Ed25519 key is needed"):
        sshsig.load_key(_key(tmp_path / "e", kind="ecdsa"), None)
    locked = _key(tmp_path / "l", passphrase="secret words")
    with pytest.raises(sshsig.SignatureProblem, match="is encrypted"):
        sshsig.load_key(locked, None)
    with pytest.raises(sshsig.SignatureProblem, match="wrong passphrase"):
        sshsig.load_key(locked, "other words")
    assert sshsig.load_key(locked, "secret words").public_blob
    (tmp_path / "pub").write_text("ssh-ed25519 AAAA me\n")
    with pytest.raises(sshsig.SignatureProblem, match="not an OpenSSH private key"):
        sshsig.load_key(tmp_path / "pub", None)
    with pytest.raises(sshsig.SignatureProblem, match="No such file"):
        sshsig.load_key(tmp_path / "absent", None)


def _tar(add) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        add(tar)
    return out.getvalue()


def _file(tar: tarfile.TarFile, name: str, data: bytes = b"{}\n") -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _link(tar: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("manifest.json")
    info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    tar.addfile(info)


@pytest.mark.parametrize("make, message", [
    (lambda: b"not a tar at all\n" * 40, "not a tar file that reads"),
    (lambda: _tar(lambda t: None), "an empty tar file"),
    (lambda: _tar(_link), "'manifest.json' is not a plain file"),
    (lambda: _tar(lambda t: _file(t, "../escape.txt")), "no file a bundle holds has such a name"),
    (lambda: _tar(lambda t: _file(t, "/etc/passwd")), "no file a bundle holds has such a name"),
    (lambda: _tar(lambda t: (_file(t, "manifest.json"), _file(t, "manifest.json"))), "manifest.json is in it twice"),
    (lambda: _tar(lambda t: _file(t, "SHA256SUMS")), "no manifest.json in it"),
    (lambda: _tar(lambda t: _file(t, "manifest.json", b"[1]")), "not a JSON object"),
    (lambda: _tar(lambda t: _file(t, "manifest.json", b'{"format": "other"}')), "is not a dbarena bundle's"),
    (lambda: _tar(lambda t: _file(t, "manifest.json", b'{"format": "dbarena-bundle", "format_version": 9}')),
     "format version 9, which this dbarena does not read"),
])
def test_files_that_are_no_bundle_are_refused_in_one_line(make, message, tmp_path):
    path = tmp_path / "b.tar"
    path.write_bytes(make())
    with pytest.raises(BundleProblem) as refused:
        read_bundle(path)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_series_read_back_exactly_and_a_bad_cell_names_its_line():
    rows = [[1.0, 0.1 + 0.2, 3, None], [2.0, 1e-300, 0, 7]]
    data = bundle.series_csv(["second", "tps", "failed", "threads"], rows)
    types = {"second": "real", "tps": "real", "failed": "bigint", "threads": "integer"}
    assert bundle.read_series_csv("s.csv", data, types) == (["second", "tps", "failed", "threads"], rows)
    with pytest.raises(BundleProblem, match=r"s\.csv:3: tps 'x' is not a number"):
        bundle.read_series_csv("s.csv", data.replace(b"1e-300", b"x"), types)
    with pytest.raises(BundleProblem, match=r"s\.csv:1: columns \['evil'\]"):
        bundle.read_series_csv("s.csv", b"evil\n1\n", types)


def test_the_tar_is_the_same_bytes_whatever_the_order_given():
    members = {"points/2/stdout.txt": b"b", "manifest.json": b"{}", "SHA256SUMS": b"", "points/1/stdout.txt": b"a"}
    one = bundle.write_tar(members, 1_700_000_000)
    assert one == bundle.write_tar(dict(reversed(list(members.items()))), 1_700_000_000)
    with tarfile.open(fileobj=io.BytesIO(one)) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == ["manifest.json", "SHA256SUMS", "points/1/stdout.txt", "points/2/stdout.txt"]
    assert {(i.uid, i.gid, i.uname, i.gname, i.mode, i.mtime) for i in infos} == {(0, 0, "", "", 0o644,
                                                                                   1_700_000_000)}


def test_an_empty_password_option_ending_a_string_does_not_refuse_the_bundle():
    """`--pgsql-password=` with no value (an imported sysbench command run without a
    password): as JSON text its closing quote would read as a quoted password to the
    check of every line; written masked, the manifest passes that check."""
    from dbarena.exchange.publish import _masked_json, first_unmasked_line

    command = ["sysbench", "--pgsql-password=", "--db-driver=pgsql", "--pgsql-password=x"]
    assert first_unmasked_line(bundle.json_bytes({"command": command}).decode()) is not None
    kept = _masked_json({"command": command})
    assert kept == {"command": ["sysbench", "--pgsql-password=***", "--db-driver=pgsql", "--pgsql-password=***"]}
    assert first_unmasked_line(bundle.json_bytes(kept).decode()) is None


@pytest.mark.parametrize("options, said", [
    ('namespaces="git', "a quote is not closed"),
    ('namespaces="git,dbarena-bundle', "a quote is not closed"),
    ("namespaces=git", 'are not `name` or `name="value"` separated by commas'),
    ('namespace="dbarena-bundle"', "'namespace' is no allowed-signers option"),
    ('namespaces="git",', "options end with a comma"),
    ('valid-before="2030"', "'2030' is not a time"),
    ('valid-after="20301399"', "'20301399' is not a time"),
    ('cert-authority="x"', "cert-authority takes no value"),
    ('namespaces="a",namespaces="b"', "namespaces is given twice"),
])
def test_an_allowed_signers_line_that_does_not_read_whole_refuses_the_file(options, said, tmp_path):
    """Fail closed: a line read in part may allow a key for more than its author wrote
    (`namespaces="git` with its quote unclosed was read as no namespace at all, so a key
    allowed for git signed bundles). The file is refused in one line naming the line."""
    signer = sshsig.load_key(_key(tmp_path / "k"), None)
    allowed = tmp_path / "allowed"
    allowed.write_text(f"# mine\nalice {options} {sshsig.public_line(signer.public_blob)}\n")
    with pytest.raises(sshsig.SignatureProblem) as refused:
        sshsig.principals(allowed, signer.public_blob, NS)
    assert str(refused.value).startswith(f"{allowed}:2: ") and said in str(refused.value), str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_unterminated_quote_refuses_the_file_at_the_command_line(tmp_path):
    signer = sshsig.load_key(_key(tmp_path / "k"), None)
    allowed = tmp_path / "allowed"
    allowed.write_text(f'alice namespaces="git {sshsig.public_line(signer.public_blob)}\n')
    from conftest import cli_env
    from inprocess import dbarena

    (tmp_path / "b.tar").write_bytes(_tar(lambda t: _file(t, "manifest.json")))
    done = dbarena("verify", str(tmp_path / "b.tar"), "--allowed-signers", str(allowed), env=cli_env(tmp_path))
    assert done.returncode == 2 and done.stderr == (f"dbarena: error: {allowed}:1: a quote is not closed (the line "
                                                    "is refused: what it allows cannot be told)\n"), done.stderr


def _sparse(real_size: int) -> bytes:
    """A tar of one GNU sparse member "manifest.json": a header of a few bytes whose
    sparse map says it is `real_size` bytes of zeros (tarfile expands them on read)."""
    header = bytearray(_tar(lambda t: _file(t, "manifest.json", b""))[:512])
    header[156:157] = b"S"  # GNUTYPE_SPARSE
    header[386:398] = b"%011o\0" % real_size  # one hole-free entry at the end: offset
    header[398:410] = b"%011o\0" % 0  # and its bytes
    header[483:495] = b"%011o\0" % real_size  # the size it unpacks to
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header) + b"\0" * 1024


def test_a_sparse_member_is_refused_before_it_is_expanded(tmp_path):
    """10 KB that read as 1.5 GB of zeros (MemoryError, or the OOM killer) before."""
    path = tmp_path / "b.tar"
    path.write_bytes(_sparse(1536 * 2**20))
    with pytest.raises(BundleProblem, match="'manifest.json' is not a plain file"):
        read_bundle(path)


def test_a_member_larger_than_the_file_is_refused(tmp_path):
    data = bytearray(_tar(lambda t: _file(t, "manifest.json", b"{}\n")))
    data[124:136] = b"%011o\0" % (2**33 - 1)  # a size field beyond the file
    data[148:156] = b" " * 8
    data[148:156] = b"%06o\0 " % sum(data[:512])
    (tmp_path / "b.tar").write_bytes(bytes(data))
    with pytest.raises(BundleProblem) as refused:
        read_bundle(tmp_path / "b.tar")
    assert "more than the file holds after it" in str(refused.value) or "not a tar file" in str(refused.value)


def test_a_manifest_nested_deeper_than_any_bundle_is_refused_before_it_is_parsed(tmp_path):
    deep = b'{"format": "dbarena-bundle", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    (tmp_path / "b.tar").write_bytes(_tar(lambda t: _file(t, "manifest.json", deep)))
    with pytest.raises(BundleProblem, match=r"manifest\.json: JSON nested more than 32 deep"):
        read_bundle(tmp_path / "b.tar")
    # Brackets in strings are text, not depth.
    assert bundle.json_depth(b'{"a": "[[[[[[\\"[[[[", "b": [[1]]}') == 3
