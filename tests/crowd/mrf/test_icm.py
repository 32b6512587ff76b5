"""ICM: monotone energy under Gauss-Seidel, local minima, kernels that agree, Jacobi cycles;
the kernels' imports and the backend chosen once per fit."""


import pytest
import torch

from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.mrf import energy as energy_module
from pyromodels.crowd.mrf.energy import PottsCoupling, resolve_coupling, total_energy
from pyromodels.crowd.mrf.fit import networked_em
from pyromodels.crowd.mrf.icm import icm, label_sweep
from pyromodels.data import Graph, WorkerPopulation, simulate_networked_annotations
from pyromodels.testing import assert_monotone


def problem(seed, n=150, delta="M", mean_degree=4.0):
    table, graph, truth = simulate_networked_annotations(
        n, WorkerPopulation(6, dominance=0.45, labels_per_item=3), 3, mean_degree=mean_degree,
        seed=seed)
    coupling = resolve_coupling(graph, delta, table)
    return log_emissions(table, truth["confusion"].log()), coupling


def single_site_variants(y, num_classes):
    """Every labeling that differs from ``y`` in at most one node: ``(N * K, N)``."""
    n = len(y)
    ys = y.repeat(n * num_classes, 1)
    nodes = torch.arange(n).repeat_interleave(num_classes)
    ys[torch.arange(n * num_classes), nodes] = torch.arange(num_classes).repeat(n)
    return ys


@pytest.mark.parametrize("schedule,backend", [("sequential", "numba"), ("sequential", "python"),
                                              ("colored", "auto")])
@pytest.mark.parametrize("seed", [0, 1])
def test_gauss_seidel_energy_never_increases_and_ends_at_a_local_minimum(schedule, backend, seed):
    log_b, coupling = problem(seed)
    start = torch.randint(3, (log_b.shape[0],), generator=torch.Generator().manual_seed(seed))
    fit = icm(log_b, coupling, start, schedule=schedule, backend=backend, max_iter=200)
    assert fit.converged and fit.n_iter >= 3  # several sweeps happened
    assert_monotone(fit.energies, direction="decrease", rtol=1e-12)
    assert fit.energies[-1] < fit.energies[0] - 1.0
    # local minimum: no single-label change lowers E (each variant scored from the edge list)
    variants = total_energy(coupling, log_b, single_site_variants(fit.labels, 3))
    assert float(variants.min()) >= fit.energies[-1] - 1e-9


def test_numba_kernel_equals_python_kernel_and_colored_equals_color_ordered_sequential():
    log_b, coupling = problem(3, n=200)
    start = torch.randint(3, (200,), generator=torch.Generator().manual_seed(3))
    fast = icm(log_b, coupling, start, backend="numba")
    slow = icm(log_b, coupling, start, backend="python")
    assert torch.equal(fast.labels, slow.labels) and fast.changes == slow.changes
    # a colour class has no internal edges, so updating it at once is updating it in any order
    order = torch.argsort(coupling.colors, stable=True)
    y_seq, y_col = start.clone(), start.clone()
    for _ in range(4):
        y_seq, n_seq = label_sweep(coupling, -log_b, y_seq, schedule="sequential", order=order)
        y_col, n_col = label_sweep(coupling, -log_b, y_col, schedule="colored")
        assert torch.equal(y_seq, y_col) and n_seq == n_col


def test_jacobi_cycles_on_a_bipartite_graph_where_gauss_seidel_converges():
    coupling = PottsCoupling.constant(Graph.from_edges([[0, 1]], num_nodes=2), 2.0)
    log_b = torch.zeros(2, 2)  # no data: only the coupling speaks
    y = torch.tensor([0, 1])
    seen = []
    for _ in range(4):
        y, changed = label_sweep(coupling, -log_b, y, schedule="jacobi")
        seen.append((y.tolist(), changed))
    assert seen == [([1, 0], 2), ([0, 1], 2), ([1, 0], 2), ([0, 1], 2)]
    jac = icm(log_b, coupling, torch.tensor([0, 1]), schedule="jacobi", max_iter=7)
    assert not jac.converged and jac.n_iter == 7 and jac.labels.tolist() == [1, 0]
    gs = icm(log_b, coupling, torch.tensor([0, 1]))
    assert gs.converged and gs.labels.tolist() == [1, 1] and gs.energies == [1.0, 0.0, 0.0]


def test_ties_never_move_a_node_and_impossible_classes_are_never_chosen():
    log_b, coupling = problem(4, n=60)
    zero = PottsCoupling.constant(coupling.graph, 0.0)
    flat = torch.zeros(60, 3)
    start = torch.randint(3, (60,), generator=torch.Generator().manual_seed(4))
    fit = icm(flat, zero, start)
    assert torch.equal(fit.labels, start) and fit.changes == [0]
    # delta = 0: ICM is the per-item argmax of the emissions
    assert torch.equal(icm(log_b, zero).labels, log_b.argmax(-1))
    banned = log_b.clone()
    banned[:, 1] = float("-inf")
    out = icm(banned, coupling, torch.ones(60, dtype=torch.long)).labels
    assert not bool((out == 1).any())


def test_strong_coupling_gives_each_complete_component_one_label():
    blocks = [range(0, 5), range(5, 11)]
    edges = [[i, j] for b in blocks for i in b for j in b if i < j]
    coupling = PottsCoupling.constant(Graph.from_edges(edges, num_nodes=11), 1e3)
    log_b = 3 * torch.randn(11, 3, generator=torch.Generator().manual_seed(5))
    for schedule in ("sequential", "colored"):
        y = icm(log_b, coupling, schedule=schedule).labels
        assert len(set(y[:5].tolist())) == 1 and len(set(y[5:].tolist())) == 1


def test_node_coupling_runs_locally_without_a_total_energy():
    log_b, coupling = problem(6, delta="node")
    fit = icm(log_b, coupling)
    assert fit.converged and fit.energies is None


def test_bad_icm_input_is_rejected():
    log_b, coupling = problem(7, n=40)
    nan = log_b.clone()
    nan[3, 1] = float("nan")
    with pytest.raises(ValueError, match="log_b must not contain NaN"):
        icm(nan, coupling)
    dead = log_b.clone()
    dead[5] = float("-inf")
    with pytest.raises(ValueError, match="every class probability zero for 1 item"):
        icm(dead, coupling)
    with pytest.raises(ValueError, match=r"log_b must have K >= 2 classes"):
        icm(log_b[:, :1], coupling)
    with pytest.raises(ValueError, match=r"log_b must have one row per node \(40\)"):
        icm(log_b[:30], coupling)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\]"):
        icm(log_b, coupling, torch.full((40,), 3))
    with pytest.raises(ValueError, match="labels must have one entry per node"):
        icm(log_b, coupling, torch.zeros(39, dtype=torch.long))
    with pytest.raises(ValueError, match="schedule must be one of"):
        icm(log_b, coupling, schedule="random")
    with pytest.raises(ValueError, match="order must be a permutation"):
        icm(log_b, coupling, order=torch.zeros(40, dtype=torch.long))
    with pytest.raises(ValueError, match="order applies only to schedule='sequential'"):
        icm(log_b, coupling, schedule="colored", order=torch.arange(40))
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        icm(log_b, coupling, max_iter=0)


def test_the_backend_is_chosen_once_per_fit_not_per_sweep(monkeypatch):
    table, graph, _ = simulate_networked_annotations(
        120, WorkerPopulation(5, dominance=0.45, labels_per_item=3), 3, mean_degree=4.0, seed=5)
    asked = []

    def counting(backend, *tensors, portable="torch"):
        asked.append(backend)
        return resolve(backend, *tensors, portable=portable)

    resolve = energy_module.resolve_backend
    monkeypatch.setattr(energy_module, "resolve_backend", counting)
    auto = []
    for max_iter in (2, 6):
        asked.clear()
        fit = networked_em(table, graph, max_iter=max_iter, tol=1e-300, warn_not_converged=False)
        assert fit.diagnostics["n_iter"] == max_iter
        auto.append(asked.count("auto"))
        # every sweep after that passes the resolved name on
        assert set(asked) == {"auto", "numba"} and len(asked) > sum(fit.params["icm_sweeps"])
    assert auto[0] == auto[1]
