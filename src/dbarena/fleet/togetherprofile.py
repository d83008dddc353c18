"""The server's on-CPU profiles of a `fleet run --together` (--profile, [profile]),
seen from the controller (serverprofile.py is the [server] host's side).

Once per run, before the first server starts, the [server] host says whether perf can
sample there; where it cannot, one line says so and the run goes on without profiles,
or it is refused where the study requires them (as a one-host run: run/session.py).
Around each point's measured part (not its warm-up) the host's perf samples the
server: started once every load generator is ready (after the first one's checkpoint,
which is not the point's work), before the start time is sent, and stopped once every
load generator's part has ended; the folded stacks come back in the step's answer
(messages.ProfileStatus: size-limited, read and checked here) and are stored with the
point as a one-host point's profile is. A point whose profile could not be made is
stored without it, with one line saying why. Against a --target nothing is profiled:
perf samples only a server dbarena started.
"""

from __future__ import annotations

from typing import Callable

from dbarena.errors import UsageError
from dbarena.fleet.messages import ProfileRequest, ProfileStatus
from dbarena.fleet.togethersteps import STEP_TIMEOUT_S, Answer, Step
from dbarena.fleet.togetherserver import ServerHost
from dbarena.model import PointSpec, Profile
from dbarena.records import JSONObject
from dbarena.run import measure
from dbarena.study import Study
from dbarena.study.model import Profiling


class ServerProfiles:
    """The [server] host's perf around each measured part (togetherpoint.Profiles)."""

    def __init__(self, serving: ServerHost, profiling: Profiling, perf: str, step: Step, say: Callable[[str], None]):
        self.serving, self.profiling, self.perf, self.step, self.say = serving, profiling, perf, step, say

    def _ctl(self, action: str, point_id: str, timeout_s: float = STEP_TIMEOUT_S) -> ProfileStatus:
        host = self.serving.host
        answer = self.step([host], ["host-profile-ctl", "--workdir", "{w}", action, "--point", point_id],
                           timeout_s=timeout_s)[host.name]
        return _status(answer)

    def start(self, point_id: str, spec: PointSpec) -> bool:
        """perf sampling the server (its events enabled); False, said in a line, where not."""
        host = self.serving.host
        request = ProfileRequest(id=point_id, server=self.serving.server_id, frequency_hz=self.profiling.frequency_hz,
                                 perf=self.perf, max_s=measure.point_timeout_s(spec.duration_s) + STEP_TIMEOUT_S)
        answer = self.step([host], ["host-profile-ctl", "--workdir", "{w}", "wait-sampling", "--point", point_id],
                           request={host.name: request.to_json()}, detach=True, detached="host-profile")[host.name]
        status = _status(answer)
        if status.state == "sampling":
            return True
        self.say(f"no on-CPU profile of this point: {host.name}: {status.reason or status.state}")
        self.discard(point_id)
        return False

    def stop(self, point_id: str) -> Profile | None:
        """The server's profile over the part, read; None, said in a line, where there is none."""
        status = self._ctl("stop", point_id, timeout_s=2 * STEP_TIMEOUT_S)
        why = status.reason or status.state
        if status.state == "done":
            try:
                return status.profile()
            except ValueError as exc:
                why = str(exc)
        self.say(f"no on-CPU profile of this point: {self.serving.host.name}: {why}")
        return None

    def discard(self, point_id: str) -> None:
        """perf stopped, nothing read (a point that failed or was interrupted)."""
        try:
            self._ctl("discard", point_id)
        except Exception:  # (best effort: the profile also ends with its server, or by its max_s)
            pass


def _status(answer: Answer) -> ProfileStatus:
    if answer.data is None:
        return ProfileStatus("failed", reason=answer.problem)
    try:
        return ProfileStatus.from_json(answer.data)
    except (ValueError, TypeError) as exc:
        return ProfileStatus("failed", reason=f"an answer that does not read: {' '.join(str(exc).split())}")


def for_run(study: Study, serving: ServerHost | None, step: Step,
            say: Callable[[str], None]) -> tuple[ServerProfiles | None, JSONObject | None]:
    """The run's profiles (None: none asked for, or none to be had) and what its runs
    record of them (provenance's options.profile, as a one-host run's); a UsageError
    where the study requires profiles that cannot be had."""
    if study.profile is None:
        return None, None
    facts: JSONObject = {**study.profile.to_json(), "perf": None}
    problem: str | None
    if serving is None:
        # (A study that requires them was refused with its --target: study.apply.check_profile_targets.)
        problem = "perf samples only a server dbarena started (a [server] host's), not a --target"
    else:
        answer = step([serving.host], ["host-profile-ctl", "--workdir", "{w}", "check",
                                       "--frequency", str(study.profile.frequency_hz)])[serving.host.name]
        data = answer.data or {}
        found, perf = data.get("problem"), data.get("perf")
        problem = (f"{serving.host.name}: {found}" if isinstance(found, str) else None) if answer.data is not None \
            else f"{serving.host.name} could not be asked: {answer.problem}"
        facts["perf"] = perf if isinstance(perf, str) else None
    facts["problem"] = problem
    if problem is None:
        assert serving is not None
        return ServerProfiles(serving, study.profile, str(facts["perf"] or "perf"), step, say), facts
    if study.profile.required:
        raise UsageError(f"on-CPU profiles are required ([profile] required = true), but {problem}")
    say(f"no on-CPU profiles: {problem}; the run goes on without them")
    return None, facts
