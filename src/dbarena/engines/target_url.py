"""What every --target URL must satisfy, whatever the engine.

A URL refused is shown masked (masking.masked): a mistyped scheme or a keyword
connection string may still carry a password, which must not reach a terminal or a
log."""

from __future__ import annotations

from urllib.parse import SplitResult, parse_qs

from dbarena.errors import UsageError
from dbarena.limits import split_url
from dbarena.masking import masked


def split(url: str) -> SplitResult:
    """The --target URL in parts (limits.split_url: a malformed one is a usage error)."""
    return split_url(url, "--target")


def check(url: str, *, schemes: tuple[str, ...], example: str, password_from: str) -> SplitResult:
    """The URL split into parts; a usage error for a wrong scheme, a missing host, a
    port that is not a number, or a password (it would show in process lists and
    logs: it must come from the environment or an option file)."""
    parts = split(url)
    if parts.scheme not in schemes:
        raise UsageError(f"--target {masked(url)!r}: expected {example}")
    if parts.password is not None or "password" in parse_qs(parts.query):
        raise UsageError("--target must not contain a password (it would show in process lists and logs): "
                         f"put it in {password_from}")
    if not parts.hostname:
        raise UsageError(f"--target {masked(url)!r}: no host name")
    return parts
