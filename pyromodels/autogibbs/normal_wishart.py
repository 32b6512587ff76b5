"""Joint Normal-Wishart draws of a mean site and the precision site that scales its prior.

A Gaussian model with unknown mean ``mu`` and precision matrix ``Lambda`` is usually written
``Lambda ~ Wishart(nu, W)``, ``mu | Lambda ~ MultivariateNormal(m, (kappa Lambda)^-1)`` and
Gaussian data of precision ``Lambda`` (a mixture's components, gathered by their
assignments). Each site is then conjugate given the other, and the plan can draw them one at
a time; but the two are correlated a posteriori, and their joint conditional is itself a
Normal-Wishart, which draws both exactly at once (as the Gaussian mixture family's
hand-written sweep does).

**Its parameters from the two conditionals.** At the current state the plan already reads
(see :mod:`.exponential`) the mean's conditional ``N(m', (P)^-1)`` given ``Lambda`` and the
precision's conditional ``Wishart(nu_c, S^-1)`` given ``mu``. If the joint conditional is
``NW(m', kappa', nu', W')``, then ``P = kappa' Lambda``, ``nu_c = nu' + 1`` and
``S = W'^-1 + kappa' (mu - m')(mu - m')^T``. So ``kappa' = tr(P Lambda^-1) / d``,
``nu' = nu_c - 1`` and ``W'^-1 = S - kappa' (mu - m')(mu - m')^T``, per element of the sites'
plates.

**Checked, not assumed.** Any pair of a conjugate Wishart site and a conjugate
MultivariateNormal site of matching shapes whose prior reads the Wishart site is a candidate;
the joint block is taken only if condition-and-score holds for the joint: at two draws of
``(mu, Lambda)`` from the Normal-Wishart so read, its log density minus the program's log joint
is the same (the check of a single conjugate site, on the pair). A mean whose prior precision
is not a multiple of ``Lambda``, or data whose precision is not ``Lambda``, fails it, and the
two sites keep their own updates.
"""

from __future__ import annotations

import torch

from ..conjugate import NormalWishart
from ..core.gibbs import GibbsBlock
from ..core.seeding import make_generator
from .exponential import ConjugateUpdate, family_of, posterior_params, unwrap
from .pair_table import joint_posterior
from .trace import log_joint, tolerance

__all__ = ["NormalWishartUpdate", "pair_normal_wishart"]


class NormalWishartUpdate:
    """The joint draw of ``(mean, precision)`` from their Normal-Wishart conditional (a
    picklable callable for a :class:`~pyromodels.core.GibbsBlock` writing both sites).

    After the first call, where the plan built the pair a statistics table (see
    :mod:`.pair_table`), the joint conditional comes from it without running the program.

    Args:
        precision: the :class:`~.exponential.ConjugateUpdate` of the Wishart site.
        mean: the :class:`~.exponential.ConjugateUpdate` of the MultivariateNormal site.
        verify: check the joint by condition-and-score (:meth:`check`) at the first call and
            raise a ``RuntimeError`` naming the sites when it fails. The check draws from its own
            generator.
    """

    def __init__(self, precision: ConjugateUpdate, mean: ConjugateUpdate, verify: bool = True):
        self.precision, self.mean, self.verify = precision, mean, verify
        self.table = None  # the pair's statistics table (see .pair_table), set by the plan

    @property
    def sites(self) -> tuple[str, str]:
        return self.precision.site, self.mean.site

    def posterior(self, state: dict, data, plain: bool = False) -> NormalWishart:
        """The joint conditional of the two sites given the rest of ``state`` (float64); with
        ``plain``, both conditionals read off the program as at a later sweep (no first-call
        check, no table)."""
        lam = state[self.precision.site].to(torch.float64)
        mu = state[self.mean.site].to(torch.float64)
        if plain:
            wishart, normal = (posterior_params(u.model, data.args, data.kwargs, state, u.site, u.fn,
                                                checked=False) for u in (self.precision, self.mean))
        else:
            wishart = self.precision.params(state, data)
            normal = self.mean.params(state, data)
        loc = normal["loc"].to(torch.float64)
        kappa = (normal["precision_matrix"].to(torch.float64) * torch.linalg.inv(lam)).sum((-2, -1)) \
            / lam.shape[-1]
        outer = (mu - loc).unsqueeze(-1) * (mu - loc).unsqueeze(-2)
        inv_scale = torch.cholesky_inverse(wishart["scale_tril"].to(torch.float64)) \
            - kappa[..., None, None] * outer
        return NormalWishart.from_inverse_scale(loc, kappa, wishart["df"].to(torch.float64) - 1.0,
                                                0.5 * (inv_scale + inv_scale.mT))

    def __call__(self, state: dict, data, generator: torch.Generator) -> dict:
        if self.verify:
            own = make_generator(0, state[self.mean.site].device)  # leaves the chain's stream alone
            if not self.check(state, data, own):
                raise RuntimeError(f"sites {self.sites}: their joint Normal-Wishart update failed "
                                   f"condition-and-score at the first sweep; pass your own blocks in "
                                   f"overrides=")
            self.verify = False
        posterior = None
        if self.table is not None and self.table.data.same(data.args, data.kwargs):
            posterior = joint_posterior(self.table.coefficients(state), state[self.mean.site].shape[-1])
        if posterior is None:
            posterior = self.posterior(state, data)
        mu, lam = posterior.sample(generator)
        return {self.precision.site: lam.to(state[self.precision.site].dtype),
                self.mean.site: mu.to(state[self.mean.site].dtype)}

    def check(self, state: dict, data, generator: torch.Generator) -> bool:
        """Condition-and-score of the joint at two of its draws; ``False`` also where the two
        conditionals give no proper Normal-Wishart."""
        try:
            posterior = self.posterior(state, data)
        except (ValueError, RuntimeError):  # kappa or nu out of range, a scale not SPD
            return False
        diffs, sizes = [], []
        dtype = state[self.mean.site].dtype
        for _ in range(2):
            mu, lam = posterior.sample(generator)
            values = {self.precision.site: lam.to(state[self.precision.site].dtype),
                      self.mean.site: mu.to(dtype)}
            own = posterior.log_prob(mu, lam).sum()
            joint = log_joint(self.precision.model, data.args, data.kwargs, {**state, **values})
            diffs.append(float(own - joint.to(torch.float64)))
            sizes.append(abs(float(joint)))
        return abs(diffs[0] - diffs[1]) <= 10 * tolerance(dtype) * (1.0 + max(sizes))


def _is(fn, name: str) -> bool:
    family = family_of(fn)
    return family is not None and family.name == name


def pair_normal_wishart(sites: dict, out: list, deps, state: dict, data, generator,
                        verify: bool = True) -> tuple[dict, dict]:
    """The joint blocks of the plan's conjugate Wishart and MultivariateNormal sites.

    Args:
        sites: the traced latent sites; ``out``: their :class:`~.plan.SitePlan` so far.
        deps: ``() -> {site: sites its log density term reads}`` (called only where a pair
            of candidates exists).
        state: the traced state; ``data``: the program's arguments (``.args``, ``.kwargs``).
        generator: the checks' random stream.
        verify: whether the joint blocks check themselves again at their first sweep (the
            check here is how a pair is found, and always runs).

    Returns:
        ``(chosen, notes)``: ``{site: (reason, block)}`` for both sites of every pair whose
        joint passed its check (one shared block per pair; the precision site first), and
        ``{site: why not}`` for pairs whose mean reads the precision but failed it.
    """
    conj = {s.site: s for s in out if s.update == "conjugate"}
    wisharts = [n for n in conj if _is(sites[n]["fn"], "Wishart")]
    means = [n for n in conj if _is(sites[n]["fn"], "MultivariateNormal")]
    if not wisharts or not means:
        return {}, {}
    reads, chosen, notes = deps(), {}, {}
    for w in wisharts:
        for m in means:
            if m in chosen or w in chosen or w not in reads.get(m, ()):
                continue
            shape_w, shape_m = unwrap(sites[w]["fn"]), unwrap(sites[m]["fn"])
            if shape_w.batch_shape != shape_m.batch_shape or shape_w.event_shape[-1:] != shape_m.event_shape:
                continue
            update = NormalWishartUpdate(conj[w].block.update, conj[m].block.update, verify=verify)
            if not update.check(state, data, generator):
                why = "their joint Normal-Wishart failed condition-and-score"
                notes[w] = f"not drawn jointly with {m!r}: {why}"
                notes[m] = f"not drawn jointly with {w!r}: {why}"
                continue
            block = GibbsBlock(f"normal-wishart:{w},{m}", (w, m), update)
            reason = (f"Normal-Wishart of {w!r} and {m!r} drawn jointly (the mean's prior precision "
                      f"is a multiple of the Wishart site; checked by condition-and-score)")
            chosen[w] = chosen[m] = (reason, block)
    return chosen, notes
