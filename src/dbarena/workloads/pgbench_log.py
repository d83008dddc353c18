"""pgbench's per-transaction logs (`-l`): the latency of every transaction, read into a
latency.Latencies without holding the log in memory.

One line per transaction (pgbench's documentation, "Per-Transaction Logging"):

    client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]

`time` is the transaction's latency in whole microseconds, or, instead of a number,
`skipped` (--rate with --latency-limit: never sent), and from PostgreSQL 15 `failed`,
or `serialization` / `deadlock` with --failures-detailed. Those are counted as
outcomes, never read as latencies. `schedule_lag` is there with --rate, `retries`
with --max-tries other than 1; both are ignored here (the time already includes the
lag). Every line of one log has the same columns. A first line naming the columns
(`client_id transaction_no ...`, an unreleased --log-header patch) is skipped.

Why not line by line: a fast server logs tens of millions of lines per point. The
files are read in blocks (into a few reused buffers, no copy per block), in a few
threads; numpy finds each line's third column from the positions of the block's
separators, reads its digits eight at a time as one 64-bit word and counts them per HDR
bucket, so that Python touches a block, never a line (bench/percentiles measures it
against sort and awk).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, NoReturn, Protocol, Union

from dbarena.errors import ParseError
from dbarena.stats.latency import Latencies

if TYPE_CHECKING:  # numpy is imported where a log is read (an import of dbarena need not load it)
    import numpy as np
    import numpy.typing as npt

    Bytes = npt.NDArray[np.uint8]  # a block's bytes
    Flags = npt.NDArray[np.bool_]
    Indexes = npt.NDArray[np.intp]  # positions in a block, or rows of it

TOOL = "pgbench log"
OUTCOMES = frozenset({b"skipped", b"failed", b"serialization", b"deadlock"})
BLOCK_BYTES = 1 << 20  # measured: 512 kB costs more Python calls, 2 MB is no faster and takes twice the memory
READERS = 4  # threads, at most one per CPU

_HEADER = b"client_id "
_EPOCH_LIKE = 100_000_000  # 1973 as a Unix time; no client number or microsecond count reaches it

Block = Union[bytes, bytearray, memoryview]  # whole lines, as read_block takes them


class Readable(Protocol):
    """A binary file object, read with readinto (open(path, "rb"), io.BytesIO)."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...


def read_files(paths: Iterable[Path], into: Latencies | None = None) -> Latencies:
    """Every line of every log file, recorded in one distribution (into, or a new one)."""
    out = into if into is not None else Latencies(source="pgbench log")
    for path in paths:
        with open(path, "rb") as f:
            read_stream(f, out, name=path.name)
    return out


def read_stream(f: Readable, out: Latencies, name: str = "log") -> None:
    """A binary file object (with readinto), block by block; a last line without its
    newline (the log of a pgbench that was killed) is counted as `truncated`. Every line
    must have the first line's number of columns.

    Blocks are read in a few threads (numpy lets go of the GIL in its array passes),
    each into a distribution of its own, merged in file order: the first bad line of
    the file is the one reported."""
    workers = max(1, min(READERS, os.cpu_count() or 1))
    in_flight: deque[tuple[Future[int], Latencies, int]] = deque()  # (lines read, into, header lines)
    before = [0]  # lines of the blocks merged so far: a block numbers its lines from 1

    def absorb() -> None:
        future, part, header = in_flight.popleft()
        try:
            lines = future.result()
        except ParseError as exc:
            raise ParseError(exc.tool, exc.reason, None if exc.lineno is None else exc.lineno + before[0] + header,
                             exc.line) from None
        before[0] += lines + header
        out.merge(part)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            # A buffer is read into again `workers + 1` blocks later: by then the block
            # it held has been absorbed (at most `workers` are in flight while reading).
            for block, header, columns in _blocks(f, out, name, buffers=workers + 1):
                part = Latencies(source=out.source)
                in_flight.append((pool.submit(read_block, block, part, name, 1, columns), part, header))
                while len(in_flight) > workers:
                    absorb()
            while in_flight:
                absorb()
        finally:
            for future, _, _ in in_flight:
                future.cancel()


def _blocks(f: Readable, out: Latencies, name: str, buffers: int = 1) -> Iterator[tuple[memoryview, int, int]]:
    """(whole lines, header lines skipped before them (0 or 1), the file's number of
    columns) per block: views of `buffers` reused buffers, taken in turn, each read
    into with readinto after the partial line the previous block ended with. A block
    stays valid until `buffers` more have been taken."""
    ring = [bytearray() for _ in range(buffers)]
    turn = 0  # the buffer to read into: the next one only once a block of this one is out
    rest = b""  # a partial line: the start of the next block
    columns = 0
    while True:
        size = len(rest) + BLOCK_BYTES
        if len(ring[turn]) < size:  # first use, or a line longer than a block
            ring[turn] = bytearray(size)
        data = ring[turn]
        data[:len(rest)] = rest
        got = f.readinto(memoryview(data)[len(rest):size])
        if not got:
            break
        filled = len(rest) + got
        end = data.rfind(b"\n", 0, filled)
        rest = bytes(data[end + 1:filled])  # (all of it when there is no newline)
        if end < 0:
            continue
        start, header = 0, 0
        turn = (turn + 1) % buffers
        if not columns:
            if data.startswith(_HEADER, 0, end):
                start, header = data.index(b"\n") + 1, 1
                if start > end:
                    yield memoryview(data)[:0], header, 0  # no line to read: only the header so far
                    continue
            columns = _first_line_columns(bytes(data[start:data.index(b"\n", start)]), name, 1 + header)
        yield memoryview(data)[start:end + 1], header, columns
    if rest.strip():
        out.add_outcome("truncated")


def _first_line_columns(line: bytes, name: str, lineno: int) -> int:
    """The number of columns of a file's first log line, which every line must have.
    An aggregated log (--aggregate-interval: interval start, count, sums, min, max) has
    whole numbers in the same places; its first column is a Unix time where a
    per-transaction log has a client number, and is refused."""
    fields = line.split(b" ")
    _check_line(line, len(fields), name, lineno)
    if int(fields[0]) >= _EPOCH_LIKE and int(fields[4]) < _EPOCH_LIKE:
        raise ParseError(TOOL, f"{name}: an aggregated log (--aggregate-interval), not a per-transaction log",
                         lineno, line.decode(errors="replace"))
    return len(fields)


def read_block(block: Block, out: Latencies, name: str = "log", first_line: int = 1, columns: int = 0) -> int:
    """Whole lines (block ends with a newline, or is empty): recorded into out.
    Returns the number of lines. A line that is not a log line raises ParseError
    naming it.

    Vectorised over the block's bytes: the positions of the bytes below '0' (spaces and
    newlines, if the line is a log line) give each line's third column, whose digits
    are read as one 64-bit word. Every line must have the first line's number of
    columns, no empty column, and nothing but digits outside the third; checked by
    counting: the bytes below '0' must be the spaces and one newline per line, the
    bytes above '9' exactly the letters of the outcome words."""
    import numpy as np

    buf = np.frombuffer(block, dtype=np.uint8)
    if not len(buf) or (buf[-1] != 10 and not (buf == 10).any()):
        return 0
    below, scratch = _flags(len(buf))
    column = _time_column(buf, columns, below, scratch)
    if column is None:
        _raise_first_bad(block, name, first_line, columns)
    starts, ends = column
    lines = len(starts)
    numeric = buf[starts] < 58  # a digit: no separator starts a column (checked above)
    word_bytes = 0
    if not numeric.all():
        word_bytes = _outcomes(buf, np.flatnonzero(~numeric), starts, ends - starts, out, name, first_line,
                               block)
        starts, ends = starts[numeric], ends[numeric]
    if _count(np.greater(buf, 57, out=scratch)) != word_bytes:
        _raise_first_bad(block, name, first_line, columns)  # a byte that is no digit where a number belongs
    if len(starts):
        digits = ends - starts
        longest = int(digits.max())
        if longest > 18:
            row = int(np.flatnonzero(numeric)[np.argmax(digits)])
            raise ParseError(TOOL, f"{name}: a transaction time too long to be one", first_line + row,
                             _line(block, row))
        out.record_array(_numbers(block, buf, starts, ends, longest))
    return lines


def _time_column(buf: Bytes, columns: int, below: Flags, scratch: Flags) -> tuple[Indexes, Indexes] | None:
    """Each line's third column, [starts, ends), if every line has `columns` columns
    (or, given 0, the first line's number), split by single spaces, none empty; else
    None. below and scratch: bool arrays as long as buf, to work in."""
    import numpy as np

    np.less(buf, 48, out=below)  # the separators, if the block is a log
    seps = np.flatnonzero(below)
    width = columns or _columns(buf, seps)
    lines = len(seps) // max(width, 1)
    spaces = _count(np.equal(buf, 32, out=scratch))
    if not 6 <= width <= 8 or lines * width != len(seps) or spaces != len(seps) - lines:
        return None
    # Row i: the separators of line i, the last its newline, if every line has as
    # many; as the other separators are all spaces, every line then has `width` columns.
    grid = seps.reshape(lines, width)
    if (buf[grid[:, -1]] != 10).any() or below[0] or np.logical_and(below[1:], below[:-1], out=scratch[1:]).any():
        return None  # (also: an empty first, last or middle column)
    # Copies, so that the block's largest array goes before the per-line arrays are
    # made: they reuse its memory rather than grow the heap (which the allocator trims
    # again, at the cost of page faults in the next block).
    return grid[:, 1] + 1, grid[:, 2].copy()


_scratch = threading.local()


def _flags(n: int) -> tuple[Flags, Flags]:
    """Two bool arrays of n elements, reused by the thread: allocated afresh for every
    block, arrays of a block's size cost page faults (measured: a third of the time;
    the allocator hands large freed chunks back to the system)."""
    import numpy as np

    have = getattr(_scratch, "flags", None)
    if have is None or len(have[0]) < n:
        have = _scratch.flags = (np.empty(n, dtype=bool), np.empty(n, dtype=bool))
    return have[0][:n], have[1][:n]


def _count(flags: Flags) -> int:
    import numpy as np

    return int(np.count_nonzero(flags))


def _columns(buf: Bytes, seps: Indexes) -> int:
    """The number of columns of a block's first line (0 if it has none that a log
    line could have): its separators up to its newline."""
    import numpy as np

    first = np.flatnonzero(buf[seps[:9]] == 10)
    return int(first[0]) + 1 if len(first) else 0


_WORD = 8  # digits read at once: latencies below 100 s


def _numbers(block: Block, buf: Bytes, starts: Indexes, ends: Indexes, longest: int) -> npt.NDArray[np.int64]:
    """The whole numbers at buf[starts[i]:ends[i]] (digits only), as int64.

    Up to _WORD digits: the 8 bytes from each number's start as one little-endian
    64-bit word, shifted up by the bytes that are not the number's (the rest of its
    line), so that the number ends in the top byte with zeros before it, then
    converted by _eight_digits. A log line has more than 8 bytes after its time's start,
    so every word is inside the block. Longer numbers (pgbench cannot log 100 s
    latencies often): Horner's rule over the places, left to right."""
    import numpy as np

    if longest <= _WORD:
        # Every position of buf as the start of a (possibly unaligned) word.
        at = np.ndarray((len(buf) - _WORD + 1,), dtype="<u8", buffer=block, strides=(1,))
        x = at[starts].astype(np.uint64, copy=False)  # (a copy only where uint64 is big-endian)
        x <<= ((_WORD - (ends - starts)) << 3).astype(np.uint64)
        _eight_digits(x)
        return x.view(np.int64)  # below 10**8
    width = ends - starts
    values = (buf[starts] - 48).astype(np.int64)
    for place in range(1, longest):
        digit = buf[np.minimum(starts + place, len(buf) - 1)].astype(np.int64) - 48
        values = np.where(width > place, values * 10 + digit, values)
    return values


# Combining adjacent lanes of a word of decimal digits: (the lanes' mask, the multiplier
# that adds ten to the power of a lane's digits times a lane to the next one, the shift
# that brings the sums down).
_SWAR = ((0x0F0F0F0F0F0F0F0F, 10 << 8 | 1, 8), (0x00FF00FF00FF00FF, 100 << 16 | 1, 16),
         (0x0000FFFF0000FFFF, 10000 << 32 | 1, 32))


def _eight_digits(x: npt.NDArray[np.uint64]) -> None:
    """In place: each word (uint64) of 8 ASCII digits or zero bytes before them (leading
    zeros), the most significant digit in the lowest byte, becomes the number they write.
    SWAR: every mask, multiply and shift combines all adjacent pairs of lanes at once,
    digits into pairs, pairs into fours, fours into the eight; the last sum lands in
    the top half of the product, which the last shift brings down (Muła's method, as in
    simdjson's parse_eight_digits_unrolled)."""
    import numpy as np

    for lanes, multiplier, shift in _SWAR:
        x &= np.uint64(lanes)
        x *= np.uint64(multiplier)
        x >>= np.uint64(shift)


def _outcomes(buf: Bytes, rows: Indexes, starts: Indexes, width: Indexes, out: Latencies, name: str,
              first_line: int, block: Block) -> int:
    """Count the outcome words in the time column of rows; the number of their bytes.
    Vectorised per word: a row is that word if its column is as long and has its bytes
    (the words' lengths differ, so a row is compared with one word at most)."""
    import numpy as np

    at, length = starts[rows], width[rows]
    found = np.zeros(len(rows), dtype=bool)
    total = 0
    for word in OUTCOMES:
        candidates = np.flatnonzero(length == len(word))
        if not len(candidates):
            continue
        same = (buf[at[candidates, None] + np.arange(len(word))] == np.frombuffer(word, dtype=np.uint8)).all(axis=1)
        n = int(np.count_nonzero(same))
        if n:
            out.add_outcome(word.decode(), n)
            found[candidates[same]] = True
            total += n * len(word)
    if not found.all():
        row = int(rows[np.flatnonzero(~found)[0]])
        raise _unknown_time(bytes(block[starts[row]:starts[row] + width[row]]), name, first_line + row,
                            _line(block, row))
    return total


def _unknown_time(word: bytes, name: str, lineno: int, line: str) -> ParseError:
    return ParseError(TOOL, f"{name}: unknown transaction time {word.decode(errors='replace')!r}", lineno, line)


def _line(block: Block, index: int) -> str:
    return bytes(block).split(b"\n")[index].decode(errors="replace")


def _raise_first_bad(block: Block, name: str, first_line: int, columns: int) -> NoReturn:
    """The error a bad block raises, line by line, in the order of the checks: a line
    without the block's shape (columns split by single spaces, none empty) first, else
    the first unknown word as a time, else the first line that is not a log line."""
    lines = bytes(block).split(b"\n")[:-1]
    columns = columns or sum(line.count(b" ") for line in lines) // max(len(lines), 1) + 1
    if 6 <= columns <= 8 and all(len(f) == columns and b"" not in f for f in (line.split(b" ") for line in lines)):
        for i, line in enumerate(lines):
            time = line.split(b" ")[2]
            if not time[:1].isdigit() and time not in OUTCOMES:
                raise _unknown_time(time, name, first_line + i, line.decode(errors="replace"))
    for i, line in enumerate(lines):
        _check_line(line, columns, name, first_line + i)
    raise ParseError(TOOL, f"{name}: unreadable log", first_line, "")  # not reached: some line is bad


def _check_line(line: bytes, columns: int, name: str, lineno: int) -> None:
    """One line, slowly: the reason it is not a log line, as a ParseError."""
    fields = line.split(b" ")
    text = line.decode(errors="replace")
    if not 6 <= len(fields) <= 8 or len(fields) != columns:
        raise ParseError(TOOL, f"{name}: {len(fields)} columns where the log has {columns} "
                         "(client, transaction, time, script, epoch, microseconds[, lag][, retries])", lineno, text)
    for i, field in enumerate(fields):
        if not field.isdigit() and not (i == 2 and field in OUTCOMES):
            what = "transaction time" if i == 2 else f"column {i + 1}"
            raise ParseError(TOOL, f"{name}: {what} {field.decode(errors='replace')!r} is not a number"
                             + (" or an outcome (skipped, failed, serialization, deadlock)" if i == 2 else ""),
                             lineno, text)
