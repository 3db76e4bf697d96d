"""The crash-consistency harness (issue 41): seeded persistent workloads, a broker killed and restarted under them,
and a checker of every promise. See test_crash.py for the CI seeds and tests/benchmarks/crash_soak.py for the soak."""
