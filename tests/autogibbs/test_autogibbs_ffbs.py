"""Forward-filtering backward-sampling of pyro.markov chains: detection, the exact path
posterior, the forward log-likelihood, plates of sequences and the fallbacks."""

import contextlib
import itertools
import pickle

import pyro
import pyro.distributions as dist
import pytest
import torch
from scipy.stats import chi2

from pyromodels.autogibbs import fit_gibbs, plan
from pyromodels.autogibbs.markov import FFBSUpdate, chain_potentials
from pyromodels.autogibbs.trace import log_joint
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator

from .models import f64

INIT = f64([0.6, 0.4])
TRANS = f64([[0.7, 0.3], [0.4, 0.6]])
LOCS = f64([-1.0, 1.0])
X = f64([-0.5, 0.3, 1.2, -0.1])


def hmm(x, num_states=2):
    """Dirichlet rows, Normal emission means, one sequence ``x`` (T,) or a plate of them (S, T)."""
    with pyro.plate("states", num_states):
        trans = pyro.sample("trans", dist.Dirichlet(torch.ones(num_states, dtype=torch.float64)))
        locs = pyro.sample("locs", dist.Normal(f64(0.0), f64(3.0)))
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = 0
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(trans[z]))
            pyro.sample(f"x_{t}", dist.Normal(locs[z], f64(1.0)), obs=x[..., t])


def fixed_hmm(x):
    """Known parameters; ``x`` (T,) one sequence or (S, T) a plate of sequences."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z], f64(1.0)), obs=x[..., t])


def unmarked_hmm(x):
    """The same chain without pyro.markov."""
    z = None
    for t in range(len(x)):
        z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
        pyro.sample(f"x_{t}", dist.Normal(LOCS[z], f64(1.0)), obs=x[t])


def second_order(x, trans=TRANS):
    """Each state reads the two before it; ``x`` (T,) one sequence or (S, T) a plate of them."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = [0, 0]
        for t in pyro.markov(range(x.shape[-1]), history=2):
            z.append(pyro.sample(f"z_{t}", dist.Categorical(trans[(z[-1] + 2 * z[-2]) % 2])))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z[-1]], f64(1.0)), obs=x[..., t])


def one_hot_hmm(x):
    """The fixed HMM with one-hot states: ``z_t ~ OneHotCategorical(z_{t-1} @ TRANS)``."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.OneHotCategorical(INIT if z is None else z @ TRANS))
            pyro.sample(f"x_{t}", dist.Normal(z @ LOCS, f64(1.0)), obs=x[..., t])


TRANS3 = f64([[[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4]],
               [[0.1, 0.1, 0.8], [0.5, 0.25, 0.25], [0.1, 0.6, 0.3]]])
LOCS3 = f64([-1.5, 0.0, 1.5])


def regime_and_level(x):
    """A 2-state regime ``z_t`` (first order) driving a 3-state level ``w_t``, which reads
    ``z_t`` and ``w_{t-1}``: one chain of sites with 2 and 3 values in turn."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = w = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
            w = pyro.sample(f"w_{t}", dist.Categorical(TRANS3[z, 0] if w is None else TRANS3[z, w]))
            pyro.sample(f"x_{t}", dist.Normal(LOCS3[w] + 0.5 * LOCS[z], f64(1.0)), obs=x[..., t])


def reading_each_other(x):
    """Two chains in one loop: ``w_t`` reads ``w_{t-1}`` and ``z_t`` (order 2 in program order)."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = w = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
            w = pyro.sample(f"w_{t}", dist.Categorical(TRANS[z] if w is None else TRANS[(w + z) % 2]))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z] + 0.5 * LOCS[w], f64(1.0)), obs=x[..., t])


def loop_closed(x):
    """A first-order chain whose last state also sees its first: of order ``T - 1``."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = []
        for t in pyro.markov(range(x.shape[-1])):
            z.append(pyro.sample(f"z_{t}", dist.Categorical(INIT if not z else TRANS[z[-1]])))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z[-1]], f64(1.0)), obs=x[..., t])
        pyro.sample("ends", dist.Normal(LOCS[z[0]] + LOCS[z[-1]], f64(1.0)), obs=f64(0.5))


def neighbours_seen(x):
    """Plate-shaped, yet each sequence's emissions read the next sequence's state."""
    with pyro.plate("seqs", x.shape[0]):
        z = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
            pyro.sample(f"x_{t}", dist.Normal(3.0 * LOCS[z.roll(1)], f64(1.0)), obs=x[:, t])


def summed_end(x):
    """The last states of all sequences meet in one term: the sequences are not independent."""
    with pyro.plate("seqs", x.shape[0]):
        z = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z], f64(1.0)), obs=x[:, t])
    pyro.sample("total", dist.Normal(z.sum().double(), f64(1.0)), obs=f64(1.0))


def picky(x):
    """Refuses anything but plain tensors (so its dependencies cannot be traced)."""
    z = None
    for t in pyro.markov(range(len(x))):
        z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
        if type(z) is not torch.Tensor:
            raise TypeError("plain tensors only")
        pyro.sample(f"x_{t}", dist.Normal(LOCS[z], f64(1.0)), obs=x[t])


def chain_sites(n):
    return [f"z_{t}" for t in range(n)]


def exact_path_posterior(x, model=fixed_hmm, sites=None, sizes=None):
    """log p(path | x) of a program with fixed parameters by enumerating all paths of the
    chain ``sites`` (default ``z_0..z_{T-1}``) of one sequence (each site with ``sizes`` values,
    default 2)."""
    sites = chain_sites(len(x)) if sites is None else sites
    sizes = [2] * len(sites) if sizes is None else sizes
    paths = list(itertools.product(*(range(k) for k in sizes)))
    lj = torch.stack([log_joint(model, (x,), {}, {name: torch.tensor(s) for name, s in zip(sites, path)})
                      for path in paths])
    return paths, lj


def chi_square(draws, paths, lj):
    """Pearson's statistic of the path frequencies of ``draws`` (T, N) against ``lj``, and
    its degrees of freedom. Paths expected fewer than 20 times are pooled into one bin (which
    must then be expected 20 times or more), so the chi-square approximation holds."""
    code = {p: i for i, p in enumerate(paths)}
    seen = torch.tensor([code[tuple(col)] for col in draws.T.tolist()])
    counts = torch.bincount(seen, minlength=len(paths)).double()
    expected = draws.shape[1] * torch.softmax(lj, 0)
    rare = expected < 20
    if rare.any():
        assert float(expected[rare].sum()) >= 20
        counts = torch.cat([counts[~rare], counts[rare].sum()[None]])
        expected = torch.cat([expected[~rare], expected[rare].sum()[None]])
    return float(((counts - expected) ** 2 / expected).sum()), len(expected) - 1


def path_test(draws, paths, lj) -> bool:
    """Whether the path frequencies pass the chi-square test at level 1e-3."""
    stat, df = chi_square(draws, paths, lj)
    return stat < chi2.ppf(1 - 1e-3, df=df)


def test_plan_chooses_ffbs_for_a_markov_hmm_and_runs_it():
    x = f64([-1.2, -0.8, 1.1, 0.9, 1.3])
    p = plan(hmm, x)
    assert [(s.site, s.update) for s in p.sites] == (
        [("trans", "conjugate"), ("locs", "conjugate")] + [(z, "ffbs") for z in chain_sites(5)])
    assert len({id(p[z].block) for z in chain_sites(5)}) == 1
    assert p["z_0"].block.sites == tuple(chain_sites(5))
    lines = str(p).splitlines()
    assert len(lines) == 3
    assert lines[2] == ("z_0..z_4  ffbs         pyro.markov chain of 5 sites, 2 states, "
                        "forward-filtering backward-sampling")
    post = fit_gibbs(hmm, x, num_samples=3, warmup=1, num_chains=1, seed=0, progress=False,
                     diagnostic_warnings=False)
    assert post.samples["z_4"].shape == (1, 3) and post.samples["z_4"].dtype == torch.long
    assert "ffbs" in post.attrs["plan"]


def test_ffbs_draws_follow_the_exact_path_posterior():
    # 20,000 copies of one sequence in a plate: one sweep gives 20,000 independent paths
    n = 20_000
    p = plan(fixed_hmm, X.expand(n, -1))
    block = p["z_0"].block
    state = {z: torch.zeros(n, dtype=torch.long) for z in chain_sites(4)}
    new = block(state, ModelArgs((X.expand(n, -1),), {}), make_generator(0))
    draws = torch.stack([new[z] for z in chain_sites(4)])
    paths, lj = exact_path_posterior(X)
    assert path_test(draws, paths, lj)


def test_forward_log_likelihood_equals_brute_force_marginal():
    # three states, latent transition rows and means held at one value: the forward filter's
    # normaliser plus the other terms is the joint with the chain summed out
    x = f64([-0.4, 2.1, 0.7])
    p = plan(hmm, x, 3)
    update = p["z_0"].block.update
    state = {"trans": f64([[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]),
             "locs": f64([-1.0, 0.5, 2.0]), **{z: torch.tensor(0) for z in chain_sites(3)}}
    exact = torch.logsumexp(torch.stack([
        log_joint(hmm, (x, 3), {}, {**state, **{f"z_{t}": torch.tensor(s) for t, s in enumerate(path)}})
        for path in itertools.product(range(3), repeat=3)]), 0)
    torch.testing.assert_close(update.log_marginal(state, (x, 3), {}), exact, rtol=0, atol=1e-10)


def test_ffbs_over_a_plate_of_sequences():
    # two different sequences, each repeated 10,000 times in the plate
    other = f64([0.8, 0.4, -0.3, 0.2])
    n = 10_000
    x = torch.cat([X.expand(n, -1), other.expand(n, -1)])
    p = plan(fixed_hmm, x)
    assert p["z_0"].update == "ffbs" and "over plate shape (20000,)" in p["z_0"].reason
    update = p["z_0"].block.update
    state = {z: torch.zeros(2 * n, dtype=torch.long) for z in chain_sites(4)}
    new = update(state, ModelArgs((x,), {}), make_generator(1))
    draws = torch.stack([new[z] for z in chain_sites(4)])
    brute = 0.0
    for i, seq in enumerate([X, other]):
        paths, lj = exact_path_posterior(seq)
        assert path_test(draws[:, i * n:(i + 1) * n], paths, lj)
        brute = brute + n * torch.logsumexp(lj, 0)
    torch.testing.assert_close(update.log_marginal(state, (x,), {}), brute, rtol=1e-13, atol=1e-10)


def test_a_chain_without_pyro_markov_keeps_per_site_updates():
    p = plan(unmarked_hmm, X)
    assert [s.update for s in p.sites] == ["discrete"] * 4
    assert all("no ffbs" not in s.reason for s in p.sites)


def higher_order_draws(model, x, sites, n, seed, one_hot=0):
    """One FFBS sweep over ``n`` copies of ``x`` in a plate: ``n`` independent paths (of
    ``one_hot``-state one-hot sites where given)."""
    p = plan(model, x.expand(n, -1))
    block = p[sites[0]].block
    assert block.sites == tuple(sites)
    start = torch.zeros(n, dtype=torch.long)
    if one_hot:
        start = torch.nn.functional.one_hot(start, one_hot).double()
    state = {z: start for z in sites}
    new = block(state, ModelArgs((x.expand(n, -1),), {}), make_generator(seed))
    return p, block.update, torch.stack([new[z] for z in sites])


def test_a_second_order_chain_gets_ffbs_over_pairs_of_states():
    n = 20_000
    p, update, draws = higher_order_draws(second_order, X, chain_sites(4), n, seed=2)
    assert [s.update for s in p.sites] == ["ffbs"] * 4
    assert update.chain.order == 2
    assert str(p).splitlines()[0] == (
        "z_0..z_3  ffbs         pyro.markov chain of 4 sites, 2 states, order 2 (a term reads up "
        "to 3 consecutive sites), forward-filtering backward-sampling over plate shape (20000,)")
    paths, lj = exact_path_posterior(X, second_order)
    assert path_test(draws, paths, lj)
    state = {z: torch.zeros(n, dtype=torch.long) for z in chain_sites(4)}
    torch.testing.assert_close(update.log_marginal(state, (X.expand(n, -1),), {}),
                               n * torch.logsumexp(lj, 0), rtol=1e-13, atol=1e-9)


def test_two_chains_that_read_each_other_get_one_block_in_program_order():
    x = f64([0.4, -1.3, 1.8])
    sites = ["z_0", "w_0", "z_1", "w_1", "z_2", "w_2"]
    n = 60_000
    p, update, draws = higher_order_draws(reading_each_other, x, sites, n, seed=3)
    assert update.chain.order == 2 and [s.update for s in p.sites] == ["ffbs"] * 6
    assert str(p).split()[0] == "z_0..w_2"
    paths, lj = exact_path_posterior(x, reading_each_other, sites)
    assert path_test(draws, paths, lj)


def test_chains_of_different_sizes_that_step_together_get_one_block():
    x = f64([0.4, -1.3, 1.8])
    sites = ["z_0", "w_0", "z_1", "w_1", "z_2", "w_2"]
    n = 100_000
    p, update, draws = higher_order_draws(regime_and_level, x, sites, n, seed=6)
    assert update.chain.order == 2 and update.chain.states == 3
    assert "pyro.markov chain of 6 sites, 2 or 3 states, order 2" in p["w_1"].reason
    assert int(draws[0::2].max()) == 1 and int(draws[1::2].max()) == 2
    paths, lj = exact_path_posterior(x, regime_and_level, sites, [2, 3] * 3)
    assert path_test(draws, paths, lj)
    state = {s: torch.zeros(n, dtype=torch.long) for s in sites}
    torch.testing.assert_close(update.log_marginal(state, (x.expand(n, -1),), {}),
                               n * torch.logsumexp(lj, 0), rtol=1e-12, atol=1e-8)


def test_a_chain_of_one_hot_sites_draws_one_hot_paths_from_the_path_posterior():
    n = 20_000
    p, update, draws = higher_order_draws(one_hot_hmm, X, chain_sites(4), n, seed=5, one_hot=2)
    assert [s.update for s in p.sites] == ["ffbs"] * 4 and update.chain.batch_shape == (n,)
    assert draws.shape == (4, n, 2) and torch.equal(draws.sum(-1), torch.ones(4, n))
    paths, lj = exact_path_posterior(X)       # the same chain as the fixed HMM's
    assert path_test(draws.argmax(-1), paths, lj)


def test_a_chain_closed_into_a_loop_is_one_block_of_its_whole_length():
    # the term of 'ends' reads z_0 and z_3: order 3, the whole path at once
    n = 20_000
    p, update, draws = higher_order_draws(loop_closed, X, chain_sites(4), n, seed=4)
    assert update.chain.order == 3
    paths, lj = exact_path_posterior(X, loop_closed)
    assert path_test(draws, paths, lj)


def test_an_order_needing_too_many_evaluations_falls_back_with_the_reason():
    x = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64)
    p = plan(loop_closed, x)
    assert [s.update for s in p.sites] == ["discrete"] * 12
    assert ("no ffbs: the term of 'ends' reads 'z_0', 'z_11': order 11 with 2 states needs 2^12 "
            "evaluations of the program per sweep, more than 1024") in p["z_1"].reason


def test_the_check_of_a_second_order_chain_fails_for_another_program():
    x = f64([[0.1, 2.9, 3.2, -0.4], [1.0, -2.0, 0.3, 0.8]])
    chain = plan(second_order, x)["z_0"].block.update.chain
    state = {z: torch.tensor([0, 1]) for z in chain_sites(4)}
    potentials = chain_potentials(second_order, (x,), {}, state, chain)[:2]
    update, other = FFBSUpdate(second_order, chain), f64([[0.2, 0.8], [0.9, 0.1]])
    assert update.agrees(state, (x,), {}, make_generator(0), potentials)
    assert not update.agrees(state, (x, other), {}, make_generator(0), potentials)


def test_a_term_coupling_the_sequences_falls_back_with_the_reason():
    p = plan(summed_end, X.expand(3, -1))
    assert p["z_0"].update == "discrete"
    assert "the term of 'total' (shape ()) is not indexed by the chain's plates" in p["z_0"].reason


def test_verify_mode_catches_a_plate_shaped_but_coupled_chain():
    x = f64([[0.1, 2.9, 3.2, -0.4], [1.0, -2.0, 0.3, 0.8], [-3.1, 0.4, 2.2, 1.9]])
    with pytest.warns(RuntimeWarning, match=r"chain 'z_0'..'z_3'.*brute-force"):
        p = plan(neighbours_seen, x)
    assert [s.update for s in p.sites] == ["discrete"] * 4
    assert "no ffbs: the FFBS check against brute-force enumeration failed" in p["z_2"].reason


def test_a_block_that_fails_its_first_sweep_check_updates_site_by_site():
    x = f64([[0.1, 2.9, 3.2, -0.4], [1.0, -2.0, 0.3, 0.8], [-3.1, 0.4, 2.2, 1.9]])
    chain = plan(fixed_hmm, x)["z_0"].block.update.chain   # same sites, shapes and support
    update = FFBSUpdate(neighbours_seen, chain)
    state = {z: torch.zeros(3, dtype=torch.long) for z in chain_sites(4)}
    with pytest.warns(RuntimeWarning, match=r"chain 'z_0'..'z_3'.*one by one"):
        new = update(state, ModelArgs((x,), {}), make_generator(0))
    assert sorted(new) == chain_sites(4) and update.fallback is not None


def test_a_program_whose_dependencies_cannot_be_traced_keeps_per_site_updates():
    p = plan(picky, X)
    assert [s.update for s in p.sites] == ["discrete"] * 4
    assert "no ffbs: its dependencies could not be traced (TypeError: plain tensors only)" in p["z_0"].reason


def factorial(x):
    """Two chains that meet only in the observations: each is first order given the other."""
    z = w = None
    for t in pyro.markov(range(len(x))):
        z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
        w = pyro.sample(f"w_{t}", dist.Categorical(INIT.flip(0) if w is None else TRANS[w]))
        pyro.sample(f"x_{t}", dist.Normal(LOCS[z] + 2.0 * LOCS[w], f64(1.0)), obs=x[t])


def test_two_chains_that_meet_in_the_observations_get_one_block_each():
    p = plan(factorial, X)
    assert p["z_0"].block.sites == tuple(chain_sites(4))
    assert p["w_0"].block.sites == ("w_0", "w_1", "w_2", "w_3")
    assert [line.split()[:2] for line in str(p).splitlines()] == [["z_0..z_3", "ffbs"], ["w_0..w_3", "ffbs"]]


def test_the_first_sweep_check_leaves_the_draws_alone_and_the_block_pickles():
    x = f64([[0.1, 2.9, 3.2, -0.4], [1.0, -2.0, 0.3, 0.8]])
    chain = plan(fixed_hmm, x)["z_0"].block.update.chain
    state = {z: torch.zeros(2, dtype=torch.long) for z in chain_sites(4)}
    checked, unchecked = FFBSUpdate(fixed_hmm, chain, verify=True), FFBSUpdate(fixed_hmm, chain, verify=False)
    for _ in range(2):
        a = checked(state, ModelArgs((x,), {}), make_generator(5))
        b = unchecked(state, ModelArgs((x,), {}), make_generator(5))
        assert all(torch.equal(a[z], b[z]) for z in chain_sites(4))
    assert checked.fallback is None and not checked.verify
    copy = pickle.loads(pickle.dumps(checked))
    c = copy(state, ModelArgs((x,), {}), make_generator(5))
    assert all(torch.equal(a[z], c[z]) for z in chain_sites(4))


def started_before_the_loop(x):
    """The initial state drawn before the pyro.markov loop, the rest inside it."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        z = pyro.sample("z_0", dist.Categorical(INIT))
        pyro.sample("x_0", dist.Normal(LOCS[z], f64(1.0)), obs=x[..., 0])
        for t in pyro.markov(range(1, x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(TRANS[z]))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z], f64(1.0)), obs=x[..., t])


def started_by_a_shared_site(x):
    """A discrete site outside the loop read by every state: not a chain's start."""
    with pyro.plate("seqs", x.shape[0]) if x.dim() == 2 else contextlib.nullcontext():
        regime = pyro.sample("regime", dist.Categorical(INIT))
        z = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(TRANS[regime] if z is None else TRANS[z]
                                                       * 0.5 + 0.5 * TRANS[regime]))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z], f64(1.0)), obs=x[..., t])


def test_the_state_drawn_before_the_loop_joins_its_chain():
    n = 20_000
    p, update, draws = higher_order_draws(started_before_the_loop, X, chain_sites(4), n, seed=8)
    assert [s.update for s in p.sites] == ["ffbs"] * 4 and update.chain.order == 1
    assert str(p).split()[0] == "z_0..z_3"
    paths, lj = exact_path_posterior(X, started_before_the_loop)
    assert path_test(draws, paths, lj)
    # the same chain as the program with z_0 inside the loop: the same path posterior
    _, lj_inside = exact_path_posterior(X, fixed_hmm)
    torch.testing.assert_close(lj, lj_inside, rtol=1e-13, atol=1e-12)


def test_a_site_outside_the_loop_read_by_every_state_keeps_its_own_update():
    x = X[:3]
    p = plan(started_by_a_shared_site, x)
    assert p["regime"].update == "discrete"
    assert "regime" not in p["z_0"].block.sites
