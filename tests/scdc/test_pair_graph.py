"""The sparse pair graph against the reference link functions, with pairs judged by several
workers and in both orders."""

import torch

from pyromodels.data.pairwise import PairwiseAnnotations
from pyromodels.scdc import pairwise_cavi as cavi
from pyromodels.scdc.links import (
    co_cluster_probability,
    message_weights,
    pair_messages,
    point_worker_logs,
    worker_counts,
)
from pyromodels.scdc.pairwise_data import prepare_pairwise


def _data(make_pairs):
    pairs, _ = make_pairs(9, 3, [0.9, 0.7, 0.6], 30, seed=4)
    flip = torch.arange(pairs.num_pairs) % 2 == 1  # every other link written as (j, i)
    i, j = torch.where(flip, pairs.j_idx, pairs.i_idx), torch.where(flip, pairs.i_idx, pairs.j_idx)
    pairs = PairwiseAnnotations.from_arrays(i, j, pairs.worker_idx, pairs.link, 9, 3)
    data = prepare_pairwise(pairs, 3, 1.0)
    key = torch.minimum(i, j) * 9 + torch.maximum(i, j)
    assert len(torch.unique(key)) < len(key)  # some pairs were judged by several workers
    return data


def _q(n, k, seed=0):
    return torch.softmax(torch.randn(n, k, generator=torch.Generator().manual_seed(seed)), -1)


def test_messages_equal_pair_messages(make_pairs):
    data = _data(make_pairs)
    p = data.pairs
    g = torch.Generator().manual_seed(1)
    logs = point_worker_logs(0.5 + 0.4 * torch.rand(3, generator=g),
                             0.5 + 0.4 * torch.rand(3, generator=g))
    groups = torch.arange(6)
    operator = data.graph.operator(message_weights(groups % 2, logs, groups // 2))
    q = _q(9, 3)
    expected = pair_messages(q, p.i_idx, p.j_idx, message_weights(p.link, logs, p.worker_idx))
    torch.testing.assert_close(data.graph.messages(operator, q), expected)


def test_co_cluster_equals_reference(make_pairs):
    data = _data(make_pairs)
    p = data.pairs
    q = _q(9, 3, seed=2)
    torch.testing.assert_close(data.graph.co_cluster(q),
                               co_cluster_probability(q, p.i_idx, p.j_idx))


def test_soft_counts_equal_worker_counts(make_pairs):
    data = _data(make_pairs)
    p = data.pairs
    q = _q(9, 3, seed=3)
    counts = cavi.soft_counts(data, data.graph.pair_co_cluster(q))
    expected = worker_counts(co_cluster_probability(q, p.i_idx, p.j_idx), p.link, p.worker_idx, 3)
    torch.testing.assert_close(counts.alpha, expected.alpha)
    torch.testing.assert_close(counts.beta, expected.beta)
