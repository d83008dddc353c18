"""The store's edge: every value read back is checked against what its column holds
before anything above the store sees it.

SQLite keeps whatever a cell is given (a number as text, a blob where JSON was, NaN or
infinity in a figure), and a store may have been edited by hand or written by another
tool. What each column must hold is declared once, in schema.py (its type, NOT NULL, and
`holds`: JSON, a timestamp, a count, a figure); `Edge` checks the rows a read returns
against it. A row that does not fit is reported once, one line on stderr naming the
store, table, row and column, and left out of what is read (the reader's `consequence`
says what that means for the user); where leaving it out cannot give a sound answer the
reader raises StoreError (one line, exit 2) instead. Never a traceback.

The checks run a column at a time over all the rows of a read (type sets and sums are
computed in C), and only a column that fails that is looked at value by value: a read of
10 k points pays a few milliseconds.
"""

from __future__ import annotations

import binascii
import math
import operator
import sys
import zlib
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from dbarena.errors import StoreError
from dbarena.limits import printable
from dbarena.stats import profiles
from dbarena.store.encoding import unpack
from dbarena.store.schema import TABLES, Column

__all__ = ["Edge", "Misfit", "COLUMNS", "fault", "describe", "decoder", "DERIVED_NUMBERS", "sure_fit_sql",
           "unpacked"]

# table -> column name -> its declaration (schema.py): what a value read must be.
COLUMNS: dict[str, dict[str, Column]] = {t.name: {c.name: c for c in t.columns} for t in TABLES}

_NONE = type(None)
_INTEGERS = frozenset({int, _NONE})
_NUMBERS = frozenset({int, float, _NONE})
_TEXTS = frozenset({str, _NONE})
_BLOBS = frozenset({bytes, memoryview, _NONE})  # (psycopg may hand bytea over as a memoryview)


class Misfit:
    """A JSON cell that does not decode to what its column holds (its reason)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


def describe(value: Any) -> str:
    """A value as a line may quote it: short, printable, its kind clear."""
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, memoryview)):
        return f"a blob of {len(value)} bytes"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return repr(printable(shown))
    return repr(value)


def _kind(column: Column) -> str:
    return column.holds or column.type


def fault(column: Column, value: Any) -> str | None:
    """Why `value` does not fit `column` (words after the value: "is not a number"), or
    None when it fits. JSON columns are decoded by `decode`, not here."""
    if value is None:
        return "where a value must be" if column.not_null else None
    kind = _kind(column)
    if kind in ("integer", "bigint", "count"):
        if type(value) is not int:
            return "is not an integer"
        return "is negative where a count must be" if kind == "count" and value < 0 else None
    if kind in ("real", "figure"):
        if type(value) not in (int, float):
            return "is not a number"
        if not math.isfinite(value):
            return "is not a finite number"
        return "is negative where a figure must be" if kind == "figure" and value < 0 else None
    if kind == "blob":
        return None if isinstance(value, (bytes, memoryview)) else "is not a blob"
    if not isinstance(value, str):
        return "is not text"
    if kind == "timestamp":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return "is not a date and time (ISO 8601)"
    return None


def _column_fits(column: Column, values: list[Any]) -> bool:
    """Whether every value fits, decided cheaply (False: look at each)."""
    kind = _kind(column)
    types = set(map(type, values))
    if column.not_null and _NONE in types:
        return False
    if kind in ("integer", "bigint", "count"):
        if not types <= _INTEGERS:
            return False
        return kind != "count" or min(filter(None, values), default=0) >= 0  # (0 is not < 0 either)
    if kind in ("real", "figure"):
        if not types <= _NUMBERS:
            return False
        present = [v for v in values if v is not None]
        # A sum is finite only when every value is (an overflow to infinity merely
        # sends the column to the slow path, which finds nothing).
        return math.isfinite(sum(present)) and (kind != "figure" or min(present, default=0) >= 0)
    if kind == "blob":
        return types <= _BLOBS
    if not types <= _TEXTS:
        return False
    if kind == "timestamp":
        parse = datetime.fromisoformat
        try:
            for value in values:
                if value is not None:
                    parse(value)
        except ValueError:
            return False
    return True


def sure_fit_sql(table: str, alias: str) -> str:
    """An SQLite condition, never NULL, true of a row of `table` (as `alias`) only where
    `fault` would find nothing in any of its columns: what a read of millions of rows
    (merge's per-second series) asks SQL first, so that Python looks only at the rows it
    is not true of. It decides nothing: a row it is not true of may still fit (a real
    above 1e308; JSON and timestamps are never sure), and Edge.check decides about those
    and says why. A unit test holds it to `fault` on hostile values."""
    parts = []
    for column in COLUMNS[table].values():
        kind, name = _kind(column), f"{alias}.{column.name}"
        if kind in ("integer", "bigint", "count"):
            sure = f"typeof({name}) = 'integer'" + (f" AND {name} >= 0" if kind == "count" else "")
        elif kind in ("real", "figure"):
            # A range alone: SQLite sorts text and blobs after every number, keeps NaN as
            # NULL, and infinity falls outside (a typeof() test too costs a third more).
            sure = f"{name} BETWEEN {'0' if kind == 'figure' else '-1e308'} AND 1e308"
        elif kind in ("blob", "text"):
            sure = f"typeof({name}) = '{kind}'"
        else:
            sure = "0"
        parts.append(f"({name} {'IS NOT NULL AND' if column.not_null else 'IS NULL OR'} ({sure}))")
    return " AND ".join(parts)


# The keys of JSON objects that readers compute with, and what each must be where it is
# present: a "count" (an integer >= 0), a "number" (finite), an "object", a "list" of
# objects, or a nested declaration. A key not named here is shown, never computed with.
_HARDWARE = {k: "count" for k in ("hardware_threads", "effective_hardware_threads", "usable_hardware_threads",
                                  "physical_cores", "usable_physical_cores", "server_physical_cores",
                                  "server_hardware_threads", "memory_bytes")}
SHAPES: dict[tuple[str, str], dict[str, Any]] = {
    ("runs", "host_facts"): {**_HARDWARE, "cpu_quota_cores": "number"},
    ("hosts", "facts"): {**_HARDWARE, "cpu_quota_cores": "number"},  # (the same facts, kept once per host)
    ("runs", "target_facts"): {**_HARDWARE, "settings": "object", "non_default_settings": "object",
                               "key_variables": "object"},
    ("runs", "options"): {"cpus": {"server_threads": "count", "server_cores": "count"}, "together": "object"},
    ("points", "details"): {"together": {"parts": "list"}, "load_generators": "count"},
}


def _shape_fault(value: dict[str, Any], shape: Mapping[str, Any]) -> str | None:
    for key, want in shape.items():
        got = value.get(key)
        if got is None:
            continue
        if isinstance(want, dict):
            if not isinstance(got, dict):
                return f"holds {key} {describe(got)}, not a JSON object"
            if (why := _shape_fault(got, want)) is not None:
                return why.replace("holds ", f"holds {key}.", 1)
        elif want == "count" and (type(got) is not int or got < 0):
            return f"holds {key} {describe(got)}, not a count"
        elif want == "number" and not _is_number(got):
            return f"holds {key} {describe(got)}, not a number"
        elif want == "object" and not isinstance(got, dict):
            return f"holds {key} {describe(got)}, not a JSON object"
        elif want == "list" and not (isinstance(got, list) and all(isinstance(v, dict) for v in got)):
            return f"holds {key} {describe(got)}, not a list of JSON objects"
    return None


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def json_fault(column: Column, value: Any, shape: Mapping[str, Any] | None = None) -> str | None:
    """Why a JSON value (decoded) does not fit its column: an object where `holds` is
    "json" (with the keys SHAPES declares as declared), a list where it is "json-list"."""
    if value is None:
        return None
    if column.holds == "json-list":
        return None if isinstance(value, list) else "is not a JSON list"
    if not isinstance(value, dict):
        return "is not a JSON object"
    return _shape_fault(value, shape or {})


def decoder(column: Column, then: Callable[[Any], Any] = lambda value: value,
            shape: Mapping[str, Any] | None = None) -> Callable[[Any], Any]:
    """JSON text -> its value, each distinct text decoded once (the points of one
    configuration share their params, options and config); a text that does not decode,
    or decodes to something else than the column holds, -> a Misfit."""
    seen: dict[str, Any] = {}

    def decode(text: Any) -> Any:
        if text is None or (text == "" and not column.not_null):  # (older stores wrote '' for none)
            return None
        try:
            return seen[text]
        except KeyError:
            pass
        except TypeError:  # a blob (bytes are hashable; a memoryview is not)
            return Misfit("is not JSON text")
        if not isinstance(text, str):
            value: Any = Misfit("is not JSON text")
        else:
            try:
                decoded = orjson.loads(text)
            except orjson.JSONDecodeError:
                value = Misfit("is not valid JSON")
            else:
                why = json_fault(column, decoded, shape)
                value = Misfit(why) if why is not None else then(decoded)
        seen[text] = value
        return value

    return decode


# The derived figures analysis.analyse_point caches (point_derived.fields): those that
# are a number or None. A unit test holds this to what analyse_point returns.
DERIVED_NUMBERS = ("steady_start_s", "steady_tps", "tps_ci_low", "tps_ci_high", "cv", "trend_pct",
                   "cpu_busy_pct", "cpu_iowait_pct", "server_cpu", "loadgen_cpu", "neighbour_cpu", "steal_cpu",
                   "context_switches_per_s", "disk_read_bytes_per_s", "disk_write_bytes_per_s")


_DERIVED_GET = operator.itemgetter(*DERIVED_NUMBERS)


def derived_faults(found: Mapping[int, Any]) -> dict[int, str]:
    """point id -> why its cached derived figures cannot be trusted (derived_fault), for
    those that cannot: a field at a time over all of them first (what a warm read of
    10 k points pays), point by point only where a field does not fit."""
    figures = list(found.values())
    if set(map(type, figures)) == {dict}:
        try:  # (itemgetter and zip: in C; a field missing goes point by point below)
            numbers = list(zip(*map(_DERIVED_GET, figures)))
        except KeyError:
            numbers = [(None, math.inf)]
        dips: list[Any] = [d for f in figures for d in (f.get("dips_s") if type(f.get("dips_s")) is list else [None])]
        warnings: list[Any] = [w for f in figures
                               for w in (f.get("warnings") if type(f.get("warnings")) is list else [None])]
        if (all(set(map(type, column)) <= _NUMBERS and math.isfinite(sum(filter(None, column))) for column in numbers)
                and {type(f.get("metric")) for f in figures} == {str}
                and {type(f.get("samples")) for f in figures} == {int} and min(f["samples"] for f in figures) >= 0
                and set(map(type, dips)) <= {int, float} and math.isfinite(sum(dips))
                and set(map(type, warnings)) <= {dict}
                and {type(w.get("code")) for w in warnings} | {type(w.get("message")) for w in warnings} <= {str}):
            return {}
    return {pid: why for pid, fields in found.items() if (why := derived_fault(fields)) is not None}


def derived_fault(fields: Any) -> str | None:
    """Why cached derived figures (decoded JSON) cannot be trusted, or None."""
    if not isinstance(fields, dict):
        return "is not a JSON object"
    for name in DERIVED_NUMBERS:
        value = fields.get(name)
        if value is not None and not _is_number(value):
            return f"holds {name} {describe(value)}, not a number"
    if not isinstance(fields.get("metric"), str):
        return "holds no metric"
    samples = fields.get("samples")
    if type(samples) is not int or samples < 0:
        return "holds no count of samples"
    dips = fields.get("dips_s")
    if not isinstance(dips, list) or not all(map(_is_number, dips)):
        return "holds dips that are not a list of seconds"
    warnings = fields.get("warnings")
    if not isinstance(warnings, list) or not all(
            isinstance(w, dict) and isinstance(w.get("code"), str) and isinstance(w.get("message"), str)
            for w in warnings):
        return "holds warnings that are not a list of {code, message}"
    return None


def histogram_fault(record: Any) -> str | None:
    """Why a latency histogram record (decoded JSON) cannot be read, or None: its
    figures, and that its HDR encoding is base64 text."""
    if not isinstance(record, dict):
        return "is not a JSON object"
    for name in ("count", "sum_us", "over_range"):
        value = record.get(name)
        if value is not None and (type(value) is not int or value < 0):
            return f"holds {name} {describe(value)}, not a count"
    for name in ("min_us", "max_us", "sampling_rate"):
        value = record.get(name)
        if value is not None and not _is_number(value):
            return f"holds {name} {describe(value)}, not a number"
    outcomes = record.get("outcomes")
    if outcomes is not None and not (isinstance(outcomes, dict) and all(
            type(v) is int and v >= 0 for v in outcomes.values())):
        return "holds outcomes that are not counts"
    if not isinstance(record.get("source") or "", str) or not isinstance(record.get("hdr") or "", str):
        return "holds a source or an HDR encoding that is not text"
    try:  # (decoding the HDR itself costs 90 us a point: its reader, analysis.pooled_latency, guards that)
        binascii.a2b_base64(record.get("hdr") or "", strict_mode=True)
    except binascii.Error:
        return "holds an HDR encoding that is not base64"
    return None


def _numbers_or_none(values: Any) -> bool:
    return isinstance(values, list) and all(v is None or _is_number(v) for v in values)


def series_fault(record: Any) -> str | None:
    """Why a server series record (decoded JSON, serverside.series.ServerSeries.encode)
    cannot be read, or None."""
    if not isinstance(record, dict):
        return "is not a JSON object"
    if not isinstance(record.get("engine"), str):
        return "holds no engine"
    if not _numbers_or_none(record.get("seconds") or []) or None in (record.get("seconds") or []):
        return "holds seconds that are not numbers"
    series = record.get("series") or {}
    if not isinstance(series, dict) or not all(map(_numbers_or_none, series.values())):
        return "holds series that are not lists of numbers"
    notes = record.get("notes") or []
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        return "holds notes that are not text"
    if not isinstance(record.get("stopped") or "", str):
        return "holds a reason for stopping that is not text"
    cpu = record.get("sampler_cpu_s")
    return None if cpu is None or _is_number(cpu) else "holds a sampler CPU time that is not a number"


def unpacked(codec: Any, blob: Any) -> str | Misfit:
    """One stream of a raw output (its codec, its compressed bytes) read back as text, or
    a Misfit saying why it cannot be."""
    try:
        return unpack(codec, bytes(blob))
    except StoreError as exc:  # a codec this dbarena does not know
        return Misfit(f"cannot be read ({exc})")
    except (TypeError, ValueError, zlib.error) as exc:  # (UnicodeDecodeError is a ValueError)
        return Misfit(f"cannot be read ({exc})")


def top_fault(top: Any) -> str | None:
    """Why a profile's top functions (decoded JSON: [{function, share}], stats/profiles.top)
    cannot be read, or None."""
    if not isinstance(top, list):
        return "is not a JSON list"
    for entry in top:
        if not isinstance(entry, dict) or not isinstance(entry.get("function"), str):
            return "holds an entry that is not {function, share}"
        share = entry.get("share")
        if share is None or not _is_number(share) or not 0 <= share <= 1:
            return f"holds a share {describe(share)}, not a number from 0 to 1"
    return None


def folded_fault(text: str) -> str | None:
    """Why a profile's folded stacks (text, uncompressed) cannot be read, or None."""
    try:
        profiles.parse_folded(text)
    except profiles.FoldedProblem as exc:
        return f"holds folded stacks that do not read ({exc})"
    return None


def figures_fault(figures: Any) -> str | None:
    """Why a server series' figures (decoded JSON: name -> number) cannot be read."""
    if not isinstance(figures, dict):
        return "is not a JSON object"
    return None if all(map(_is_number, figures.values())) else "holds a figure that is not a number"


class Edge:
    """The checks of one store's reads, and the lines they print: each (table, row,
    column) once for the life of the store object (a command that reads the runs three
    times says so once)."""

    def __init__(self, location: str, say: Callable[[str], None] | None = None):
        self.location = location
        self.say = say or _to_stderr
        self._said: set[tuple[str, str, str]] = set()

    def report(self, table: str, row: str, column: str, value: Any, why: str, consequence: str) -> None:
        """One line: which cell does not fit, why, and what the read did about it."""
        if (table, row, column) in self._said:
            return
        self._said.add((table, row, column))
        shown = "it" if why.startswith("holds") or why.startswith("does") else describe(value)
        self.say(f"store {self.location}: {table} row {row}, column {column}: {shown} {why}; {consequence}")

    def check(self, table: str, names: Sequence[str], rows: list[tuple[Any, ...]],
              row_name: Callable[[tuple[Any, ...]], str], consequence: str,
              decoders: Mapping[str, Callable[[Any], Any]] | None = None, columns: Iterable[str] | None = None,
              lenient: Mapping[str, tuple[Callable[[], Any], str]] | None = None) -> list[list[Any]]:
        """The rows (tuples of `names`' values, read from `table`) that fit, as lists,
        their JSON columns decoded (`decoders`: column -> a decoder(); default one for
        every JSON column among `names`). A row that does not fit is reported (its first
        misfit, named by `row_name`) and left out. `columns`: only these are checked
        (default: every name that is a column of `table`). `lenient`: columns whose misfit
        leaves out the value, not the row: column -> (what to put in its place, what to
        say about it)."""
        declared = COLUMNS[table]
        wanted = [n for n in (columns if columns is not None else names) if n in declared]
        json_decoders = dict(decoders or {})
        for name in wanted:
            if declared[name].holds in ("json", "json-list") and name not in json_decoders:
                json_decoders[name] = decoder(declared[name], shape=SHAPES.get((table, name)))
        lenient = lenient or {}
        out = [list(row) for row in rows]
        by_column = list(zip(*rows))  # (one transposition, in C, for the column-wise checks)
        bad: dict[int, tuple[str, Any, str]] = {}

        def misfit(i: int, k: int, name: str, why: str) -> None:
            if name in lenient:  # the value left out, the row kept
                fallback, instead = lenient[name]
                self.report(table, row_name(rows[i]), name, rows[i][k], why, instead)
                out[i][k] = fallback()
            elif i not in bad:
                bad[i] = (name, rows[i][k], why)

        for name in wanted:
            k = names.index(name)
            column = declared[name]
            if name in json_decoders:
                decode = json_decoders[name]
                for i, row in enumerate(out):
                    value = row[k] = decode(row[k])
                    if type(value) is Misfit:
                        misfit(i, k, name, value.reason)
                    elif value is None and column.not_null:
                        misfit(i, k, name, "where a value must be")
                continue
            values = list(by_column[k]) if by_column else []
            if _column_fits(column, values):
                continue
            for i, value in enumerate(values):
                if (why := fault(column, value)) is not None:
                    misfit(i, k, name, why)
        if not bad:
            return out
        for i, (name, value, why) in sorted(bad.items()):
            self.report(table, row_name(rows[i]), name, value, why, consequence)
        return [row for i, row in enumerate(out) if i not in bad]


def _to_stderr(line: str) -> None:
    # As the CLI's other notices (`dbarena: ...` on stderr), printable: the value quoted
    # came from the store and must not act on a terminal.
    print(f"dbarena: {printable(line)}", file=sys.stderr, flush=True)
