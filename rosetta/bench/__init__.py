"""Benchmarks: the DLF workloads, their data sets, and bench cells timed in each framework's own process (the timing
harness they share, warm-up and synchronised clock reads, is rosetta.timing)."""
