"""Simulators: Monte Carlo moments against the truth they return, seeding, bad inputs.

Every tolerance is a multiple of the Monte Carlo standard error (SE) of the statistic checked;
5 SE keeps the chance of a false failure below 1e-5 per check (far below with few checks).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyromodels.data import (
    AnnotationTable,
    WorkerPopulation,
    simulate_annotations,
    simulate_gaussian_mixture,
)

Z = 5.0  # multiples of the Monte Carlo standard error

WEIGHTS = [0.3, 0.7]
MEANS = [[-2.0, 0.0], [1.0, 3.0]]
COVS = [[[1.0, 0.5], [0.5, 2.0]], [[0.5, -0.2], [-0.2, 0.3]]]


def test_gaussian_mixture_moments_match_truth():
    n = 20000
    X, truth = simulate_gaussian_mixture(n, WEIGHTS, MEANS, COVS, seed=3)
    assert X.dtype == torch.float64 and X.shape == (n, 2)
    z = truth["z"].numpy()
    x = X.numpy()
    for k, w in enumerate(WEIGHTS):
        nk = int((z == k).sum())
        assert abs(nk / n - w) < Z * np.sqrt(w * (1 - w) / n)
        xk = x[z == k]
        cov = np.array(COVS[k])
        mean_se = np.sqrt(np.diag(cov) / nk)
        assert (np.abs(xk.mean(0) - MEANS[k]) < Z * mean_se).all()
        # SE of a sample covariance entry: sqrt((s_ii s_jj + s_ij^2) / n) (Gaussian data)
        cov_se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / nk)
        assert (np.abs(np.cov(xk.T) - cov) < Z * cov_se).all()


def test_gaussian_mixture_seeding():
    a, ta = simulate_gaussian_mixture(50, WEIGHTS, MEANS, COVS, seed=1)
    b, tb = simulate_gaussian_mixture(50, WEIGHTS, MEANS, COVS, seed=1)
    c, _ = simulate_gaussian_mixture(50, WEIGHTS, MEANS, COVS, seed=2)
    assert torch.equal(a, b) and torch.equal(ta["z"], tb["z"])
    assert not torch.equal(a, c)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"weights": [0.5, 0.6]}, r"weights must sum to 1, got sum 1\.1 \(off by 0\.1"),
        ({"means": [[0.0, 0.0]]}, r"means must have 2 rows \(one per weight\)"),
        ({"covs": [[[1.0, 0.0], [0.0, 1.0]]]}, r"covs must have shape \(2, 2, 2\)"),
        ({"covs": [[[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]},
         r"covs\[0\] must be positive definite"),
        ({"covs": [[[1.0, 0.1], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]]},
         "covs must be symmetric"),
        ({"n": 0}, "n must be an integer >= 1"),
        ({"seed": -1}, "seed must be an integer >= 0"),
    ],
)
def test_gaussian_mixture_bad_inputs(kwargs, match):
    args = {"n": 10, "weights": WEIGHTS, "means": MEANS, "covs": COVS, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=match):
        simulate_gaussian_mixture(**args)


def test_annotation_labels_follow_the_confusion_rows():
    n, m, k = 6000, 4, 3
    table, truth = simulate_annotations(n, WorkerPopulation(m, dominance=0.6), k,
                                        class_prior=[0.2, 0.3, 0.5], seed=5)
    assert isinstance(table, AnnotationTable)
    assert table.num_labels == n * m  # everybody labels everything by default
    conf = truth["confusion"]
    assert conf.shape == (m, k, k)
    np.testing.assert_allclose(conf.sum(-1).numpy(), 1.0, atol=1e-12)
    z = truth["z"]
    for c, p in enumerate([0.2, 0.3, 0.5]):
        assert abs(float((z == c).double().mean()) - p) < Z * np.sqrt(p * (1 - p) / n)
    dense = table.to_dense()
    for w in range(m):
        for c in range(k):
            given = dense[z == c, w]
            emp = torch.bincount(given, minlength=k).double() / len(given)
            p = conf[w, c]
            se = torch.sqrt(p * (1 - p) / len(given))
            assert (torch.abs(emp - p) < Z * se).all()


def test_dominance_is_the_expected_diagonal_mass():
    rho, conc, k, m = 0.8, 10.0, 4, 300
    _, truth = simulate_annotations(1, WorkerPopulation(m, dominance=rho, concentration=conc), k,
                                    seed=11)
    diag = torch.diagonal(truth["confusion"], dim1=-2, dim2=-1).reshape(-1).numpy()
    # Dirichlet marginal: Beta(c rho, c (1 - rho)), variance rho (1 - rho) / (c + 1)
    se = np.sqrt(rho * (1 - rho) / (conc + 1) / diag.size)
    assert abs(diag.mean() - rho) < Z * se
    # SE of a sample variance: sqrt((m4 - var^2) / n), m4 the fourth central moment
    dev = diag - diag.mean()
    var_se = np.sqrt((np.mean(dev**4) - np.mean(dev**2) ** 2) / diag.size)
    assert abs(diag.var() - rho * (1 - rho) / (conc + 1)) < Z * var_se


def test_labels_per_item_and_missing_rate():
    n, m, r = 3000, 10, 3
    table, _ = simulate_annotations(n, WorkerPopulation(m, labels_per_item=r), 2, seed=2)
    assert table.counts_per_item().unique().tolist() == [r]
    p = r / m  # each worker is picked for an item with probability r / m
    per_worker = table.counts_per_worker().double().numpy()
    assert (np.abs(per_worker - n * p) < Z * np.sqrt(n * p * (1 - p))).all()
    table, _ = simulate_annotations(n, WorkerPopulation(m, missing_rate=0.4), 2, seed=2)
    assert table.num_items == n
    kept = table.num_labels / (n * m)
    assert abs(kept - 0.6) < Z * np.sqrt(0.24 / (n * m))


def test_annotation_seeding():
    workers = WorkerPopulation(4, missing_rate=0.2)
    a, ta = simulate_annotations(30, workers, 3, seed=9)
    b, tb = simulate_annotations(30, workers, 3, seed=9)
    assert torch.equal(a.label_idx, b.label_idx) and torch.equal(ta["confusion"], tb["confusion"])
    c, _ = simulate_annotations(30, workers, 3, seed=10)
    assert not torch.equal(a.to_dense(), c.to_dense())


@pytest.mark.parametrize(
    "workers, kwargs, match",
    [
        ({"labels_per_item": 2, "missing_rate": 0.1}, {},
         "give at most one of labels_per_item and missing_rate"),
        ({"dominance": 1.0}, {}, "dominance must lie strictly between 0 and 1, got 1.0"),
        ({"labels_per_item": 5}, {}, "labels_per_item must be an integer <= 4"),
        ({"missing_rate": 1.0}, {}, "missing_rate must be < 1, got 1.0"),
        ({}, {"class_prior": [0.5, 0.5]}, r"class_prior must have shape \(3,\), got \(2,\)"),
        ({}, {"num_classes": 1}, "num_classes must be an integer >= 2"),
        ({"concentration": 0.0}, {}, "concentration must be > 0"),
    ],
)
def test_annotation_bad_inputs(workers, kwargs, match):
    args = {"num_items": 5, "num_classes": 3, "seed": 0} | kwargs
    with pytest.raises(ValueError, match=match):
        simulate_annotations(workers=WorkerPopulation(4, **workers), **args)
