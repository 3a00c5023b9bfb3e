"""Benchmark, evaluation and stress scripts: run from the repository root as `python -m scripts.<name>`.

Each one prints figures (never asserts a speed) through scripts/harness.py; see docs/scripts.md.
"""
