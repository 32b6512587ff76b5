"""The compiled Dawid-Skene passes (C and numba) equal the torch (log-space) E- and M-steps."""

import math

import numpy as np
import pytest
import torch

from pyromodels.core.backend import resolve_backend
from pyromodels.core.device import default_dtype
from pyromodels.crowd.ds import em
from pyromodels.crowd.ds.data import SparseWorkerWarning, resolve_ds_backend
from pyromodels.crowd.ds.kernels import compiled
from pyromodels.crowd.ds.kernels.groups import item_cells, item_groups
from pyromodels.crowd.ds.kernels.native import c_passes, have_c
from pyromodels.crowd.ds.kernels.passes import em_counts_pass, posteriors_pass
from pyromodels.crowd.ds.kernels.unrolled import (
    MAX_CLASSES,
    em_counts_kernel,
    posteriors_kernel,
    prior_argument,
)
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import AnnotationTable, WorkerPopulation, simulate_annotations
from pyromodels.data.simulate_crowd import random_confusions


def _shuffled(table: AnnotationTable, seed: int) -> AnnotationTable:
    """The same labels in a random row order (the kernel groups them by item itself)."""
    perm = torch.randperm(table.num_labels, generator=torch.Generator().manual_seed(seed))
    return AnnotationTable.from_arrays(table.item_idx[perm], table.worker_idx[perm],
                                       table.label_idx[perm], num_items=table.num_items,
                                       num_workers=table.num_workers,
                                       num_classes=table.num_classes)


def _start(model, table):
    data = model.prepare(table)
    params = em.majority_start(data, model.em_floor)
    return data, params


def _assert_steps_agree(data, params, floor):
    """Every compiled backend's E-step, counts, fused step and objective equal torch's."""
    q_t, norm_t = em.e_step(data, params, "torch")
    new_t, obj_t = em.em_step_objective(data, params, floor, "torch")
    counts_t = em.m_step(data, q_t, floor, "torch")
    start_t = em.majority_start(data, floor, "torch")
    for backend in compiled.BACKENDS:
        q_n, norm_n = em.e_step(data, params, backend)
        torch.testing.assert_close(q_n, q_t, rtol=0, atol=1e-12)
        torch.testing.assert_close(norm_n, norm_t, rtol=1e-12, atol=1e-12)
        q_l, best, norm_l = em.e_step_labels(data, params, backend)
        assert torch.equal(q_l, q_n) and torch.equal(norm_l, norm_n)
        assert torch.equal(best, q_n.argmax(-1)) and best.dtype == torch.long
        start_n = em.majority_start(data, floor, backend)
        for key in start_t:
            torch.testing.assert_close(start_n[key], start_t[key], rtol=0, atol=1e-12)
        new_n, obj_n = em.em_step_objective(data, params, floor, backend)
        from_q = em.m_step(data, q_t, floor, backend)
        for key in new_t:
            torch.testing.assert_close(new_n[key], new_t[key], rtol=0, atol=1e-12)
            torch.testing.assert_close(from_q[key], counts_t[key], rtol=0, atol=1e-12)
        assert float(obj_n) == pytest.approx(float(obj_t), rel=1e-12)
        assert float(em.log_posterior(data, params, backend)) == pytest.approx(float(obj_t),
                                                                                 rel=1e-12)


@pytest.mark.parametrize("options", [
    {},
    {"update_prior": False},
    {"prior_concentration": [2.0, 1.5, 3.0, 1.0], "confusion_concentration": 1.3, "diagonal": 2.0},
    {"em_floor": 0.0},
])
def test_compiled_passes_equal_the_torch_steps(options):
    # uneven label counts (half the labels missing, some items unlabelled) in shuffled order
    table, _ = simulate_annotations(300, WorkerPopulation(12, dominance=0.6, missing_rate=0.5), 4,
                                    seed=3)
    model = DawidSkene(allow_unlabelled=True, **options)
    data, params = _start(model, _shuffled(table, 0))
    _assert_steps_agree(data, params, model.em_floor)


def test_long_items_are_rescaled_without_underflow():
    # 2,000 labels of one item at probabilities ~1/6 multiply to ~1e-1556: far below the
    # smallest float64, so the kernel's rescaling is what keeps the result exact
    K, M = 6, 40
    conf = random_confusions(M, K, dominance=0.3, concentration=50.0,
                             seed=0)
    g = torch.Generator().manual_seed(1)
    items = torch.cat([torch.zeros(2000, dtype=torch.long), torch.arange(1, 51)])
    workers = torch.randint(0, M, (len(items),), generator=g)
    labels = torch.randint(0, K, (len(items),), generator=g)
    table = AnnotationTable.from_arrays(items, workers, labels, num_items=51, num_workers=M,
                                        num_classes=K, allow_repeats=True)
    data = DawidSkene().prepare(table)
    params = {"prior": torch.full((K,), 1.0 / K, dtype=torch.float64), "confusion": conf}
    _, norm = em.e_step(data, params, "torch")
    assert float(norm[0]) < -1000 * math.log(10)  # the case the test is about
    _assert_steps_agree(data, params, 1e-10)


def test_items_on_either_side_of_the_no_rescaling_bound_agree():
    # off-diagonal confusion entries of 1e-60 to 1e-50 and items of 1 to 12 labels: the C pass
    # skips the rescaling test only for items too short to fall below 2^-300 (here one
    # label), and rescales the longer ones, whose unscaled products would underflow to zero
    K, M = 3, 30
    g = torch.Generator().manual_seed(7)
    conf = 10.0 ** -(50.0 + 10.0 * torch.rand(M, K, K, generator=g, dtype=torch.float64))
    conf[:, torch.arange(K), torch.arange(K)] = 1.0
    conf = conf / conf.sum(-1, keepdim=True)
    sizes = torch.arange(1, 13).repeat(5)
    items = torch.repeat_interleave(torch.arange(len(sizes)), sizes)
    workers = torch.cat([torch.randperm(M, generator=g)[:int(c)] for c in sizes])
    labels = torch.randint(0, K, (len(items),), generator=g)
    table = AnnotationTable.from_arrays(items, workers, labels, num_items=len(sizes),
                                        num_workers=M, num_classes=K)
    data = DawidSkene().prepare(table)
    params = {"prior": torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64), "confusion": conf}
    norm = em.e_step(data, params, "torch")[1]
    assert float(norm.max()) > -100 and float(norm.min()) < -746  # exp(-746) == 0.0
    for backend in compiled.BACKENDS:  # the passes themselves, without the torch fallback
        _, _, total = compiled.em_counts(table, params["prior"], conf, M, backend)
        _, pointwise = compiled.posteriors(table, params["prior"], conf, backend)
        assert total == pytest.approx(float(norm.sum()), rel=1e-12)
        torch.testing.assert_close(pointwise, norm, rtol=1e-12, atol=0)
    _assert_steps_agree(data, params, 1e-10)


def test_impossible_answers_match_the_torch_path():
    # exact zeros: item 0's labels are impossible under class 0 only (the pass keeps the zero),
    # item 1's under every class (the pass hands the step back to the torch path)
    conf = torch.tensor([[[1.0, 0.0], [0.5, 0.5]], [[1.0, 0.0], [1.0, 0.0]]], dtype=torch.float64)
    table = AnnotationTable.from_arrays([0, 0, 1, 2], [0, 1, 1, 0], [1, 0, 1, 0],
                                        num_items=3, num_workers=2, num_classes=2)
    data = DawidSkene(em_floor=0.0).prepare(table)
    params = {"prior": torch.tensor([0.5, 0.5], dtype=torch.float64), "confusion": conf}
    q_t, norm_t = em.e_step(data, params, "torch")
    assert bool(torch.isneginf(norm_t[1])) and float(q_t[0, 0]) == 0.0
    for backend in compiled.BACKENDS:
        q_n, norm_n = em.e_step(data, params, backend)
        torch.testing.assert_close(q_n, q_t, equal_nan=True)
        torch.testing.assert_close(norm_n, norm_t)
        q_l, best, norm_l = em.e_step_labels(data, params, backend)  # handed back to torch
        torch.testing.assert_close(q_l, q_t, equal_nan=True)
        torch.testing.assert_close(norm_l, norm_t)
        assert torch.equal(best, q_t.argmax(-1))
    for backend in ("torch", *compiled.BACKENDS):
        assert bool(torch.isneginf(em.log_marginal(data, params, backend)))
    keep = {0, 2}  # drop item 1: the pass itself handles the one zero
    rows = [r for r in range(4) if int(table.item_idx[r]) in keep]
    small = AnnotationTable.from_arrays(table.item_idx[rows], table.worker_idx[rows],
                                        table.label_idx[rows], num_items=3, num_workers=2,
                                        num_classes=2)
    with pytest.warns(SparseWorkerWarning, match="1 worker"):  # worker 1 keeps one label
        data = DawidSkene(em_floor=0.0, allow_unlabelled=True).prepare(small)
    _assert_steps_agree(data, params, 0.0)


@pytest.mark.parametrize("backend", compiled.BACKENDS)
def test_float32_data_agree_with_the_float64_steps(backend):
    table, _ = simulate_annotations(200, WorkerPopulation(8, labels_per_item=4), 3, seed=5)
    model = DawidSkene()
    data64, params64 = _start(model, table)
    with default_dtype(torch.float32):
        data32 = model.prepare(table)
    params32 = {k: v.float() for k, v in params64.items()}
    new32 = em.em_step(data32, params32, 1e-10, backend)
    assert new32["confusion"].dtype == torch.float32
    reference = em.em_step(data64, params64, 1e-10, "torch")
    # float32 rounding of the inputs (relative 6e-8) moves posteriors by a few 1e-7
    torch.testing.assert_close(new32["confusion"].double(), reference["confusion"], rtol=0,
                               atol=1e-5)


def test_fit_with_the_fused_step_equals_the_separate_calls():
    table, _ = simulate_annotations(150, WorkerPopulation(6, dominance=0.6, missing_rate=0.5), 3,
                                    seed=2)

    class Separate(DawidSkene):
        em_step_with_objective = None  # run_em then calls em_step and em_objective

    kwargs = {"method": "em", "seed": 0, "progress": False, "max_iter": 300, "tol": 1e-10}
    fused = DawidSkene(allow_unlabelled=True).fit(table, **kwargs)
    separate = Separate(allow_unlabelled=True).fit(table, **kwargs)
    torch_path = DawidSkene(allow_unlabelled=True, backend="torch").fit(table, **kwargs)
    assert len(fused.losses) == len(separate.losses) > 20
    torch.testing.assert_close(fused.losses, separate.losses, rtol=1e-13, atol=0)
    torch.testing.assert_close(fused.losses, torch_path.losses, rtol=1e-12, atol=0)
    for key in ("prior", "confusion", "probas"):
        torch.testing.assert_close(fused.params[key], separate.params[key], rtol=0, atol=1e-12)
        torch.testing.assert_close(fused.params[key], torch_path.params[key], rtol=0, atol=1e-10)


def test_backend_arguments_are_checked():
    with pytest.raises(ValueError, match="backend"):
        DawidSkene(backend="gpu")
    meta = torch.zeros(2, device="meta")
    with pytest.raises(ValueError, match="CPU only"):
        resolve_backend("numba", meta)
    with pytest.raises(ValueError, match="CPU only"):
        resolve_ds_backend("c", meta)
    with pytest.raises(ValueError, match="backend"):  # "c" only where a C kernel exists
        resolve_backend("c", torch.zeros(2))
    with pytest.raises(ValueError, match="not built"):
        resolve_backend("c", torch.zeros(2), have_c=lambda: False)
    assert resolve_backend("auto", meta) == "torch"
    assert resolve_backend("auto", torch.zeros(2, requires_grad=True)) == "torch"
    assert resolve_backend("auto", torch.zeros(2)) == "numba"
    assert resolve_backend("auto", torch.zeros(2), have_c=lambda: False) == "numba"
    assert resolve_ds_backend("auto", torch.zeros(2)) == "c"
    assert resolve_backend("python", portable="python") == "python"


def test_the_c_passes_were_built_with_the_package():
    # the install compiles them (setup.py); without them every fit pays numba's start-up
    assert have_c(), "pyromodels.crowd.ds.kernels._cpass is missing: reinstall with a C compiler"


@pytest.mark.parametrize("num_classes", [2, 3, 7, 9, 16, 17])
def test_the_pass_written_out_for_k_classes_equals_the_generic_pass(num_classes):
    kernel = em_counts_kernel(num_classes)
    assert (kernel is em_counts_pass) == (num_classes > MAX_CLASSES)
    # items of about 1,000 labels: their products fall below 2^-300, so the rescaling branch
    # is taken (checked below)
    M = 1200
    table, _ = simulate_annotations(40, WorkerPopulation(M, dominance=0.3, missing_rate=0.15),
                                    num_classes, seed=num_classes)
    data = DawidSkene(allow_unlabelled=True).prepare(_shuffled(table, 1))
    params = em.majority_start(data, 1e-10, "torch")
    ptr, workers, labels = item_groups(data.table)
    prior, conf = compiled.as_numpy(params["prior"]), compiled.columns(params["confusion"])
    sizes = (data.num_items, M, num_classes)  # the C passes' leading arguments
    cells = item_cells(data.table)
    out = {}
    for name, run in (
        ("generic", lambda *a: em_counts_pass(ptr, workers, labels, prior, conf, *a)),
        ("written out", lambda *a: kernel(ptr, workers, labels, prior_argument(prior), conf, *a)),
        ("c", lambda *a: c_passes().em_counts(*sizes, *cells, prior, conf, *a)),
    ):
        counts, totals = np.zeros((M, num_classes, num_classes)), np.zeros(num_classes)
        loglik = run(counts, totals)
        out[name] = (counts, totals, loglik)
    c0, t0, l0 = out.pop("generic")
    for c1, t1, l1 in out.values():
        np.testing.assert_allclose(c1, c0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(t1, t0, rtol=1e-13)
        assert l1 == pytest.approx(l0, rel=1e-13)
    # the posteriors pass, written out the same way
    assert (posteriors_kernel(num_classes) is posteriors_pass) == (num_classes > MAX_CLASSES)
    q = {}
    best = np.full(data.num_items, -1)  # the C pass's most probable classes
    for name, run in (
        ("generic", lambda *a: posteriors_pass(ptr, workers, labels, prior, conf, *a)),
        ("written out", lambda *a: posteriors_kernel(num_classes)(
            ptr, workers, labels, prior_argument(prior), conf, *a)),
        ("c", lambda *a: c_passes().posteriors(*sizes, *cells, prior, conf, *a, best)),
    ):
        q[name] = (np.empty((data.num_items, num_classes)), np.empty(data.num_items))
        run(*q[name])
    q0, n0 = q.pop("generic")
    for q1, n1 in q.values():
        np.testing.assert_allclose(q1, q0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(n1, n0, rtol=1e-13)
    np.testing.assert_array_equal(best, q["c"][0].argmax(-1))
    assert float(em.e_step(data, params, "torch")[1].max()) < -300 * math.log(2)
    _assert_steps_agree(data, params, 1e-10)


def test_the_data_carry_the_backend_chosen_once():
    table, _ = simulate_annotations(50, 4, 3, seed=0)
    data = DawidSkene().prepare(table)
    assert data.backend == "c"
    assert DawidSkene(backend="numba").prepare(table).backend == "numba"
    assert DawidSkene(backend="torch").prepare(table).backend == "torch"
    # prepared data given to a model with another backend take that model's choice
    assert DawidSkene(backend="torch").prepare(data).backend == "torch"
    assert DawidSkene().prepare(data) is data
    # the hooks follow the data: a torch-prepared fit equals the compiled one to rounding only
    params = em.majority_start(data, 1e-10)
    on_torch = DawidSkene(backend="torch").prepare(data)
    q_n, q_t = em.e_step(data, params)[0], em.e_step(on_torch, params)[0]
    torch.testing.assert_close(q_n, q_t, rtol=0, atol=1e-12)
    assert not torch.equal(q_n, q_t)


def _c_arguments():
    """A small grouping (3 items, 2 workers, 2 classes) and valid arguments for each C pass:
    item 0 has (worker 0, label 1) and (worker 1, label 0), item 1 (worker 1, label 1), item 2
    none; a cell is worker * K + label."""
    ptr = np.array([0, 2, 3, 3], dtype=np.int64)
    cells = np.array([1, 2, 3], dtype=np.int32)
    prior = np.array([0.5, 0.5])
    conf = np.full((2, 2, 2), 0.5)
    return ptr, cells, prior, conf


def test_the_c_passes_refuse_arguments_that_would_read_out_of_bounds():
    ptr, cells, prior, conf = _c_arguments()
    c = c_passes()
    counts, qsum = np.zeros((2, 2, 2)), np.zeros(2)
    assert np.isfinite(c.em_counts(3, 2, 2, ptr, cells, prior, conf, counts, qsum))
    np.testing.assert_allclose(qsum, [1.5, 1.5])  # item 2 has no label: its q is the prior
    bad = np.array([1, 4, 3], dtype=np.int32)  # cell 4 = worker 2 of 2
    for call in (lambda: c.em_counts(3, 2, 2, ptr, bad, prior, conf, counts, qsum),
                 lambda: c.log_marginal(3, 2, 2, ptr, -bad, prior, conf),
                 lambda: c.counts(3, 2, 2, ptr, bad, np.full((3, 2), 0.5), counts),
                 lambda: c.vote_counts(3, 2, 2, ptr, bad, counts, qsum),
                 lambda: c.posteriors(3, 2, 2, ptr, bad, prior, conf, np.empty((3, 2)),
                                      np.empty(3), None)):
        with pytest.raises(ValueError, match=r"cell \(worker \* K \+ label\) is outside 0 .. 3"):
            call()
    with pytest.raises(ValueError, match="conf must hold 8 items"):
        c.posteriors(3, 2, 2, ptr, cells, prior, conf[:1], np.empty((3, 2)), np.empty(3), None)
    with pytest.raises(ValueError, match="best must hold 3 items of 8 bytes"):
        c.posteriors(3, 2, 2, ptr, cells, prior, conf, np.empty((3, 2)), np.empty(3),
                     np.empty(3, dtype=np.int32))
    with pytest.raises(ValueError, match="cells must hold 3 items of 4 bytes"):
        c.em_counts(3, 2, 2, ptr, cells.astype(np.int64), prior, conf, counts, qsum)
    with pytest.raises(ValueError, match="non-decreasing"):
        c.log_marginal(3, 2, 2, np.array([0, 2, 1, 3], dtype=np.int64), cells, prior, conf)
    with pytest.raises(ValueError, match="below 2\\^31"):
        c.log_marginal(3, 2 ** 30, 2, ptr, cells, prior, conf)
    with pytest.raises(TypeError, match="writable"):
        frozen = np.zeros(2)
        frozen.setflags(write=False)
        c.em_counts(3, 2, 2, ptr, cells, prior, conf, counts, frozen)
    with pytest.raises(TypeError, match="takes 7 arguments"):
        c.log_marginal(3, 2, 2, ptr, cells, prior)
    with pytest.raises(ValueError, match="out of range"):
        c.group_by_item(3, 2, 2, np.array([0, 3, 1]), np.array([0, 1, 1]), np.array([1, 0, 1]),
                        ptr, np.empty(3, dtype=np.int32))
    grouped = np.empty(3, dtype=np.int32)
    c.group_by_item(3, 2, 2, np.array([1, 0, 0]), np.array([1, 0, 1]), np.array([1, 1, 0]),
                    ptr, grouped)
    np.testing.assert_array_equal(grouped, cells)  # grouped by item, stable, coded w * K + y
