"""``python -m benchmarks``: run every ``bench_*.py`` case and write one JSON line per case.

Options:
    --out PATH          the JSONL file to (over)write, one record per case.
    --quick             tiny sizes and few repeats (checks the harness, not speed).
    --only SUBSTRING    run only the cases whose label contains SUBSTRING.
    --device DEVICE     where our code runs: cpu (default), cuda, cuda:N or auto.
    --threads N         threads for torch and every BLAS/OpenMP pool, ours and peers alike
                        (default 1).

The exit status is 1 when an agreement check failed (every record is still written), 2 for
bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

from pyromodels.checks import check_int
from pyromodels.core.diagnostic_warnings import SamplingWarning

from .harness import (
    bench_device,
    collect_cases,
    discover,
    environment,
    format_record,
    limit_threads,
    run_case,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description="Side-by-side timings against peers, written as JSONL."
    )
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write (overwritten)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats")
    parser.add_argument(
        "--only", default=None, metavar="SUBSTRING", help="run the cases whose label contains this"
    )
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N or auto")
    parser.add_argument(
        "--threads", type=int, default=1, help="threads for torch and every BLAS/OpenMP pool (default 1)"
    )
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        device = bench_device(args.device)
        check_int(args.threads, "--threads", minimum=1)
        cases = collect_cases(discover(), quick=args.quick, device=device, only=args.only)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{len(cases)} case(s) on {device} with {args.threads} thread(s); writing {args.out}", flush=True)
    failed = []
    start = time.perf_counter()
    with limit_threads(args.threads), args.out.open("w") as fh, warnings.catch_warnings():
        # timed chains are short on purpose: their sampling diagnostics are not the point
        warnings.simplefilter("ignore", SamplingWarning)
        env = environment(device)
        for case in cases:
            rec = run_case(case, device, env)
            fh.write(json.dumps(rec, allow_nan=False) + "\n")
            fh.flush()
            print(format_record(rec), flush=True)
            failed.extend(f"{rec['label']}: {k}" for k, r in rec["agreement"].items() if not r["passed"])
    print(f"done in {time.perf_counter() - start:.1f} s", flush=True)
    if failed:
        print("agreement checks FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
