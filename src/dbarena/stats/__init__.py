"""Statistics over results: pure functions from numbers to numbers (steady state,
intervals, tests, latency distributions, configuration keys, prices), and the
analysis that applies them to stored points."""
