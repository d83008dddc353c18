"""One step of a `fleet run --together`: one short play of playbooks/together.yml (or
step.yml, when it writes nothing and starts nothing first) that runs a hidden `dbarena
fleet` command on some hosts, and their answers read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from dbarena.fleet.controller import Ansible
from dbarena.fleet.inventory import Host
from dbarena.fleet.messages import Status
from dbarena.records import JSONObject

STEP_TIMEOUT_S = 600.0


@dataclass
class Answer:
    """What one host said to a step: its JSON, or why there is none."""

    data: JSONObject | None
    problem: str | None = None


class Step(Protocol):
    """A step (Steps, or a test's stand-in): each host's answer, by name."""

    def __call__(self, hosts: list[Host], args: list[str], *, request: dict[str, str] | None = None,
                 detach: bool = False, secrets: bool = False, timeout_s: float = STEP_TIMEOUT_S,
                 detached: str = "host-point") -> dict[str, Answer]: ...


def play(ansible: Ansible, hosts: list[Host], args: list[str], *, request: dict[str, str] | None = None,
         detach: bool = False, secrets: bool = False, timeout_s: float = STEP_TIMEOUT_S,
         detached: str = "host-point") -> dict[str, Answer]:
    """The `dbarena fleet` command args (with {w}: the host's working directory) on each
    host; its last line of output, read as JSON. `detach`: started detached (the
    `detached` command), the step's own command waits for it to say where it is."""
    if not hosts:
        return {}
    extra: dict[str, object] = {"args": {h.name: [a.replace("{w}", h.workdir) for a in args] for h in hosts},
                                "dbarena_detach": detach, "dbarena_detached": detached, "dbarena_secrets": secrets}
    if request is not None:
        extra["dbarena_request"] = request
    # A step with nothing to write or start first (most of them) is one task a host (step.yml).
    book = "together.yml" if request is not None or detach or secrets else "step.yml"
    results = ansible.play(book, hosts, extra, timeout_s=timeout_s)
    out: dict[str, Answer] = {}
    for h in hosts:
        result = results[h.name]
        if result.unreachable or result.failed:
            found = result.failure
            out[h.name] = Answer(None, ("unreachable: " if result.unreachable else "") + found.short)
            continue
        stdout = str(result.task("step").get("stdout", "")).strip()
        try:
            out[h.name] = Answer(json.loads(stdout.splitlines()[-1]))
        except (ValueError, IndexError):
            out[h.name] = Answer(None, f"no answer: {stdout[:200] or 'no output'}")
    return out


def statuses(answers: dict[str, Answer]) -> dict[str, Status]:
    """The hosts' answers to host-point-ctl as statuses; one that says nothing readable
    is a failed one, with why."""
    out = {}
    for name, answer in answers.items():
        try:
            out[name] = Status("failed", reason=answer.problem) if answer.data is None else \
                Status.from_json(answer.data)
        except (ValueError, TypeError) as exc:
            out[name] = Status("failed", reason=f"an answer that does not read: {' '.join(str(exc).split())}")
    return out
