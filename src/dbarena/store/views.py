"""SQL views of the store for dashboards (Grafana, Superset) and ad-hoc SQL, in both
dialects with the same names and columns. docs/store.md documents them.

- `v_points`: one row per measured point (warm-ups left out), with its run, study,
  host, `repeat` (from 1) and `value`: the figure dbarena's summaries use, i.e. the
  steady-state mean of the per-second series where there is one (`value_source`
  'steady-state mean', warm-up excluded), else the tool's own printed figure ('tool') in
  its `metric` (since schema 15 mysqlslap's seconds, `better` 'lower'). `value` is NULL for a failed
  point and for one whose derived figures were not computed yet (`value_source` NULL):
  dbarena computes them when it stores a point and on every read.
- `v_summaries`: repeats pooled per label and configuration key (never across keys):
  n, failed, mean, sample standard deviation, cv, min, max. The interval and verdicts
  (which need the t distribution and dbarena's rules for adaptive repeats) come from
  `dbarena results --summary` and `dbarena compare`.
- `v_comparisons`: every pair of labels that measured the same configuration apart
  from the host: both means and repeat counts, ratio = b_mean / a_mean, and
  `enough_repeats` (3 or more runs on each side; a verdict also needs two sessions a
  side, or a known spread between sessions, which `dbarena compare` counts).
- `v_samples`: the per-second series with a wall-clock `time` (start of the point plus
  the second), for time-series panels.
- `v_sessions` (schema 24): the table `session_summaries` with its run's label, host and
  study and its configuration's engine, workload, variant, threads and clients (of its
  first point): one row per label, configuration key and session (a stored run), with
  the session's points, runs, failed, mean and the standard deviation of its runs.
- `v_levels` (schema 24): those sessions per label and configuration key: `sessions`,
  `mean` (the mean of the sessions' means: what every verdict rests on,
  stats/sessions.py) and `between_stdev`, the standard deviation between sessions.
  Both hold the runs summarised so far, each under the estimator version its figures
  were computed with (`estimator`; a row of another version than the reader's is
  summarised again by the next read that needs it).

Views read the tables through JSON functions, which differ per dialect: hence two
texts. A view's columns change only in a migration (which drops and recreates it), so
the texts are kept per schema version (`sqlite(12)`, `postgresql(14)`): a migration's
SQL stays what it was when it was released (a store of schema 11 still runs 12, whose
views must not name the columns 13 adds), and a store's views match its version.
"""

from __future__ import annotations

_POINTS = """
CREATE VIEW v_points AS
SELECT p.id AS point_id, r.id AS run_id, r.uuid AS run_uuid, r.label, r.host, r.target, st.name AS study,
       r.engine, r.flavour, r.server_version, p.workload, p.variant, p.threads, p.clients, p.duration_s,
       p.warmup_s, {repeat}, p.config_key, p.config, p.status, p.error, p.started_at, p.ended_at,
       {metric},
       p.tps, p.qps, p.transactions, p.queries, p.run_avg_s,
       {latency},
       {steady} AS steady_tps,
       d.estimator,
       CASE WHEN p.status <> 'ok' OR d.point_id IS NULL THEN NULL
            ELSE COALESCE({steady}, {figure}) END AS value,
       CASE WHEN p.status <> 'ok' OR d.point_id IS NULL THEN NULL
            WHEN {steady} IS NOT NULL THEN 'steady-state mean' ELSE 'tool' END AS value_source,
       r.price_per_hour, r.currency,
       {cpu_model} AS host_cpu_model, {physical_cores} AS host_physical_cores,
       {hardware_threads} AS host_hardware_threads, {architecture} AS host_architecture
FROM points p
JOIN runs r ON r.id = p.run_id
LEFT JOIN studies st ON st.sha256 = r.study_sha256
LEFT JOIN hosts h ON h.fingerprint = r.host_fingerprint
LEFT JOIN point_derived d ON d.point_id = p.id
WHERE p.phase = 'measured';
"""

_SUMMARIES = """
CREATE VIEW v_summaries AS
SELECT label, config_key, MIN(study) AS study, MIN(engine) AS engine, MIN(flavour) AS flavour,
       MIN(workload) AS workload, MIN(variant) AS variant, MIN(threads) AS threads, MIN(clients) AS clients,
       MIN(metric) AS metric,{better} COUNT(value) AS n, SUM(CASE WHEN status <> 'ok' THEN 1 ELSE 0 END) AS failed,
       AVG(value) AS mean, {stdev} AS stdev, {stdev} / NULLIF(AVG(value), 0) AS cv,
       MIN(value) AS min, MAX(value) AS max,
       CASE WHEN MIN(price_per_hour) = MAX(price_per_hour) THEN MIN(price_per_hour) END AS price_per_hour,
       CASE WHEN MIN(currency) = MAX(currency) THEN MIN(currency) END AS currency,
       MIN(started_at) AS first_started_at, MAX(ended_at) AS last_ended_at
FROM v_points
GROUP BY label, config_key;
"""

_COMPARISONS = """
CREATE VIEW v_comparisons AS
WITH s AS (
    SELECT label, config_key, MIN(host) AS host, {except_host} AS setting, MIN(study) AS study,
           MIN(engine) AS engine, MIN(workload) AS workload, MIN(variant) AS variant, MIN(threads) AS threads,
           MIN(clients) AS clients, MIN(metric) AS metric,{better} COUNT(value) AS n, AVG(value) AS mean
    FROM v_points WHERE value IS NOT NULL
    GROUP BY label, config_key
)
SELECT a.study, a.engine, a.workload, a.variant, a.threads, a.clients, a.metric,{better_a}
       a.label AS a_label, a.host AS a_host, a.n AS a_n, a.mean AS a_mean,
       b.label AS b_label, b.host AS b_host, b.n AS b_n, b.mean AS b_mean,
       b.mean / NULLIF(a.mean, 0) AS ratio,
       (a.n >= 3 AND b.n >= 3) AS enough_repeats
FROM s a JOIN s b ON a.setting = b.setting AND a.label <> b.label;
"""

_SAMPLES = """
CREATE VIEW v_samples AS
SELECT s.point_id, r.label, p.workload, p.variant, p.threads, {repeat}, s.second, {time} AS time,
       s.tps, s.qps, s.latency_ms, s.latency_pct_ms, s.latency_percentile, s.failed, s.errors_per_s
FROM samples s
JOIN points p ON p.id = s.point_id
JOIN runs r ON r.id = p.run_id
WHERE p.phase = 'measured';
"""


_SESSIONS = """
CREATE VIEW v_sessions AS
SELECT ss.run_id, r.uuid AS run_uuid, r.label, r.host, st.name AS study, r.engine, r.flavour,
       p.workload, p.variant, p.threads, p.clients, ss.config_key,
       {metric},
       ss.estimator, ss.points, ss.runs, ss.failed, ss.mean,
       CASE WHEN ss.runs > 1 THEN sqrt(ss.squares / (ss.runs - 1)) END AS stdev,
       ss.warnings, r.started_at
FROM session_summaries ss
JOIN runs r ON r.id = ss.run_id
JOIN points p ON p.id = ss.first_point
LEFT JOIN studies st ON st.sha256 = r.study_sha256;

CREATE VIEW v_levels AS
SELECT label, config_key, MIN(study) AS study, MIN(engine) AS engine, MIN(workload) AS workload,
       MIN(variant) AS variant, MIN(threads) AS threads, MIN(clients) AS clients, MIN(metric) AS metric,
       MIN(better) AS better, COUNT(mean) AS sessions, SUM(runs) AS runs, SUM(failed) AS failed,
       AVG(mean) AS mean, {between} AS between_stdev, MIN(estimator) AS estimator,
       MIN(started_at) AS first_started_at, MAX(started_at) AS last_started_at
FROM v_sessions
GROUP BY label, config_key;
"""


# v_points' latency columns, by the schema version that set them. Schema 12 showed
# p95 and p99 alone; 14 shows every percentile a point stores, p90 and p99.9 (schema 13)
# and p50 among them, in order.
_LATENCY = {
    12: "p.latency_avg_ms, p.latency_p95_ms, p.latency_p99_ms, p.latency_max_ms",
    14: "p.latency_avg_ms, p.latency_p50_ms, p.latency_p90_ms, p.latency_p95_ms, p.latency_p99_ms,\n"
        "       p.latency_p999_ms, p.latency_max_ms",
}


# Schema 15: one metric per tool, as stats/metric.py decides it (mysqlslap is judged by
# the seconds it took, lower is better: `value` is those seconds, `better` says which
# way), and repeats counted from 1 as every other view shows them (the table keeps 0).
_BY_TOOL = {
    12: dict(metric="CASE WHEN p.tps IS NOT NULL THEN 'tps' ELSE 'qps' END AS metric",
             figure="CASE WHEN p.tps IS NOT NULL THEN p.tps ELSE p.qps END", repeat="p.repeat",
             better="", better_a=""),
    15: dict(metric="CASE WHEN p.tps IS NOT NULL THEN 'tps' WHEN p.run_avg_s IS NOT NULL THEN 'seconds' ELSE 'qps' END"
                    " AS metric,\n       CASE WHEN p.tps IS NULL AND p.run_avg_s IS NOT NULL THEN 'lower' ELSE 'higher'"
                    " END AS better",
             figure="CASE WHEN p.tps IS NOT NULL THEN p.tps WHEN p.run_avg_s IS NOT NULL THEN p.run_avg_s ELSE p.qps"
                    " END",
             repeat="p.repeat + 1 AS repeat", better=" MIN(better) AS better,", better_a=" a.better,"),
}


def _render(schema: int, **sql: str) -> str:
    set_by = [v for v in _LATENCY if v <= schema]
    if not set_by:
        raise ValueError(f"schema {schema} has no views (they came with schema 12)")
    sql["latency"] = _LATENCY[max(set_by)]
    sql.update(_BY_TOOL[max(v for v in _BY_TOOL if v <= schema)])
    texts = (_POINTS, _SUMMARIES, _COMPARISONS, _SAMPLES) + ((_SESSIONS,) if schema >= SESSIONS_SINCE else ())
    return "".join(text.format(**sql) for text in texts)


def _sessions(**sql: str) -> str:
    sql.update(_BY_TOOL[15])
    return _SESSIONS.format(**sql)


SESSIONS_SINCE = 24  # v_sessions and v_levels: the schema that added them
NAMES = ("v_points", "v_summaries", "v_comparisons", "v_samples", "v_sessions", "v_levels")

# Every view, dependants first (PostgreSQL refuses to drop a view another one reads), for
# a migration that recreates them: column lists change only that way (PostgreSQL's
# CREATE OR REPLACE VIEW can only append columns).
DROP = "".join(f"DROP VIEW {name};\n" for name in ("v_comparisons", "v_summaries", "v_points", "v_samples"))

_SQLITE = dict(
    steady="json_extract(d.fields, '$.steady_tps')",
    cpu_model="json_extract(h.facts, '$.cpu_model')",
    physical_cores="json_extract(h.facts, '$.physical_cores')",
    hardware_threads="json_extract(h.facts, '$.hardware_threads')",
    architecture="json_extract(h.facts, '$.architecture')",
    # SQLite has no stddev_samp; the textbook formula, clamped at 0 against rounding.
    stdev="CASE WHEN COUNT(value) > 1 THEN sqrt(MAX(SUM(value * value) - SUM(value) * SUM(value) / COUNT(value), 0)"
          " / (COUNT(value) - 1)) END",
    between="CASE WHEN COUNT(mean) > 1 THEN sqrt(MAX(SUM(mean * mean) - SUM(mean) * SUM(mean) / COUNT(mean), 0)"
            " / (COUNT(mean) - 1)) END",
    except_host="json_remove(MIN(config), '$.host')",
    time="datetime(p.started_at, '+' || s.second || ' seconds')",
)

_POSTGRESQL = dict(
    steady="(d.fields::jsonb ->> 'steady_tps')::double precision",
    cpu_model="(h.facts::jsonb ->> 'cpu_model')",
    physical_cores="(h.facts::jsonb ->> 'physical_cores')::integer",
    hardware_threads="(h.facts::jsonb ->> 'hardware_threads')::integer",
    architecture="(h.facts::jsonb ->> 'architecture')",
    stdev="stddev_samp(value)",
    between="stddev_samp(mean)",
    except_host="(MIN(config)::jsonb - 'host')::text",
    time="p.started_at::timestamptz + s.second * interval '1 second'",
)


def sqlite(schema: int) -> str:
    """CREATE VIEW statements of every view as an SQLite store of this schema version has them."""
    return _render(schema, **_SQLITE)


def postgresql(schema: int) -> str:
    """The same for a PostgreSQL store."""
    return _render(schema, **_POSTGRESQL)


def sessions_sqlite() -> str:
    """v_sessions and v_levels alone (the migration that adds them), SQLite's."""
    return _sessions(**_SQLITE)


def sessions_postgresql() -> str:
    """The same, PostgreSQL's."""
    return _sessions(**_POSTGRESQL)
