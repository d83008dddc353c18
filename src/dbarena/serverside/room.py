"""The connections a server still lets the sampler's role or user open (model.Room):
which limit is the tightest, and the note a point keeps when its clients leave the
sampler none; what the readers (postgres.py, mysql.py) find and the sampler (sampler.py)
decides by, in a module of its own so that neither imports the other's."""

from __future__ import annotations

from dbarena.model import Room

__all__ = ["Room", "room_note", "tightest"]


def tightest(*rooms: Room | None) -> Room | None:
    """The room with the fewest free connections (None where no limit is known)."""
    known = [r for r in rooms if r is not None]
    return min(known, key=lambda r: r.free) if known else None


def room_note(room: Room, clients: int) -> str:
    room_text = (f"takes {room.free} more connection(s)" if room.free > 0 else "takes no more connection")
    who = "the server"
    if room.limit is not None:
        who = room.limit
        room_text = (f"lets in {room.free} more connection(s)" if room.free > 0 else "lets in no more connection")
    return f"not sampled: {who} {room_text} beside the sampler's, and the point opens {clients}: its clients come first"
