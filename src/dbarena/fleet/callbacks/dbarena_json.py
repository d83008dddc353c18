# An Ansible stdout callback (loaded by `dbarena fleet` through ANSIBLE_CALLBACK_PLUGINS):
# every task's result per host, and the play's stats, as one JSON document at the end.
# ansible-core no longer ships a json callback (it moved to the ansible.posix
# collection), and dbarena should not need a collection installed. Results of no_log
# tasks arrive censored by Ansible before they reach a callback.
from __future__ import annotations

import json
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: dbarena_json
    type: stdout
    short_description: task results per host as one JSON document, for dbarena fleet
    description: Every task's result per host and the stats, printed as JSON at the end.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "dbarena_json"

    # Ansible's task, result and stats objects are untyped (ansible-core ships no stubs): Any.
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (task name, host -> its result): a task's results, as the playbook runs it (this
        # module imports nothing of dbarena: Ansible loads it by path).
        self.tasks: list[tuple[str, dict[str, dict[str, object]]]] = []

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self.tasks.append((str(task.get_name()), {}))

    def _record(self, result: Any, **flags: bool) -> None:
        if not self.tasks:
            return
        body: dict[str, object] = dict(result._result)
        body.update(flags)
        self.tasks[-1][1][str(result._host.get_name())] = body

    def v2_runner_on_ok(self, result: Any, **kwargs: Any) -> None:
        self._record(result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False, **kwargs: Any) -> None:
        self._record(result, failed=True)

    def v2_runner_on_unreachable(self, result: Any, **kwargs: Any) -> None:
        self._record(result, unreachable=True)

    def v2_runner_on_skipped(self, result: Any, **kwargs: Any) -> None:
        self._record(result, skipped=True)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        summary = {host: stats.summarize(host) for host in sorted(stats.processed.keys())}
        self._display.display(json.dumps({"plays": [{"tasks": [{"task": {"name": name}, "hosts": hosts} for name, hosts in self.tasks]}],
                                      "stats": summary}, default=str))
