"""What every --target URL must satisfy, whatever the engine."""

from __future__ import annotations

from urllib.parse import SplitResult, parse_qs, urlsplit

from dbarena.errors import UsageError


def check(url: str, *, schemes: tuple[str, ...], example: str, password_from: str) -> SplitResult:
    """The URL split into parts; a usage error for a wrong scheme, a missing host, a
    port that is not a number, or a password (it would show in process lists and
    logs: it must come from the environment or an option file)."""
    parts = urlsplit(url)
    if parts.scheme not in schemes:
        raise UsageError(f"--target {url!r}: expected {example}")
    if parts.password is not None or "password" in parse_qs(parts.query):
        raise UsageError("--target must not contain a password (it would show in process lists and logs): "
                         f"put it in {password_from}")
    if not parts.hostname:
        raise UsageError(f"--target {url!r}: no host name")
    try:
        parts.port
    except ValueError:
        raise UsageError(f"--target {url!r}: the port is not a number") from None
    return parts
