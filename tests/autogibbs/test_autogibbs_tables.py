"""Statistics tables: the conjugate coefficients and discrete logits they give are the
program's own (at random states, not only where they were built), a chain with them is the
chain without them, and they step aside for other data or where they do not apply."""

import pickle

import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.autogibbs import exponential, fit_gibbs, plan
from pyromodels.autogibbs.exponential import _coefficients
from pyromodels.autogibbs.families import FAMILIES, family_of, unwrap
from pyromodels.autogibbs.grouped import GroupedUpdate
from pyromodels.autogibbs.pair_table import joint_coefficients, joint_features, joint_posterior
from pyromodels.autogibbs.tables import DataCheck, NoTable, read_entries
from pyromodels.autogibbs.trace import element_logits, tolerance, trace_model
from pyromodels.conjugate import sample_dirichlet
from pyromodels.core.bound import ModelArgs
from pyromodels.core.seeding import make_generator
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import simulate_annotations
from pyromodels.mixture import GaussianMixtureModel

from .models import f64, mixture_vectorised


def _relative(dtype) -> float:
    """The comparisons' relative tolerance: a hundredth of the checks' own (1e-9 in float64,
    1e-5 in float32, where the program's log densities carry about 1e-7)."""
    return 1e-2 * tolerance(dtype)


def _ds(**options):
    table, _ = simulate_annotations(40, 4, 3, seed=0)
    model = DawidSkene(**options).for_engine("gibbs")
    data = model.prepare(table)
    return model.model, (data,), plan(model.model, data), model.init_state(data, make_generator(1))


@pytest.fixture(scope="module")
def ds():
    """Dawid-Skene in torch's default dtype (float32)."""
    return _ds()


@pytest.fixture
def ds64():
    """Dawid-Skene in float64 (its data take torch's default dtype), with pseudo-counts of 2:
    with the default 1 a confusion entry without counts has a solved concentration of 1 to
    within 1e-14, on either side of where the Gamma sampler changes its method, so the same
    stream can give another (equally valid) draw."""
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield _ds(prior_concentration=2.0, confusion_concentration=2.0)
    finally:
        torch.set_default_dtype(saved)


@pytest.fixture(scope="module")
def mixture():
    gen = torch.Generator().manual_seed(3)
    x = torch.cat([torch.randn(15, generator=gen, dtype=torch.float64) - 2.0,
                   torch.randn(15, generator=gen, dtype=torch.float64) + 2.5])
    p = plan(mixture_vectorised, x)
    state = {"w": f64([0.5, 0.5]), "locs": f64([-1.0, 1.0]), "z": (x > 0).long()}
    return mixture_vectorised, (x,), p, state


def _case(request, name):
    return request.getfixturevalue(name)


def test_the_plan_says_which_updates_read_tables(ds, mixture):
    p = ds[2]
    for site in ("prior", "confusion"):
        assert "coefficients from a statistics table of its 40 gathered entries over the values " \
               "of 'z'" in p[site].reason
    assert "logits from the statistics tables of 'prior', 'confusion'" in p["z"].reason
    p = mixture[2]
    assert "statistics table of its 30 gathered entries" in p["locs"].reason
    assert "statistics table" in p["w"].reason and "logits from the statistics tables" in p["z"].reason


@pytest.mark.parametrize("name, sites", [("ds", ("prior", "confusion")), ("mixture", ("w", "locs"))])
def test_table_coefficients_are_the_programs_at_random_assignments(request, name, sites):
    """Away from the state the table was built at: random ``z`` (a table built at one value of
    ``z`` that misread an entry's route would be off here)."""
    model, args, p, state = _case(request, name)
    nodes = trace_model(model, args, {}).nodes
    k = int(nodes["z"]["fn"].enumerate_support(expand=False).numel())
    for seed in range(3):
        gen = torch.Generator().manual_seed(seed)
        at = {**state, "z": torch.randint(0, k, state["z"].shape, generator=gen)}
        for site in sites:
            fn = nodes[site]["fn"]
            base = unwrap(fn)
            own = _coefficients(model, args, {}, at, site, family_of(fn), base.batch_shape,
                                base.event_shape, False)
            mine = p[site].block.update.table.coefficients(at)
            tol = _relative(state[site].dtype)
            torch.testing.assert_close(mine, own, rtol=tol, atol=tol * float(own.abs().max()))


def _random_value(fn, gen):
    base = unwrap(fn)
    if family_of(fn).name == "Dirichlet":
        return sample_dirichlet(base.concentration.expand(base.batch_shape + base.event_shape) + 0.5, gen)
    return torch.randn(base.batch_shape, generator=gen, dtype=torch.float64) * 2.0


@pytest.mark.parametrize("name, sites", [("ds", ("prior", "confusion")), ("mixture", ("w", "locs"))])
def test_table_logits_are_the_programs_at_random_parameters(request, name, sites):
    model, args, p, state = _case(request, name)
    nodes = trace_model(model, args, {}).nodes
    update = p["z"].block.update
    for seed in range(3):
        gen = make_generator(seed)
        at = dict(state)
        for site in sites:
            at[site] = _random_value(nodes[site]["fn"], gen).reshape(state[site].shape)
        own = element_logits(model, args, {}, at, "z", update.support, skip_unchanged=False)
        mine = update.table_logits.logits(at)
        tol = _relative(state[sites[0]].dtype)
        torch.testing.assert_close(torch.log_softmax(mine, -1), torch.log_softmax(own.to(mine.dtype), -1),
                                   rtol=tol, atol=tol * float(own.abs().max()))


@pytest.mark.parametrize("name", ["ds64", "mixture"])
def test_a_chain_with_tables_is_the_chain_without(request, name):
    """The same seed gives the same assignments and the same continuous draws to rounding (in
    float64: in float32 the two ways round apart by about 1e-7, enough to move a later draw)."""
    model, args, _, _ = _case(request, name)
    fits = [fit_gibbs(model, *args, num_samples=30, warmup=5, num_chains=1, seed=4, progress=False,
                      tables=tables, diagnostic_warnings=False) for tables in (True, False)]
    assert "statistics table" in fits[0].attrs["plan"] and "statistics table" not in fits[1].attrs["plan"]
    for site, draws in fits[1].samples.items():
        if site == "z":
            assert torch.equal(fits[0].samples[site], draws)
        else:
            torch.testing.assert_close(fits[0].samples[site], draws, rtol=1e-8, atol=1e-10)


def test_other_data_reads_the_program(mixture, monkeypatch):
    """A table read from one data set is not used on another: the update reads the program
    (as a plan without tables does) and draws what it draws."""
    model, (x,), p, state = mixture
    other = x.flip(0) + 0.3
    with_table = p["locs"].block.update
    without = plan(model, x, tables=False)["locs"].block.update
    for update in (with_table, without):
        update(state, ModelArgs((x,), {}), make_generator(0))   # past the first call's check
    draws = [u(state, ModelArgs((other,), {}), make_generator(5))["locs"] for u in (with_table, without)]
    torch.testing.assert_close(draws[0], draws[1], rtol=1e-10, atol=1e-12)
    monkeypatch.setattr(with_table.table, "coefficients", lambda s: pytest.fail("table read"))
    with_table(state, ModelArgs((other,), {}), make_generator(5))


def test_a_pickled_table_applies_to_an_equal_copy_of_the_data(mixture, monkeypatch):
    """As in a worker process: the update and the data arrive as copies; the table holds (the
    data are equal) and the program is not read."""
    model, (x,), p, state = mixture
    update = p["locs"].block.update
    update(state, ModelArgs((x,), {}), make_generator(0))
    want = update(state, ModelArgs((x,), {}), make_generator(6))["locs"]
    copy = pickle.loads(pickle.dumps(update))
    monkeypatch.setattr(exponential, "posterior_params", lambda *a, **k: pytest.fail("program read"))
    got = copy(state, ModelArgs((x.clone(),), {}), make_generator(6))["locs"]
    assert torch.equal(got, want)


def normal_gamma_mixture(x):
    """A mixture whose means and precisions are drawn apart (the means' prior does not read the
    precisions): read together, their parts of a count's log density do not add up (the
    precision multiplies the mean's statistics)."""
    w = pyro.sample("w", dist.Dirichlet(torch.ones(2, dtype=torch.float64)))
    with pyro.plate("components", 2):
        locs = pyro.sample("locs", dist.Normal(f64(0.0), f64(3.0)))
        prec = pyro.sample("prec", dist.Gamma(f64(2.0), f64(1.0)))
    with pyro.plate("data", len(x)):
        z = pyro.sample("z", dist.Categorical(w))
        pyro.sample("x", dist.Normal(locs[..., z], prec[..., z] ** -0.5), obs=x)


def test_a_mean_read_beside_a_precision_drawn_apart_gets_no_table(mixture):
    """The two are read together and refused at the check value, where the elements' parts
    would have to add up."""
    p = plan(normal_gamma_mixture, mixture[1][0])
    for site in ("locs", "prec"):
        assert "no statistics table over 'z' ('locs', 'prec' are read by the same terms, whose log " \
               "densities are not a sum of one part per site" in p[site].reason
    assert "logits from the program (no statistics tables" in p["z"].reason
    assert p["z"].block.update.table_logits is None


@pytest.fixture(scope="module")
def gmm():
    gen = torch.Generator().manual_seed(5)
    centres = f64([[-3.0, 0.0], [2.0, 2.0]])
    x = centres[torch.randint(0, 2, (40,), generator=gen)] \
        + 0.6 * torch.randn(40, 2, generator=gen, dtype=torch.float64)
    model = GaussianMixtureModel(2, weight_concentration=2.0)
    data = model.prepare(x)
    return model, (data,), plan(model.model, data), model.init_state(data, make_generator(1))


def test_a_normal_wishart_pair_reads_a_joint_table(gmm):
    """The Gaussian mixture's means and precisions: one joint table, its conditional the
    program's at random assignments, and the assignments' logits from the tables the
    program's at random means and precisions."""
    model, args, p, state = gmm
    for site in ("locs", "precisions"):
        assert "the joint conditional from a statistics table of its 40 gathered entries" in p[site].reason
    assert "logits from the statistics tables" in p["z"].reason
    update = p["locs"].block.update
    for seed in range(3):
        gen = torch.Generator().manual_seed(seed)
        at = {**state, "z": torch.randint(0, 2, state["z"].shape, generator=gen)}
        own = joint_coefficients(update.posterior(at, ModelArgs(args, {}), plain=True))
        mine = update.table.coefficients(at)
        torch.testing.assert_close(mine, own, rtol=1e-9, atol=1e-9 * float(own.abs().max()))
        a = torch.randn(2, 2, 2, generator=gen, dtype=torch.float64)
        at = {**state, "locs": torch.randn(2, 2, generator=gen, dtype=torch.float64),
              "precisions": torch.eye(2, dtype=torch.float64) + a @ a.mT,
              "weights": f64([0.3, 0.7])}
        want = element_logits(model.model, args, {}, at, "z", p["z"].block.update.support,
                              skip_unchanged=False)
        got = p["z"].block.update.table_logits.logits(at)
        torch.testing.assert_close(torch.log_softmax(got, -1), torch.log_softmax(want, -1),
                                   rtol=1e-9, atol=1e-9 * float(want.abs().max()))


def test_the_gaussian_mixture_chain_with_tables_is_the_chain_without(gmm):
    model, args, _, _ = gmm
    fits = [fit_gibbs(model.model, *args, num_samples=20, warmup=5, num_chains=1, seed=7,
                      progress=False, tables=tables, diagnostic_warnings=False) for tables in (True, False)]
    assert torch.equal(fits[0].samples["z"], fits[1].samples["z"])
    for site in ("weights", "locs", "precisions"):
        torch.testing.assert_close(fits[0].samples[site], fits[1].samples[site], rtol=1e-8, atol=1e-10)


def test_joint_coefficients_are_the_normal_wisharts_own():
    """A Normal-Wishart's log density is ``coefficients . joint_features`` plus a constant
    (compared between two points), and :func:`joint_posterior` inverts the coefficients."""
    from pyromodels.conjugate import NormalWishart

    a = torch.randn(3, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    scale = torch.eye(3, dtype=torch.float64) + a @ a.T / 3
    nw = NormalWishart(f64([0.5, -1.0, 2.0]), f64(3.0), f64(7.0), scale)
    coef = joint_coefficients(nw)
    points = [nw.sample(make_generator(s)) for s in range(2)]
    values = [nw.log_prob(mu, lam) for mu, lam in points]
    linear = [(coef * joint_features(mu, lam)).sum() for mu, lam in points]
    torch.testing.assert_close(values[1] - values[0], linear[1] - linear[0], rtol=1e-10, atol=1e-10)
    back = joint_posterior(coef, 3)
    for field in ("loc", "kappa", "nu"):
        torch.testing.assert_close(getattr(back, field), getattr(nw, field))
    torch.testing.assert_close(back.scale, nw.scale)
    assert joint_posterior(coef * f64([1.0] * 10 + [-1.0]), 3) is None     # kappa < 0


def test_the_plan_without_tables_has_none(ds):
    model, args, _, _ = ds
    p = plan(model, *args, tables=False)
    assert all("statistics table" not in s.reason for s in p.sites)
    assert p["confusion"].block.update.table is None and p["z"].block.update.table_logits is None
    with pytest.raises(TypeError, match="tables"):
        plan(model, *args, tables="yes")


def _probes(f, points, count):
    """The probe rows of :func:`~pyromodels.autogibbs.tables._probe_values` for two scalar
    elements, scored by ``f(theta) -> (T,)``."""
    rows = [torch.full((count,), float(points[0]), dtype=torch.float64)]
    for e in range(count):
        for point in points[1:-1]:
            v = rows[0].clone()
            v[e] = point
            rows.append(v)
    rows.append(f64([0.3, 1.7]))
    return torch.stack(rows), torch.stack([f(v) for v in rows])


def test_entries_are_read_per_element_and_must_add_up():
    """An entry reading ``2 theta_0 - theta_1^2`` has statistics (2, 0) on element 0 and
    (0, -1) on element 1 (a Normal's ``T = (x, x^2)``); an entry of ``theta_0 theta_1`` does
    not add up over the elements and is refused at the mixed check value."""
    family = FAMILIES[dist.Normal]
    points = family.points((), f64(0.0))
    values, y = _probes(lambda v: torch.stack([2 * v[0] - v[1] ** 2, 5.0 + 0 * v[0]]), points, 2)
    check, design = family.features(values[-1]), family.features(points[:-1])
    stats, reads = read_entries(design, y, 2, check, 1e-7)
    assert reads.tolist() == [[True, False], [True, False]]
    torch.testing.assert_close(stats[0, 0], f64([2.0, 0.0]))
    torch.testing.assert_close(stats[1, 0], f64([0.0, -1.0]))
    _, y = _probes(lambda v: (v[0] * v[1]).reshape(1), points, 2)
    with pytest.raises(NoTable, match="not what its statistics predict"):
        read_entries(design, y, 2, check, 1e-7)


def test_the_data_check_tells_other_data_from_a_copy():
    x = f64([1.0, 2.0])
    check = DataCheck((x, {"n": 3}), {})
    assert check.same((x, {"n": 3}), {}) and check.same((x.clone(), {"n": 3}), {})
    assert not check.same((f64([1.0, 2.5]), {"n": 3}), {})
    assert not check.same((x,), {})
    x.add_(1.0)                                   # changed in place: other data
    assert not check.same((x, {"n": 3}), {})
    assert pickle.loads(pickle.dumps(check)).same((f64([1.0, 2.0]), {"n": 3}), {})


def test_the_data_check_is_not_fooled_by_a_freed_copys_identity():
    """A copy accepted and then freed leaves its address free for the next tensor: other data
    there must still be compared, not taken for the copy."""
    x = f64([1.0, 2.0])
    check = DataCheck((x,), {})
    for _ in range(50):
        assert check.same((x.clone(),), {})           # a copy, freed after the call
        other = torch.full((2,), 1.5, dtype=torch.float64)  # often at the copy's address
        assert not check.same((other,), {})


def changepoint(c):
    """Counts whose rate changes from ``l1`` to ``l2`` at ``tau``: each count reads one rate,
    chosen by ``tau``, so the two rates' statistics are read together."""
    l1 = pyro.sample("l1", dist.Gamma(f64(2.0), f64(1.0)))
    l2 = pyro.sample("l2", dist.Gamma(f64(2.0), f64(1.0)))
    tau = pyro.sample("tau", dist.Categorical(torch.full((len(c),), 1.0 / len(c), dtype=torch.float64)))
    with pyro.plate("time", len(c)):
        pyro.sample("c", dist.Poisson(torch.where(torch.arange(len(c)) < tau, l1, l2)), obs=c)


def _table(p, site):
    """The statistics table of conjugate ``site`` of plan ``p`` (in its own update, or in that
    of the group it is drawn with)."""
    update = p[site].block.update
    if isinstance(update, GroupedUpdate):
        update = update.updates[update.sites.index(site)]
    return update.table


def test_tables_read_over_the_discrete_values_equal_those_read_value_by_value(monkeypatch):
    """A change point has more values than its rates have probes, so its tables are read in
    one trace over the change point's values per probe; read value by value instead (the
    other route, forced here), they are the same tables."""
    from pyromodels.autogibbs import tables

    gen = torch.Generator().manual_seed(5)
    c = torch.poisson(torch.full((25,), 3.0, dtype=torch.float64), generator=gen)
    calls = []
    real = tables._rows_over_z
    monkeypatch.setattr(tables, "_rows_over_z", lambda *a: calls.append(real(*a)) or calls[-1])
    over = plan(changepoint, c)
    assert calls and calls[0] is not None  # read over the change point's values
    monkeypatch.setattr(tables, "_rows_over_z", lambda *a: None)
    by_value = plan(changepoint, c)
    for site in ("l1", "l2"):
        a, b = _table(over, site), _table(by_value, site)
        assert a.shape == b.shape and torch.equal(a.rows, b.rows) and torch.equal(a.cols, b.cols)
        torch.testing.assert_close(a.values, b.values, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(a.base, b.base, rtol=1e-12, atol=1e-12)


def test_sites_read_by_the_same_terms_get_their_tables_together():
    gen = torch.Generator().manual_seed(2)
    c = torch.cat([torch.poisson(torch.full((12,), 2.0, dtype=torch.float64), generator=gen),
                   torch.poisson(torch.full((18,), 6.0, dtype=torch.float64), generator=gen)])
    p = plan(changepoint, c)
    assert "read together with 'l2'" in p["l1"].reason and "read together with 'l1'" in p["l2"].reason
    assert "logits from the statistics tables of 'l1', 'l2'" in p["tau"].reason
    nodes = trace_model(changepoint, (c,), {}).nodes
    state = {"l1": f64(1.5), "l2": f64(4.0), "tau": torch.tensor(10)}
    for tau in (0, 7, 29):
        at = {**state, "tau": torch.tensor(tau)}
        for site in ("l1", "l2"):
            fn = nodes[site]["fn"]
            own = _coefficients(changepoint, (c,), {}, at, site, family_of(fn), fn.batch_shape,
                                fn.event_shape, False)
            torch.testing.assert_close(_table(p, site).coefficients(at), own,
                                       rtol=1e-9, atol=1e-9 * float(own.abs().max()))
    update = p["tau"].block.update
    for l1, l2 in ((0.7, 3.0), (5.0, 1.2)):
        at = {**state, "l1": f64(l1), "l2": f64(l2)}
        own = element_logits(changepoint, (c,), {}, at, "tau", update.support, skip_unchanged=False)
        torch.testing.assert_close(torch.log_softmax(update.table_logits.logits(at), -1),
                                   torch.log_softmax(own, -1), rtol=1e-9, atol=1e-9 * float(own.abs().max()))
    fits = [fit_gibbs(changepoint, c, num_samples=20, warmup=5, num_chains=1, seed=3, progress=False,
                      tables=tables, diagnostic_warnings=False) for tables in (True, False)]
    assert torch.equal(fits[0].samples["tau"], fits[1].samples["tau"])
    for site in ("l1", "l2"):
        torch.testing.assert_close(fits[0].samples[site], fits[1].samples[site], rtol=1e-8, atol=1e-10)


def _counts(seed=2):
    gen = torch.Generator().manual_seed(seed)
    return torch.cat([torch.poisson(torch.full((12,), 2.0, dtype=torch.float64), generator=gen),
                      torch.poisson(torch.full((18,), 6.0, dtype=torch.float64), generator=gen)])


def test_sites_read_together_are_drawn_in_one_update_as_their_own_updates_would_in_turn():
    """Once checked, the group's one gather and one sampler call give the draws of the sites'
    own updates run one after the other from the same generator state (the CPU samplers draw
    a tensor's elements in turn), at every value of the change point."""
    c = _counts()
    p = plan(changepoint, c)
    block = p["l1"].block
    assert block is p["l2"].block and block.sites == ("l1", "l2")
    assert "'l1', 'l2' drawn in one update" in p["l1"].reason
    assert str(p).splitlines()[0].startswith("l1..l2 ")
    update = block.update
    data = ModelArgs((c,), {})
    state = {"l1": f64(1.5), "l2": f64(4.0), "tau": torch.tensor(10)}
    update(state, data, make_generator(0))  # the first call checks each site's update
    assert not any(u.verify for u in update.updates)
    for tau in (0, 11, 29):
        at = {**state, "tau": torch.tensor(tau)}
        together = update(at, data, make_generator(tau))
        gen, apart = make_generator(tau), {}
        for own in update.updates:
            apart.update(own(at, data, gen))
        assert together.keys() == apart.keys()
        for site in ("l1", "l2"):
            torch.testing.assert_close(together[site], apart[site], rtol=1e-14, atol=0)


def test_a_grouped_update_runs_each_sites_own_update_where_the_tables_do_not_apply(monkeypatch):
    """Other data than the tables were read from: each site's update reads the program, and
    the draws are those of the sites' updates in turn."""
    c = _counts()
    update = plan(changepoint, c)["l1"].block.update
    state = {"l1": f64(1.5), "l2": f64(4.0), "tau": torch.tensor(10)}
    update(state, ModelArgs((c,), {}), make_generator(0))
    other = ModelArgs((c + 1.0,), {})
    calls = []
    monkeypatch.setattr(GroupedUpdate, "_together", lambda *a: calls.append(a))
    drawn = update(state, other, make_generator(1))
    assert calls == []
    gen, apart = make_generator(1), dict(state)
    for own in update.updates:  # in turn, each seeing the draws before it
        apart.update(own(apart, other, gen))
    assert all(torch.equal(drawn[s], apart[s]) for s in ("l1", "l2"))
    assert float(drawn["l1"]) != float(update(state, ModelArgs((c,), {}), make_generator(1))["l1"])


def test_a_pickled_grouped_update_draws_as_the_original():
    c = _counts()
    update = plan(changepoint, c)["l1"].block.update
    data, state = ModelArgs((c,), {}), {"l1": f64(1.5), "l2": f64(4.0), "tau": torch.tensor(10)}
    update(state, data, make_generator(0))
    copy = pickle.loads(pickle.dumps(update))
    a, b = update(state, data, make_generator(5)), copy(state, ModelArgs((c.clone(),), {}), make_generator(5))
    assert all(torch.equal(a[s], b[s]) for s in ("l1", "l2"))
