"""run/profiling.py without perf: what `check` says where perf is missing or may not
sample (a fake executor), and where perf finds a binary's function names (ELF files
written here: a symbol table, separate debug information by build id, dynamic symbols
alone)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from dbarena.errors import ToolMissing
from dbarena.execute import Completed
from dbarena.run import profiling
from dbarena.run.profiling import Profiler, symbol_source


class Answers:
    """An executor that answers each command with what `answer` says (or raises it)."""

    def __init__(self, answer):  # type: ignore[no-untyped-def]
        self.answer = answer
        self.argvs: list[tuple[str, ...]] = []

    def run(self, argv, **kw):  # type: ignore[no-untyped-def]
        self.argvs.append(tuple(argv))
        found = self.answer(tuple(argv))
        if isinstance(found, Exception):
            raise found
        return found

    def spawn(self, argv, **kw):  # type: ignore[no-untyped-def]
        raise AssertionError("check() starts nothing in the background")


def _done(argv: tuple[str, ...], code: int = 0, out: str = "", err: str = "") -> Completed:
    return Completed(argv=argv, returncode=code, stdout=out, stderr=err, elapsed_s=0.1)


def test_perf_missing_is_said_in_words() -> None:
    executor = Answers(lambda argv: ToolMissing("perf not found"))
    why = Profiler(executor).check()  # type: ignore[arg-type]
    assert why is not None and why.startswith("perf is not installed (not on PATH")


def test_perf_that_may_not_sample_says_perfs_own_reason() -> None:
    def answer(argv: tuple[str, ...]) -> Completed:
        if argv[1] == "--version":
            return _done(argv, out="perf version 6.1.187\n")
        return _done(argv, 255, err="\n[ perf record: nothing ]\nError:\nNo permission to enable cpu-clock event.\n")

    executor = Answers(answer)
    profiler = Profiler(executor, frequency_hz=49)  # type: ignore[arg-type]
    why = profiler.check()
    assert why is not None and why.startswith("perf may not sample here: Error:"), why
    assert profiler.version == "perf version 6.1.187"
    record = executor.argvs[1]
    assert record[:9] == ("perf", "record", "-e", "cpu-clock:I", "-F", "49", "-g", "--no-buildid-cache", "-a")
    assert record[-2:] == ("--", "true")


def test_perf_that_works_is_no_problem() -> None:
    executor = Answers(lambda argv: _done(argv, out="perf version 6.1.187\n"))
    assert Profiler(executor).check() is None  # type: ignore[arg-type]


def test_the_record_command_samples_every_cpu_enabled_through_its_fifo(tmp_path: Path) -> None:
    argv = Profiler(Answers(lambda a: _done(a)), frequency_hz=99).argv(tmp_path)  # type: ignore[arg-type]
    assert argv[:9] == ["perf", "record", "-e", "cpu-clock:I", "-F", "99", "-g", "--no-buildid-cache", "-a"]
    assert argv[argv.index("-D") + 1] == "-1"
    assert argv[argv.index("--control") + 1] == f"fifo:{tmp_path / 'perf.ctl'},{tmp_path / 'perf.ack'}"
    assert argv[-2:] == ["-o", str(tmp_path / "perf.data")] and "-p" not in argv


def _elf(path: Path, sections: dict[str, bytes]) -> Path:
    """A 64-bit little-endian ELF file of only these sections (and .shstrtab)."""
    names = [""] + list(sections) + [".shstrtab"]
    strtab = b"".join(n.encode() + b"\0" for n in names)
    offsets = [sum(len(n) + 1 for n in names[:k]) for k in range(len(names))]
    bodies = [b""] + list(sections.values()) + [strtab]
    data = bytearray(64)
    places = []
    for body in bodies:
        places.append((len(data), len(body)))
        data += body
    shoff = len(data)
    for k, (offset, size) in enumerate(places):
        data += struct.pack("<IIQQQQIIQQ", offsets[k], 1 if k else 0, 0, 0, offset, size, 0, 0, 1, 0)
    head = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    head += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(bodies), len(bodies) - 1)
    data[:64] = head
    path.write_bytes(bytes(data))
    return path


def _build_id_note(build_id: bytes) -> bytes:
    return struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id


def test_where_perf_finds_the_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiling, "_DEBUG", tmp_path / "debug")
    full = _elf(tmp_path / "mariadbd", {".dynsym": b"x", ".symtab": b"y"})
    assert symbol_source(full) == f"{full}: symbol table (.symtab)"
    dynamic = _elf(tmp_path / "postgres", {".dynsym": b"x", ".note.gnu.build-id": _build_id_note(b"\xab\xcd\xef")})
    assert symbol_source(dynamic) == (f"{dynamic}: dynamic symbols only (.dynsym: functions it does not export "
                                      "show as [postgres])")
    debug = tmp_path / "debug" / ".build-id" / "ab" / "cdef.debug"
    debug.parent.mkdir(parents=True)
    debug.write_bytes(b"")
    assert symbol_source(dynamic) == f"{dynamic}: separate debug information ({debug})"
    text = tmp_path / "script.sh"
    text.write_text("#!/bin/sh\n")
    assert symbol_source(text) == f"{text}: no symbols perf can read"
    assert symbol_source(tmp_path / "absent") == f"{tmp_path / 'absent'}: no symbols perf can read"
