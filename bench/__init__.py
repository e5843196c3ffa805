"""Benchmarks: `./dev bench NAME [ARGS]` runs bench/NAME_bench.py (see docs/benchmarks.md)."""
