"""bulk.py: the collector's freeze after a large read, and never in `serve`."""

from __future__ import annotations

import gc

import pytest

from dbarena import bulk


@pytest.fixture
def unfrozen(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(bulk, "_freezing", True)
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_command_that_keeps_a_large_read_freezes_and_a_small_one_does_not(unfrozen) -> None:
    bulk.keep(9_999)
    assert gc.get_freeze_count() == 0
    bulk.keep(10_000)
    assert gc.get_freeze_count() > 0


def test_a_serving_process_never_freezes(unfrozen, tmp_path) -> None:
    """`serve` reads request after request: a freeze would keep for good the reference
    cycles earlier requests left for the collector."""
    from dbarena.serve.app import create_app

    create_app(tmp_path / "absent.db")  # (the store is opened on the first request)
    bulk.keep(100_000)
    assert gc.get_freeze_count() == 0
