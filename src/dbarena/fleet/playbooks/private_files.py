"""Files only the host's user reads, written into a checked working directory in one
step: a play's `command` task runs this (python3 -I -S -c, its text read on the controller)
with the directory as its argument and, on its stdin, a JSON object of file name ->
text (null: not written). together.yml writes a step's passwords and request with it:
as two copy tasks (each a stat, a transfer through the remote temporary directory and
a module run) they took 4-7 s of every point's plays on a busy machine; this is one
module run, and the text goes through no temporary file on either side.

Each file is written to a temporary name beside it (mode 0600, not following a link)
and renamed over it, so a reader never sees half of one; a name is a plain file name
in the directory, nothing else. Standard library only: it runs under the host's
python3, before anything of dbarena's runs there."""

import json
import os
import sys


def write(directory: str, files: "dict[object, object]") -> None:
    for name, text in files.items():
        if text is None:
            continue
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise SystemExit(f"not a file name: {name!r}")
        if not isinstance(text, str):
            raise SystemExit(f"{name}: its content is not text")
        temporary = os.path.join(directory, f".{name}.writing")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # (one left by an earlier, interrupted write keeps its own mode otherwise)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                fd = -1
                out.write(text)
        finally:
            if fd >= 0:
                os.close(fd)
        os.replace(temporary, os.path.join(directory, name))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: private_files.py DIRECTORY < {name: text, ...}")
    write(sys.argv[1], json.load(sys.stdin))
