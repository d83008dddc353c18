"""The bounds of every number and name dbarena takes from a user, a study file or a
tool's output: what a tool can take or print, what the store, the statistics and JSON
can hold, and which characters a name may not hold (they would act on a terminal). One place, so that flags, study files and imports refuse the same values in
one line before anything starts (a duration of 10**26 s is an OverflowError deep in a
run otherwise, a thread level of 10**23 an error after initdb). And the one way an
exception becomes one line to show or keep (one_line)."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

from dbarena.errors import UsageError
from dbarena.masking import masked

# Each thread or client is a connection: no server takes a million.
MAX_THREADS = 1_000_000
# pgbench's -T and sysbench's --time are 32-bit: no tool runs longer.
MAX_SECONDS = 2**31 - 1
# A tool's whole-number option (pgbench's scale, sysbench's table size, mysqlslap's
# queries): pgbench and sysbench read them as C ints.
MAX_TOOL_INT = 2**31 - 1
# A count SQLite stores as an INTEGER (and PostgreSQL as a bigint).
MAX_COUNT = 2**63 - 1
# A whole study: the points its plan lists (each one a record in memory before anything
# starts) and the machine time its timed points take at the least. Past these no study
# is meant (the first would fill the memory, the second outlast the machine).
MAX_POINTS = 1_000_000
MAX_STUDY_SECONDS = 10 * 365 * 86400  # ten years
# A price per hour or month: anything beyond is a typo, and a sum of many stays finite.
MAX_PRICE = 1e12
# A name a user gives (a label, a study's name, a currency): what a table's column, a
# chart's legend and a file name can show. A label of 20,000 characters made every
# table as wide and `results --summary` take 48 s; none is meant that long.
MAX_NAME_CHARS = 200
# A server setting's value, as a study file or a flag gives it: it goes into the
# server's configuration file and every table that shows the settings. The longest
# real ones (a list of preload libraries, a search path) are a few hundred characters.
MAX_SETTING_CHARS = 4096
# One run of a file `dbarena import` reads (the output of one pgbench or sysbench run,
# one mysqlslap block): a file of any size is read as a stream, one run at a time, and
# a run is held whole while it is read (its text, lines, point and samples: about 11
# times its size; one pgbench run of 150,000 progress lines, 8.9 MB, took 100 MB more
# than a small file's import), so a bound on the one bounds the memory: about 750 MB
# at this one.
# A run of a day with progress every second is under 10 MB; text with no run boundary
# in 64 MiB (a log that is no tool's output, /dev/urandom copied to a file) is refused
# at the line where it starts, not read until the memory is gone.
MAX_IMPORT_RUN_CHARS = 64 * 2**20
# Files read whole from outside (inbound.read_bytes refuses a larger one before holding
# it): an OpenSSH private key is a few hundred bytes (an RSA one of 16,384 bits 13 kB);
# an allowed-signers file a line a key, 100 bytes each (a megabyte is 10,000 signers);
# AWS's regional offer files (EC2's is the largest) are hundreds of megabytes and are
# parsed whole as JSON (about ten times their size in memory); a price catalogue is
# dbarena's own, kilobytes.
MAX_KEY_BYTES = 2**20
MAX_ALLOWED_SIGNERS_BYTES = 16 * 2**20
MAX_OFFER_BYTES = 2 * 2**30
MAX_CATALOGUE_BYTES = 64 * 2**20


def number_problem(value: float, *, whole: bool = False, minimum: float = 0, maximum: float | None = None,
                   above: bool = False, beyond: str = "what a tool can print") -> str | None:
    """What is wrong with a figure (None: nothing): not finite, below its minimum (or
    not above it), beyond its maximum, not whole."""
    if isinstance(value, float) and not math.isfinite(value):  # (an int is finite, and may not fit a float)
        return "is not a finite number"
    if above and value <= minimum:
        return f"must be above {minimum:g}"
    if value < minimum:
        return "is negative" if minimum == 0 else f"must be at least {minimum:g}"
    if maximum is not None and value > maximum:
        return f"is beyond {beyond} (at most {maximum:g})" if isinstance(maximum, float) \
            else f"is beyond {beyond} (at most {maximum})"
    if whole and value != int(value):
        return "is not a whole number"
    return None


def split_url(url: str, what: str) -> SplitResult:
    """A URL a user gave (`what`: --target, --store) in parts; urlsplit's ValueError (an
    IPv6 address without its ']', a port that is not a number) a usage error of one
    line, the URL masked (masking.py): a mistyped one may still hold a password."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (reading it raises ValueError for a port that is not 0 to 65535)
    except ValueError as exc:
        reason = ("an IPv6 address is not closed by ']' (e.g. postgresql://user@[::1]:5432/db)"
                  if "IPv6" in str(exc) else "the port is not a number from 0 to 65535")
        raise UsageError(f"{what} {masked(url)!r}: {reason}") from None
    return parts


# Unicode's bidirectional overrides and isolates: they reorder what a terminal shows
# after them (the "Trojan Source" trick), so a name must not hold them either.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str, *, keep: str = "") -> str:
    """The text without the characters that act on a terminal instead of showing (ESC
    and the rest of C0 and C1, DEL, bidirectional overrides), whatever a user or a tool
    put in it: a label holding ESC ]0;...BEL would retitle the window, ESC [2J clear
    the screen. Printable Unicode is kept; `keep` names control characters to keep
    (a line break in raw output)."""
    if _SAFE.fullmatch(text):  # the common case, without a character-by-character pass
        return text
    return "".join(c for c in text if c in keep or not _acts(c))


def one_line(said: BaseException | str, limit: int | None = None) -> str:
    """An exception (or a text) as one line, to show or to keep in a status or a record:
    passwords masked first (a driver's message may quote the URL or the command that
    held one, over several lines), every run of whitespace and line breaks one space,
    nothing that acts on a terminal (printable), at most `limit` characters; an
    exception that says nothing by its type's name."""
    text = printable(" ".join(masked(str(said)).split()))
    if not text and isinstance(said, BaseException):
        text = type(said).__name__
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "…"


def _acts(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cs") or c in _BIDI_CONTROLS


# The bidirectional marks: invisible, and they too move what follows them.
_BIDI_MARKS = frozenset("\u200e\u200f\u061c")


def visible(text: str, *, keep: str = "") -> str:
    """The text with each character printable() would drop, and each bidirectional mark,
    shown as its Python escape (ESC as \\x1b, a right-to-left override as \\u202e, a line
    break as \\n): for text a user reads to judge it (a study file's values in `study
    check`), where dropping them would hide what the file holds. `keep` names control
    characters to keep as they are."""
    if _SAFE.fullmatch(text) and not any(c in _BIDI_MARKS for c in text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii") if c not in keep and (_acts(c) or c in _BIDI_MARKS)
                   else c for c in text)


_SAFE = re.compile(r"[ -~\u00a0-\u2029\u202f-\u2065\u206a-\ud7ff\ue000-\U0010ffff]*")


# The Unicode categories a name may not hold: control characters (Cc: ESC and the rest,
# which act on a terminal), format characters (Cf: the bidirectional marks, overrides
# and isolates U+200E, U+200F, U+061C, U+202A-U+202E, U+2066-U+2069, which reorder what
# follows them, and the invisible ones, which make two names look alike), surrogates,
# and the line and paragraph separators (U+2028, U+2029: a line break to many
# terminals and every browser, which would split a table's row).
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def unfit_in_name(c: str) -> bool:
    """Whether a name (a label, a currency) may not hold this character (_NOT_IN_NAMES)."""
    return unicodedata.category(c) in _NOT_IN_NAMES or c in _BIDI_CONTROLS or c in _BIDI_MARKS


def name_problem(text: str) -> str | None:
    """What is wrong with a name a user gives or a bundle or store brings (a label, a
    currency; None: nothing): empty, longer than MAX_NAME_CHARS, or holding control,
    format or separator characters (unfit_in_name), which would act on a terminal (move
    the cursor, retitle the window), reorder or break the line wherever the name is
    shown. The one rule of names: flags, study files, imports, bundles and merged
    stores are held to it."""
    if not text.strip():
        return "is empty"
    if len(text) > MAX_NAME_CHARS:
        return f"is {len(text):,} characters long (at most {MAX_NAME_CHARS})"
    if (bad := next((c for c in text if unfit_in_name(c)), None)) is not None:
        return f"holds control characters (U+{ord(bad):04X})"
    return None


_SETTING_NAME = re.compile(r"[A-Za-z0-9_.-]{1,%d}" % MAX_NAME_CHARS)


def setting_problem(name: str, value: str) -> str | None:
    """What is wrong with a server setting a study file or a flag gives (None: nothing).
    Names and values are written into the server's configuration file one a line: a line
    break or a bracket would add settings (or `!include`) that nothing has checked, and a
    value of any length would reach every table that shows the settings."""
    if not _SETTING_NAME.fullmatch(name):
        return f"not a setting name (letters, digits, _, - and ., at most {MAX_NAME_CHARS})"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "a value on one line, without control characters"
    if len(value) > MAX_SETTING_CHARS:
        return f"a setting's value is at most {MAX_SETTING_CHARS:,} characters (this one: {len(value):,})"
    return None


def quoted(text: str, chars: int = 60) -> str:
    """A name as an error line shows it: repr() of its first `chars` characters, and
    `...` after them for a longer one (a refused 20,000-character label is not echoed)."""
    return repr(text) if len(text) <= chars else repr(text[:chars]) + "..."


def listed(names: Iterable[str], chars: int = 60, most: int = 20) -> str:
    """Names (a store's labels, variants) as a one-line message lists them: each without
    what acts on a terminal and cut to its first `chars` characters (`...` after), at
    most `most` of them and how many more. A store written before labels were bounded
    (or by hand) may hold a 100,000-character label or ten thousand labels: a message
    naming them all would be a screenful, not a line."""
    shown = []
    count = 0
    for name in names:
        count += 1
        if count <= most:
            text = printable(name)
            shown.append(text if len(text) <= chars else text[:chars] + "...")
    more = f" and {count - most:,} more" if count > most else ""
    return ", ".join(shown) + more
