"""What every benchmark tool shares: defaults for the interfaces.Tool methods a tool
does not need, and the checking of a study's tool options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from dbarena.errors import UsageError
from dbarena.interfaces import Client, ConsistencyCheck, DbApiConnection, PointInput
from dbarena.stats.latency import Latencies
from dbarena.model import Measurement, PointSpec, Sample, ToolParam

_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def option_value(name: str, value: Any, *, true: str = "on", false: str = "off") -> str:
    """A TOML value as the text a tool's --name=value takes."""
    if isinstance(value, bool):
        return true if value else false
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value and "\n" not in value:
        return value
    raise UsageError(f"option {name!r}: expected a number, true/false or a one-line text, not {value!r}")


class ToolBase:
    """Defaults: no dataset, no secret file, no verification, options refused."""

    name = ""
    binary = ""
    params: tuple[ToolParam, ...] = ()
    timed = True
    verifies = False  # checks the data after each point (verify)
    open_loop_refusal: str | None = "offers no rate of its own"
    whole_rates = False
    # Options the tool's command line controls itself (connection, concurrency,
    # duration, dataset size): a study that sets them is refused, naming the key
    # that does it instead.
    reserved: Mapping[str, str] = {}
    # True: any other --name=value is passed through; False: only `known` ones.
    passthrough = False
    known: Mapping[str, str] = {}  # name -> what it does (for errors and the docs)
    # The option that sets how often the tool reports (the per-second series), if a
    # study may set it: --quick keeps it within a shortened point (study/apply.py).
    interval_option: str | None = None
    # Connections a point holds besides one per client (mysqlslap keeps its own while
    # its client threads run): the server sampler leaves room for them (serverside/).
    extra_connections = 0

    def check_options(self, options: Mapping[str, Any], base_dir: Path | None = None) -> dict[str, str]:
        """Options as text, in a stable order; a UsageError naming the option otherwise."""
        checked = {}
        for name in sorted(options):
            if not _OPTION_NAME.match(name):
                raise UsageError(f"option {name!r}: not an option name (lower-case letters, digits, - and _)")
            if name in self.reserved:
                raise UsageError(f"option {name!r} is set by dbarena ({self.reserved[name]})")
            if not self.passthrough and name not in self.known:
                raise UsageError(f"unknown {self.name} option {name!r} (known: {', '.join(sorted(self.known))})")
            checked[name] = self.check_option(name, options[name], base_dir)
        return checked

    def check_option(self, name: str, value: Any, base_dir: Path | None) -> str:
        return option_value(name, value)

    # Options that make the tool run a command or load code, and what each does: a
    # study file holding one needs the user's consent (study/consent.py).
    code_options: Mapping[str, str] = {}

    def code_option(self, name: str, value: str) -> str | None:
        """What a checked option (check_options' text) runs or loads, or None."""
        return self.code_options.get(name)

    def secret_file(self, protocol: str, password: str) -> str | None:
        return None

    def prepare_argv(self, client: Client, spec: PointSpec) -> list[list[str]]:
        return []

    def cleanup_argv(self, client: Client, spec: PointSpec) -> list[list[str]]:
        return []

    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def point_input(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> PointInput:
        """No files in the point's work directory, nothing on its standard input."""
        return PointInput()

    def dataset_use(self, mode_args: Sequence[str]) -> str:
        return "shared"

    def with_latency_log(self, argv: list[str], log_dir: Path, sampling_rate: float) -> list[str]:
        return argv

    def read_latency_log(self, log_dir: Path, sampling_rate: float) -> Latencies | None:
        return None

    def without_progress(self, argv: list[str]) -> list[str] | None:
        return None  # the tool's report is cheap, or nothing stands in for it

    def instruments(self, progress: bool, sampling: float | None) -> tuple[str, ...]:
        return ()  # nothing it measures is the user's choice

    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]:
        raise NotImplementedError

    def read_samples(self, stdout: str, stderr: str) -> tuple[Sample, ...]:
        return ()

    def parse_progress_line(self, line: str, lineno: int | None = None) -> Sample | None:
        return None

    def verify(self, connection: DbApiConnection) -> dict[str, ConsistencyCheck] | None:
        return None

    def estimate_s(self, spec: PointSpec) -> float:
        """Seconds a point is expected to take (the progress bar, `study check`)."""
        return float(spec.duration_s)

    def estimate_prepare_s(self, spec: PointSpec) -> float:
        """Seconds the dataset's preparation is expected to take (a rough rate); 0 for
        a tool without a dataset of its own."""
        return 0.0

    def quick_params(self, params: Mapping[str, int]) -> dict[str, int]:
        """--quick: the same parameters, scaled down to a tiny dataset (each declared
        parameter at most its quick value)."""
        out = dict(params)
        for p in self.params:
            if p.quick is not None and p.name in out:
                out[p.name] = min(out[p.name], p.quick)
        return out

    def dataset_bytes(self, params: Mapping[str, int]) -> int:
        """The dataset's size on disk, tables and indexes, rounded up: for refusing a data
        directory too small, not for reporting."""
        return sum(p.bytes_per_unit * params.get(p.name, p.default) for p in self.params)
