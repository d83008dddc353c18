"""The readers behind `dbarena.importer`, one module per input format (pgbench,
sysbench, mysqlslap, CSV), and what they share: splitting a file into runs
(runs.py), reading echoed command lines (commandline.py), the point and the
problem they return or raise (common.py). Callers import from `dbarena.importer`.
"""
