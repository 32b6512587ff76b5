r"""Exact message passing over a latent tree with Gaussian pouch leaves (:mod:`pyromodels.trees`).

Structure (:func:`bench_tree`): 10 latent nodes on three levels, cardinalities 2 to 4 (a root
with 3 states; three children with 2, 4 and 3; six grandchildren, two under each, with 2 to 4),
over ``J = 20`` coordinates in 11 pouches of 1 to 3 coordinates (one on the root, one on a
middle node, the rest on the grandchildren). Parameters: ``TreeParams.random`` from a fixed
seed, float64. Data: ``N = 100,000`` points drawn from the model by
:func:`pyromodels.trees.sample_tree` (quick: ``N = 2,000``).

Target: the log-likelihood with every node and pairwise marginal of the 100,000 points in
under 0.1 s on the two-core CPU (one thread), and under 5 ms on a GPU. Divide a figure by
``N`` for the cost per point.

* ``trees.message_passing`` (seconds per call).

  - ``start=warm``: ours is :func:`pyromodels.trees.tree_posterior` (collect and distribute:
    the log-likelihood, the node marginals and the pairwise marginals of every edge) on the
    benchmark's ``--device``, after one untimed call. Peer ``pyro.TraceEnum_ELBO``:
    :func:`pyromodels.trees.pyro_log_likelihood`, the same model as a Pyro program with the
    latent sites enumerated, on the CPU; it gives **the summed log-likelihood only** (no
    marginals), which the label says (``pyro_outputs=log_likelihood``), so it does less work
    than ours. pgmpy's belief propagation is not a peer here: pgmpy is not installed with the
    project (not in any extra), and its ``BeliefPropagation`` takes discrete evidence only,
    so Gaussian leaves would need the discrete skeleton with the leaf densities as virtual
    evidence, one query per point (earlier measurements put it at about 5 ms a point).
    Checks: ``log_likelihood``, our summed log-likelihood against Pyro's, as
    ``|ours - pyro| / sum_n |log p(z_n)|`` with tolerance ``10 N eps`` (float64 ``eps``: a sum
    of ``N`` terms in another order differs by at most about ``N eps`` of the sum of the
    magnitudes); ``node_marginals``, every node marginal's rows sum to one, to ``1e-10``
    (log-space terms of a few hundred nats, exponentiated: rounding about ``1e-13``);
    ``edge_marginals``, every pairwise marginal summed over the child equals the parent's
    node marginal, to ``1e-10``.
  - ``start=cold`` (full runs only): every call runs :data:`COLD_SCRIPT` in a fresh process:
    import :mod:`pyromodels.trees`, read the points from an ``.npz``, build the tree and its
    parameters (the same seed), one :func:`~pyromodels.trees.tree_posterior` pass, write the
    log-likelihoods; the figure is its wall time. The check ``cold_posterior`` records the
    median phases (``import_s``, ``read_s``, ``build_s``, ``pass_s``, ``read_to_posterior_s``)
    of :data:`COLD_PHASE_RUNS` more processes and their peak resident memory
    (``peak_rss_mib``, ``peak_rss_before_fit_mib``, ``fit_peak_rss_mib``, the fit being the
    pass: see :mod:`benchmarks.fresh_process`), and passes when a fresh process gives exactly
    the log-likelihoods of the same pass in this process.
"""

from __future__ import annotations

import functools
import json
import os

import numpy as np
import torch

from pyromodels.trees import LatentTree, TreeParams, pyro_log_likelihood, sample_tree, tree_posterior

from .bench_bnp_dp import run_script, write_arrays
from .fresh_process import PEAK_RSS_SOURCE, fresh_record
from .harness import Case, agreement

__all__ = ["cases", "bench_tree", "bench_params", "cold_pass"]

SEED = 20261128
DTYPE = torch.float64
COLD_PHASE_RUNS = 3
#: latent nodes (name: cardinality), in index order
CARDINALITIES = {"root": 3, "a": 2, "b": 4, "c": 3, "a1": 2, "a2": 3, "b1": 4, "b2": 2,
                 "c1": 3, "c2": 2}
EDGES = [("root", "a"), ("root", "b"), ("root", "c"), ("a", "a1"), ("a", "a2"),
         ("b", "b1"), ("b", "b2"), ("c", "c1"), ("c", "c2")]
POUCHES = [("a1", [0, 1]), ("a1", [2]), ("a2", [3, 4, 5]), ("b1", [6, 7]), ("b1", [8]),
           ("b2", [9, 10]), ("c1", [11]), ("c1", [12, 13, 14]), ("c2", [15, 16]),
           ("root", [17]), ("b", [18, 19])]
#: ``python -c COLD_SCRIPT TREE_JSON SEED DEVICE DATA OUT``; prints its phases and peak memory
COLD_SCRIPT = PEAK_RSS_SOURCE + """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.trees import LatentTree, TreeParams, tree_posterior
imported = time.perf_counter()
tree_json, seed, device, data, out = sys.argv[1:]
with np.load(data) as arrays:
    z = torch.from_numpy(arrays["z"]).to(device)
read = time.perf_counter()
tree = LatentTree.from_dict(json.loads(tree_json))
params = TreeParams.random(tree, torch.Generator().manual_seed(int(seed)),
                           dtype=torch.float64).to(device=device)
built = time.perf_counter()
before, reset = peak_rss_mib(), reset_peak_rss()
post = tree_posterior(params, z)
if device.startswith("cuda"):
    torch.cuda.synchronize()
done = time.perf_counter()
memory = memory_figures(before, reset)
np.save(out, post.log_likelihood.cpu().numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "build_s": built - read, "pass_s": done - built,
                  "read_to_posterior_s": done - imported, **memory}))
"""


def bench_tree() -> LatentTree:
    """The benchmark's structure: 10 latent nodes on three levels, 20 coordinates, 11 pouches."""
    return LatentTree.from_edges(CARDINALITIES, EDGES, POUCHES, num_coordinates=20)


def bench_params() -> TreeParams:
    """Random parameters of :func:`bench_tree` from the benchmark's seed, float64, on the CPU."""
    return TreeParams.random(bench_tree(), torch.Generator().manual_seed(SEED), dtype=DTYPE)


@functools.cache
def _points(num_points: int) -> torch.Tensor:
    """``num_points`` draws from :func:`bench_params` (CPU)."""
    z, _ = sample_tree(bench_params(), num_points, torch.Generator().manual_seed(SEED + 1))
    return z


@functools.cache
def _on_device(num_points: int, device: str) -> tuple[TreeParams, torch.Tensor]:
    return bench_params().to(device=device), _points(num_points).to(device)


def _ours(num_points: int, device: str):
    return tree_posterior(*_on_device(num_points, device))


def _pyro(num_points: int):
    return pyro_log_likelihood(bench_params(), _points(num_points))


def _check(num_points: int, device: str):
    def check():
        post = _ours(num_points, device)
        log_p = post.log_likelihood.cpu()
        scale = float(log_p.abs().sum())
        relative = abs(float(log_p.sum()) - float(_pyro(num_points))) / scale
        eps = torch.finfo(DTYPE).eps
        out = {"log_likelihood": agreement(
            [relative], [0.0], 10 * num_points * eps,
            "pyro TraceEnum_ELBO (relative to sum_n |log p(z_n)|)")}
        sums = torch.stack([(m.sum(-1) - 1).abs().max() for m in post.node_marginals])
        out["node_marginals"] = agreement(sums, torch.zeros_like(sums), 1e-10,
                                          "rows summing to one")
        parents = bench_tree().parents
        gaps = torch.stack([(e.sum(-1) - post.node_marginals[parents[j]]).abs().max()
                            for j, e in enumerate(post.edge_marginals) if e is not None])
        out["edge_marginals"] = agreement(gaps, torch.zeros_like(gaps), 1e-10,
                                          "the parent's node marginal (summed over the child)")
        return out

    return check


@functools.cache
def _data_file(num_points: int) -> str:
    return write_arrays("trees", z=_points(num_points).numpy())


def cold_pass(num_points: int, device: str) -> tuple[dict, np.ndarray]:
    """:data:`COLD_SCRIPT` on the points in a fresh process: ``(phases and peak memory,
    log-likelihoods)``."""
    data = _data_file(num_points)
    out = os.path.join(os.path.dirname(data), f"log-likelihood-{device.replace(':', '')}.npy")
    tree_json = json.dumps(bench_tree().to_dict())
    return run_script(COLD_SCRIPT, [tree_json, str(SEED), device, data], out)


def _cold_check(num_points: int, device: str):
    def check():
        warm = _ours(num_points, device).log_likelihood.cpu().numpy()
        runs = [cold_pass(num_points, device) for _ in range(COLD_PHASE_RUNS)]
        return {"cold_posterior": fresh_record(
            runs, warm, "the same pass in this process (1 = a log-likelihood differs)")}

    return check


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The message-passing case warm (and, on full runs, cold) at one size."""
    dev = str(device) if device is not None else "cpu"
    n = 2_000 if quick else 100_000
    tree = bench_tree()
    params = {"N": n, "latent_nodes": tree.num_latents, "J": tree.num_coordinates,
              "pouches": len(tree.pouches), "dtype": str(DTYPE).removeprefix("torch.")}
    repeats = 2 if quick else 10
    out = [Case("trees.message_passing",
                dict(params, pyro_outputs="log_likelihood", start="warm"),
                ours=lambda: _ours(n, dev), peers={"pyro.TraceEnum_ELBO": lambda: _pyro(n)},
                check=_check(n, dev), warmup=1, repeats=repeats)]
    if not quick:
        out.append(Case("trees.message_passing", dict(params, start="cold"),
                        ours=lambda: cold_pass(n, dev), check=_cold_check(n, dev), warmup=1,
                        repeats=3))
    return out

