"""`dbarena import BUNDLE`: a bundle verified first (verify.py), then its runs stored
with their provenance: each run's options hold `bundle` (the file's name and sha256,
whether it was signed, the key's fingerprint and the signer the allowed-signers file
named). The rows are those verify stored in its throwaway store, merged into the store
as `dbarena merge` merges another store (store/merge.py: new ids, each run once by its
UUID, every row checked at the store's edge), so that `results --json` of the imported
runs equals the publishing store's, ids aside. No derived figure is taken from the
manifest: the store computes them from those rows, so that a bundle of another estimator
version (verify.py) shows the figures recomputed here, whatever it published.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from dbarena.errors import StoreError
from dbarena.exchange import bundle
from dbarena.exchange.verify import Verified, throwaway_store, verify
from dbarena.lifecycle import state
from dbarena.records import JSON, JSONObject
from dbarena.store.database import Store
from dbarena.store.merge import merge

__all__ = ["Imported", "import_bundle", "is_bundle"]


@dataclass(frozen=True)
class Imported:
    verified: Verified
    runs: int  # added (runs already in the store, by UUID, are not added again)
    points: int


def is_bundle(path: Path) -> bool:
    """Whether a file is a bundle rather than a tool's output or a CSV: a tar whose
    first member is manifest.json (the first 512 bytes are its ustar header)."""
    if not path.is_file():  # (never opened: a FIFO would block its reader; import refuses it itself)
        return False
    try:
        with path.open("rb") as f:
            head = f.read(512)
    except OSError:
        return False
    return len(head) == 512 and head[:len(bundle.MANIFEST) + 1] == bundle.MANIFEST.encode() + b"\0" \
        and head[257:262] == b"ustar"


def provenance(verified: Verified) -> JSONObject:
    """What an imported run keeps of the bundle it came from (its options' `bundle`)."""
    return {"file": Path(verified.bundle.name).name, "sha256": bundle.sha256(verified.bundle.data),
            "signed": verified.signed, "key": verified.key, "signer": list[JSON](verified.principals) or None,
            "published_by": verified.bundle.manifest.get("published_by"),
            # The estimator its figures were published with (None: not recorded), and how
            # many of them this dbarena's recomputation, which is what the store shows, did not give.
            "estimator_version": verified.published_estimator, "differed": len(verified.differences)}


def import_bundle(into: Store, path: Path, allowed_signers: Path | None = None) -> Imported:
    """Verify the bundle (BundleProblem where it does not hold: nothing stored), then
    store its runs, all or nothing."""
    verified = verify(path, allowed_signers)
    with throwaway_store(verified.bundle, provenance(verified)) as (db, _):
        # The file counts as imported in the store it goes to (`store info`).
        db.record_import(bundle.sha256(verified.bundle.data), str(path), db.run_ids(), db.point_count())
        location = db.path
        assert location is not None
        try:
            runs, points = merge(into, location, say=lambda line: print(line.replace(str(location), str(path)),
                                                                          file=sys.stderr), store=False,
                                 scratch=state.temporary)
        except StoreError as exc:  # named by the bundle, not by the throwaway store it was read into
            raise StoreError(str(exc).replace(str(location), str(path))) from None
    return Imported(verified, runs, points)
