"""Fail if any module of the package is longer than 600 lines."""

import pathlib
import sys

LIMIT = 600
root = pathlib.Path(__file__).resolve().parents[1] / "pyromodels"
long = [(p, n) for p in root.rglob("*.py") if (n := len(p.read_text().splitlines())) > LIMIT]
for p, n in long:
    print(f"{p.relative_to(root.parent)}: {n} lines (limit {LIMIT})")
sys.exit(1 if long else 0)
