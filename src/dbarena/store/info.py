"""What `dbarena store info` shows of a store."""

from __future__ import annotations

from typing import Any

from dbarena.store.database import Store


def info(store: Store) -> dict[str, Any]:
    """What `dbarena store info` shows."""
    counts = {t: int(store.db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
              for t in ("runs", "points", "samples", "system_samples", "studies", "hosts", "imports",
                        "forgotten_runs")}
    raw = store.db.execute("SELECT COALESCE(SUM(LENGTH(stdout) + LENGTH(stderr)), 0) FROM raw_outputs").fetchone()
    return {"path": store.location, "backend": store.dialect.name,
            # The file's own version (a reader migrates an older one in memory only).
            "schema_version": store.migrated_from or store.version, "size_bytes": store.dialect.size_bytes(),
            **counts, "raw_output_bytes_compressed": int(raw[0]),
            # The labels of the runs that fit (a run that does not is said, as every read says it).
            "labels": sorted({r.label for r in store.runs()})}
