"""Variables handed to ansible-playbook as data that Ansible never templates.

Ansible renders any string of a variable that holds `{{ ... }}` when a play reads it,
and a template can run commands on the controller (`lookup('pipe', ...)`). What
dbarena hands a playbook comes from what a user was handed: a study's [machines], an
inventory's dbarena_label, the arguments of the hosts' runs. So a vars file is one
mapping tagged with YAML's `!unsafe`, which Ansible keeps, and everything in it, as
plain data wherever it is used (its "Unsafe or raw strings"): the one place where
dbarena's variables become Ansible's (fleet/controller.py, cloud/aws.py).

The tag is on the mapping, not on each string: ansible-core 2.19 resolves a tagged
scalar as if it were unquoted, so `!unsafe "yes"` would be a boolean and a time stamp
a date; inside a tagged mapping a quoted scalar stays a string. The file is YAML in
JSON's flow style, every string double-quoted with only printable ASCII in it (the rest
escaped as YAML's \\x, \\u and \\U), so that Ansible's loader (PyYAML, C or pure) reads
back exactly what was written.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Mapping

TAG = "!unsafe"


def _quoted(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code <= 0xFF:
            out.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _float(number: float) -> str:
    """A float as YAML 1.1 reads one (PyYAML's resolver wants a dot: 1e-05 would be a
    string)."""
    if math.isnan(number):
        return ".nan"
    if math.isinf(number):
        return ".inf" if number > 0 else "-.inf"
    text = repr(number)
    mantissa, e, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (f"e{exponent}" if e else "")


def text(value: object) -> str:
    """`value` (JSON-shaped: dicts with string keys, lists, tuples, strings, numbers,
    booleans, None) as YAML that Ansible reads as data, never as a template."""
    return f"{TAG} {_yaml(value)}"


def _yaml(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, Path):
        return _quoted(str(value))
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_quoted(str(k))}: {_yaml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    raise TypeError(f"not a value for Ansible: {type(value).__name__}")


def write(path: Path, variables: Mapping[str, object]) -> None:
    """A vars file for `ansible-playbook -e @PATH`, readable by its owner only from its
    creation on."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text(variables) + "\n")
    os.chmod(path, 0o600)
