"""SSH signatures (OpenSSH's PROTOCOL.sshsig: what `ssh-keygen -Y sign` makes and
`ssh-keygen -Y verify` checks, git's `gpg.format ssh` too) with Ed25519 keys, made and
checked here with the `cryptography` library, so that a private key is read from its
file by this process and never handed to another program on a command line.

The signed blob (PROTOCOL.sshsig, "Signed Data"): the magic "SSHSIG", then as SSH
strings (a uint32 length, then the bytes) the namespace, an empty reserved field, the
hash algorithm ("sha512") and the hash of the message. The signature (armored between
BEGIN/END SSH SIGNATURE lines, base64 in lines of 70 characters as ssh-keygen writes
them): the magic, version 1, the public key, the namespace, the reserved field, the
hash algorithm and the signature ("ssh-ed25519" and its 64 bytes). Ed25519 signs
deterministically (RFC 8032 5.1.6): one key and one message give the same signature
every time, which keeps a bundle byte for byte the same when published again.

Whose key signed is told by an allowed-signers file as ssh-keygen reads it
(ssh-keygen(1), ALLOWED SIGNERS): a line a key, `principals [options] keytype key`,
principals separated by commas and matched as patterns (`*`, `?`), the options
`namespaces="..."`, `valid-after=` and `valid-before=` honoured; `cert-authority` lines
(keys that sign certificates, which a bundle's signature never is) are passed over.
"""

from __future__ import annotations

import base64
import datetime
import fnmatch
import hashlib
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_ssh_private_key

from dbarena import inbound
from dbarena.errors import UsageError
from dbarena.limits import MAX_ALLOWED_SIGNERS_BYTES, MAX_KEY_BYTES

__all__ = ["SignatureProblem", "Signer", "Signature", "load_key", "sign", "parse", "verify", "fingerprint",
           "principals", "allowed_signers", "AllowedSigner"]

MAGIC = b"SSHSIG"
VERSION = 1
HASH = "sha512"
KEY_TYPE = "ssh-ed25519"
BEGIN = "-----BEGIN SSH SIGNATURE-----"
END = "-----END SSH SIGNATURE-----"


class SignatureProblem(UsageError):
    """A signature that does not verify, or a key that cannot sign: one line."""


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class _Reader:
    """SSH wire-format fields read one after the other; a short or long blob is a
    SignatureProblem, never an IndexError."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def raw(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise SignatureProblem("the signature is cut short")
        out, self.at = self.data[self.at:self.at + n], self.at + n
        return out

    def uint32(self) -> int:
        value: int = struct.unpack(">I", self.raw(4))[0]
        return value

    def string(self) -> bytes:
        return self.raw(self.uint32())

    def end(self) -> None:
        if self.at != len(self.data):
            raise SignatureProblem("the signature has bytes after its end")


@dataclass(frozen=True)
class Signer:
    """A private Ed25519 key read from its OpenSSH file, and its public half as SSH writes it."""

    key: Ed25519PrivateKey

    @property
    def public_blob(self) -> bytes:
        raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return _string(KEY_TYPE.encode()) + _string(raw)


def load_key(path: Path, passphrase: str | None) -> Signer:
    """The OpenSSH Ed25519 private key in `path` (what `ssh-keygen -t ed25519` writes),
    decrypted with `passphrase` where it is encrypted. Every problem is one line."""
    try:
        data = inbound.read_bytes(path, MAX_KEY_BYTES, "--key")
    except inbound.Unreadable as exc:
        raise SignatureProblem(str(exc)) from None
    if b"BEGIN OPENSSH PRIVATE KEY" not in data:
        raise SignatureProblem(f"--key {path}: not an OpenSSH private key (make one with ssh-keygen -t ed25519)")
    try:
        key = load_ssh_private_key(data, passphrase.encode() if passphrase is not None else None)
    except TypeError:  # cryptography says so for an encrypted key without a passphrase, and the reverse
        if passphrase is None:
            raise SignatureProblem(f"--key {path} is encrypted: give its passphrase in DBARENA_KEY_PASSPHRASE "
                                   "or at the prompt") from None
        key = load_ssh_private_key(data, None)
    except UnsupportedAlgorithm as exc:
        raise SignatureProblem(f"--key {path}: {exc} (encrypted keys need the bcrypt package)") from None
    except ValueError:
        raise SignatureProblem(f"--key {path}: cannot decrypt it: wrong passphrase, or a damaged key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureProblem(f"--key {path}: an Ed25519 key is needed (ssh-keygen -t ed25519), not "
                               f"{type(key).__name__.removeprefix('_').replace('PrivateKey', '')}")
    return Signer(key)


def _signed_data(message: bytes, namespace: str) -> bytes:
    return (MAGIC + _string(namespace.encode()) + _string(b"") + _string(HASH.encode())
            + _string(hashlib.sha512(message).digest()))


def sign(signer: Signer, message: bytes, namespace: str) -> bytes:
    """The armored SSH signature of `message` in `namespace`, byte for byte as
    `ssh-keygen -Y sign` writes it for the same key."""
    signature = signer.key.sign(_signed_data(message, namespace))
    blob = (MAGIC + struct.pack(">I", VERSION) + _string(signer.public_blob) + _string(namespace.encode())
            + _string(b"") + _string(HASH.encode()) + _string(_string(KEY_TYPE.encode()) + _string(signature)))
    return armor(blob)


def armor(blob: bytes) -> bytes:
    """A signature's wire blob as `ssh-keygen -Y sign` writes it: base64 in lines of 70."""
    text = base64.b64encode(blob).decode()
    return "\n".join([BEGIN, *(text[i:i + 70] for i in range(0, len(text), 70)), END, ""]).encode()


@dataclass(frozen=True)
class Signature:
    """An SSH signature read: whose public key (its wire blob) and over what namespace."""

    public_blob: bytes
    namespace: str
    hash: str
    signature: bytes


def parse(armored: bytes) -> Signature:
    """An armored SSH signature read (not yet checked against any message)."""
    text = armored.decode("ascii", "replace").strip()
    if not text.startswith(BEGIN) or not text.endswith(END):
        raise SignatureProblem("not an SSH signature (no BEGIN/END SSH SIGNATURE lines)")
    body = "".join(text[len(BEGIN):-len(END)].split())
    try:
        blob = base64.b64decode(body, validate=True)
    except ValueError:
        raise SignatureProblem("the signature is not base64") from None
    # Exactly the text ssh-keygen writes of that blob: base64 decoding passes over some
    # changes (the unused bits of the last character, a line break turned into another
    # space), and a file whose every byte is signed or summed but this one's would let a
    # changed byte pass unnoticed.
    if armor(blob) != armored:
        raise SignatureProblem("the signature's text is not as ssh-keygen writes it (it was changed)")
    r = _Reader(blob)
    if r.raw(6) != MAGIC or r.uint32() != VERSION:
        raise SignatureProblem("not an SSH signature of version 1")
    public, namespace, _reserved, hash_name, sig = r.string(), r.string(), r.string(), r.string(), r.string()
    r.end()
    try:
        return Signature(public, namespace.decode(), hash_name.decode(), sig)
    except UnicodeDecodeError:
        raise SignatureProblem("the signature's namespace is not text") from None


def _ed25519(public_blob: bytes) -> Ed25519PublicKey:
    r = _Reader(public_blob)
    if r.string() != KEY_TYPE.encode():
        raise SignatureProblem("the signature is not made by an Ed25519 key")
    raw = r.string()
    r.end()
    if len(raw) != 32:
        raise SignatureProblem("the signature's Ed25519 key is not 32 bytes")
    return Ed25519PublicKey.from_public_bytes(raw)


def verify(armored: bytes, message: bytes, namespace: str) -> Signature:
    """The signature, checked over `message` in `namespace` with the key it carries
    (whose key that is, principals() says). SignatureProblem where it does not hold."""
    found = parse(armored)
    if found.namespace != namespace:
        raise SignatureProblem(f"the signature is for namespace {found.namespace!r}, not {namespace!r}")
    if found.hash not in ("sha512", "sha256"):
        raise SignatureProblem(f"the signature's hash {found.hash!r} is not sha512 or sha256")
    key = _ed25519(found.public_blob)
    r = _Reader(found.signature)
    if r.string() != KEY_TYPE.encode():
        raise SignatureProblem("the signature is not an Ed25519 signature")
    sig = r.string()
    r.end()
    digest = (hashlib.sha512 if found.hash == "sha512" else hashlib.sha256)(message).digest()
    data = (MAGIC + _string(namespace.encode()) + _string(b"") + _string(found.hash.encode()) + _string(digest))
    try:
        key.verify(sig, data)
    except InvalidSignature:
        raise SignatureProblem("the signature does not match manifest.json (it was changed after signing, "
                               "or signed by another key than the one it names)") from None
    return found


def fingerprint(public_blob: bytes) -> str:
    """The key's fingerprint as `ssh-keygen -l` prints it: SHA256: and unpadded base64."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(public_blob).digest()).decode().rstrip("=")


def public_line(public_blob: bytes) -> str:
    """The public key as an authorized_keys or allowed_signers line ends: type and base64."""
    return f"{KEY_TYPE} {base64.b64encode(public_blob).decode()}"


# The options an allowed-signers line may have (ssh-keygen(1), ALLOWED SIGNERS): any
# other is refused, as ssh-keygen refuses it, rather than passed over (an option this
# reader does not know may narrow what the line allows).
_OPTIONS = frozenset({"cert-authority", "namespaces", "valid-after", "valid-before"})
# A key type as the field after the principals (or the options) names it.
_KEY_TYPE = re.compile(r"(?:ssh-|ecdsa-|sk-)[A-Za-z0-9@.+-]+")


@dataclass(frozen=True)
class AllowedSigner:
    """One line of an allowed-signers file, read."""

    number: int  # its line in the file
    principals: tuple[str, ...]
    options: dict[str, str | None]  # (an option without a value: None)
    key_type: str
    key: str  # base64, as the line writes it


def _fields(line: str, where: str) -> list[str]:
    """A line's fields, split at blanks outside double quotes (a quoted value may hold
    blanks); an unterminated quote refuses the line. The quotes are kept: the options'
    reader takes them off."""
    fields: list[str] = []
    current: list[str] = []
    quoted = False
    for c in line:
        if c == '"':
            quoted = not quoted
        if c in " \t" and not quoted:
            if current:
                fields.append("".join(current))
                current = []
            continue
        current.append(c)
    if quoted:
        raise SignatureProblem(f"{where}: a quote is not closed (the line is refused: what it allows cannot be told)")
    if current:
        fields.append("".join(current))
    return fields


def _options(text: str, where: str) -> dict[str, str | None]:
    """An options field, `name` or `name="value"` separated by commas (a value may hold
    commas); anything else, or an option ssh-keygen does not know, refuses the line."""
    out: dict[str, str | None] = {}
    at = 0
    while at < len(text):
        m = re.compile(r'([A-Za-z-]+)(?:="([^"]*)")?(,|$)').match(text, at)
        if m is None:
            raise SignatureProblem(f"{where}: options {text[:80]!r} are not `name` or `name=\"value\"` separated "
                                   "by commas")
        name = m.group(1).lower()
        if name not in _OPTIONS:
            raise SignatureProblem(f"{where}: {name!r} is no allowed-signers option (cert-authority, namespaces, "
                             "valid-after, valid-before)")
        if (m.group(2) is None) != (name == "cert-authority"):
            raise SignatureProblem(f"{where}: {name} " + ("takes no value" if name == "cert-authority"
                                                    else 'needs a value: name="value"'))
        if name in out:
            raise SignatureProblem(f"{where}: {name} is given twice")
        out[name] = m.group(2)
        at = m.end()
        if m.group(3) == "," and at == len(text):
            raise SignatureProblem(f"{where}: options end with a comma")
    return out


def allowed_signers(path: Path) -> list[AllowedSigner]:
    """An allowed-signers file read as ssh-keygen reads it, every line checked: a line
    that cannot be read whole (an unterminated quote, an unknown option, a time that is
    no time, no key) refuses the file in one line naming it, rather than being read in
    part: a line read in part may allow a key for more than its author wrote (a
    `namespaces="git` whose quote is not closed was read as no namespace restriction at
    all, so a key allowed for git signed bundles)."""
    try:
        data = inbound.read_bytes(path, MAX_ALLOWED_SIGNERS_BYTES, "--allowed-signers")
    except inbound.Unreadable as exc:
        raise SignatureProblem(str(exc)) from None
    found = []
    for number, raw in enumerate(data.decode(errors="replace").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        fields = _fields(line, where)
        options: dict[str, str | None] = {}
        if len(fields) >= 2 and not _KEY_TYPE.fullmatch(fields[1]):
            options = _options(fields[1], where)
            del fields[1]
        if len(fields) < 3 or not _KEY_TYPE.fullmatch(fields[1]):
            raise SignatureProblem(f"{where}: not `principals [options] keytype key`")
        names = tuple(fields[0].strip('"').split(","))
        if not all(names):
            raise SignatureProblem(f"{where}: an empty principal (principals are separated by single commas)")
        for name in ("valid-after", "valid-before"):
            if (value := options.get(name)) is not None:
                _time(value, path, number)  # (a time that is no time refuses the file now, not when matched)
        found.append(AllowedSigner(number, names, options, fields[1], fields[2]))
    return found


def _time(text: str, file: Path, number: int) -> datetime.datetime:
    """An allowed-signers time, YYYYMMDD[HHMM[SS]][Z]: local time, UTC with Z."""
    m = re.fullmatch(r"(\d{8})(\d{4}(\d{2})?)?(Z?)", text)
    if m is None:
        raise SignatureProblem(f"{file}:{number}: {text!r} is not a time YYYYMMDD[HHMM[SS]][Z]")
    digits = (m.group(1) + (m.group(2) or "0000")).ljust(14, "0")
    try:
        at = datetime.datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        raise SignatureProblem(f"{file}:{number}: {text!r} is not a time YYYYMMDD[HHMM[SS]][Z]") from None
    return at.replace(tzinfo=datetime.timezone.utc) if m.group(4) else at.astimezone()


def principals(allowed_signers_file: Path, public_blob: bytes, namespace: str,
               now: datetime.datetime | None = None) -> list[str]:
    """The principals of the allowed-signers file's lines naming this key, valid now and
    for this namespace (as `ssh-keygen -Y find-principals` lists them); none when no line
    does. A file with a line that cannot be read whole is a UsageError naming the line
    (allowed_signers)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    wanted = base64.b64encode(public_blob).decode()
    found: list[str] = []
    for line in allowed_signers(allowed_signers_file):
        if "cert-authority" in line.options or line.key_type != KEY_TYPE or line.key != wanted:
            continue
        spaces = line.options.get("namespaces")
        if spaces is not None and not any(fnmatch.fnmatchcase(namespace, p) for p in spaces.split(",")):
            continue
        after, before = line.options.get("valid-after"), line.options.get("valid-before")
        if after is not None and now < _time(after, allowed_signers_file, line.number):
            continue
        if before is not None and now > _time(before, allowed_signers_file, line.number):
            continue
        found.extend(p for p in line.principals if p not in found)
    return found


def matches(principal_patterns: list[str], identity: str) -> bool:
    """Whether `identity` is one of the principals (each a pattern, as ssh-keygen matches them)."""
    return any(fnmatch.fnmatchcase(identity, p) for p in principal_patterns)
