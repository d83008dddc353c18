"""On-CPU profiles as folded stacks: `perf script`'s text folded, a profile's summary
(its samples and the functions that took most of them, self time), and the
differential of two profiles per transaction.

A folded profile is one line a distinct stack, `root;caller;...;leaf COUNT`, the
process's name first and the function on CPU last, as Brendan Gregg's
stackcollapse-perf.pl writes it and his flamegraph.pl (and speedscope, inferno ...)
read it: `fold` makes it from `perf script -F comm,pid,tid,ip,sym,dso` (run/profiling.py
records with `perf record -e cpu-clock:I -F FREQ -g -a`, and prints the server's
processes alone, `descendants` of its main process), `folded_text` writes it (lines
sorted: the same samples give the same bytes), `parse_folded` reads it back. Frames are
named as stackcollapse-perf.pl names them: a function's offset dropped, a frame perf
could not name (`[unknown]`: a function the binary does not export, when it has only
dynamic symbols) named by its binary, `[postgres]`; `;` within a name written `:`.

Each sample is 1/FREQ s of a CPU's time (cpu-clock samples each CPU on a timer), so a
function's samples over the frequency are the CPU seconds it took, and over a point's
transactions its microseconds per transaction: `differential`.

Pure: text in, records out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Folded", "Change", "fold", "descendants", "folded_text", "parse_folded", "samples", "top", "differential", "merged",
           "TOP", "FoldedProblem", "pooled_differential"]

# How many functions a profile's summary names (results --json's `profile.top`).
TOP = 20

# A sample's first line with -F comm,pid,tid: "postgres 22237/22237 " (the name may hold
# spaces: the pid and tid are the last words).
_HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s*$")
# A frame's: "\t    5cd3d3 MemoryContextAllocZeroAligned (/usr/lib/postgresql/15/bin/postgres)".
_FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<rest>.*)$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")


class FoldedProblem(ValueError):
    """Folded stacks that do not read: the line, and why."""


@dataclass(frozen=True)
class Folded:
    """A profile's folded stacks (stack -> samples) and the frequency they were taken at."""

    stacks: Mapping[str, int]
    frequency_hz: float

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())


@dataclass(frozen=True)
class Change:
    """A function's CPU time per transaction on each side (self time, or with
    `inclusive` the time of every stack it is on), in microseconds, and B's less A's."""

    function: str
    a_us_per_tx: float
    b_us_per_tx: float

    @property
    def change_us_per_tx(self) -> float:
        return self.b_us_per_tx - self.a_us_per_tx

    def as_json(self) -> dict[str, str | float]:
        return {"function": self.function, "a_us_per_tx": self.a_us_per_tx, "b_us_per_tx": self.b_us_per_tx,
                "change_us_per_tx": self.change_us_per_tx}


def _split_frame(rest: str) -> tuple[str, str]:
    """A frame's "symbol (dso)" as its symbol and its dso: the parenthesis that closes the
    line and the one that opens it (a C++ name holds parentheses of its own, a deleted
    binary's path " (deleted)")."""
    if not rest.endswith(")"):
        return rest.strip(), ""
    depth = 0
    for at in range(len(rest) - 1, -1, -1):
        if rest[at] == ")":
            depth += 1
        elif rest[at] == "(":
            depth -= 1
            if depth == 0:
                return rest[:at].strip(), rest[at + 1:-1]
    return rest.strip(), ""


def _name(symbol: str, dso: str) -> str:
    """A frame's name as stackcollapse-perf.pl gives it."""
    symbol = _OFFSET.sub("", symbol)
    if not symbol or symbol == "[unknown]":
        base = dso.rsplit("/", 1)[-1].removesuffix(" (deleted)") if dso else ""
        symbol = f"[{base}]" if base and base != "[unknown]" else "[unknown]"
    return symbol.replace(";", ":")


def fold(script: str) -> dict[str, int]:
    """`perf script -F comm,pid,tid,ip,sym,dso` of a call-graph recording -> its folded
    stacks (stack -> samples): each sample's frames, callers first, under its process's
    name. A line that is neither a sample's first line nor a frame (perf's own warnings)
    is passed over."""
    stacks: Counter[str] = Counter()
    comm: str | None = None
    frames: list[str] = []

    def end() -> None:
        if comm is not None:
            stacks[";".join([comm.replace(";", ":") or "[unknown]", *reversed(frames)])] += 1

    for line in script.splitlines():
        if not line.strip():
            end()
            comm, frames = None, []
            continue
        if line[0].isspace():
            found = _FRAME.match(line)
            if comm is not None and found is not None:
                frames.append(_name(*_split_frame(found["rest"])))
            continue
        header = _HEADER.match(line)
        if header is not None:
            end()  # (a sample without the blank line after it)
            comm, frames = header["comm"].strip(), []
    end()
    return dict(stacks)


def descendants(tasks: str, root: int) -> set[int]:
    """The processes of `perf report --tasks` (`pid tid ppid comm` a line) descended from
    `root`, `root` among them: a server's main process and the processes it started,
    before the recording or during it."""
    children: dict[int, set[int]] = {}
    for line in tasks.splitlines():
        words = line.split()
        if len(words) < 3 or line.lstrip().startswith("#"):
            continue
        try:
            pid, tid, ppid = int(words[0]), int(words[1]), int(words[2])
        except ValueError:
            continue
        if pid == tid:  # (a thread's line names its own process as its parent)
            children.setdefault(ppid, set()).add(pid)
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def folded_text(stacks: Mapping[str, int]) -> str:
    """Folded stacks as text: `stack COUNT` a line, sorted by stack."""
    return "".join(f"{stack} {count}\n" for stack, count in sorted(stacks.items()) if count > 0)


def parse_folded(text: str) -> dict[str, int]:
    """Folded text read back (stack -> samples, a stack given twice summed); a line that
    is not `stack COUNT` is a FoldedProblem naming it."""
    stacks: Counter[str] = Counter()
    for number, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit() or not count.isascii():
            raise FoldedProblem(f"line {number} is not 'stack count'")
        stacks[stack] += int(count)
    return dict(stacks)


def samples(stacks: Mapping[str, int]) -> int:
    return sum(stacks.values())


def _self(stacks: Mapping[str, int]) -> Counter[str]:
    """Each function's samples on CPU (the stack's last frame)."""
    out: Counter[str] = Counter()
    for stack, count in stacks.items():
        out[stack.rsplit(";", 1)[-1]] += count
    return out


def _inclusive(stacks: Mapping[str, int]) -> Counter[str]:
    """Each function's samples on any stack it is on (once a stack, however deep it recurses)."""
    out: Counter[str] = Counter()
    for stack, count in stacks.items():
        for name in set(stack.split(";")[1:] or stack.split(";")):
            out[name] += count
    return out


def top(stacks: Mapping[str, int], limit: int = TOP) -> list[dict[str, str | float]]:
    """The functions that took most of the samples themselves (self time), most first
    (then by name), each with its share of all the profile's samples: what `results
    --json` gives a profiled point as `profile.top`."""
    total = samples(stacks)
    if total <= 0:
        return []
    ranked = sorted(_self(stacks).items(), key=lambda item: (-item[1], item[0]))[:limit]
    return [{"function": name, "share": round(count / total, 4)} for name, count in ranked]


def differential(a_folded: Folded, b_folded: Folded, a_transactions: float, b_transactions: float, *,
                 limit: int = TOP, inclusive: bool = False) -> list[Change]:
    """The functions whose CPU time per transaction changed most from A to B, largest
    change first (either way; then by name): each function's samples over its profile's
    frequency (CPU seconds) over its side's transactions, in microseconds, self time (or,
    `inclusive`, the time of the stacks it is on). A function one side never ran on is
    0 there. `a_transactions`, `b_transactions`: the transactions each profile's point
    committed (its measurement's `transactions`)."""
    if a_transactions <= 0 or b_transactions <= 0:
        raise ValueError("each side needs transactions to divide its time by")
    if a_folded.frequency_hz <= 0 or b_folded.frequency_hz <= 0:
        raise ValueError("each side needs the frequency its samples were taken at")
    count = _inclusive if inclusive else _self
    a, b = count(a_folded.stacks), count(b_folded.stacks)
    per_a = 1e6 / a_folded.frequency_hz / a_transactions
    per_b = 1e6 / b_folded.frequency_hz / b_transactions
    changes = [Change(name, a.get(name, 0) * per_a, b.get(name, 0) * per_b) for name in set(a) | set(b)]
    changes.sort(key=lambda c: (-abs(c.change_us_per_tx), c.function))
    return changes[:limit]


def merged(profiles: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Several profiles' stacks summed (a configuration's repeats as one profile)."""
    out: Counter[str] = Counter()
    for stacks in profiles:
        out.update(stacks)
    return dict(out)


def pooled_differential(a: Iterable[tuple[Mapping[str, int], float, float]],
                        b: Iterable[tuple[Mapping[str, int], float, float]], *,
                        limit: int = TOP, inclusive: bool = False) -> list[Change]:
    """`differential` of two sides of several profiles each, every side's profiles pooled:
    (stacks, frequency_hz, transactions) a profile (a point: its stacks and the
    transactions it committed). A side's CPU time is each profile's samples over its own
    frequency, summed, over the side's transactions summed; a profile without
    transactions or frequency is left out. [] where a side has none left."""
    count = _inclusive if inclusive else _self

    def side(profiles: Iterable[tuple[Mapping[str, int], float, float]]) -> dict[str, float] | None:
        seconds: dict[str, float] = {}
        transactions = 0.0
        for stacks, frequency_hz, committed in profiles:
            if frequency_hz <= 0 or committed <= 0:
                continue
            transactions += committed
            for name, found in count(stacks).items():
                seconds[name] = seconds.get(name, 0.0) + found / frequency_hz
        if transactions <= 0:
            return None
        return {name: s * 1e6 / transactions for name, s in seconds.items()}

    per_a, per_b = side(a), side(b)
    if per_a is None or per_b is None:
        return []
    changes = [Change(name, per_a.get(name, 0.0), per_b.get(name, 0.0)) for name in set(per_a) | set(per_b)]
    changes.sort(key=lambda c: (-abs(c.change_us_per_tx), c.function))
    return changes[:limit]
