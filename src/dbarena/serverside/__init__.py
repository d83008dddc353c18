"""The server's own view of a point, read over SQL once a second while it runs: what its
backends wait for and how its counters move (commits, blocks read, checkpoints, WAL,
row lock waits ...). Needs no access to the server's machine, so a remote or managed
`--target` is seen as well as a throwaway instance.

series.py holds a point's series and the pure arithmetic on it; postgres.py and
mysql.py what each engine is asked; sampler.py the thread that asks.
"""
