"""Results measured elsewhere, into a store: `reading` recognises the tool that wrote
a file and hands its text to that tool's reader (pure: text in, points out); `storing`
streams a file through it and stores its runs once per content (`dbarena import`).

The readers, one module per input format (pgbench, sysbench, mysqlslap, hammerdb, gotpc,
pgbench's log files: pgbenchlog, CSV), and what
they share: splitting a file into runs (runs.py), reading echoed command lines
(commandline.py), the point and the problem they return or raise (common.py); together.py
makes the runs of `import --together` one point. Callers
import from `dbarena.importers.reading` or `dbarena.importers.storing`.
"""
