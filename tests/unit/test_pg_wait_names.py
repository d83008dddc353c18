"""PostgreSQL's wait events as serverside/postgres.py classifies them, on the names
PostgreSQL itself generates: excerpts of wait_event_names.txt before and after 19
renamed the type BufferPin to Buffer (tests/fixtures/serverside/README.md), turned into
pg_stat_activity's type:event as generate-wait_event_types.pl does; and the names of 16
and before, which were written by hand, as this machine's PostgreSQL 15 reported them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dbarena.serverside import postgres
from dbarena.serverside.postgres import IO_EVENTS, WAL_EVENTS, counters_sql, wait_class
from dbarena.serverside.waits import IO, LOADGEN, LOCKS, SERVER_CPU, WAL

FIXTURES = Path(__file__).parent.parent / "fixtures" / "serverside"


def pg_stat_activity_names(text: str) -> set[str]:
    """type:event for each event line of a wait_event_names.txt, as PostgreSQL 17 on
    names them (generate-wait_event_types.pl): the type is the section less WaitEvent;
    LWLock and Lock events keep their names, the others are camel-cased word by word."""
    names, section = set(), None
    for line in text.splitlines():
        if line.startswith("Section: ClassName - "):
            section = line.rpartition("- ")[2]
            continue
        m = re.fullmatch(r'(\w+)\t+("\w.*\.")', line)
        if m is None or section is None:
            continue
        event = m[1] if section in ("WaitEventLWLock", "WaitEventLock") else \
            "".join(word[:1] + word[1:].lower() for word in m[1].split("_"))
        names.add(f"{section.removeprefix('WaitEvent')}:{event}")
    return names


PG18 = pg_stat_activity_names((FIXTURES / "wait_event_names-pg18dev.excerpt.txt").read_text())
PG19 = pg_stat_activity_names((FIXTURES / "wait_event_names-pg19.excerpt.txt").read_text())
# 16 and before: written by hand in wait_event.c (IO:WALSync, IO:BufFileRead), as the
# PostgreSQL 15 of this machine reported them in the captured series beside.
PG16 = {"IO:WALSync", "IO:WALWrite", "IO:WALInitSync", "IO:WALInitWrite", "IO:BufFileRead", "IO:BufFileWrite",
        "IO:DataFileRead", "IO:DataFilePrefetch", "IO:DataFileExtend", "IO:DataFileWrite", "IO:DataFileSync",
        "IO:DataFileImmediateSync", "BufferPin:BufferPin"}
# 19's first betas had WAIT FOR LSN's events under Client (commit 7a39f43), until
# "Move WAIT_FOR_WAL_* wait events from Client to IPC class" (back-patched to 19).
PG19_BETA = {"Client:WaitForWalFlush", "Client:WaitForWalReplay", "Client:WaitForWalWrite"}


def test_the_generated_names_are_pg_stat_activitys():
    assert {"IO:WalSync", "IO:BuffileRead", "Client:ClientRead", "LWLock:WALWrite", "Lock:transactionid",
            "BufferPin:BufferPin", "LWLock:BufferContent"} <= PG18
    assert {"Buffer:BufferCleanup", "Buffer:BufferShared", "Buffer:BufferShareExclusive", "Buffer:BufferExclusive",
            "IPC:WaitForWalFlush", "IPC:WaitForWalReplay", "IPC:WaitForWalWrite", "Timeout:CommitDelay",
            "IO:AioIoCompletion"} <= PG19
    # 19 has no BufferPin type and no BufferContent LWLock any more.
    assert not {n for n in PG19 if n.startswith("BufferPin:")} and "LWLock:BufferContent" not in PG19


def test_every_classified_name_is_one_postgresql_reports():
    """No typo hides an event: each name of the classes is in one version's list."""
    assert WAL_EVENTS | IO_EVENTS <= PG16 | PG18 | PG19 | PG19_BETA


@pytest.mark.parametrize("event, cls", [
    # 19: the type Buffer, both its pin and its content locks.
    ("Buffer:BufferCleanup", LOCKS), ("Buffer:BufferShared", LOCKS), ("Buffer:BufferShareExclusive", LOCKS),
    ("Buffer:BufferExclusive", LOCKS),
    # and what they were up to 18
    ("BufferPin:BufferPin", LOCKS), ("LWLock:BufferContent", LOCKS),
    # WAL, in every spelling
    ("IO:WALSync", WAL), ("IO:WalSync", WAL), ("IO:WalWrite", WAL), ("IO:WalInitSync", WAL), ("IO:WalInitWrite", WAL),
    ("LWLock:WALWrite", WAL), ("LWLock:WALInsert", WAL), ("LWLock:WALBufMapping", WAL),
    ("IPC:WaitForWalFlush", WAL), ("IPC:WaitForWalReplay", WAL), ("IPC:WaitForWalWrite", WAL),
    ("Client:WaitForWalFlush", WAL),  # not the load generator, under 19's first betas' type
    ("Timeout:CommitDelay", WAL),
    # I/O, 16's and 17's spellings, and 18's asynchronous I/O
    ("IO:BufFileRead", IO), ("IO:BuffileRead", IO), ("IO:BuffileWrite", IO), ("IO:DataFileRead", IO),
    ("IO:AioIoCompletion", IO), ("IO:AioIoUringExecution", IO),
    ("Client:ClientRead", LOADGEN), ("CPU", SERVER_CPU), ("Lock:transactionid", LOCKS),
    ("IPC:BufferIO", None), ("Activity:WalWriterMain", None),
])
def test_each_name_in_its_class(event, cls):
    assert wait_class(event) == cls


def test_every_name_of_each_version_has_the_class_its_type_says():
    for name in PG18 | PG19:
        kind = name.partition(":")[0]
        if kind in ("Lock", "LWLock", "BufferPin", "Buffer"):
            assert wait_class(name) == (WAL if name in WAL_EVENTS else LOCKS), name
        elif kind == "Client":
            assert wait_class(name) == LOADGEN, name


def test_pg15_captures_keep_their_classes():
    """The series this machine's PostgreSQL 15 stored read as they did before 17's
    and 19's names were added."""
    seen = set()
    for path in FIXTURES.glob("pg15-*.json"):
        seen |= {m[len("wait."):] for m in re.findall(r'"(wait\.[^"]+)"', path.read_text())}
    assert {n: wait_class(n) for n in seen} == {
        "CPU": SERVER_CPU, "IO:WALSync": WAL, "Client:ClientRead": LOADGEN, "Lock:tuple": LOCKS,
        "Lock:transactionid": LOCKS, "LWLock:WALWrite": WAL, "LWLock:LockManager": LOCKS, "IO:WALInitSync": WAL}


def test_pg_stat_lock_is_asked_of_19_only():
    assert "pg_stat_lock" not in counters_sql(180001)
    v19 = counters_sql(190000)
    assert "AS lock_waits" in v19 and "AS lock_fastpath_exceeded" in v19
    assert all("to_jsonb" in part for part in postgres.LOCK_STATS)
