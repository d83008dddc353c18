"""store/verbatim.py: a store's runs and points added to another through Store.verbatim
(as verify adds a bundle's) read back as they were, every file of every point too
(Store.point_files, what publish reads); and nothing of it stays where one row fails."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from dbarena.errors import StoreError
from dbarena.store.database import Store
from dbarena.store.verbatim import SeriesRows, series_columns

STORES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"


def _copy_all(source: Store, into: Store) -> None:
    runs = source.runs()
    points = source.points(warmups=True)
    with into.verbatim() as add:
        for sha in sorted({r.study_sha256 for r in runs if r.study_sha256 is not None}):
            study = source.study(sha)
            assert study is not None
            add.study(study)
        for run in runs:
            add.run(run)
        for point in points:
            files = source.point_files(point.point_id)
            add.point(point, files.command, files.exit_code)
            add.raw_output(point.point_id, files.stdout, files.stderr)
            for table, series in (("samples", files.samples), ("system_samples", files.system_samples)):
                if series is not None:
                    add.series(table, point.point_id, series)
            if files.latency_histogram is not None:
                add.latency_histogram(point.point_id, files.latency_histogram)
            if files.server is not None:
                add.server_series(point.point_id, files.server)
            profile = source.profiles([point.point_id]).get(point.point_id)
            if files.profile is not None and profile is not None:
                add.profile(point.point_id, files.profile, profile.frequency_hz, profile.symbols)


# (capacity: latency histograms and a study; profiled: server series, system samples, profiles)
@pytest.mark.parametrize("fixture", ["capacity-two-labels.db", "profiled-sync-async.db"])
def test_a_stores_rows_added_verbatim_read_back_as_they_were(fixture: str, tmp_path: Path) -> None:
    shutil.copy(STORES / fixture, tmp_path / "source.db")
    with Store(tmp_path / "source.db") as source, Store(tmp_path / "copy.db", durable=False) as copy:
        _copy_all(source, copy)
        assert copy.runs() == source.runs()
        assert copy.points(warmups=True) == source.points(warmups=True)
        assert copy.run_ids() == source.run_ids() and copy.point_count() == source.point_count() > 0
        held = {"histogram": 0, "server": 0, "profile": 0, "system": 0}
        for point in source.points(warmups=True):
            files = source.point_files(point.point_id)
            assert copy.point_files(point.point_id) == files
            held["histogram"] += files.latency_histogram is not None
            held["server"] += files.server is not None
            held["profile"] += files.profile is not None
            held["system"] += files.system_samples is not None
        every = [p.point_id for p in source.points(warmups=True)]
        assert copy.profiles(every) == source.profiles(every)  # (the summary made again from the stacks)
    # Each fixture holds what it is here for (a file a point lacks is None, not empty).
    if fixture.startswith("capacity"):
        assert held["histogram"] > 0
    else:
        assert held["server"] > 0 and held["profile"] > 0 and held["system"] > 0


def test_a_points_series_come_in_the_tables_column_order_and_only_its_columns(tmp_path: Path) -> None:
    shutil.copy(STORES / "profiled-sync-async.db", tmp_path / "source.db")
    with Store(tmp_path / "source.db") as db:
        point = db.points()[0]
        files = db.point_files(point.point_id)
        assert files.samples is not None and files.samples.columns == tuple(series_columns("samples"))
        assert "point_id" not in files.samples.columns
        with pytest.raises(StoreError, match="no point 999999"):
            db.point_files(999999)


def test_a_row_that_fails_leaves_nothing_of_the_transaction(tmp_path: Path) -> None:
    shutil.copy(STORES / "profiled-sync-async.db", tmp_path / "source.db")
    with Store(tmp_path / "source.db") as source, Store(tmp_path / "copy.db") as copy:
        run = dataclasses.replace(source.runs()[0], study_sha256=None)
        point = source.points(run_id=run.id)[0]
        with pytest.raises(StoreError, match="UNIQUE constraint failed: samples"):  # (one second twice)
            with copy.verbatim() as add:
                add.run(run)
                add.point(point, ["pgbench"], 0)
                add.series("samples", point.point_id, SeriesRows(("second", "tps"), [(1.0, 5.0), (1.0, 6.0)]))
        assert copy.run_ids() == [] and copy.point_count() == 0
        with pytest.raises(StoreError, match="samples has no column tps; DROP TABLE runs"):
            with copy.verbatim() as add:
                add.run(run)
                add.series("samples", point.point_id, SeriesRows(("second", "tps; DROP TABLE runs"), []))
        assert copy.run_ids() == []
        with copy.verbatim() as add:
            add.run(run)
        assert copy.run_ids() == [run.id]
