"""Side-by-side timings of pyromodels against its peers, written as one JSON line per case.

Run ``python -m benchmarks --out benchmarks/results/latest.jsonl`` (``make bench``). Every
``benchmarks/bench_*.py`` module exposes ``cases(quick: bool) -> list[Case]`` (optionally with a
``device`` argument); see :mod:`benchmarks.harness` and ``benchmarks/README.md``.
"""

from .harness import Case, agreement, run_case, time_call

__all__ = ["Case", "agreement", "run_case", "time_call"]
