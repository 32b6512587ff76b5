"""Warnings after a Markov chain fit whose draws should not be trusted yet.

:func:`~pyromodels.core.run_nuts` and :func:`~pyromodels.core.run_gibbs` (and so
``Model.fit(method="nuts" | "gibbs")`` and the estimators that fit through them) end by
calling :func:`warn_sampling_problems`, which emits one :class:`SamplingWarning` listing every
finding of :func:`sampling_findings`; ``diagnostic_warnings=False`` on the engine silences it.
The HTML report shows the same findings (see :mod:`pyromodels.report.fit_warnings`).

Thresholds:

* R-hat above :data:`RHAT_LIMIT` (1.01), and a bulk or tail effective sample size (ESS) below
  :data:`ESS_PER_CHAIN` (100) times the number of chains, as recommended by Vehtari, Gelman,
  Simpson, Carpenter and Bürkner (2021), "Rank-normalization, folding, and localization: an
  improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16(2), Sec. 4. R-hat
  compares chains: with one chain it is undefined and not checked (ESS is, per that chain).
  They are ArviZ's rank-normalised split R-hat and bulk and tail ESS (``az.rhat``,
  ``az.ess``), computed by :mod:`.chain_stats` without importing ArviZ, whose import costs
  a fresh process about 1.5 s;
* any divergent transition of NUTS (the draws are then biased where the posterior curves
  sharply);
* an energy Bayesian fraction of missing information (E-BFMI) below :data:`BFMI_LIMIT` (0.3)
  in any chain of NUTS (Betancourt 2016, "Diagnosing suboptimal cotangent disintegrations in
  Hamiltonian Monte Carlo"): the momentum resampling moves the energy too little for the
  sampler to explore the posterior's tails.

R-hat and ESS are computed on the continuous sites, with one rule for label switching. A
mixture's posterior is symmetric under renaming its components, so a sampler that mixes, or
chains that start apart, hold the same components under different names: per-component traces
(weights, means, cluster labels) then disagree by design and their R-hat says nothing. So:

* a model declares the sites whose component axis its symmetry permutes,
  ``label_switched_sites`` (``GaussianMixtureModel``: ``weights``, ``locs``, ``precisions``,
  ``z``); the engines record them in ``attrs["label_switched_sites"]``
  (:func:`label_switch_attrs`), and those sites are not checked. The warning says so, once,
  in one line; :func:`pyromodels.diagnostics.relabel` aligns the labels and drops the
  relabelled sites from that list, so a relabelled fit is checked in full;
* a sampler that records label-invariant quantities instead (the number of clusters, a
  concentration, a log joint; ``attrs["label_invariant_sites"]``, as the DP mixture and BHMC
  samplers do) has only those checked, whatever their dtype (counts are integers);
* a fit left with no site to check (every draw a discrete label, or every continuous site
  label-switched, as in a mixture's Gibbs fit) has its log joint ``sample_stats["lp"]``
  checked instead, at the draws where every chain recorded it: it does not depend on the
  labels' names and moves with the chain's state.

Example:
    >>> import torch
    >>> g = torch.Generator().manual_seed(0)
    >>> post = Posterior(samples={"mu": torch.randn(2, 300, generator=g)}, method="nuts",
    ...                  sample_stats={"diverging": torch.arange(600).reshape(2, 300) < 4})
    >>> [f.kind for f in sampling_findings(post)]
    ['divergences']
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..checks import check_bool
from .chain_stats import ess_bulk, ess_tail, rank_rhat
from .posterior import Posterior, check_posterior  # noqa: F401 - Posterior: the doctest's

if TYPE_CHECKING:  # pandas is imported where a table is built: a fit that checks nothing skips it
    import pandas as pd

__all__ = [
    "RHAT_LIMIT",
    "ESS_PER_CHAIN",
    "BFMI_LIMIT",
    "SamplingWarning",
    "SamplingFinding",
    "sampling_findings",
    "warn_sampling_problems",
    "diagnostic_sites",
    "label_switch_attrs",
    "e_bfmi",
]

#: R-hat above this says the chains have not mixed (Vehtari et al. 2021)
RHAT_LIMIT = 1.01
#: an ESS below this times the number of chains is too small to trust (Vehtari et al. 2021)
ESS_PER_CHAIN = 100
#: an E-BFMI below this in a chain says NUTS explores the energy poorly (Betancourt 2016)
BFMI_LIMIT = 0.3

#: methods whose draws do not come from Markov chains
_NOT_MCMC = ("em", "svi", "natgrad")


class SamplingWarning(UserWarning):
    """A Markov chain fit finished with diagnostics that say its draws are not yet reliable:
    divergent transitions, R-hat above 1.01, a bulk or tail ESS below 100 per chain, or an
    E-BFMI below 0.3. Silence it with ``diagnostic_warnings=False`` on the engine (or on
    ``Model.fit``), or with ``warnings.filterwarnings("ignore", category=SamplingWarning)``."""


@dataclass(frozen=True)
class SamplingFinding:
    """One problem of a Markov chain fit.

    Attributes:
        kind: ``"r_hat"``, ``"ess_bulk"``, ``"ess_tail"``, ``"divergences"`` or ``"bfmi"``.
        message: a sentence saying what is wrong, where, and what to do.
    """

    kind: str
    message: str


def diagnostic_sites(posterior) -> list[str]:
    """The sites whose R-hat and ESS are checked: the continuous (floating) sites but those in
    ``attrs["label_switched_sites"]``; or, when the posterior names its label-invariant sites
    (``attrs["label_invariant_sites"]``), those, whatever their dtype."""
    posterior = check_posterior(posterior)
    invariant = posterior.attrs.get("label_invariant_sites")
    if invariant is not None:
        return [k for k in posterior.samples if k in set(invariant)]
    switched = set(posterior.attrs.get("label_switched_sites", ()))
    return [k for k, v in posterior.samples.items()
            if v.is_floating_point() and k not in switched]


def label_switch_attrs(model) -> dict:
    """``{"label_switched_sites": [...]}`` from the model's ``label_switched_sites`` (``{}``
    when it declares none): what an engine adds to its fit's ``attrs``.

    Example:
        >>> class Mixture:
        ...     label_switched_sites = ("weights", "z")
        >>> label_switch_attrs(Mixture()), label_switch_attrs(object())
        ({'label_switched_sites': ['weights', 'z']}, {})
    """
    sites = getattr(model, "label_switched_sites", ()) or ()
    return {"label_switched_sites": list(sites)} if sites else {}


def _switched_note(posterior) -> str | None:
    """The one line saying which sites were left out as label-switched (``None``: none)."""
    switched = set(posterior.attrs.get("label_switched_sites", ()))
    if posterior.attrs.get("label_invariant_sites") is not None or not switched:
        return None
    skipped = [k for k in posterior.samples if k in switched]
    if not skipped:
        return None
    return (f"not checked: {', '.join(skipped)}, which the model declares label-switched (its "
            "components may swap names within and between chains, so their per-component "
            "draws need not agree); pyromodels.diagnostics.relabel aligns them for a check.")


def e_bfmi(energy) -> torch.Tensor:
    """Energy Bayesian fraction of missing information of each chain,
    ``sum_t (E_t - E_{t-1})^2 / sum_t (E_t - mean E)^2``.

    Args:
        energy: the Hamiltonian of each draw, ``(chain, draw)``.

    Returns:
        ``float64`` tensor ``(chain,)``; NaN for a chain with constant energy.

    Example:
        >>> e_bfmi(torch.tensor([[0.0, 1.0, 0.0, 1.0]])).tolist()
        [3.0]
    """
    energy = torch.as_tensor(energy).detach().double().cpu()
    if energy.dim() != 2 or energy.shape[1] < 2:
        raise ValueError(f"energy must be (chain, draw) with draw >= 2, got {tuple(energy.shape)}")
    steps = energy.diff(dim=1).square().sum(1)
    spread = (energy - energy.mean(1, keepdim=True)).square().sum(1)
    return steps / spread


def _is_mcmc(posterior) -> bool:
    return posterior.method not in _NOT_MCMC and posterior.num_draws > 1


def _diagnostics_table(draws: dict, num_chains: int) -> pd.DataFrame:
    """Bulk and tail ESS (and R-hat with two chains or more) of every scalar component of the
    ``(chain, draw, ...)`` tensors ``draws``, one row each, labelled as ArviZ's summary labels
    them. The statistics are ArviZ's (:mod:`.chain_stats`), computed without importing it.
    A constant quantity (a count of clusters that never moved) has no variance: its R-hat is
    NaN, which the checks skip, without NumPy's division warnings."""
    import pandas as pd

    stats = {"ess_bulk": ess_bulk, "ess_tail": ess_tail}
    if num_chains > 1:
        stats["r_hat"] = rank_rhat
    rows = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for site, tensor in draws.items():
            values = tensor.detach().double().cpu().numpy()
            for index in np.ndindex(*values.shape[2:]):
                label = f"{site}[{', '.join(map(str, index))}]" if index else site
                chains = values[(slice(None), slice(None)) + index]
                rows[label] = {col: stat(chains) for col, stat in stats.items()}
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(stats))


def _log_joint_draws(posterior) -> dict:
    """``{"lp": (chain, draw)}``: the log joint at the draws where every chain recorded it
    (a sampler with ``lp_every > 1`` leaves NaN between), or ``{}`` with fewer than 4."""
    lp = posterior.sample_stats.get("lp")
    if lp is None or lp.dim() != 2:
        return {}
    lp = lp.detach().double()
    lp = lp[:, torch.isfinite(lp).all(0)]
    return {"lp": lp} if lp.shape[1] >= 4 else {}


def _worst(table: pd.DataFrame, column: str, largest: bool) -> tuple[str, float] | None:
    import pandas as pd

    values = pd.to_numeric(table[column], errors="coerce").dropna() if column in table else None
    if values is None or values.empty:
        return None
    label = values.idxmax() if largest else values.idxmin()
    return str(label), float(values[label])


def _above(value: float, limit: float) -> str:
    """``value`` with enough decimals (3 at least) to show that it exceeds ``limit``."""
    for digits in range(3, 8):
        text = f"{value:.{digits}f}"
        if float(text) > limit:
            return text
    return f"{value!r}"


def _convergence(table: pd.DataFrame, num_chains: int) -> list[SamplingFinding]:
    import pandas as pd

    found = []
    worst = _worst(table, "r_hat", largest=True)
    if worst is not None and worst[1] > RHAT_LIMIT:
        bad = int((pd.to_numeric(table["r_hat"], errors="coerce") > RHAT_LIMIT).sum())
        found.append(SamplingFinding("r_hat", (
            f"R-hat (potential scale reduction) reaches {_above(worst[1], RHAT_LIMIT)} at {worst[0]}: "
            f"{bad} of {len(table)} quantities are above {RHAT_LIMIT}, so the chains disagree "
            "and have not reached one distribution (they may sit at different, possibly "
            "label-switched, modes). Run longer chains or check the trace plot; do not trust "
            "these estimates yet.")))
    need = ESS_PER_CHAIN * num_chains
    for kind in ("bulk", "tail"):
        worst = _worst(table, f"ess_{kind}", largest=False)
        if worst is not None and worst[1] < need:
            found.append(SamplingFinding(f"ess_{kind}", (
                f"the effective sample size (ESS, {kind}) falls to {worst[1]:.0f} at "
                f"{worst[0]}: below {need} ({ESS_PER_CHAIN} per chain), too few independent "
                f"draws for reliable {'means' if kind == 'bulk' else 'intervals'}. Draw more "
                "samples or improve mixing.")))
    return found


def _divergences(diverging) -> list[SamplingFinding]:
    diverging = torch.as_tensor(diverging)
    count = int(diverging.sum())
    if count <= 0:
        return []
    return [SamplingFinding("divergences", (
        f"{count} of {diverging.numel()} transitions diverged (NUTS): the draws are biased "
        "where the posterior curves sharply; raise the target acceptance probability or "
        "reparametrise the model."))]


def _bfmi(energy) -> list[SamplingFinding]:
    values = e_bfmi(energy)
    low = [(c, float(v)) for c, v in enumerate(values) if float(v) < BFMI_LIMIT]
    if not low:
        return []
    chains = ", ".join(f"chain {c}: {v:.2f}" for c, v in low)
    return [SamplingFinding("bfmi", (
        f"the energy Bayesian fraction of missing information (E-BFMI) is below {BFMI_LIMIT} "
        f"({chains}): NUTS moves through the energy levels too slowly to explore the "
        "posterior's tails. Reparametrise the model (for example non-centred) or check the "
        "energy plot."))]


def sampling_findings(posterior) -> list[SamplingFinding]:
    """The problems of a Markov chain fit, by the thresholds of this module: R-hat (two chains
    or more) and bulk/tail ESS of :func:`diagnostic_sites` (where none is left, of the log
    joint ``sample_stats["lp"]``, which no relabelling changes), divergences
    (``sample_stats["diverging"]``) and E-BFMI (``sample_stats["energy"]``).

    Args:
        posterior: a :class:`~pyromodels.core.Posterior`.

    Returns:
        A list of :class:`SamplingFinding`, empty for a clean fit and for fits whose draws do
        not come from Markov chains (``method`` ``"em"``, ``"svi"`` or ``"natgrad"``, or a
        single draw).
    """
    posterior = check_posterior(posterior)
    if not _is_mcmc(posterior):
        return []
    found = []
    diverging = posterior.sample_stats.get("diverging")
    if diverging is not None:
        found += _divergences(diverging)
    sites = diagnostic_sites(posterior)
    draws = ({k: posterior.samples[k] for k in sites} if sites
             else _log_joint_draws(posterior))
    if draws:
        found += _convergence(_diagnostics_table(draws, posterior.num_chains), posterior.num_chains)
    energy = posterior.sample_stats.get("energy")
    if energy is not None:
        found += _bfmi(energy)
    return found


def warn_sampling_problems(posterior, enabled: bool = True):
    """Emit one :class:`SamplingWarning` listing :func:`sampling_findings` of ``posterior``
    (none when they are empty or ``enabled`` is false) and return ``posterior``. Called by an
    engine as its last step, it attributes the warning to the first caller outside pyromodels
    (the user's line, whether it called an engine, ``Model.fit`` or an estimator).

    Args:
        posterior: a :class:`~pyromodels.core.Posterior`.
        enabled: ``False`` skips the checks (an engine's ``diagnostic_warnings``).

    Raises:
        TypeError: when ``enabled`` is not a bool.
    """
    if check_bool(enabled, "diagnostic_warnings"):
        found = sampling_findings(posterior)
        if found:
            note = _switched_note(posterior)
            lines = "\n".join(f"- {m}" for m in [f.message for f in found] + [note] if m)
            warnings.warn(f"the {posterior.method} fit may not have converged "
                          f"(diagnostic_warnings=False silences this):\n{lines}",
                          SamplingWarning, stacklevel=_caller_level())
    return posterior


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame, above this module's caller, whose code is not
    pyromodels' (counted as :func:`warnings.warn` counts, 1 being the caller of ``warn``)."""
    frame, level = sys._getframe(2), 2  # the caller of warn_sampling_problems
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "pyromodels":
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 1
