"""How to read the report: what each table and the charts show, said once in the
report's "How to read this" section (HTML and Markdown) instead of under every
workload's table. A table (report.tables.TableSpec) names its explanation (one of
these); its own note keeps what is particular to that section (a saturation level, the
cheapest label, a level not measured there)."""

from __future__ import annotations

from dbarena.report.scaling import USL_MIN_LEVELS
from dbarena.stats.estimators import MIN_REPEATS

Explanation = tuple[str, str]  # (what it explains, the text)

CHARTS: Explanation = (
    "Charts",
    "A line per label against threads; beyond ten labels a label has its own marker as well as a colour. Throughput: "
    "the 95 % confidence interval of the steady-state mean over repeats where there are repeats, shaded for up to "
    "five labels and as error bars beyond (each label's a little aside), drawn from 0 (a throughput is never "
    "negative); dashed: the USL fit. The latency percentiles (p50, p95, p99, p99.9) are four small charts sharing "
    "the threads axis. Per-second TPS: the chosen point of each label, the end of its warm-up dotted, dips marked x. "
    "Hover a point for its exact figures; the checkboxes at the top hide a label in every chart.")

_LATENCY = (" Latency percentiles over repeats are those of their merged latency histograms (pgbench's "
            "per-transaction log, sysbench's histogram; within 0.1 %); where the runs have no histogram to merge "
            "(a tool that printed one percentile per run), a percentile marked \u2021 is the mean of the ones "
            "they printed, named so because it is not a percentile of all their transactions; '-' where a tool "
            "gives none. The CSV and JSON exports give every figure's median, mean, n, stdev, min and max over "
            "the repeats (columns such as qps_median, latency_p95_ms_mean).")

RESULTS: Explanation = (
    "Results",
    "TPS is dbarena's steady-state mean (warm-up excluded, from the per-second series), averaged over repeats; "
    "'printed TPS' is the figure the tool printed for the whole run (warm-up included), averaged likewise; the "
    "interval is its 95 % confidence interval over repeats (* within one run), shown from 0. Transactions and "
    "queries are per point, averaged over repeats." + _LATENCY)

RESULTS_SECONDS: Explanation = (
    "Results (mysqlslap)",
    "Seconds: mysqlslap's average time to run all its queries (lower is better), averaged over repeats; "
    "QPS = queries / seconds." + _LATENCY)

RANKING: Explanation = (
    "Points and peak",
    "Study A's points: the sum of the throughput (TPS or QPS) over each label's own levels (labels measured at "
    "different levels are not comparable this way); the geometric mean of the per-level ratios to the baseline, "
    "over the levels both measured, is the fairer score. Saturation: the first level after which more threads add "
    "less than 5 %.")

RANKING_SECONDS: Explanation = (
    "Points and best (mysqlslap)",
    "Study A's ranking for mysqlslap: the sum of the seconds each label took over its own levels, fewest first "
    "(lower is better; labels measured at different levels are not comparable this way); the geometric mean of the "
    "per-level ratios to the baseline over the levels both measured is the fairer score (below 1: faster than the "
    "baseline).")

_WELCH = f" (Welch's t-test on the run means) need {MIN_REPEATS} repeats on both sides."

AGAINST: Explanation = (
    "Against the baseline",
    "Ratio of steady-state throughput, label / baseline; the interval and the verdict" + _WELCH)

AGAINST_SECONDS: Explanation = (
    "Against the baseline (mysqlslap)",
    "Ratio of seconds, label / baseline (below 1: faster, fewer seconds); the interval and the verdict" + _WELCH)

_AT = (" Without --at-threads every level is shown and no label is named cheapest (give the level with "
       "--at-threads N); with it, that level only, cheapest first, and what each other label costs more.")

PRICE: Explanation = (
    "Price / performance",
    "Price per 100 TPS = hourly price / (TPS / 100), study E's measure; lower is better. A monthly price counts 730 "
    "hours a month. Prices in different currencies are never compared (dbarena converts no currency)." + _AT)

PRICE_SECONDS: Explanation = (
    "Price / performance (mysqlslap)",
    "Price of one run = hourly price x seconds / 3600: what running mysqlslap's queries once costs on that machine; "
    "lower is better." + _AT)

CAPACITY: Explanation = (
    "Capacity at a latency objective",
    "--slo searched each closed-loop point's capacity: the highest offered rate (pgbench -R, sysbench --rate: "
    "transactions scheduled on a Poisson clock, their latency counted from the scheduled start, so the wait "
    "behind a slow one counts) whose runs achieved the rate and kept the objective's latency statistic within its "
    "limit; the capacity is the throughput achieved there, the mean of the sessions' own searches (95 % interval "
    "between sessions where there are two or more). 'met at' and 'missed at' bracket it. The curve charts "
    "(latency against offered rate, the 'hockey stick') show every rate tried: achieved TPS above (the diagonal: "
    "all that was offered carried), p50, p95 and p99 latency below on a log scale, the objective a horizontal red "
    "line, the capacity a vertical line, a rate that missed the objective an open marker, the closed-loop point a "
    "star (its latency is from each transaction's actual start: no queue counted, not comparable with the "
    "objective). Price per 1,000 TPS at the objective = hourly price / (capacity / 1,000): what carrying 1,000 TPS "
    "within the objective costs an hour, beside price per 100 TPS at saturation (the closed-loop throughput).")

RATE_LEVELS: Explanation = (
    "Latency at offered rates",
    "Levels offered a fixed rate (--rate, a workload's options.rate; pgbench -R, sysbench --rate): each carried "
    "about what it was offered, so they are compared by how long their transactions took, counted from each "
    "one's scheduled start. p95 is each session's mean of its runs' 95th percentile, then the mean of the "
    "sessions (the figure compared); achieved TPS the mean throughput its runs carried. The ratio is label / "
    "baseline of that p95 at the same configuration (below 1: faster), its interval and verdict over sessions, as "
    "`compare` gives them. A label one of whose runs fell short of the rate is not decided: its latency is a "
    "growing queue's.")

# Said beside the price and per-core views where a level has a capacity (--slo).
PRICE_AT_OBJECTIVE = ("Price per 1,000 TPS at the objective = hourly price / (capacity / 1,000), the capacity being "
                      "the throughput carried within the latency objective (--slo); beside it, price per 100 TPS at "
                      "saturation, of the closed-loop throughput.")
CAPACITY_PER_CORE = "Capacity per core: the capacity at the objective (--slo) divided likewise."

PER_CORE: Explanation = (
    "Per core and scaling",
    "Per core: of the machine the server ran on (throwaway instances: measured; remote targets: as given by "
    "`run --server-cores/--server-threads`). Scaling efficiency = TPS(N) / (N x TPS(1 thread)).")

USL: Explanation = (
    "Universal Scalability Law fit",
    "X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)) (Gunther), least squares over the measured levels; peak at "
    f"N* = sqrt((1 - sigma) / kappa). Fitted only with {USL_MIN_LEVELS} or more levels (3 parameters: fewer levels "
    "fit any data); a model, not a measurement, beyond the levels measured.")

PARAMETERS: Explanation = (
    "Parameters",
    "What shapes these numbers, as stored with every point (its configuration key): the dataset's parameters "
    "(pgbench scale, sysbench tables x table size, mysqlslap iterations and queries), the tool's own options beyond "
    "dbarena's defaults, the server settings the study applied (the provenance lists every non-default setting), "
    "and what flags changed from the study.")

TPCC: Explanation = (
    "TPC-C-like",
    "New-Order transactions committed per minute (the 1 % rolled back by the specification excluded), mean over "
    "repeats: a TPC-C-like figure, not an audited tpmC (no keying or think time). The mix is the share of each "
    "transaction type; latencies are per type averages.")

_SYSTEM = (" of the once-a-second samples, then over repeats. CPU in cores: 1.0 = one hardware thread busy. For a "
           "remote target the machine and the load generator are this host; the server's CPU is not seen. 'bound (per "
           "point)': what bound each point, from the server's waits and the CPU, as results and the decision say it. "
           "Below each table: the level from which each label's machine CPU was saturated (80 % busy, at a level "
           "whose points the CPU bound).")

SYSTEM: Explanation = ("System view", "Means over each point's steady state" + _SYSTEM)

SYSTEM_SECONDS: Explanation = ("System view (mysqlslap)", "Means over each point's whole run" + _SYSTEM)

COST: Explanation = (
    "Cost per transaction",
    "What one transaction cost the server and the machine (no profiler needed), means over the ok repeats: the "
    "server's and the load generator's CPU microseconds, the machine's context switches and KB read and written "
    "over each point's steady state divided by its steady-state throughput; the server's own WAL (PostgreSQL) or "
    "redo (InnoDB) bytes and buffer reads over the point divided by the throughput the tool printed. Context switches "
    "and disk bytes are the whole machine's (the load generator's and any neighbour's included): compare them "
    "between labels measured alike. A column no level has is left out.")

CORES_SMT: Explanation = (
    "Cores and SMT",
    "Best: the highest throughput over the sessions measured (study C's peak), per physical core and per hardware "
    "thread of the cores the variant's server was confined to. Scaling efficiency = best(N cores) / (N x best(1 "
    "core)), same SMT mode; the SMT gain compares the bests of the same cores one SMT step apart, off to on or "
    "POWER's SMT1 to 2 to 4 to 8 (by the kernel's switch or by affinity: see the provenance).")

PGBENCH: Explanation = (
    "pgbench's figures",
    "pgbench runs bare unless asked, as the bare command would. Its per-second TPS (steady state, dips, the "
    "per-second charts) then comes from the server's commit counter (pg_stat_database.xact_commit): the seconds "
    "wholly within its run but one ending at its end (which holds its clients' last report of commits), scaled to pgbench's own "
    "transaction count; its latency average is the run's time per "
    "transaction and client, as pgbench prints it without -P. Asked for, -P 1 (--client-progress) gives pgbench's "
    "own per-second report and latency, for about 5-6 % of a CPU-bound point's throughput on a 2-core machine, "
    "and the per-transaction log (--latency-sampling) the percentiles, for about 1 % at one transaction in ten and "
    "3.5 % at every one (bench/README.md). Points measured with either are another configuration (the key's "
    "instruments) and never pooled or compared with bare ones.")

PROVENANCE: Explanation = (
    "Provenance", "Settings: PostgreSQL's non-default settings; MySQL's key server variables.")
