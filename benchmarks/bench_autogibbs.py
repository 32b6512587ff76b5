r"""Effective samples per second: automatic Gibbs against NumPyro, PyMC and Pyro's NUTS.

Six models (:mod:`benchmarks.autogibbs_models.data` gives their data and sizes): a Gaussian
mixture with its assignments, Dawid-Skene on the *bluebirds* crowd set, a Poisson change
point, a small LDA, the non-centred eight schools and a beta-binomial hierarchy. Every model is
written once per engine (:mod:`benchmarks.autogibbs_models`), every engine gets the same data,
one chain, the same warm-up and the same number of kept draws (full: 500 and 1,000; quick: 20
and 30). The engines:

* ``autogibbs`` (ours): :func:`pyromodels.autogibbs.fit_gibbs`;
* ``pyro_nuts``: Pyro's NUTS, discrete sites summed out by enumeration;
* ``numpyro``: ``DiscreteHMCGibbs(NUTS)`` for the models with discrete sites, NUTS otherwise;
* ``numpyro_enum``: NumPyro's NUTS with the discrete sites enumerated (needs ``funsor``;
  not applicable to the models without discrete sites);
* ``pymc``: ``pm.sample`` with the step methods PyMC assigns.

``autogibbs.ess`` (one case per model). The check runs every engine once in a fresh process
(:mod:`benchmarks.autogibbs_models.runner`), stopped at ``cap_s`` (full 900 s, quick 300 s),
and records under the engine's name: ``status`` (``ok``, ``skipped`` when the engine's package
is not installed, ``unsupported`` when the engine refuses the model, ``timed out``, ``error``)
and ``reason``; ``fit_s`` (the first fit in the process, compilation and JIT included),
``warm_fit_s`` (the same fit again in that process), ``compile_s = fit_s - warm_fit_s``,
``import_s``; the bulk ESS (ArviZ) of the model's label-invariant quantities, ``min_ess`` and
the ``slowest`` quantity; ``ess_per_s = min_ess / fit_s`` and ``ess_per_s_warm``. A check
passes unless its engine failed in an unexpected way (``status`` ``error``): ``max_abs_diff``
is 1 for an error, else 0; ``against`` says the cell in words (:func:`summary`), for the
printed table. It also compares every engine's posterior means with those of the
reference engine (``autogibbs`` when it ran, else the first that did):
``mean_z_max = max |m - m_ref| / sqrt(se^2 + se_ref^2)`` with ``se = sd / sqrt(ESS)``, against
``mean_z_tolerance``, the two-sided normal quantile at ``1e-3`` shared over the quantities
(``means_agree``); short chains make this a hint, not a verdict, so it does not fail the case.

The timed figures (seconds): ``ours`` and ``peers`` are each one more fresh process of the
same engine, from the interpreter's start to the end of one fit (imports, data, compilation,
fit); the check's fresh process serves as the untimed warm-up. Engines whose check did not
end ``ok`` are left out of ``peers`` (their cell says why); ``ours`` is timed whatever its
status (when the plan refuses the model, it is the time to that refusal).

``PYROMODELS_BENCH_ENGINES=autogibbs,pymc`` limits the engines (``autogibbs`` is required);
the smoke test uses it. ``PYROMODELS_BENCH_AUTOGIBBS=500,300,150`` replaces the full run's kept
draws, warm-up and time cap.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from pyromodels.core.seeding import derive_seed

from .autogibbs_models import ENGINE_NEEDS, ENGINES, MODELS
from .autogibbs_models.data import SEED, make_data
from .bench_bnp_dp import write_arrays
from .harness import Case

__all__ = ["cases", "Cell", "engines", "settings", "SETTINGS", "compare_means", "summary"]

REPO = Path(__file__).resolve().parent.parent
#: kept draws, warm-up and the time cap of one fresh process, by quick
SETTINGS = {False: {"num_samples": 1000, "warmup": 500, "cap_s": 900},
            True: {"num_samples": 30, "warmup": 20, "cap_s": 300}}
ENGINES_VAR = "PYROMODELS_BENCH_ENGINES"
#: ``kept,warmup,cap_s`` replacing the full settings (a shorter run than the full one)
SETTINGS_VAR = "PYROMODELS_BENCH_AUTOGIBBS"
#: family-wise two-sided level of the posterior-mean comparison
MEANS_LEVEL = 1e-3


def engines() -> tuple:
    """The engines to run: :data:`~benchmarks.autogibbs_models.ENGINES`, or those named in
    ``PYROMODELS_BENCH_ENGINES`` (comma-separated; must include ``autogibbs``)."""
    spec = os.environ.get(ENGINES_VAR)
    if not spec:
        return ENGINES
    chosen = tuple(e.strip() for e in spec.split(",") if e.strip())
    unknown = [e for e in chosen if e not in ENGINES]
    if unknown or "autogibbs" not in chosen:
        raise ValueError(f"{ENGINES_VAR} must be a comma-separated subset of {ENGINES} that "
                         f"includes 'autogibbs', got {spec!r}")
    return tuple(e for e in ENGINES if e in chosen)


def settings(quick: bool) -> dict:
    """Kept draws, warm-up and time cap: :data:`SETTINGS`, or for the full run the three
    integers of ``PYROMODELS_BENCH_AUTOGIBBS`` (``kept,warmup,cap_s``)."""
    spec = os.environ.get(SETTINGS_VAR)
    if quick or not spec:
        return dict(SETTINGS[quick])
    parts = spec.split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"{SETTINGS_VAR} must be three positive integers kept,warmup,cap_s; "
                         f"got {spec!r}")
    return dict(zip(("num_samples", "warmup", "cap_s"), (int(p) for p in parts)))


def _installed(engine: str) -> bool:
    need = ENGINE_NEEDS[engine]
    return need is None or importlib.util.find_spec(need) is not None


@functools.cache
def _data_file(model: str, quick: bool) -> str:
    return write_arrays(f"autogibbs-{model}", **make_data(model, quick))


def _env() -> dict:
    threads = str(torch.get_num_threads())
    env = {**os.environ, **{var: threads for var in (
        "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")}}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    if threads == "1":
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    return env


class Cell:
    """One engine on one model: its recorded fresh run (:meth:`record`) and its timed fresh
    runs (:meth:`timed`)."""

    def __init__(self, model: str, engine: str, quick: bool):
        self.model, self.engine, self.quick = model, engine, quick
        self.settings = settings(quick)
        self.seed = derive_seed(SEED, "autogibbs-chain", model) % 2**31
        self._recorded = False

    def _run(self, mode: str) -> tuple[list, float, bool]:
        s = self.settings
        cmd = [sys.executable, "-m", "benchmarks.autogibbs_models.runner", self.engine, self.model,
               _data_file(self.model, self.quick), str(s["num_samples"]), str(s["warmup"]),
               str(self.seed), mode]
        start = time.perf_counter()
        try:
            done = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True,
                                  timeout=s["cap_s"], check=False)
            out, timed_out = done.stdout, False
            if done.returncode != 0:
                return ([{"phase": "cold", "status": "error",
                          "reason": f"the process exited with {done.returncode}: "
                                    f"{done.stderr.strip()[-500:]}"}], time.perf_counter() - start, False)
        except subprocess.TimeoutExpired as exc:
            out, timed_out = exc.stdout or "", True
            if isinstance(out, bytes):
                out = out.decode()
        lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        return lines, time.perf_counter() - start, timed_out

    def record(self) -> dict:
        """Run the engine once in a fresh process (cold fit, ESS, warm fit); its record."""
        self._recorded = True
        if not _installed(self.engine):
            return {"status": "skipped", "reason": f"{ENGINE_NEEDS[self.engine]} not installed"}
        lines, process_s, timed_out = self._run("record")
        phases = {line["phase"]: line for line in lines}
        rec = {"process_s": process_s}
        bad = next((p for p in lines if p.get("status", "ok") != "ok"), None)
        if bad is not None:
            return {**rec, "status": bad["status"], "reason": bad["reason"]}
        if "cold" not in phases:
            return {**rec, "status": "timed out" if timed_out else "error",
                    "reason": (f"timed out at {self.settings['cap_s']} s" if timed_out
                               else "the process printed no fit")}
        cold = phases["cold"]
        rec.update(status="ok", reason="", import_s=phases["import"]["import_s"], fit_s=cold["fit_s"],
                   min_ess=cold["min_ess"], slowest=cold["slowest"], ess=cold["ess"],
                   means=cold["means"], sds=cold["sds"], ess_per_s=cold["min_ess"] / cold["fit_s"])
        if "warm" in phases:
            warm = phases["warm"]["fit_s"]
            rec.update(warm_fit_s=warm, compile_s=max(cold["fit_s"] - warm, 0.0),
                       ess_per_s_warm=cold["min_ess"] / warm)
        else:
            rec.update(warm_fit_s=None, compile_s=None, ess_per_s_warm=None,
                       reason=f"the warm fit timed out at {self.settings['cap_s']} s")
        return rec

    def timed(self) -> None:
        """One fresh process (interpreter, imports, data, one fit); the first call after
        :meth:`record` does nothing (that run was the warm-up)."""
        if self._recorded:
            self._recorded = False
            return
        self._run("timed")


def compare_means(rec: dict, ref: dict) -> dict:
    """``mean_z_max``, ``mean_z_tolerance`` and ``means_agree`` of ``rec`` against ``ref``
    (both ``ok`` records of the same model)."""
    from scipy.stats import norm

    z = []
    for name, m in rec["means"].items():
        se2 = [r["sds"][name] ** 2 / r["ess"][name] for r in (rec, ref)
               if r["ess"][name] and r["sds"][name] is not None]
        if len(se2) == 2 and sum(se2) > 0 and ref["means"][name] is not None and m is not None:
            z.append(abs(m - ref["means"][name]) / np.sqrt(sum(se2)))
    tol = float(norm.isf(MEANS_LEVEL / (2 * max(len(rec["means"]), 1))))
    z_max = float(max(z)) if z else 0.0
    return {"mean_z_max": z_max, "mean_z_tolerance": tol, "means_agree": bool(z_max <= tol),
            "means_compared": len(z)}


def summary(rec: dict) -> str:
    """The cell in words, for the printed table: ESS/s, minimum ESS and its quantity, fit and
    compile seconds when it ran, else its status and reason."""
    if rec["status"] != "ok":
        return f"{rec['status']}: {rec['reason'][:120]}"
    compile_s = "" if rec["compile_s"] is None else f", compile {rec['compile_s']:.3g} s"
    return (f"ESS/s {rec['ess_per_s']:.3g} (min ESS {rec['min_ess']:.3g} of {rec['slowest']}, "
            f"fit {rec['fit_s']:.3g} s{compile_s})")


def _check(cells: dict, peers: dict):
    def check():
        records = {engine: cell.record() for engine, cell in cells.items()}
        ok = [e for e, r in records.items() if r["status"] == "ok"]
        ref = ok[0] if ok else None
        out = {}
        for engine, rec in records.items():
            if rec["status"] == "ok":
                rec.update(compare_means(rec, records[ref]), means_against=ref)
            elif engine in peers:
                del peers[engine]  # not timed: its record says why it did not run
            error = rec["status"] == "error"
            out[engine] = {"against": summary(rec), "max_abs_diff": 1.0 if error else 0.0,
                           "tolerance": 0.0, "passed": not error, **rec}
        return out

    return check


def cases(quick: bool) -> list[Case]:
    """One ``autogibbs.ess`` case per model with every chosen engine."""
    chosen = engines()
    s = settings(quick)
    out = []
    for model in MODELS:
        cells = {engine: Cell(model, engine, quick) for engine in chosen}
        peers = {e: cells[e].timed for e in chosen if e != "autogibbs" and _installed(e)}
        params = {"model": model, "num_samples": s["num_samples"], "warmup": s["warmup"],
                  "chains": 1, "cap_s": s["cap_s"]}
        out.append(Case("autogibbs.ess", params, ours=cells["autogibbs"].timed, peers=peers,
                        check=_check(cells, peers), warmup=1, repeats=1))
    return out
