r"""The Wishart prior of the mixture's precisions, drawn by the Bartlett decomposition.

torch's ``Wishart.rsample`` tests each draw with an inverted support check, warns "Singular
sample detected" about valid draws and redraws them. This subclass keeps Pyro's Wishart (its
``log_prob``, support, ``expand``) and replaces only the draw: with ``W = L L^T``,

.. math:: \Lambda = L A A^T L^T, \qquad A_{ii} = \sqrt{c_i},\ c_i \sim \chi^2(\nu - i),
          \quad A_{ij} \sim \mathcal N(0, 1)\ (i > j), \quad A_{ij} = 0\ (i < j),

for ``i = 0 .. d - 1``, which is Wishart(``nu``, ``W``) (Bartlett 1933). Draws use torch's
global generator, as every Pyro sample statement does, so ``pyro.set_rng_seed`` fixes them.
"""

from __future__ import annotations

import pyro.distributions as dist
import torch

__all__ = ["BartlettWishart"]


class BartlettWishart(dist.Wishart):
    """Pyro's Wishart with draws by the Bartlett decomposition (no spurious warnings).

    Example:
        >>> w = BartlettWishart(torch.tensor(5.0), scale_tril=torch.eye(2))
        >>> w.sample((3,)).shape
        torch.Size([3, 2, 2])
    """

    def rsample(self, sample_shape=()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        batch, d = shape[:-2], shape[-1]
        df = self.df.expand(batch)
        offsets = torch.arange(d, dtype=df.dtype, device=df.device)
        chi2 = torch.distributions.Chi2(df.unsqueeze(-1) - offsets).rsample()
        below = torch.randn(batch + (d, d), dtype=df.dtype, device=df.device).tril(diagonal=-1)
        factor = self._unbroadcasted_scale_tril @ (below + torch.diag_embed(chi2.sqrt()))
        return factor @ factor.mT
