r"""Sequential Dawid-Skene: crowd labels of items in sequences whose true labels form a Markov
chain (the ensemble paper's HMM ensemble, §2.2 and §4, with Dirichlet priors added).

Sample sites of :meth:`SequentialDawidSkene.model` (see :mod:`~pyromodels.crowd.hmm.programs`):

============  =======================  =============  =========================================
site          support                  shape          meaning
============  =======================  =============  =========================================
initial       simplex                  (K,)           law of the first label (``"learned"``)
transition    row simplex              (K, K)         ``[i, j] = P(z_t = j | z_{t-1} = i)``
confusion     row simplex              (M, K, K)      ``[m, k, j] = P(worker m says j | z = k)``
z             {0..K-1}^T               (T_total,)     the label path of every sequence
labels        {0..K-1} (observed)      (L,)           the responses of the long table
============  =======================  =============  =========================================

Engines: ``em`` (Baum-Welch, MAP with the Dirichlet priors; the default concentrations 1 give
maximum likelihood) and ``gibbs`` (FFBS for the paths, conjugate Dirichlet updates).
"""

from __future__ import annotations

import torch
from torch.distributions import Dirichlet

from ...checks import check_in
from ...core.model import Model
from ..emissions import log_emissions, normalize_rows
from ..majority import majority_vote
from . import baum_welch as bw
from . import ffbs, programs
from .data import SequentialCrowdData, prepare_sequential
from .kernels.viterbi import viterbi
from .params import INITIAL_MODES, check_params, stationary_distribution

__all__ = ["SequentialDawidSkene"]


class SequentialDawidSkene(Model):
    """Dawid-Skene with a Markov chain over the true labels of each sequence.

    Args:
        initial: how the law of each sequence's first label is handled: ``"learned"`` (a
            Dirichlet-distributed site, updated by EM), ``"fixed"`` (``initial_probs``,
            default uniform) or ``"stationary"`` (the stationary law of ``transition``, EM
            only; the EM step is then not exact and the likelihood may dip).
        initial_probs: ``(K,)`` the fixed law (``initial="fixed"`` only).
        initial_concentration: Dirichlet concentration of ``initial`` (scalar or ``(K,)``).
        transition_concentration: of each transition row (scalar or ``(K, K)``).
        confusion_concentration: of each confusion row (scalar or ``(K, K)``, shared by the
            workers). EM needs every concentration ``>= 1``.
        paper_literal: use the transition update (26) as printed in the paper, which returns
            the transpose of the correct estimate (kept to reproduce the error; see
            :mod:`~pyromodels.crowd.hmm.baum_welch`).
        backend: forward-backward backend for EM (``"auto"``, ``"torch"``, ``"numba"``).

    Exact zeros: with concentrations equal to 1 the EM step is maximum likelihood, which sets a
    confusion entry to exactly 0 when a worker never gave an answer to items believed to be of
    a class (common after the majority-vote start on sparse data), and a zero never recovers.
    Concentrations slightly above 1 (say ``1 + 1e-10``) make every entry positive; the step is
    then the exact MAP step of that prior, so EM stays monotone in the program's log joint.

    Example:
        >>> from pyromodels.data.simulate_crowd import simulate_sequential_annotations
        >>> seqs, truth = simulate_sequential_annotations([30] * 4, 5, 3, stickiness=0.5, seed=0)
        >>> post = SequentialDawidSkene().fit(seqs, method="em", seed=0, progress=False)
        >>> post.params["labels"].shape, post.params["posterior"].shape
        (torch.Size([120]), torch.Size([120, 3]))
    """

    max_plate_nesting = 1
    engines = ("em", "gibbs")
    em_sites = ("initial", "transition", "confusion")

    def __init__(self, initial: str = "learned", initial_probs=None, initial_concentration=1.0,
                 transition_concentration=1.0, confusion_concentration=1.0, paper_literal: bool = False,
                 backend: str = "auto"):
        self.initial = check_in(initial, "initial", INITIAL_MODES)
        if initial_probs is not None and initial != "fixed":
            raise ValueError(f"initial_probs is used only with initial='fixed', got initial={initial!r}")
        if not isinstance(paper_literal, bool):
            raise TypeError(f"paper_literal must be a bool, got {paper_literal!r}")
        if paper_literal and initial == "stationary":
            raise ValueError("paper_literal=True cannot be combined with initial='stationary'")
        self.initial_probs = initial_probs
        self.initial_concentration = initial_concentration
        self.transition_concentration = transition_concentration
        self.confusion_concentration = confusion_concentration
        self.paper_literal = paper_literal
        self.backend = check_in(backend, "backend", ("auto", "torch", "numba"))

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> SequentialCrowdData:
        """Validate ``data`` (a :class:`~pyromodels.data.Sequences` over an AnnotationTable)."""
        return prepare_sequential(
            data, initial_mode=self.initial, initial_probs=self.initial_probs,
            initial_concentration=self.initial_concentration,
            transition_concentration=self.transition_concentration,
            confusion_concentration=self.confusion_concentration, device=device,
        )

    # -------------------------------------------------------------- programs
    def model(self, data):
        """The generative story with the label path ``z`` as a site."""
        return programs.full_model(self.prepare(data))

    def collapsed_model(self, data):
        """The story with ``z`` summed out by ``pyro.distributions.DiscreteHMM``."""
        return programs.collapsed_model(self.prepare(data))

    def enumerated_model(self, data):
        """The story unrolled with ``pyro.markov`` and each ``z_t`` enumerated."""
        return programs.enumerated_model(self.prepare(data))

    # -------------------------------------------------------------- parameters
    def _pseudo_counts(self, data) -> dict:
        return {"initial": data.initial_concentration - 1, "transition": data.transition_concentration - 1,
                "confusion": data.confusion_concentration - 1}

    def _step_options(self, data) -> dict:
        return {"initial": data.initial_mode, "initial_probs": data.initial_probs,
                "pseudo_counts": self._pseudo_counts(data)}

    def start_from(self, data, *, confusion, transition, initial=None) -> dict:
        """A validated EM start from given estimates (for example moment matching).

        ``initial`` defaults to uniform (``"learned"``), the fixed law (``"fixed"``) or the
        stationary law of ``transition`` (``"stationary"``). Pass the result as
        ``fit(data, method="em", init=...)``.
        """
        data = self.prepare(data)
        K = data.num_classes
        if initial is None:
            initial = {"learned": torch.full((K,), 1.0 / K, dtype=torch.float64),
                       "fixed": data.initial_probs}.get(data.initial_mode)
            if initial is None:
                initial = stationary_distribution(torch.as_tensor(transition, dtype=torch.float64))
        params = {"initial": initial, "transition": transition, "confusion": confusion}
        return check_params(params, K, data.num_workers, name="start")

    def log_likelihood(self, data, params: dict) -> torch.Tensor:
        """``(S,)`` log-likelihood of each sequence, ``z`` summed out."""
        data = self.prepare(data)
        return bw.e_step(data.table, data.lengths, params, pairwise=None, backend=self.backend,
                         paper_literal=self.paper_literal).log_likelihood

    def log_prior(self, data, params: dict) -> torch.Tensor:
        """Log Dirichlet densities of the parameters the program samples."""
        data = self.prepare(data)
        trans = Dirichlet(data.transition_concentration, validate_args=False)
        lp = trans.log_prob(params["transition"]).sum()
        conf = data.confusion_concentration.expand(params["confusion"].shape)
        lp = lp + Dirichlet(conf, validate_args=False).log_prob(params["confusion"]).sum()
        if data.initial_mode == "learned":
            lp = lp + Dirichlet(data.initial_concentration, validate_args=False).log_prob(params["initial"])
        return lp

    # ------------------------------------------------------------------ EM
    def em_init(self, data, generator) -> dict:
        """One M-step on majority-vote labels (random tie-breaking seeded from ``generator``)."""
        data = self.prepare(data)
        for name in ("initial", "transition", "confusion"):
            conc = getattr(data, f"{name}_concentration")
            if float(conc.min()) < 1:
                raise ValueError(
                    f"{name}_concentration must be >= 1 for EM (the MAP lies on the boundary "
                    f"otherwise), got {float(conc.min())}; use method='gibbs'"
                )
        seed = int(torch.randint(2**62, (1,), generator=generator, device=generator.device))
        return bw.majority_vote_params(data.table, data.lengths, seed=seed, **self._step_options(data))

    def em_step(self, data, params: dict) -> dict:
        """One Baum-Welch iteration (MAP for the Dirichlet priors)."""
        data = self.prepare(data)
        return bw.baum_welch_step(data.table, data.lengths, params, paper_literal=self.paper_literal,
                                  backend=self.backend, **self._step_options(data))[0]

    def em_objective(self, data, params: dict) -> float:
        """Log-likelihood plus log prior (the log joint with ``z`` summed out)."""
        return float(self.log_likelihood(data, params).sum() + self.log_prior(data, params))

    def em_outputs(self, data, params: dict) -> dict:
        """Posterior marginals, summed pairwise marginals, Viterbi labels, log-likelihoods."""
        data = self.prepare(data)
        fb = bw.e_step(data.table, data.lengths, params, backend=self.backend,
                       paper_literal=self.paper_literal)
        return {"posterior": fb.posterior, "pairwise": fb.pairwise, "log_likelihood": fb.log_likelihood,
                "labels": self.decode(data, params)}

    def decode(self, data, params) -> torch.Tensor:
        """Viterbi labels ``(T_total,)`` under ``params`` (a dict or an EM ``Posterior``)."""
        data = self.prepare(data)
        params = getattr(params, "params", params)
        p = check_params(params, data.num_classes, data.num_workers,
                         row_stochastic_transition=not self.paper_literal)
        e = log_emissions(data.table, p["confusion"].log())
        return viterbi(e, p["initial"].log(), p["transition"].log(), data.lengths, backend=self.backend)[0]

    # ---------------------------------------------------------------- Gibbs
    def gibbs_sweep(self, data):
        """FFBS labels, then the Dirichlet blocks (see :mod:`~pyromodels.crowd.hmm.ffbs`)."""
        return ffbs.sweep(self.prepare(data))

    def init_state(self, data, generator) -> dict:
        """Majority-vote labels and the posterior means of the parameters given them."""
        data = self.prepare(data)
        ffbs.sweep(data)  # raises for initial="stationary"
        seed = int(torch.randint(2**62, (1,), generator=generator, device=generator.device))
        z = majority_vote(data.table, seed=seed).to(data.device)
        state = {"z": z}
        state["transition"] = normalize_rows(ffbs.transition_concentration(state, data))
        state["confusion"] = normalize_rows(ffbs.confusion_concentration(state, data))
        if data.initial_mode == "learned":
            state["initial"] = normalize_rows(ffbs.initial_concentration(state, data))
        return state

