"""The machine a benchmark runs on: hardware facts, CPU topology, the SMT switch,
system metrics, and where a throwaway instance keeps its data."""
