"""What a point keeps besides its figures, as the store reads it: the command its tool
ran, its raw output, its latency histogram, its server's series and its on-CPU profile.
Every row passes the store's edge (edge.py) first: one that does not fit is said once
and left out (raw output that does not read back is refused in one line). Store
(database.py) offers these as its own methods."""

from __future__ import annotations

from typing import Any, Iterable

from dbarena.errors import StoreError
from dbarena.interfaces import SqlConnection
from dbarena.records import JSONObject, ServerRecord, StoredProfile
from dbarena.store import edge
from dbarena.store.edge import Edge
from dbarena.store.encoding import chunks

__all__ = ["FileReads"]

_NO_HISTOGRAM = "that histogram is left out (its point's percentiles are the ones its tool printed)"
_NO_PROFILE = "that point's profile is left out"


class FileReads:
    """A point's files read from one store: its connection, its edge, what messages call
    it, and whether it has schema 22's profiles table."""

    def __init__(self, db: SqlConnection, edge_: Edge, location: str, profile_table: bool):
        self.db, self.edge, self.location, self.profile_table = db, edge_, location, profile_table

    def latency_histograms(self, point_ids: Iterable[int]) -> dict[int, JSONObject]:
        """point id -> its stored latency histogram, the JSON document latency.Latencies
        encoded (its decode reads it back, exchange/ carries it as it is); points without
        one are left out."""
        out: dict[int, JSONObject] = {}
        for chunk in chunks(sorted(set(point_ids))):
            rows = self.db.execute(
                f"SELECT point_id, record FROM latency_histograms WHERE point_id IN ({', '.join('?' * len(chunk))})",
                tuple(chunk)).fetchall()
            for pid, record in self.edge.check("latency_histograms", ("point_id", "record"), rows,
                                               lambda row: str(row[0]), _NO_HISTOGRAM):
                if (why := edge.histogram_fault(record)) is not None:
                    self.edge.report("latency_histograms", str(pid), "record", record, why, _NO_HISTOGRAM)
                else:
                    out[pid] = record
        return out

    def server_series(self, point_ids: Iterable[int], records: bool = True) -> dict[int, ServerRecord]:
        """point id -> its bound, evidence and figures as stored, and with `records` its
        series (the decoded ServerSeries JSON; None without); points the server was not
        sampled for are left out."""
        out: dict[int, ServerRecord] = {}
        names = ("point_id", "bound", "evidence", "figures", *(("record",) if records else ()))
        left_out = "that point's server figures are left out"
        for chunk in chunks(sorted(set(point_ids))):
            rows = self.db.execute(f"SELECT {', '.join(names)} FROM server_series WHERE point_id IN "
                                   f"({', '.join('?' * len(chunk))})", tuple(chunk)).fetchall()
            for row in self.edge.check("server_series", names, rows, lambda row: str(row[0]), left_out):
                faults = (("figures", edge.figures_fault(row[3]) if row[3] is not None else None),
                          ("record", edge.series_fault(row[4]) if records else None))
                misfit = next(((column, why) for column, why in faults if why is not None), None)
                if misfit is not None:
                    self.edge.report("server_series", str(row[0]), misfit[0], None, misfit[1], left_out)
                    continue
                out[row[0]] = ServerRecord(bound=row[1], evidence=row[2], figures=row[3],
                                           record=row[4] if records else None)
        return out

    def profiles(self, point_ids: Iterable[int], folded: bool = False) -> dict[int, StoredProfile]:
        """point id -> its on-CPU profile's summary, and with `folded` its folded stacks
        as text; points without a profile are left out. The summary alone reads no stacks
        (a read of every point)."""
        out: dict[int, StoredProfile] = {}
        if not self.profile_table or not self.db.execute("SELECT 1 FROM profiles LIMIT 1").fetchone():
            return out  # (most stores hold none: a query, not one a chunk of points)
        names = ("point_id", "frequency_hz", "symbols", "samples", "top", *(("codec", "folded") if folded else ()))
        for chunk in chunks(sorted(set(point_ids))):
            rows = self.db.execute(f"SELECT {', '.join(names)} FROM profiles WHERE point_id IN "
                                   f"({', '.join('?' * len(chunk))})", tuple(chunk)).fetchall()
            for row in self.edge.check("profiles", names, rows, lambda row: str(row[0]), _NO_PROFILE):
                faults = [("top", row[4], edge.top_fault(row[4]))]
                text: str | edge.Misfit | None = None
                if folded:
                    text = edge.unpacked(row[5], row[6])
                    faults.append(("folded", row[6], text.reason if isinstance(text, edge.Misfit)
                                   else edge.folded_fault(text)))
                misfit = next(((column, value, why) for column, value, why in faults if why is not None), None)
                if misfit is not None:
                    self.edge.report("profiles", str(row[0]), *misfit, _NO_PROFILE)
                    continue
                # (A misfit's text was said above: what is left is the stacks or, unasked, None.)
                out[row[0]] = StoredProfile(samples=row[3], top=row[4], frequency_hz=row[1], symbols=row[2],
                                            folded=text if isinstance(text, str) else None)
        return out

    def point_command(self, point_id: int) -> list[str] | None:
        """The command line a point's tool ran, as stored (no secrets: the store keeps
        none); None for a point that is not there or whose command does not read."""
        rows = self.db.execute("SELECT id, command FROM points WHERE id = ?", (point_id,)).fetchall()
        fit = self.edge.check("points", ("id", "command"), rows, lambda row: str(row[0]),
                              "its command is not shown", columns=("command",))
        if not fit or not isinstance(fit[0][1], list):
            return None
        return [str(arg) for arg in fit[0][1]]

    def raw_output(self, point_id: int) -> tuple[str, str]:
        """The tool's stdout and stderr of a point, verbatim. Output that cannot be read
        back (not a blob, not zlib, not UTF-8) is refused in one line: nothing else of
        it could be shown."""
        row = self.db.execute("SELECT codec, stdout, stderr FROM raw_outputs WHERE point_id = ?",
                              (point_id,)).fetchone()
        if row is None:
            raise StoreError(f"no point {point_id} in {self.location}")
        if not isinstance(row[0], str):
            raise StoreError(f"store {self.location}: raw_outputs row {point_id}, column codec: "
                             f"{edge.describe(row[0])} is not text")
        texts = []
        for column, blob in zip(("stdout", "stderr"), row[1:]):
            text = edge.unpacked(row[0], blob)
            if isinstance(text, edge.Misfit):
                raise StoreError(f"store {self.location}: raw_outputs row {point_id}, column {column}: "
                                 f"{edge.describe(blob)} {text.reason}")
            texts.append(text)
        return texts[0], texts[1]
