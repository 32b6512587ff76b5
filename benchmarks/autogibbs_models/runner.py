"""One engine on one model in a fresh process: ``python -m benchmarks.autogibbs_models.runner
ENGINE MODEL DATA.npz NUM_SAMPLES WARMUP SEED MODE``.

It prints one JSON line per phase as the phase ends (so that a process stopped at its time cap
still leaves what it finished):

* ``{"phase": "import", "import_s"}``: importing the engine (or ``status: skipped`` when its
  package is not installed);
* ``{"phase": "cold", "status", "fit_s", ...}``: the first fit in the process, from the data in
  memory to the draws, compilation and JIT included. With ``MODE = record`` it adds the bulk
  ESS of every quantity of :func:`.data.quantities` (``ess``), their means and standard
  deviations, ``min_ess`` and the quantity it belongs to (``slowest``). A fit that raises
  gives ``status`` ``unsupported`` (the engine says it cannot run the model) or ``error``,
  and the ``reason``;
* ``{"phase": "warm", "fit_s"}`` (``MODE = record`` only): the same fit again in the same
  process, with compiled code and caches in place; the difference is the compile/JIT time.
"""

from __future__ import annotations

import importlib
import json
import sys
import time

import numpy as np

from . import ENGINE_NEEDS, ENGINES, MODELS

__all__ = ["main", "ess_summary"]

#: the module each engine's fit lives in
_FITS = {"autogibbs": "pyro_programs", "pyro_nuts": "pyro_programs", "numpyro": "numpyro_programs",
         "numpyro_enum": "numpyro_programs", "pymc": "pymc_programs"}


def _emit(**record) -> None:
    print(json.dumps(record, allow_nan=False), flush=True)


def _finite(x: float):
    return float(x) if np.isfinite(x) else None


def ess_summary(values: dict) -> dict:
    """Bulk ESS (ArviZ, one chain) of every quantity, their means and sds, the minimum ESS and
    the quantity it belongs to (a quantity whose ESS is undefined, such as a constant chain,
    counts as ESS 0)."""
    import arviz as az

    ess = {name: _finite(az.ess(np.asarray(v, dtype=np.float64)[None, :], method="bulk"))
           for name, v in values.items()}
    scores = {name: (e if e is not None else 0.0) for name, e in ess.items()}
    slowest = min(scores, key=scores.get)
    return {"ess": ess, "min_ess": scores[slowest], "slowest": slowest,
            "means": {k: _finite(np.mean(v)) for k, v in values.items()},
            "sds": {k: _finite(np.std(v, ddof=1)) for k, v in values.items()}}


def _classify(engine: str, exc: BaseException) -> str:
    from .numpyro_programs import Unsupported

    if isinstance(exc, Unsupported):
        return "unsupported"
    # the automatic plan refuses a model it has no update for with a ValueError naming the site
    if engine == "autogibbs" and isinstance(exc, ValueError):
        return "unsupported"
    return "error"


def main(argv=None) -> int:
    engine, model, path, num_samples, warmup, seed, mode = (argv or sys.argv[1:])
    if engine not in ENGINES or model not in MODELS or mode not in ("record", "timed"):
        raise ValueError(f"engine must be in {ENGINES}, model in {MODELS}, mode record or timed; "
                         f"got {engine!r}, {model!r}, {mode!r}")
    num_samples, warmup, seed = int(num_samples), int(warmup), int(seed)
    start = time.perf_counter()
    try:
        if ENGINE_NEEDS[engine] is not None:
            importlib.import_module(ENGINE_NEEDS[engine])
        fits = importlib.import_module(f"{__package__}.{_FITS[engine]}")
        from .data import quantities
    except ModuleNotFoundError as exc:
        _emit(phase="import", status="skipped", reason=f"{exc.name} not installed")
        return 0
    _emit(phase="import", import_s=time.perf_counter() - start)
    with np.load(path) as arrays:
        data = {k: arrays[k] for k in arrays.files}
    fit = getattr(fits, f"run_{engine}")
    for phase in ("cold", "warm") if mode == "record" else ("cold",):
        t0 = time.perf_counter()
        try:
            raw = fit(model, data, num_samples, warmup, seed)
        except ModuleNotFoundError as exc:
            _emit(phase=phase, status="skipped", reason=f"{exc.name} not installed")
            return 0
        except Exception as exc:  # recorded, not raised: the cell says why it could not run
            _emit(phase=phase, status=_classify(engine, exc),
                  reason=f"{type(exc).__name__}: {str(exc)[:500]}")
            return 0
        fit_s = time.perf_counter() - t0
        extra = ess_summary(quantities(model, raw, data)) if phase == "cold" and mode == "record" else {}
        _emit(phase=phase, status="ok", fit_s=fit_s, **extra)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
