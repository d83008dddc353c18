"""Every engine family's reading of its own server series (waits.Family), in the order a
reading is tried: stats/bound.py asks each, so that it names none."""

from __future__ import annotations

from dbarena.serverside import mysql, postgres
from dbarena.serverside.waits import Family

FAMILIES: tuple[Family, ...] = (mysql.FAMILY, postgres.FAMILY)
# Where no family recognises the series (none sampled): the family whose chart is drawn.
DEFAULT = postgres.FAMILY
