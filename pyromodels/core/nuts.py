"""NUTS over the continuous sites with the discrete sites summed out, then restored."""

from __future__ import annotations

import time

import torch
from pyro.infer import MCMC, NUTS
from pyro.infer.autoguide.initialization import init_to_sample, init_to_value

from ..checks import check_int, check_probability
from .device import cuda_devices, resolve_device
from .enumeration import marginal_log_joint, sample_discrete
from .posterior import Posterior, make_attrs
from .progress import bars_drawn
from .seeding import derive_seed, make_generator, resolve_seed, seeded

__all__ = ["run_nuts"]


class _EnergyRecordingNUTS(NUTS):
    """NUTS that records, for every transition, the Hamiltonian at its start and the mean
    acceptance probability of its trajectory.

    That energy, ``U(q_{t-1}) + K(p_t)`` with the freshly drawn momentum, equals the energy of
    the accepted state up to the leapfrog integration error (the Hamiltonian is conserved along
    the trajectory), which is what ArviZ's energy plot and BFMI expect. The acceptance
    probability is recovered from Pyro's running mean ``m_t = m_{t-1} + (a_t - m_{t-1}) / n``
    (``n`` restarts at 1 after warm-up), so ``a_t = m_{t-1} + n (m_t - m_{t-1})``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.energies: list[float] = []
        self.accept_probs: list[float] = []
        self._record_next = False

    def sample(self, params):
        before = self._mean_accept_prob
        out = super().sample(params)
        n = self._t - self._warmup_steps if self._t > self._warmup_steps else self._t
        self.accept_probs.append(before + n * (self._mean_accept_prob - before))
        return out

    def _sample_r(self, name):
        self._record_next = True
        return super()._sample_r(name)

    def _kinetic_energy(self, r_unscaled):
        kinetic = super()._kinetic_energy(r_unscaled)
        if self._record_next:
            self._record_next = False
            self.energies.append(float(kinetic) + float(self._potential_energy_last))
        return kinetic


def run_nuts(
    model,
    data,
    *,
    num_samples: int = 500,
    num_warmup: int = 500,
    num_chains: int = 2,
    target_accept_prob: float = 0.8,
    max_tree_depth: int = 10,
    seed: int | None = None,
    lp: bool = True,
    progress: bool = True,
    device=None,
) -> Posterior:
    """NUTS on the model with its discrete sites enumerated, chains run one after another.

    After sampling, the discrete sites are drawn from their conditional posterior given each
    continuous draw (:func:`~pyromodels.core.enumeration.sample_discrete`).

    Args:
        model: a model object whose discrete sites are marked for parallel enumeration.
        data: the data (validated by ``model.prepare``).
        num_samples: kept draws per chain.
        num_warmup: adaptation steps per chain.
        num_chains: chains, each seeded from ``seed`` and ``init_values`` drawn per chain.
        target_accept_prob: NUTS step-size adaptation target in (0, 1).
        max_tree_depth: NUTS tree depth limit.
        seed: the fit's seed; ``None`` draws one (recorded in ``attrs``).
        lp: record the marginal log joint (discrete sites summed out) of every draw.
        progress: show Pyro's progress bar.
        device: ``"cpu"``, ``"cuda"`` or ``None`` (the data's device).

    Returns:
        A :class:`Posterior` with samples ``(chain, draw, ...)``, ``sample_stats["diverging"]``,
        ``sample_stats["energy"]`` (for ArviZ's energy plot and BFMI), the per-draw mean
        acceptance probability ``sample_stats["acceptance_rate"]`` and (with ``lp``)
        ``sample_stats["lp"]``.
    """
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    num_warmup = check_int(num_warmup, "num_warmup", minimum=0)
    num_chains = check_int(num_chains, "num_chains", minimum=1)
    target_accept_prob = check_probability(target_accept_prob, "target_accept_prob")
    max_tree_depth = check_int(max_tree_depth, "max_tree_depth", minimum=1)
    seed = resolve_seed(seed)
    device = resolve_device(device, data)
    data = model.prepare(data, device=device)
    start = time.perf_counter()
    per_chain, diverging, accept, energy = [], [], [], []
    for c in range(num_chains):
        chain_seed = derive_seed(seed, "chain", c)
        init = init_to_sample
        if callable(getattr(model, "init_values", None)):
            init = init_to_value(values=model.init_values(data, make_generator(chain_seed, device)))
        kernel = _EnergyRecordingNUTS(
            model.model,
            max_plate_nesting=model.max_plate_nesting,
            target_accept_prob=target_accept_prob,
            max_tree_depth=max_tree_depth,
            init_strategy=init,
            jit_compile=False,
        )
        with seeded(chain_seed, devices=cuda_devices(device)):
            mcmc = MCMC(kernel, num_samples=num_samples, warmup_steps=num_warmup,
                        disable_progbar=not bars_drawn(progress))
            mcmc.run(data)
        per_chain.append(mcmc.get_samples())
        energy.append(torch.tensor(kernel.energies[-num_samples:], dtype=torch.float64))
        div = torch.zeros(num_samples, dtype=torch.bool)
        idx = mcmc.diagnostics()["divergences"]["chain 0"]
        div[torch.as_tensor(idx, dtype=torch.long)] = True
        diverging.append(div)
        accept.append(torch.tensor(kernel.accept_probs[-num_samples:], dtype=torch.float64))
    samples = {k: torch.stack([c[k] for c in per_chain]) for k in per_chain[0]}
    stats = {
        "diverging": torch.stack(diverging),
        "energy": torch.stack(energy),
        "acceptance_rate": torch.stack(accept),
    }
    if lp:
        stats["lp"] = _lp_trace(model, data, samples)
    samples.update(sample_discrete(model, data, samples, seed=derive_seed(seed, "discrete")))
    return Posterior(
        samples=samples,
        method="nuts",
        sample_stats=stats,
        diagnostics={
            "mean_accept_prob": stats["acceptance_rate"].mean(1).tolist(),
            "num_divergences": int(stats["diverging"].sum()),
        },
        attrs=make_attrs("nuts", seed, device, start, num_warmup=num_warmup),
        model=model,
        data=data,
    )


def _lp_trace(model, data, samples) -> torch.Tensor:
    chains, draws = next(iter(samples.values())).shape[:2]
    lp = torch.empty(chains, draws, dtype=torch.float64)
    for c in range(chains):
        for d in range(draws):
            lp[c, d] = float(marginal_log_joint(model, data, {k: v[c, d] for k, v in samples.items()}))
    return lp
