""":class:`~pyromodels.crowd.estimators.DawidSkeneEstimator`'s EM on NumPy arrays: from a
DataFrame to labels without importing torch, Pyro or numba.

A fit with ``method="em"`` on the CPU, where the C passes were built, codes the DataFrame
(:class:`~pyromodels.data.columns.LabelCodes`), checks the labels as the model's data
preparation does (:func:`~pyromodels.crowd.ds.label_checks.check_label_counts`) and runs
:func:`~pyromodels.crowd.ds.array_em.fit_em`: the same passes, arithmetic and stopping rule
as the torch path (:meth:`DawidSkene.fit <pyromodels.crowd.ds.model.DawidSkene.fit>` with
``method="em"``), so the fitted attributes are the same, dtypes included. The torch objects
(``posterior_``, ``model_``, ``table_``) are built from the arrays on first use
(:func:`array_results`), which imports torch then.

Anything else takes the torch path, which also raises the errors of bad input: another
method or device, ``init_confusion``, ``true_labels`` or ``initial_error``, ``progress=True``,
concentrations given as arrays or out of EM's range, repeated (task, worker) rows, fewer than
two classes, a build without the C extensions (or ``PYROMODELS_NO_C`` set), and a fit that
meets an item impossible under every class (``em_floor=0`` only).
"""

from __future__ import annotations

import numbers
import time
from typing import NamedTuple

import numpy as np
import pandas as pd

from ...core.seeding import resolve_seed
from ...data.columns import count_labels
from ...data.idmaps import c_table_passes
from ..ds.array_em import ArrayFit, fit_em, resolve_prior, working_dtype
from ..ds.kernels import array_passes
from ..ds.kernels.native import have_c
from ..ds.label_checks import SingleWorkerClassWarning, SparseWorkerWarning, check_label_counts

__all__ = ["ARRAY_RESULTS", "ArrayState", "fit_on_arrays", "array_results"]

#: the fitted attributes built from the arrays on first use
ARRAY_RESULTS = ("posterior_", "model_", "table_")


class ArrayState(NamedTuple):
    """What an array fit keeps to build the torch objects later."""

    codes: object  # LabelCodes
    fit: ArrayFit
    model_args: dict
    allow_repeats: bool
    seed: int
    tol: float
    wall_time_s: float


def _eligible(est, codes, warm: bool) -> bool:
    device = est.device
    floor = est.em_floor
    # a warm start replaces the start that init_confusion sets
    return (est.method == "em" and (warm or est.init_confusion is None) and est.progress is False
            and (device is None or device == "cpu") and have_c()
            and c_table_passes() is not None and isinstance(est.update_prior, bool)
            and isinstance(floor, numbers.Real) and not isinstance(floor, bool) and floor >= 0
            and codes.num_classes >= 2
            and (est.allow_repeats or codes.has_repeats() is False))


def fit_on_arrays(est, codes, warm=None, stacklevel: int = 4) -> bool:
    """Fit ``est`` (a DawidSkeneEstimator) on the arrays when it can (see the module doc)
    and store its results; ``False`` leaves it to the torch path.

    ``warm`` (``(prior, confusion)`` arrays) is a warm start for EM
    (:meth:`~pyromodels.crowd.estimators.DawidSkeneEstimator.partial_fit`); it replaces the
    majority-vote start and ``init_confusion``. ``stacklevel``: that of the label-count
    warnings, which name the line that called ``fit`` or ``partial_fit``.
    """
    if not _eligible(est, codes, warm is not None):
        return False
    args = est._model_args(codes)
    spec = resolve_prior(codes.num_classes, args["prior_concentration"],
                         args["confusion_concentration"], args["diagonal"],
                         args["update_prior"], working_dtype())
    if spec is None:
        return False
    options = est._engine_options((est.method,))
    seed = resolve_seed(options["seed"])
    check_label_counts(*count_labels(codes, c_table_passes()), codes, False,
                       stacklevel=stacklevel)
    start = time.perf_counter()
    # a fixed number of steps (tol=0) or the start itself (n_iter=0) is no failure
    fixed = options["tol"] == 0 or options["max_iter"] == 0
    fit = fit_em(codes, spec, float(args["em_floor"]), options["max_iter"], options["tol"],
                 warn_not_converged=not fixed, start=warm)
    if fit is None:
        return False
    for name in ARRAY_RESULTS:  # those of an earlier fit, built from its arrays
        est.__dict__.pop(name, None)
    state = ArrayState(codes, fit, args, est.allow_repeats, seed, options["tol"],
                       time.perf_counter() - start)
    est.probas_ = est._frame(codes, fit.probas)
    est.labels_ = est._series(codes, fit.labels)
    est._store_confusions(codes, fit.confusion)
    est.priors_ = pd.Series(fit.prior.astype(np.float64),
                            index=pd.Index(codes.classes, name=est.label), name="prior")
    est.loss_history_ = list(fit.monitor.history)
    est.n_iter_, est.converged_ = fit.n_iter, bool(fit.converged)
    est._em_arrays = state
    return True


def array_results(est) -> dict:
    """Build ``posterior_``, ``model_`` and ``table_`` of an array fit (importing torch),
    store them on ``est`` and return them: what the torch path's fit holds."""
    import warnings

    import torch

    from ...core.device import default_dtype
    from ...core.posterior import Posterior, make_attrs
    from ...data.annotations import AnnotationTable
    from ..ds.model import DawidSkene

    state: ArrayState = est.__dict__["_em_arrays"]
    fit = state.fit
    dtype = getattr(torch, fit.confusion.dtype.name)
    model = DawidSkene(**state.model_args)
    table = AnnotationTable.from_codes(state.codes, allow_repeats=state.allow_repeats)
    with warnings.catch_warnings(), default_dtype(dtype):
        warnings.simplefilter("ignore", (SparseWorkerWarning, SingleWorkerClassWarning))
        data = model.prepare(table)  # the fit's warnings were given by fit
    prior = data.fixed_prior if data.fixed_prior is not None else torch.from_numpy(fit.prior)
    # the posterior holds the class posteriors under the fitted parameters, as run_em's
    q, loglik, best = array_passes.posteriors(
        state.codes, np.ascontiguousarray(fit.prior, dtype=np.float64),
        array_passes.columns(fit.confusion), "c", best=True)
    params = {
        "prior": prior,
        "confusion": torch.from_numpy(fit.confusion),
        "probas": torch.from_numpy(q.astype(fit.confusion.dtype)),
        "labels": torch.from_numpy(best),
        "log_likelihood": torch.from_numpy(loglik).to(dtype).sum(),
    }
    monitor = fit.monitor
    start = time.perf_counter() - state.wall_time_s
    posterior = Posterior(
        samples={k: params[k].unsqueeze(0).unsqueeze(0) for k in model.em_sites},
        method="em",
        losses=torch.tensor(monitor.history, dtype=torch.float64),
        params=params,
        diagnostics={"converged": monitor.converged, "n_iter": monitor.n_iter - 1,
                     "monitor": monitor, "restart_objectives": [monitor.history[-1]]},
        attrs=make_attrs("em", state.seed, torch.device("cpu"), start, n_init=1, tol=state.tol),
        model=model,
        data=data,
    )
    results = {"posterior_": posterior, "model_": model, "table_": table}
    est.__dict__.update(results)
    return results
