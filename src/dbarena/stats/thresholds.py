"""The thresholds every explanation of a point or a level is judged by, declared once.

The point's bound (stats/bound.py), a level's "why" in the decision (stats/decision.py),
the load-generator warning (stats/steadystate.py), a --together point's load generators
(stats/loadgens.py) and the report's "CPU saturated from N threads" (report/scaling.py)
all say whether something was saturated: with one threshold, no two of them can call one
point saturated and not saturated at once.
"""

from __future__ import annotations

# Busy at this share of what could be used is saturated: of the hardware threads the
# server could use, of the machine's CPU, of a core per load-generator thread, of a load
# generator host's CPU. Below it, sampling once a second still sees idle time that the
# next client could take; studies of this kind call 80-90 % saturated, and the lower end
# keeps a point that is nearly saturated from being explained as "no single bound".
SATURATED = 0.8
SATURATED_PCT = 100 * SATURATED
# iowait at this share of the CPU's time: the point waits on storage.
IOWAIT_PCT = 20.0
# Idle CPU below this share while the server is not saturated: something beside the
# server (the load generator on the same machine) takes the CPU.
NEARLY_NO_IDLE_PCT = 5.0
