"""A published bundle rewritten as one who edits it would: its members and manifest
changed, every sha256 and SHA256SUMS made consistent again (unsigned: nothing else ties
it together), written as dbarena writes a bundle. For the tests of what verify refuses
and what it says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from dbarena.exchange import bundle

Change = Callable[[dict[str, bytes], dict[str, Any]], None]


def rewritten(members: dict[str, bytes], path: Path, change: Change) -> Path:
    """The bundle of `members` with `change` made to a copy of them and to its manifest,
    made consistent again and written to `path`."""
    members = dict(members)
    manifest = json.loads(members[bundle.MANIFEST])
    change(members, manifest)
    manifest["files"] = {n: bundle.sha256(d) for n, d in sorted(members.items()) if n.startswith("points/")}
    members[bundle.SUMS] = bundle.sums_text(manifest["files"])
    manifest["sha256sums"] = bundle.sha256(members[bundle.SUMS])
    members[bundle.MANIFEST] = bundle.json_bytes(manifest)
    path.write_bytes(bundle.write_tar(members, bundle.epoch_of(manifest["date"])))
    return path
