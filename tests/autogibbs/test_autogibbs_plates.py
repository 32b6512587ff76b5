"""Terms are read element by element only along the site's own plates, never along another
plate that merely has the same size."""

import pyro
import pyro.distributions as dist
import torch

from pyromodels.autogibbs import plan, posterior_params
from pyromodels.autogibbs.discrete import brute_force_logits, element_logits
from pyromodels.autogibbs.trace import element_log_density, reduce_to_site, site_plates

from .sbc_models import f64, gaussian_mixture, lda


def _close(got, want):
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)


# -- (a) a mixture with as many points as components -----------------------------------------

def test_mixture_with_as_many_points_as_components_reads_each_mean_from_its_points():
    x, z = f64([-2.0, 0.5, 2.5]), torch.tensor([2, 0, 2])
    state = {"w": f64([0.2, 0.3, 0.5]), "locs": f64([-1.0, 0.0, 1.0]), "z": z}
    args = (x, 3)
    got = posterior_params(gaussian_mixture, args, {}, state, "locs",
                           dist.Normal(f64(0.0), f64(2.0)).expand([3]))
    prec = 0.25 + torch.stack([(z == k).sum() for k in range(3)]).double()
    _close(got["loc"], torch.stack([x[z == k].sum() for k in range(3)]) / prec)
    _close(got["scale"], prec.rsqrt())

    support = torch.arange(3)
    logits = element_logits(gaussian_mixture, args, {}, state, "z", support)
    assert logits is not None  # the assignments are separable along their own plate
    for i in range(3):
        exact = brute_force_logits(gaussian_mixture, args, {}, state, "z", (i,), support)
        _close(logits[i].log_softmax(-1), exact.log_softmax(-1))


# -- (b) LDA with as many documents as topics ------------------------------------------------

def test_lda_with_as_many_documents_as_topics_plans_and_reads_the_topics():
    words = torch.tensor([[0, 1], [2, 3], [1, 1]])  # 3 tokens in each of 2 documents, 2 topics
    p = plan(lda, words)
    assert [(s.site, s.update) for s in p.sites] == [
        ("phi", "conjugate"), ("theta", "conjugate"), ("z", "discrete")]

    z = torch.tensor([[0, 1], [1, 1], [0, 0]])
    state = {"phi": torch.full((2, 4), 0.25, dtype=torch.float64),
             "theta": torch.full((2, 2), 0.5, dtype=torch.float64), "z": z}
    got = posterior_params(lda, (words,), {}, state, "phi",
                           dist.Dirichlet(torch.ones(4, dtype=torch.float64)).expand([2]))
    counts = torch.zeros(2, 4, dtype=torch.float64)
    for k, v in zip(z.flatten().tolist(), words.flatten().tolist()):
        counts[k, v] += 1
    _close(got["concentration"], 1.0 + counts)


# -- (c) a term along another plate of the same size couples the elements --------------------

def coupled_across_plates(y):
    with pyro.plate("a", 3):
        x = pyro.sample("x", dist.Normal(f64(0.0), f64(1.0)))
    with pyro.plate("b", 3):
        pyro.sample("y", dist.Normal(x.sum(), f64(1.0)), obs=y)


def coupled_labels(y):
    with pyro.plate("a", 3):
        x = pyro.sample("x", dist.Categorical(torch.ones(2, dtype=torch.float64)))
    with pyro.plate("b", 3):
        pyro.sample("y", dist.Normal(x.sum().double(), f64(1.0)), obs=y)


def test_a_term_along_another_plate_of_equal_size_is_not_split_among_the_elements():
    y = f64([0.5, 2.0, 3.5])
    state = {"x": f64([0.3, -0.4, 1.2])}
    points = [torch.full((3,), v, dtype=torch.float64) for v in (-1.0, 0.0, 1.0)]
    assert element_log_density(coupled_across_plates, (y,), {}, state, "x", points,
                               torch.Size([3])) is None

    # each element's conditional given the others: prior N(0, 1) and all three observations
    got = posterior_params(coupled_across_plates, (y,), {}, state, "x",
                           dist.Normal(f64(0.0), f64(1.0)).expand([3]))
    others = state["x"].sum() - state["x"]
    _close(got["loc"], (y.sum() - 3 * others) / 4.0)
    _close(got["scale"], torch.full((3,), 0.5, dtype=torch.float64))


def test_discrete_elements_coupled_across_plates_are_not_enumerated_at_once():
    y = f64([0.5, 2.0, 3.5])
    state = {"x": torch.tensor([1, 0, 1])}
    assert element_logits(coupled_labels, (y,), {}, state, "x", torch.arange(2)) is None


def test_reduce_to_site_matches_dimensions_by_plate():
    lp = torch.arange(6.0).reshape(2, 3)
    own = {-1: "a"}
    _close(reduce_to_site(lp, torch.Size([3]), {-2: "n", -1: "a"}, own), lp.sum(0))
    assert reduce_to_site(lp, torch.Size([3]), {-2: "n", -1: "b"}, own) is None
    assert reduce_to_site(lp, torch.Size([3]), {-2: "n"}, own) is None  # no plate there
    _close(reduce_to_site(lp, torch.Size([3])), lp.sum(0))  # without plates: by position
    # a dimension the site has no plate for (size one) is summed, whatever its plate
    _close(reduce_to_site(lp, torch.Size([2, 1]), {-2: "n", -1: "b"}, {-2: "n"}), lp.sum(1, keepdim=True))


def test_site_plates_reads_the_program_plates():
    y = f64([0.5, 2.0, 3.5])
    maps = site_plates(coupled_across_plates, (y,), {}, {"x": f64([0.0, 0.0, 0.0])})
    assert maps == {"x": {-1: "a"}, "y": {-1: "b"}}


# -- a pyro.markov chain over a plate, read by a term along another plate of the same size ---

INIT, TRANS, LOCS = f64([0.6, 0.4]), f64([[0.7, 0.3], [0.4, 0.6]]), f64([-1.0, 1.0])


def chain_summed_along_another_plate(x):
    """Sequences in plate ``seqs``; each entry of ``total`` (plate ``others``, as many as the
    sequences) reads the last states of all of them."""
    with pyro.plate("seqs", x.shape[0]):
        z = None
        for t in pyro.markov(range(x.shape[-1])):
            z = pyro.sample(f"z_{t}", dist.Categorical(INIT if z is None else TRANS[z]))
            pyro.sample(f"x_{t}", dist.Normal(LOCS[z], f64(1.0)), obs=x[:, t])
    with pyro.plate("others", x.shape[0]):
        pyro.sample("total", dist.Normal(z.sum().double(), f64(1.0)), obs=torch.ones(x.shape[0]).double())


def test_a_chain_term_along_another_plate_of_equal_size_is_not_split_among_the_sequences():
    x = f64([[-0.5, 0.3, 1.2], [0.9, -1.1, 0.2], [1.5, 0.4, -0.8]])
    p = plan(chain_summed_along_another_plate, x)
    assert p["z_0"].update == "discrete"
    assert "the term of 'total' (shape (3,)) is not indexed by the chain's plates" in p["z_0"].reason
    assert "element by element (its elements depend on each other)" in p["z_2"].reason
