r"""Sequential Dawid-Skene: crowd labels of items in sequences whose true labels form a Markov
chain (the ensemble paper's HMM ensemble, §2.2 and §4, with Dirichlet priors added).

Generative story (``S`` sequences, ``K`` classes, ``M`` workers)::

    initial             ~ Dirichlet(c0)                     (initial="learned"; else fixed or
                                                             the stationary law of transition)
    transition[i]       ~ Dirichlet(cA[i])                  i = 1..K   (rows = previous label)
    confusion[m, k]     ~ Dirichlet(cG[k])                  m = 1..M, k = 1..K (rows = true label)
    z_{s,1}             ~ Categorical(initial)
    z_{s,t} | z_{s,t-1} ~ Categorical(transition[z_{s,t-1}])
    f_{m,s,t} | z_{s,t} ~ Categorical(confusion[m, z_{s,t}])   for each response in the table

Sample sites of :meth:`SequentialDawidSkene.model` (:func:`full_model`):

============  =======================  =============  =========================================
site          support                  shape          meaning
============  =======================  =============  =========================================
initial       simplex                  (K,)           law of the first label (``"learned"``)
transition    row simplex              (K, K)         ``[i, j] = P(z_t = j | z_{t-1} = i)``
confusion     row simplex              (M, K, K)      ``[m, k, j] = P(worker m says j | z = k)``
z             {0..K-1}^T               (T_total,)     the label path of every sequence
labels        {0..K-1} (observed)      (L,)           the responses of the long table
============  =======================  =============  =========================================

One story, three ways to run it:

* :func:`full_model` keeps the label path as one site ``z`` (a :class:`MarkovChain`) and the
  responses as the long table's ``labels`` site; Gibbs, ``log_joint`` and simulation use it.
* :func:`collapsed_model` sums ``z`` out with ``pyro.distributions.DiscreteHMM``. Pyro applies
  one transition BEFORE the first observation (``initial_logits`` is the law of a state at time
  0), so the first of the time-dependent transition matrices has every row equal to
  ``log initial``: whatever the time-0 state, ``z_1 ~ initial`` exactly.
* :func:`enumerated_model` writes the chain with ``pyro.markov`` and enumerates each ``z_t``
  (a loop over time: for small data and for ``TraceEnum_ELBO`` / ``infer_discrete`` checks).

The collapsed and enumerated programs need at most one response per (item, worker): they read
the responses as a padded ``(S, T_max, M)`` block with ``-1`` for "no response".

Engines: ``em`` (Baum-Welch, :mod:`.baum_welch`, MAP with the Dirichlet priors; the default
concentrations 1 give maximum likelihood) and ``gibbs`` (:mod:`.gibbs`: FFBS for the paths,
conjugate Dirichlet updates). The engines prepare the data once per fit (which also chooses
the kernels' backend); the engine hooks take those prepared data.

Default prior of ``gibbs``: a flat confusion prior is symmetric under relabelling the
classes, and on small noisy sets (4 sequences of 10 tasks, 5 workers of about 55% accuracy,
3 classes) the chains switch labels and score far below majority vote. Left as ``None``,
``diagonal`` (extra pseudo-count on each confusion row's true class) therefore resolves per
engine (:meth:`SequentialDawidSkene.for_engine`): to
:data:`~pyromodels.crowd.emissions.BAYES_DIAGONAL` (1) for ``gibbs`` and to 0 for ``em``.
"""

from __future__ import annotations

import dataclasses

import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.ops.indexing import Vindex
from torch.distributions import Dirichlet

from ...checks import broadcast_shapes, check_in, check_positive
from ...core.model import Model
from ..emissions import for_engine, log_emissions, normalize_rows
from ..majority import majority_vote
from . import baum_welch, gibbs
from .data import SequentialCrowdData, prepare_sequential
from .distributions import CrowdResponses, MarkovChain
from .inference import viterbi
from .params import INITIAL_MODES, check_params, stationary_distribution

__all__ = ["SequentialDawidSkene", "global_sites", "full_model", "collapsed_model", "enumerated_model"]


def global_sites(data) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample ``initial`` (when learned), ``transition`` and ``confusion``; return all three."""
    K, M = data.num_classes, data.num_workers
    transition = pyro.sample("transition", dist.Dirichlet(data.transition_concentration).to_event(1))
    confusion = pyro.sample(
        "confusion", dist.Dirichlet(data.confusion_concentration.expand(M, K, K)).to_event(2)
    )
    if data.initial_mode == "learned":
        initial = pyro.sample("initial", dist.Dirichlet(data.initial_concentration))
    elif data.initial_mode == "fixed":
        initial = data.initial_probs
    else:
        initial = stationary_distribution(transition)
    return initial, transition, confusion


def full_model(data):
    """The program with the label path ``z`` ``(T_total,)`` and the responses ``labels`` ``(L,)``."""
    initial, transition, confusion = global_sites(data)
    z = pyro.sample("z", MarkovChain(initial, transition, data.lengths))
    table = data.table
    # the path's batch dims (under a plate of draws: (draws, 1), the 1 standing for the responses
    # plate) broadcast against the responses, so each draw's labels meet that draw's path
    item_z = Vindex(z)[..., table.item_idx]
    with pyro.plate("responses", table.num_labels, dim=-1):
        probs = Vindex(confusion)[..., table.worker_idx, item_z, :]
        pyro.sample("labels", dist.Categorical(probs), obs=table.label_idx)
    return z


def _first_step_logits(initial: torch.Tensor, transition: torch.Tensor, num_steps: int) -> torch.Tensor:
    """``(..., num_steps, K, K)``: step 0 maps any state to ``initial``, later steps use
    ``transition``."""
    K = initial.shape[-1]
    first = initial.log().unsqueeze(-2).expand(initial.shape[:-1] + (K, K))
    later = transition.log().unsqueeze(-3).expand(transition.shape[:-2] + (num_steps - 1, K, K))
    batch = broadcast_shapes(first.shape[:-2], later.shape[:-3])
    return torch.cat([first.expand(batch + (1, K, K)), later.expand(batch + (num_steps - 1, K, K))], -3)


def collapsed_model(data):
    """``z`` summed out by ``DiscreteHMM``: one site ``responses`` ``(S, T_max, M)`` per sequence."""
    initial, transition, confusion = global_sites(data)
    responses, _ = data.dense
    S, T, _ = responses.shape
    K = data.num_classes
    observation = CrowdResponses(confusion.log().transpose(-3, -2))  # batch (K,), event (M,)
    hmm = dist.DiscreteHMM(
        torch.zeros(K, dtype=initial.dtype, device=initial.device),  # the time-0 state: irrelevant
        _first_step_logits(initial, transition, T),
        observation,
    )
    with pyro.plate("sequences", S, dim=-1):
        pyro.sample("responses", hmm, obs=responses)


def enumerated_model(data):
    """The chain unrolled with ``pyro.markov``: sites ``z_t`` (enumerated) and ``responses_t``
    for ``t = 0 .. T_max - 1``, each batched over the sequences and masked past their ends."""
    initial, transition, confusion = global_sites(data)
    responses, mask = data.dense
    S, T, _ = responses.shape
    log_conf = confusion.log().transpose(-3, -2)  # (K, M, J)
    z = None
    with pyro.plate("sequences", S, dim=-1):
        for t in pyro.markov(range(T)):
            probs = initial if z is None else Vindex(transition)[..., z, :]
            with poutine.mask(mask=mask[:, t]):
                z = pyro.sample(f"z_{t}", dist.Categorical(probs), infer={"enumerate": "parallel"})
                pyro.sample(f"responses_{t}", CrowdResponses(Vindex(log_conf)[..., z, :, :]),
                            obs=responses[:, t])


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
        diagonal: extra pseudo-count ``>= 0`` added to ``confusion_concentration`` on each
            row's true class. ``None`` (default) resolves per engine when fitting
            (:meth:`for_engine`): 0 for ``em`` (maximum likelihood with the default
            concentrations), :data:`~pyromodels.crowd.emissions.BAYES_DIAGONAL` (1) for
            ``gibbs``, whose chains otherwise switch class labels on small data. ``prepare``
            and the runners called directly read ``None`` as 0.
        paper_literal: use the transition update (26) as printed in the paper, which returns
            the transpose of the correct estimate (kept to reproduce the error; see
            :mod:`~pyromodels.crowd.hmm.baum_welch`).
        backend: backend of the forward-backward, Viterbi and FFBS kernels (``"auto"``,
            ``"torch"``, ``"numba"``); chosen once, when the data are prepared.

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
    #: names of each site's axes in ArviZ groups (see :func:`~pyromodels.core.to_inference_data`)
    site_dims = {
        "initial": ("class",),
        "transition": ("previous_class", "class"),
        "confusion": ("worker", "true_class", "label"),
        "z": ("position",),
        "labels": ("response",),
    }

    def __init__(self, initial: str = "learned", initial_probs=None, initial_concentration=1.0,
                 transition_concentration=1.0, confusion_concentration=1.0, paper_literal: bool = False,
                 backend: str = "auto", diagonal: float | None = None):
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
        self.diagonal = None if diagonal is None else check_positive(diagonal, "diagonal",
                                                                     strict=False)

    def for_engine(self, method: str) -> SequentialDawidSkene:
        """This model with ``diagonal`` resolved for ``method`` (see
        :func:`~pyromodels.crowd.emissions.for_engine`)."""
        return for_engine(self, method)

    def fit(self, data, method: str = "svi", **kwargs):
        """Fit with one engine, the prior resolved for it (:meth:`for_engine`); the returned
        posterior's ``model`` is the resolved model. Arguments as for
        :meth:`pyromodels.core.model.Model.fit`."""
        return Model.fit(self.for_engine(method), data, method=method, **kwargs)

    # ----------------------------------------------------------------- data
    def prepare(self, data, device=None) -> SequentialCrowdData:
        """Validate ``data`` (a :class:`~pyromodels.data.Sequences` over an AnnotationTable);
        ``diagonal`` is added to the confusion concentration's diagonal."""
        prepared = prepare_sequential(
            data, initial_mode=self.initial, initial_probs=self.initial_probs,
            initial_concentration=self.initial_concentration,
            transition_concentration=self.transition_concentration,
            confusion_concentration=self.confusion_concentration, device=device,
            backend=self.backend,
        )
        if not self.diagonal or isinstance(data, SequentialCrowdData):
            return prepared
        conc = prepared.confusion_concentration
        eye = torch.eye(conc.shape[-1], dtype=conc.dtype, device=conc.device)
        return dataclasses.replace(prepared, confusion_concentration=conc + self.diagonal * eye)

    def _prepared(self, data) -> SequentialCrowdData:
        """``data`` if already prepared, else :meth:`prepare` of it (for the programs and the
        public methods that users call with raw sequences)."""
        return data if isinstance(data, SequentialCrowdData) else self.prepare(data)

    def observed_data(self, data) -> dict:
        """``{"labels": (L,) label codes of the long table}`` for ArviZ's ``observed_data``."""
        return {"labels": self._prepared(data).table.label_idx.cpu().numpy()}

    # -------------------------------------------------------------- programs
    def model(self, data):
        """The generative story with the label path ``z`` as a site."""
        return full_model(self._prepared(data))

    def collapsed_model(self, data):
        """The story with ``z`` summed out by ``pyro.distributions.DiscreteHMM``."""
        return collapsed_model(self._prepared(data))

    def enumerated_model(self, data):
        """The story unrolled with ``pyro.markov`` and each ``z_t`` enumerated."""
        return enumerated_model(self._prepared(data))

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
        data = self._prepared(data)
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
        data = self._prepared(data)
        return baum_welch.e_step(data.table, data.lengths, params, pairwise=None, backend=data.backend,
                                 paper_literal=self.paper_literal).log_likelihood

    def log_likelihood_pointwise(self, data, samples) -> dict:
        """Marginal ``log p(labels of sequence s | initial, transition, confusion)`` per draw,
        the label path ``z`` summed out by the forward pass (a trace of the program would give
        the likelihood given the drawn path instead).

        Returns ``{"sequences": (chain, draw, S)}``.
        """
        data = self._prepared(data)
        draws = samples["transition"]
        lead = tuple(draws.shape[:2])
        flat = {name: samples[name].reshape((-1,) + tuple(samples[name].shape[2:]))
                for name in ("transition", "confusion", "initial") if name in samples}
        out = []
        for i in range(flat["transition"].shape[0]):
            initial = flat["initial"][i] if "initial" in flat else None
            params = self.start_from(data, confusion=flat["confusion"][i],
                                     transition=flat["transition"][i], initial=initial)
            out.append(self.log_likelihood(data, params))
        return {"sequences": torch.stack(out).reshape(lead + (-1,))}

    def log_prior(self, data, params: dict) -> torch.Tensor:
        """Log Dirichlet densities of the parameters the program samples."""
        data = self._prepared(data)
        trans = Dirichlet(data.transition_concentration, validate_args=False)
        lp = trans.log_prob(params["transition"]).sum()
        conf = data.confusion_concentration.expand(params["confusion"].shape)
        lp = lp + Dirichlet(conf, validate_args=False).log_prob(params["confusion"]).sum()
        if data.initial_mode == "learned":
            lp = lp + Dirichlet(data.initial_concentration, validate_args=False).log_prob(params["initial"])
        return lp

    # ------------------------------------------------------------------ EM
    def em_init(self, data: SequentialCrowdData, generator) -> dict:
        """One M-step on majority-vote labels (random tie-breaking seeded from ``generator``)."""
        for name in ("initial", "transition", "confusion"):
            conc = getattr(data, f"{name}_concentration")
            if float(conc.min()) < 1:
                raise ValueError(
                    f"{name}_concentration must be >= 1 for EM (the MAP lies on the boundary "
                    f"otherwise), got {float(conc.min())}; use method='gibbs'"
                )
        seed = int(torch.randint(2**62, (1,), generator=generator, device=generator.device))
        return baum_welch.majority_vote_params(data.table, data.lengths, seed=seed,
                                               **self._step_options(data))

    def em_step(self, data: SequentialCrowdData, params: dict) -> dict:
        """One Baum-Welch iteration (MAP for the Dirichlet priors)."""
        return baum_welch.baum_welch_step(data.table, data.lengths, params,
                                          paper_literal=self.paper_literal, backend=data.backend,
                                          **self._step_options(data))[0]

    def em_objective(self, data, params: dict) -> float:
        """Log-likelihood plus log prior (the log joint with ``z`` summed out)."""
        data = self._prepared(data)
        return float(self.log_likelihood(data, params).sum() + self.log_prior(data, params))

    def em_outputs(self, data: SequentialCrowdData, params: dict) -> dict:
        """Posterior marginals, summed pairwise marginals, Viterbi labels, log-likelihoods."""
        fb = baum_welch.e_step(data.table, data.lengths, params, backend=data.backend,
                               paper_literal=self.paper_literal)
        return {"posterior": fb.posterior, "pairwise": fb.pairwise, "log_likelihood": fb.log_likelihood,
                "labels": self.decode(data, params)}

    def decode(self, data, params) -> torch.Tensor:
        """Viterbi labels ``(T_total,)`` under ``params`` (a dict or an EM ``Posterior``)."""
        data = self._prepared(data)
        params = getattr(params, "params", params)
        p = check_params(params, data.num_classes, data.num_workers,
                         row_stochastic_transition=not self.paper_literal)
        e = log_emissions(data.table, p["confusion"].log())
        return viterbi(e, p["initial"].log(), p["transition"].log(), data.lengths, backend=data.backend)[0]

    # ---------------------------------------------------------------- Gibbs
    def gibbs_sweep(self, data: SequentialCrowdData):
        """FFBS labels, then the Dirichlet blocks (see :mod:`~pyromodels.crowd.hmm.gibbs`)."""
        return gibbs.sweep(data)

    def init_state(self, data: SequentialCrowdData, generator) -> dict:
        """Majority-vote labels and the posterior means of the parameters given them."""
        gibbs.sweep(data)  # raises for initial="stationary"
        seed = int(torch.randint(2**62, (1,), generator=generator, device=generator.device))
        z = majority_vote(data.table, seed=seed).to(data.device)
        state = {"z": z}
        state["transition"] = normalize_rows(gibbs.transition_concentration(state, data))
        state["confusion"] = normalize_rows(gibbs.confusion_concentration(state, data))
        if data.initial_mode == "learned":
            state["initial"] = normalize_rows(gibbs.initial_concentration(state, data))
        return state
