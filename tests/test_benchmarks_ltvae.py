"""The LTVAE benchmarks: a ``--quick`` run writes the warm epoch of the LTVAE against the
GMM-VAE with a passing check, a fresh process gives the facets of the same fit in this
process, and the full run fits with structure searches (speed is not tested)."""

from __future__ import annotations

import json

import pytest

LABEL = ("ltvae.epoch[N=200,D=784,J=10,hidden=500-500-2000,batch_size=128,latent_nodes=3,"
         "cardinalities=10-5-4,pouches=5,gmm_vae_states=10,start=warm]")


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_times_the_ltvae_epoch_against_the_gmm_vae(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("ltvae", timeout=300)
    assert proc.returncode == 0, proc.stderr
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["label"] == LABEL and rec["metric"] == "seconds" and rec["device"] == "cpu"
    assert set(rec["peers"]) == {"gmm_vae"}
    assert rec["ratio"]["gmm_vae"] == pytest.approx(rec["peers"]["gmm_vae"] / rec["ours"])
    check = rec["agreement"]["facets"]
    assert check["passed"] is True and check["tolerance"] == 0.0
    for key in ("acc_digits", "nmi_digits", "gmm_vae_acc_digits", "gmm_vae_nmi_digits"):
        assert 0.0 <= check[key] <= 1.0
    assert all(len(t["times_s"]) == 2 for t in rec["timing"].values())


def test_the_two_priors_share_the_networks_and_differ_in_the_tree(import_benchmarks):
    (bench,) = import_benchmarks("bench_ltvae")
    tree, gmm = bench.ltvae_tree(), bench.gmm_tree()
    assert tree.num_latents == 3 and tree.num_coordinates == gmm.num_coordinates == 10
    assert sorted(c for block in tree.pouches for c in block) == list(range(10))
    assert gmm.num_latents == 1 and tuple(gmm.cardinalities) == (10,)
    x, digits = bench.mnist(True)
    assert tuple(x.shape) == (200, 784) and set(x.unique().tolist()) <= {0.0, 1.0}
    for name in bench.TREES:
        theta = bench.start_params(True, name)
        assert theta.tree == bench.TREES[name]()
    starts = [(c.name, c.params.get("start")) for c in bench.cases(False)]
    assert starts == [("ltvae.epoch", "warm"), ("ltvae.epoch", "cold"),
                      ("ltvae.full_run", None)]
    assert [c.name for c in bench.cases(True)] == ["ltvae.epoch"]
    full = bench.cases(False)[-1]
    assert full.repeats == 1 and full.check is None


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_a_fresh_process_gives_the_in_process_epochs(import_benchmarks, monkeypatch):
    bench, fresh = import_benchmarks("bench_ltvae", "fresh_process")
    monkeypatch.setattr(bench, "COLD_PHASE_RUNS", 1)
    records = bench._cold_check(True)()
    assert set(records) == {"cold_facets", "cold_facets_gmm_vae"}
    for rec in records.values():
        assert rec["passed"] is True
        assert set(rec["phases"]) == {"import_s", "read_s", "fit_s", "read_to_facets_s"}
        assert set(fresh.MEMORY_KEYS) <= set(rec)
        assert rec["peak_rss_before_fit_mib"] > 50  # it imported torch


def test_the_full_run_loads_first_then_fits_with_structure_searches(import_benchmarks,
                                                                    monkeypatch):
    (bench,) = import_benchmarks("bench_ltvae")
    from pyromodels.ltvae import LTVAE, structure_search

    x, _ = bench.mnist(True)
    search = structure_search(seed=0, em_restarts=1, refine_top=1, em_steps=20, screen_steps=3)
    model, post = bench.full_fit(x[:200], model=LTVAE(10, hidden=(16,), cardinality=3),
                                 num_epochs=3, search=search, search_every=1)
    assert [s["epoch"] for s in post.diagnostics["searches"]] == [1, 2]
    assert post.attrs["tree"] == search.results[-1].tree.to_dict()
    # the timed callable: its warm-up call only loads the digits, the next one fits
    calls = []
    monkeypatch.setattr(bench, "mnist", lambda quick: (x, None))
    monkeypatch.setattr(bench, "full_fit", lambda data, device: calls.append((data, device)))
    run = bench._full_run("cpu")
    assert run() is None and calls == []
    run()
    assert len(calls) == 1 and calls[0][0] is x and calls[0][1] == "cpu"
    assert bench.FULL_RUN == {"num_epochs": 20, "search": "east", "search_every": 5}
