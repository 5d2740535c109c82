"""Benchmarks run by scripts/bench-* (not collected by pytest: no test_*.py files here)."""
