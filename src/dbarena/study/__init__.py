"""Studies: one TOML file describes a whole benchmark study (a protocol).

A study says which engines run which workloads with which tool options, over which
concurrency levels, for how long, on which datasets, with which server settings and
variants, how often, and what the machine costs. `load` reads a file or a bundled
study (studies/*.toml) and checks every key against the schema below; `apply`
layers command-line flags and --quick over it; plan.expand turns it into points.

Precedence, lowest first: dbarena's defaults < the file's [sweep] and [datasets] <
the file's [[workloads]] entry < --quick (scales the result down) < command-line
flags (they override every workload). `study check` lists what flags and --quick
changed.

The schema (version 1):

    schema = 1                      # required
    name = "my-study"               # required; stored with every run
    title = "one line"              # optional
    description = "..."             # optional
    label = "c7g.4xlarge"           # optional [default: the host name]

    [sweep]                         # defaults for every workload
    levels = [1, 2, "20%", "99%"]   # threads; "N%" of the server's hardware threads
    duration_s = 600                # seconds per point (timed tools)
    warmup_s = 0                    # a same-parameter run before each point, then a checkpoint
    repeats = 1                     # every point N times, interleaved
    sessions = 1                    # the whole plan N times, each with servers started afresh and
                                    #   datasets prepared again: what a verdict needs two of a side
    precision = "2%"                # instead: repeat each point (in rounds) until the 95 % interval
                                    #   of its mean over runs is within +-2 % (at least 3 runs)
    max_repeats = 10                # with precision: at most this many runs of a point
    budget = "2h"                   # with precision: start no round past this machine time (s, m, h)
    clients_per_thread = 2          # pgbench -c = threads x this
    datasets = "run"                # (re)create datasets once per "run", per "workload" or per "point"
    restore = "point"               # put the prepared dataset back before every "point" or "level"
                                    #   (a copy of the stopped data directory, reflinked where the file
                                    #   system can; throwaway instances only) [default: false]
    fail_fast = false
    latency_sampling = 0.1          # the share of transactions pgbench logs for percentiles (-l
                                    #   --sampling-rate); 1: all [default: false, none: it costs
                                    #   pgbench CPU a transaction, bench/README.md]
    client_progress = false         # pgbench -P 1 (its per-second latency, at a cost) rather than
                                    #   the per-second throughput from the server's commit counter

    [datasets]                      # tool parameters, defaults for every workload
    scale = 10                      # pgbench -i -s
    tables = 4                      # sysbench --tables
    table_size = 10000              # sysbench --table-size
    warehouses = 1                  # tpcc-like
    iterations = 1                  # mysqlslap --iterations
    queries = 100000                # mysqlslap --number-of-queries

    [engines.postgres]              # the engines the study runs [default: postgres]
    settings = { shared_buffers = "1GB" }
    target = "postgresql://user@host:5432/db"   # optional: an existing server
    server_cores = 2                # a target's cores and threads (for "N%" levels, per-core figures)
    server_threads = 4
    bindir = "/usr/lib/postgresql/16/bin"
    data_dir = "tmpfs"              # where a throwaway instance keeps its data: "tmpfs" (/dev/shm, a
                                    #   RAM disk), a path (e.g. an NVMe mount) [default: $TMPDIR]
    cluster = { data_checksums = true }   # what creating the data directory decides (see variants)

    [engines.mysql]
    flavour = "auto"                # auto, mariadb or mysql
    settings = { innodb_buffer_pool_size = "1G" }

    [[workloads]]                   # one entry per workload, in running order
    workload = "sysbench-read-only"
    engines = ["mysql"]             # optional [default: every study engine it can run on]
    options = { skip-trx = "on" }   # the tool's options
    # and any [sweep] key but repeats/sessions/precision/max_repeats/budget/fail_fast/latency_sampling/
    # client_progress,
    # and any [datasets] key

    [price]
    per_hour = 1.4464               # or per_month = 420 (730 hours a month)
    currency = "USD"

    [cpus]                          # study C: the server on N whole physical cores, one variant each
    server = [1, 2, 4]              #   (spread over sockets; crossed with [variants])
    smt = ["off", "on"]             #   optional: each count without / with the cores' SMT siblings
                                    #   (or threads per core, POWER's SMT modes: [1, 2, 4, 8])
    smt_emulate = true              #   SMT off by affinity (one thread per core); without it the
                                    #   kernel's switch, one mode after the other, restored at the end
    load_generator = "rest"         #   the load generator on the other usable CPUs, or the "same" ones

    [profile]                       # the server's on-CPU profile of every point (as --profile;
                                    #   perf, during each measured run: docs/running.md)
    frequency = 99                  # perf's samples a second of each CPU's time [default: 99]
    required = false                # true: refuse to run where perf is missing or may not sample

    [fleet]
    together = true                 # `fleet run` drives one server from every host at once, one
                                    #   merged point per level (as --together; docs/fleet.md)

    [variants.checksums]            # named sets of settings the same plan runs under
    description = "..."
    postgres = { wal_compression = "on" }
    cluster.postgres = { data_checksums = true }   # what creating the data directory decides:
                                    #   postgres: data_checksums, wal_segsize (MB), locale, encoding;
                                    #   mysql: innodb_page_size. Each variant gets its own server.
                                    #   Also [engines.NAME] cluster = {...} for every variant.
"""

# The package's face: model.py (the records and defaults), reader.py (files and their
# check), flags.py (the run flags, declared once), apply.py (flags and --quick over a
# study, --resume's rebuild).
from dbarena.stats.price import HOURS_PER_MONTH
from dbarena.study.apply import QUICK_MEMORY_CAPS, apply, differences, implicit, rebuild
from dbarena.study.flags import Overrides, RunFlag, overrides, run_flags
from dbarena.study.model import (
    DEFAULT_LATENCY_SAMPLING, FLAGS_SOURCE, LOAD_GENERATOR_PLACES, MAX_PRECISION, PARAM_DEFAULTS, QUICK_DURATION_S,
    QUICK_WARMUP_S, RESTORE_CHOICES, SCHEMA_VERSION, SWEEP_DEFAULTS, EngineEntry, Level, Study, StudyError,
    Variant, WorkloadEntry, parse_duration, parse_levels, parse_precision,
)
from dbarena.study.reader import bundled, load, parse, read_text

__all__ = [
    "DEFAULT_LATENCY_SAMPLING", "FLAGS_SOURCE", "HOURS_PER_MONTH", "LOAD_GENERATOR_PLACES", "MAX_PRECISION",
    "PARAM_DEFAULTS", "QUICK_DURATION_S", "QUICK_MEMORY_CAPS", "QUICK_WARMUP_S", "RESTORE_CHOICES",
    "SCHEMA_VERSION", "SWEEP_DEFAULTS", "EngineEntry", "Level", "Overrides", "RunFlag", "Study", "StudyError",
    "Variant", "WorkloadEntry", "apply", "bundled", "differences", "implicit", "load", "overrides", "parse",
    "parse_duration", "parse_levels", "parse_precision", "read_text", "rebuild", "run_flags",
]
