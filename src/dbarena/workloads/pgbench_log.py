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
files are read in blocks, in a few threads; numpy finds each line's third column from
the positions of the block's newlines and spaces, turns the digits into integers and
counts them per HDR bucket, so that Python touches a block, never a line
(bench/percentiles measures it against sort and awk).
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Iterator, NoReturn

from dbarena.errors import ParseError
from dbarena.latency import Latencies

TOOL = "pgbench log"
OUTCOMES = frozenset({b"skipped", b"failed", b"serialization", b"deadlock"})
BLOCK_BYTES = 512 << 10  # measured: smaller blocks stay in the CPU's caches
READERS = 4  # threads, at most one per CPU

_HEADER = b"client_id "
_EPOCH_LIKE = 100_000_000  # 1973 as a Unix time; no client number or microsecond count reaches it


def read_files(paths: Iterable[Path], into: Latencies | None = None) -> Latencies:
    """Every line of every log file, recorded in one distribution (into, or a new one)."""
    out = into if into is not None else Latencies(source="pgbench log")
    for path in paths:
        with open(path, "rb") as f:
            read_stream(f, out, name=path.name)
    return out


def read_stream(f, out: Latencies, name: str = "log") -> None:
    """A binary file object, block by block; a last line without its newline (the log
    of a pgbench that was killed) is counted as `truncated`. Every line must have the
    first line's number of columns.

    Blocks are read in a few threads (numpy lets go of the GIL in its array passes),
    each into a distribution of its own, merged in file order: the first bad line of
    the file is the one reported."""
    workers = max(1, min(READERS, os.cpu_count() or 1))
    in_flight: deque = deque()
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
            for block, header, columns in _blocks(f, out, name):
                part = Latencies(source=out.source)
                in_flight.append((pool.submit(read_block, block, part, name, 1, columns), part, header))
                while len(in_flight) > workers:
                    absorb()
            while in_flight:
                absorb()
        finally:
            for future, _, _ in in_flight:
                future.cancel()


def _blocks(f, out: Latencies, name: str) -> Iterator[tuple[bytes, int, int]]:
    """(whole lines, header lines skipped before them (0 or 1), the file's number of
    columns) per block."""
    rest = b""
    columns = 0
    while True:
        block = f.read(BLOCK_BYTES)
        if not block:
            break
        block = rest + block
        end = block.rfind(b"\n")
        if end < 0:
            rest = block
            continue
        rest = block[end + 1:]
        whole, header = block[:end + 1], 0
        if not columns:
            if whole.startswith(_HEADER):
                whole, header = whole[whole.index(b"\n") + 1:], 1
                if not whole:
                    yield whole, header, 0  # no line to read: only the header so far
                    continue
            columns = _first_line_columns(whole[:whole.index(b"\n")], name, 1 + header)
        yield whole, header, columns
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


def read_block(block: bytes, out: Latencies, name: str = "log", first_line: int = 1, columns: int = 0) -> int:
    """Whole lines (block ends with a newline, or is empty): recorded into out.
    Returns the number of lines. A line that is not a log line raises ParseError
    naming it.

    Vectorised over the block's bytes: the positions of newlines and spaces give each
    line's third column; its digits are summed by place value. Every line must have
    the first line's number of columns, no empty column, and nothing but digits
    outside the third; checked by counting: the bytes that are not digits must be
    exactly the spaces, the newlines and the letters of the outcome words."""
    import numpy as np

    buf = np.frombuffer(block, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    lines = len(newlines)
    if lines == 0:
        return 0
    spaces = np.flatnonzero(buf == 32)
    columns = columns or len(spaces) // lines + 1
    if len(spaces) != lines * (columns - 1) or not 6 <= columns <= 8:
        _raise_first_bad(block, name, first_line, columns)
    # Row i: the spaces of line i, if every line has as many. If one had fewer, its row
    # would run past its newline; more, and the next row would start before its line.
    grid = spaces.reshape(lines, columns - 1)
    line_starts = np.concatenate(([0], newlines[:-1] + 1))
    if (grid[:, 0] <= line_starts).any() or (grid[:, -1] >= newlines - 1).any() or (np.diff(spaces) == 1).any():
        _raise_first_bad(block, name, first_line, columns)  # (also: an empty first, last or middle column)
    starts, ends = grid[:, 1] + 1, grid[:, 2]  # the time column: [start, end)
    width = ends - starts
    numeric = (buf[starts] - 48) <= 9  # uint8: anything below '0' wraps around
    word_bytes = 0
    if not numeric.all():
        word_bytes = _outcomes(block, buf, np.flatnonzero(~numeric), starts, width, out, name, first_line)
        starts, width = starts[numeric], width[numeric]
    if int(np.count_nonzero((buf - 48) > 9)) != lines + len(spaces) + word_bytes:
        _raise_first_bad(block, name, first_line, columns)  # a byte that is no digit where a number belongs
    if len(starts):
        longest = int(width.max())
        if longest > 18:
            row = int(np.flatnonzero(numeric)[np.argmax(width)])
            raise ParseError(TOOL, f"{name}: a transaction time too long to be one", first_line + row,
                             _line(block, row))
        values = _numbers(buf, starts, width, longest)
        out.record_array(values)
    return lines


_WINDOW = 8  # digits read at once: latencies below 100 s


def _numbers(buf, starts, width, longest: int):
    """The whole numbers at buf[starts[i]:starts[i] + width[i]] (digits only).
    Up to _WINDOW digits: the _WINDOW bytes that end each number, right-aligned, the
    bytes before the number zeroed (leading zeros), then Horner's rule over the columns. Longer numbers (pgbench cannot log 100 s latencies often): Horner's rule
    over the places, left to right."""
    import numpy as np

    if longest <= _WINDOW:
        ends = starts + width
        window = buf[np.maximum(ends[:, None] - _WINDOW + np.arange(_WINDOW), 0)] - 48  # uint8, wraps
        window[np.arange(_WINDOW) < (_WINDOW - width)[:, None]] = 0  # leading zeros
        values = window[:, 0].astype(np.int32)  # below 10**8: fits
        for place in range(1, _WINDOW):
            values *= 10
            values += window[:, place]
        return values.astype(np.int64)
    values = (buf[starts] - 48).astype(np.int64)
    for place in range(1, longest):
        digit = buf[np.minimum(starts + place, len(buf) - 1)].astype(np.int64) - 48
        values = np.where(width > place, values * 10 + digit, values)
    return values


def _outcomes(block: bytes, buf, rows, starts, width, out: Latencies, name: str, first_line: int) -> int:
    """Count the outcome words in the time column of rows; the number of their bytes.
    Vectorised per word: a row is that word if its column is as long and has its bytes."""
    import numpy as np

    found = np.zeros(len(rows), dtype=bool)
    total = 0
    for word in OUTCOMES:
        pattern = np.frombuffer(word, dtype=np.uint8)
        candidates = np.flatnonzero((width[rows] == len(word)) & (buf[starts[rows]] == pattern[0]))
        if not len(candidates):
            continue
        at = starts[rows[candidates]]
        same = (buf[at[:, None] + np.arange(len(word))] == pattern).all(axis=1)
        if same.any():
            out.add_outcome(word.decode(), int(same.sum()))
            found[candidates[same]] = True
            total += int(same.sum()) * len(word)
    if not found.all():
        row = int(rows[np.flatnonzero(~found)[0]])
        word = block[starts[row]:starts[row] + width[row]]
        raise ParseError(TOOL, f"{name}: unknown transaction time {word.decode(errors='replace')!r}",
                         first_line + row, _line(block, row))
    return total


def _line(block: bytes, index: int) -> str:
    return block.split(b"\n")[index].decode(errors="replace")


def _raise_first_bad(block: bytes, name: str, first_line: int, columns: int) -> NoReturn:
    for i, line in enumerate(block.split(b"\n")[:-1]):
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
