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

# Interference (stats/interference.py): the CPU that processes other than the server, the
# load generator and dbarena took while a point ran (busy machine CPU minus theirs).
# dbarena's own processes are not sampled per point; bench/README.md measured them at
# 1.2-1.4 % of this 2-CPU machine while a point runs (its samplers, its progress bar, the
# live publisher), 0.024-0.028 CPUs: this much is taken off before the rest is called
# the neighbours'.
HARNESS_CPU = 0.03
# Neighbours took at least this many CPUs (and NEIGHBOUR_SHARE of the machine) on average
# over a point: the `neighbours` warning. Below it the subtraction's own error is of the
# same size: the kernel's threads working for the benchmark (writeback, softirqs), server
# processes that exited within a second (their time is lost to the sampler), and the
# skew between reading /proc/stat and each process's times.
NEIGHBOUR_CPU = 0.25
NEIGHBOUR_SHARE = 0.10
# Two sides of a comparison whose neighbours' CPU (or steal) differs by at least this many
# CPUs on average (and INTERFERENCE_SHARE of the machine) ran under different
# interference: no verdict. A quarter of a CPU is an eighth of a 2-CPU machine, more than
# the server of a CPU-bound point on it can lose without its throughput moving beyond
# the few-percent margin a verdict reports (issue 52: 1.4-1.7 against 1.1-1.4 CPUs of
# neighbours, about 0.3 apart, gave a false +62.6 %); below it the figure's own error
# (NEIGHBOUR_CPU's reasons) would decide. The share keeps a large machine, where a
# quarter of a CPU is noise, from losing its verdicts to it.
INTERFERENCE_CPU = 0.25
INTERFERENCE_SHARE = 0.10
