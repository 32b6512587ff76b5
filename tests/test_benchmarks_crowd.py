"""The crowd benchmarks: ``--quick --only crowd`` writes passing records (speed is not tested)."""

from __future__ import annotations

import json

import pytest
import torch

DS_PARAMS = "[N=2000,M=100,K=5,L=10000,dtype=float64,iterations_per_call=2]"
DS_STEP, DS_FIT = "crowd.ds_em_step" + DS_PARAMS, "crowd.ds_em_iteration" + DS_PARAMS
DS_FACADE = "crowd.ds_fit_predict[N={n},M={m},K=5,L={l},dtype=float64,n_iter=20,start={start}]"
DS_WARM = DS_FACADE.format(n=2000, m=100, l=10_000, start="warm")
FB = "crowd.hmm_forward_backward[sequences={s},length={t},K=10,backend={b},dtype=float64]"
BW = "crowd.hmm_baum_welch_step[sequences={s},length={t},K=10,backend={b},dtype=float64]"
QUICK_CPU_LABELS = {DS_STEP, DS_FIT, DS_WARM} | {
    tpl.format(s=s, t=t, b=b)
    for s, t in ((1, 2000), (50, 40))
    for tpl, backends in ((FB, ("numba", "torch")), (BW, ("numba",)))
    for b in backends
}
#: registered only for a CUDA device
QUICK_CUDA_ONLY = {
    "crowd.ds_em_step[N=4000,M=100,K=5,L=20000,dtype=float64,iterations_per_call=2]",
    FB.format(s=100, t=100, b="torch"),
}
FB_CHECKS = {f"{what}_{impl}" for what in ("log_likelihood", "posterior") for impl in ("scaling", "log")}
BW_CHECKS = {f"{what}_{impl}" for what in ("initial", "transition", "confusion")
             for impl in ("scaling", "log")}


@pytest.fixture(scope="module")
def records(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("crowd", timeout=240)
    assert proc.returncode == 0, proc.stderr
    return {r["label"]: r for r in map(json.loads, out.read_text().splitlines())}


@pytest.fixture
def modules(import_benchmarks):
    return import_benchmarks("bench_crowd_ds", "bench_crowd_hmm")


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_every_cpu_case_with_passing_checks(records):
    assert set(records) == QUICK_CPU_LABELS
    for rec in records.values():
        assert rec["device"] == "cpu"
        assert rec["agreement"], rec["label"]
        for name, check in rec["agreement"].items():
            assert check["passed"] is True, (rec["label"], name)
            assert 0 <= check["max_abs_diff"] <= check["tolerance"]
        for who, t in rec["timing"].items():
            assert len(t["times_s"]) == t["repeats"] == 2, (rec["label"], who)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_ds_records_have_their_crowdkit_peer_accuracy_and_memory(records):
    step, fit = records[DS_STEP], records[DS_FIT]
    assert set(step["peers"]) == {"crowdkit.DawidSkene._e_step+_m_step"}
    assert set(fit["peers"]) == {"crowdkit.DawidSkene.fit"}
    assert set(step["agreement"]) == {"accuracy", "peak_memory"}
    assert set(fit["agreement"]) == {"accuracy"}
    for rec in (step, fit):
        assert rec["metric"] == "seconds_per_iter"
        assert rec["timing"]["ours"]["iterations_per_call"] == 2
        acc = rec["agreement"]["accuracy"]
        assert acc["tolerance"] == 1e-3
        assert acc["against"].startswith("crowdkit.DawidSkene(n_iter=2)")
    mem = step["agreement"]["peak_memory"]
    n, labels = step["params"]["N"], step["params"]["L"]
    assert mem["input_bytes"] == 3 * 8 * labels  # three int64 codes per label
    assert mem["tolerance"] == 3 * mem["input_bytes"]
    assert mem["max_abs_diff"] == mem["peak_bytes"] > 0
    assert mem["ratio"] == pytest.approx(mem["peak_bytes"] / mem["input_bytes"], rel=1e-12)
    # a step on a fresh table groups its labels by item: an int64 offset per item and two
    # int32 codes per label stay cached (the step itself never forms the (N, K) posteriors)
    assert mem["peak_bytes"] >= 8 * (n + 1) + 2 * 4 * labels
    assert mem["rss_peak_delta_bytes"] > 0


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_ds_dataframe_to_labels_record_compares_with_crowdkit_fit_predict(records):
    warm = records[DS_WARM]
    assert warm["metric"] == "seconds"
    assert set(warm["peers"]) == {"crowdkit.DawidSkene.fit_predict"}
    assert set(warm["agreement"]) == {"accuracy"}
    assert warm["agreement"]["accuracy"]["against"] == (
        "crowdkit.DawidSkene(n_iter=20).fit_predict accuracy")


def test_the_cold_case_is_registered_for_full_cpu_runs_only(modules):
    ds, _ = modules
    cold = DS_FACADE.format(n=100_000, m=1000, l=500_000, start="cold")
    full_cpu = {c.label: c for c in ds.cases(False, device=torch.device("cpu"))}
    assert cold in full_cpu and DS_FACADE.format(n=100_000, m=1000, l=500_000,
                                                 start="warm") in full_cpu
    assert set(full_cpu[cold].peers) == {"crowdkit.DawidSkene.fit_predict"}
    assert not any("start=cold" in c.label for c in ds.cases(True, device=torch.device("cpu")))
    assert not any("ds_fit_predict" in c.label
                   for c in ds.cases(False, device=torch.device("cuda")))


def test_a_cold_run_reports_its_phases_and_gives_the_in_process_labels(modules):
    ds, _ = modules
    from pyromodels.crowd.estimators import DawidSkeneEstimator

    phases, labels = ds.cold_run(ds.QUICK, "ours")
    assert set(phases) == {"import_s", "read_s", "fit_s", "read_to_labels_s"}
    assert all(v > 0 for v in phases.values())
    assert phases["read_to_labels_s"] == pytest.approx(phases["read_s"] + phases["fit_s"])
    frame = ds._problem(*ds.QUICK, 1, "cpu").frame
    warm = DawidSkeneEstimator(n_iter=ds.FACADE_ITERATIONS).fit_predict(frame)
    assert labels.index.equals(warm.index)
    assert labels.equals(warm)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_hmm_records_compare_with_both_hmmlearn_implementations(records):
    for label, rec in records.items():
        if rec["case"] == "crowd.hmm_forward_backward":
            assert set(rec["peers"]) == {"hmmlearn.score_samples[scaling]",
                                         "hmmlearn.score_samples[log]"}
            assert set(rec["agreement"]) == FB_CHECKS, label
            assert rec["agreement"]["posterior_log"]["tolerance"] == 1e-8
        elif rec["case"] == "crowd.hmm_baum_welch_step":
            assert set(rec["peers"]) == {"hmmlearn.CategoricalHMM.fit[scaling]",
                                         "hmmlearn.CategoricalHMM.fit[log]"}
            assert set(rec["agreement"]) == BW_CHECKS, label


@pytest.mark.parametrize("quick", [True, False])
def test_cuda_cases_are_registered_only_for_a_cuda_device(modules, quick):
    # cases build their data on the first call, so listing them needs no GPU
    cpu = [c.label for m in modules for c in m.cases(quick, device=torch.device("cpu"))]
    cuda = [c.label for m in modules for c in m.cases(quick, device=torch.device("cuda"))]
    assert len(set(cpu)) == len(cpu) and len(set(cuda)) == len(cuda)
    assert any("backend=torch" in label for label in cuda)
    assert not any("backend=numba" in label for label in cuda)
    extra = set(cuda) - {label.replace("backend=numba", "backend=torch") for label in cpu}
    if quick:
        assert set(cpu) == QUICK_CPU_LABELS
        assert extra == QUICK_CUDA_ONLY
    else:
        assert extra == {
            "crowd.ds_em_step[N=2000000,M=1000,K=5,L=10000000,dtype=float64,"
            "iterations_per_call=20]",
            FB.format(s=10_000, t=1_000, b="torch"),
        }
        assert not any("L=10000000" in label or "length=1000," in label for label in cpu)


def test_peak_tensor_bytes_counts_live_storages_exactly(modules):
    ds, _ = modules
    old = torch.arange(100, dtype=torch.float64)

    def work():
        a = torch.zeros(1000, dtype=torch.float64)  # 8000 bytes
        a.add_(1.0)  # in place: nothing new
        view = a[::2]  # a view: nothing new
        b = a * 2.0  # 8000 more: peak 16000
        del a, view
        c = b + 1.0  # a is gone: 16000 again, not 24000
        old.mul_(1.0)  # in place on an older tensor: nothing
        return c, old[:10]  # a view of an older tensor: nothing

    peak, (c, _) = ds.peak_tensor_bytes(work)
    assert peak == 16000
    assert c.shape == (1000,)
    peak_int, _ = ds.peak_tensor_bytes(lambda: torch.ones(10, 10, dtype=torch.int32).sum())
    assert peak_int == 10 * 10 * 4 + 8  # the int64 sum of int32 values


def test_rss_peak_delta_sees_a_touched_allocation(modules):
    ds, _ = modules
    size = 40_000_000  # above glibc's largest mmap threshold: mapped and unmapped at once
    delta = ds.rss_peak_delta(lambda: torch.ones(size // 8, dtype=torch.float64))
    # pages of other small allocations may come along; nothing can hide the 40 MB
    assert size * 0.99 <= delta <= size + 4_000_000


def test_tile_table_shifts_items_and_repeats_truth(modules):
    ds, _ = modules
    from pyromodels.data import WorkerPopulation, simulate_annotations

    table, truth = simulate_annotations(7, WorkerPopulation(4, labels_per_item=2), 3, seed=0)
    big, z = ds.tile_table(table, truth["z"], 3)
    assert big.num_items == 21 and big.num_labels == 3 * table.num_labels
    for copy in range(3):
        rows = slice(copy * table.num_labels, (copy + 1) * table.num_labels)
        assert torch.equal(big.item_idx[rows], table.item_idx + 7 * copy)
        assert torch.equal(big.worker_idx[rows], table.worker_idx)
        assert torch.equal(big.label_idx[rows], table.label_idx)
    assert torch.equal(z, truth["z"].repeat(3))


def test_cuda_only_cases_run_and_check_on_the_cpu(modules):
    # the GPU-only callables and checks, pointed at the CPU: shapes, tiling and comparisons
    ds, hmm = modules
    size, copies = ds.QUICK, ds.QUICK_CUDA_COPIES
    ds._ours(size, copies, "cpu", 2)()
    checks = ds._device_check(size, copies, "cpu")()
    assert set(checks) == {"confusion", "prior", "peak_memory"}
    assert all(c["passed"] for c in checks.values())
    assert checks["peak_memory"]["input_bytes"] == 24 * 2 * 10_000
    shape = hmm.QUICK_CUDA_SHAPE
    fb = hmm._ours_fb(shape, "cpu", "torch")()
    assert fb.posterior.shape == (100 * 100, 10) and fb.log_likelihood.shape == (100,)
    checks = hmm._cuda_fb_check(shape, "cpu")()  # torch scan against numba: a real comparison
    assert set(checks) == {"log_likelihood", "posterior"}
    assert all(c["passed"] for c in checks.values())
    assert checks["posterior"]["max_abs_diff"] > 0


def test_the_cuda_only_cases_run_and_pass_their_checks_when_pointed_at_the_cpu(modules):
    # no GPU here: the same callables with device "cpu" exercise everything but the device
    ds, hmm = modules
    ds._ours(ds.QUICK, ds.QUICK_CUDA_COPIES, "cpu", 2)()
    ds_records = ds._device_check(ds.QUICK, ds.QUICK_CUDA_COPIES, "cpu")()
    hmm._ours_fb(hmm.QUICK_CUDA_SHAPE, "cpu", "torch")()
    hmm_records = hmm._cuda_fb_check(hmm.QUICK_CUDA_SHAPE, "cpu")()
    assert set(ds_records) == {"confusion", "prior", "peak_memory"}
    assert set(hmm_records) == {"log_likelihood", "posterior"}
    for name, record in {**ds_records, **hmm_records}.items():
        assert record["passed"] is True, name
    mem = ds_records["peak_memory"]
    assert mem["input_bytes"] == 3 * 8 * ds.QUICK[0] * ds.LABELS_PER_ITEM * ds.QUICK_CUDA_COPIES
