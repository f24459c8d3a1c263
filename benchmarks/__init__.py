"""Benchmarks printed by ``make bench``: one JSON object per line."""
