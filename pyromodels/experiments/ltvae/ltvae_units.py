"""The units of ``pyromodels reproduce ltvae`` (:mod:`.ltvae_reproduction`): one fit each,
returning a JSON-able record, so that a run can store every finished unit and resume.

* :func:`clustering_unit`: one method of Table 2 on one data set (AE+GMM, VAE+GMM, LTVAE with
  the fixed one-node structure, LTVAE with structure learning): Hungarian and majority
  accuracy, geometric NMI and the fit's seconds (Table 3 reads the two LTVAE rows').
* :func:`likelihood_unit`: one model of Table 1 (VAE, IWAE, LTVAE) on binarised data, scored
  by the importance-sampled test log-likelihood :math:`\\mathcal{L}_k` of a held-out split.
* :func:`facets_unit`: LTVAE with structure learning and ``z`` of 20 dimensions (Table 4,
  Fig. 5): the soft NMI (App. D) among the ground truth and every facet on the held-out
  split, and the indices of each facet's most probable images per cluster.

The classes only score: every setting is fixed in advance by the scale (nothing is tuned on
them), and with several facets the clustering rows score the root's (a rule fixed before
looking; every facet's NMI is recorded beside it).
"""

from __future__ import annotations

import time

import numpy as np
import torch

__all__ = ["IMAGE_SETS", "CLUSTERING_METHODS", "LIKELIHOOD_MODELS", "load_images", "split",
           "binarise", "SubsampledSearch", "clustering_unit", "likelihood_unit", "facets_unit"]

#: the data sets and the side of their square images
IMAGE_SETS = {"digits": 8, "mnist-5k": 28, "fashion-10k": 28}
#: the rows of Table 2 (and, the two LTVAE ones, of Table 3)
CLUSTERING_METHODS = ("AE+GMM", "VAE+GMM", "LTVAE (fixed structure)",
                      "LTVAE (structure learning)")
#: the rows of Table 1
LIKELIHOOD_MODELS = ("VAE", "IWAE", "LTVAE")


def load_images(name: str, points: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)``: the images of ``name`` in :data:`IMAGE_SETS` as float32 rows in [0, 1]
    (digits divided by 16, MNIST and Fashion-MNIST by 255) and their classes; ``points``
    rows drawn without replacement by ``seed`` (``None``: all, in a shuffled order)."""
    from ...data import load_fashion_mnist, load_mnist_5k, load_sklearn

    if name == "digits":
        x, y = load_sklearn("digits")
        x = x / 16.0
    elif name == "mnist-5k":
        x, y = load_mnist_5k()
        x = x / 255.0
    elif name == "fashion-10k":
        x, y = load_fashion_mnist(kind="t10k")
        x = x.reshape(len(x), -1) / 255.0
    else:
        raise ValueError(f"name must be one of {list(IMAGE_SETS)}, got {name!r}")
    order = np.random.default_rng(seed).permutation(len(x))
    if points is not None:
        order = order[:points]
    return np.asarray(x[order], dtype=np.float32), np.asarray(y[order], dtype=np.int64)


def split(num: int, held_out: float) -> tuple[np.ndarray, np.ndarray]:
    """The training and held-out rows of data already shuffled: the last ``held_out``
    fraction is held out."""
    cut = num - max(1, int(round(num * held_out)))
    return np.arange(cut), np.arange(cut, num)


def binarise(x: np.ndarray, seed: int) -> np.ndarray:
    """One fixed stochastic binarisation of ``x`` in [0, 1]: each pixel is 1 with its
    intensity as probability (drawn once by ``seed``; the paper redraws at every pass)."""
    return (np.random.default_rng(seed).random(x.shape) < x).astype(np.float32)


class SubsampledSearch:
    """The structure search of a fit, run on a fixed random share of the encoder means (the
    release's BIC search uses 20% of the training set): ``search(z, tree, params)``.

    Args:
        fraction: the share of the rows searched on.
        seed: seed of the rows and of the search.
        settings: :func:`~pyromodels.ltvae.structure_search`'s settings.
    """

    def __init__(self, fraction: float, seed: int, settings: dict):
        from ...ltvae import structure_search

        self.fraction, self.seed = fraction, seed
        self.search = structure_search(seed=seed, **settings)

    def __call__(self, z, tree, params):
        n = z.shape[0]
        keep = max(2, int(round(n * self.fraction)))
        rows = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed))[:keep]
        return self.search(z[rows.to(z.device)], tree, params)


def _autoencoder(x: np.ndarray, net: dict, latent_dim: int, seed: int):
    from ...nn import pretrain_autoencoder

    layerwise, finetune = net["pretrain"]
    return pretrain_autoencoder(torch.from_numpy(x), dims=(*net["hidden"], latent_dim),
                                layerwise_epochs=layerwise, finetune_epochs=finetune,
                                batch_size=net["batch_size"], seed=seed, progress=False)


def _ltvae_fit(x: np.ndarray, net: dict, latent_dim: int, cardinality: int, search: dict | None,
               seed: int, autoencoder=None, covariance: str = "fixed"):
    """An LTVAE fit and its seconds; ``search``: ``None`` (fixed structure) or the search
    settings (``fraction``, ``every`` and :func:`~pyromodels.ltvae.structure_search`'s);
    ``covariance``: the LTVAE's (``"fixed"``, the release, or ``"full"``, learned)."""
    from ...ltvae import LTVAE

    model = LTVAE(latent_dim, hidden=net["hidden"], cardinality=cardinality,
                  covariance=covariance)
    searcher, every = None, 1
    if search is not None:
        settings = {k: v for k, v in search.items() if k not in ("fraction", "every")}
        if "operators" in settings:
            settings["operators"] = {k: tuple(v) for k, v in settings["operators"].items()}
        searcher, every = SubsampledSearch(search["fraction"], seed, settings), search["every"]
    start = time.perf_counter()
    post = model.fit(torch.from_numpy(x), num_epochs=net["epochs"], batch_size=net["batch_size"],
                     lr=net["lr"], autoencoder=autoencoder, search=searcher,
                     search_every=every, seed=seed, progress=False)
    return model, post, time.perf_counter() - start


def _scores(y: np.ndarray, labels: np.ndarray) -> dict:
    from ...metrics import clustering_accuracy, majority_accuracy, nmi

    return {"acc_hungarian": clustering_accuracy(y, labels),
            "acc_majority": majority_accuracy(y, labels),
            "nmi": nmi(y, labels, average_method="geometric"),
            "clusters": int(len(np.unique(labels)))}


def clustering_unit(name: str, method: str, settings: dict, seed: int) -> dict:
    """One row of Table 2: ``method`` in :data:`CLUSTERING_METHODS` on the data set ``name``
    with the scale's ``settings`` (``points``, ``pixel_range``, ``latent_dim``, ``net``,
    ``gmm_restarts``, ``search``, ``covariance``), the pixels scaled to ``[0, pixel_range]``; the seconds
    count the fit after pretraining (shared by every method)."""
    from ...ltvae import VAE, ae_gmm, vae_gmm
    from ...metrics import nmi
    from ...trees import LatentTree

    x, y = load_images(name, settings["points"], seed)
    x = x * np.float32(settings["pixel_range"])
    net, latent = settings["net"], settings["latent_dim"]
    classes = int(len(np.unique(y)))
    ae = _autoencoder(x, net, latent, seed)
    record: dict = {"points": int(len(x)), "classes": classes}
    start = time.perf_counter()
    if method == "AE+GMM":
        labels = ae_gmm(ae, torch.from_numpy(x), classes, n_init=settings["gmm_restarts"],
                        seed=seed).labels
    elif method == "VAE+GMM":
        vae = VAE(latent, hidden=net["hidden"])
        post = vae.fit(torch.from_numpy(x), num_epochs=net["epochs"], lr=net["lr"],
                       batch_size=net["batch_size"], autoencoder=ae, seed=seed, progress=False)
        labels = vae_gmm(vae, post, torch.from_numpy(x), classes,
                         n_init=settings["gmm_restarts"], seed=seed).labels
    elif method in CLUSTERING_METHODS:
        search = settings["search"] if method.endswith("learning)") else None
        model, post, _ = _ltvae_fit(x, net, latent, classes, search, seed, ae,
                                    settings["covariance"])
        facets = model.facets(post, torch.from_numpy(x))
        tree = LatentTree.from_dict(post.attrs["tree"])
        labels = facets[tree.names[tree.root]].to_numpy()
        record["facet_nmi"] = {c: nmi(y, facets[c].to_numpy(), average_method="geometric")
                               for c in facets.columns}
        record["structure"] = _structure(tree)
    else:
        raise ValueError(f"method must be one of {list(CLUSTERING_METHODS)}, got {method!r}")
    record["seconds"] = time.perf_counter() - start
    return {**record, **_scores(y, labels)}


def _structure(tree) -> str:
    from .reproduction import structure_text

    return structure_text(tree)


def likelihood_unit(model: str, settings: dict, seed: int) -> dict:
    """One row of Table 1: ``model`` in :data:`LIKELIHOOD_MODELS` fitted to the binarised
    training rows of ``settings["set"]``, scored by :math:`\\mathcal{L}_k` (``settings["k"]``)
    on the held-out rows (the mean over rows and its standard error)."""
    from ...ltvae import VAE

    x, _ = load_images(settings["set"], settings["points"], seed)
    x = binarise(x, seed)
    train, test = split(len(x), settings["held_out"])
    net, latent = settings["net"], settings["latent_dim"]
    xt = torch.from_numpy(x[train])
    start = time.perf_counter()
    if model in ("VAE", "IWAE"):
        vae = VAE(latent, hidden=net["hidden"])
        iwae = model == "IWAE"
        post = vae.fit(xt, objective="iwae" if iwae else "elbo",
                       num_particles=settings["iwae_particles"] if iwae else 1,
                       num_epochs=net["epochs"], lr=net["lr"], batch_size=net["batch_size"],
                       seed=seed, progress=False)
        fitted = vae
    elif model == "LTVAE":
        fitted, post, _ = _ltvae_fit(x[train], net, latent, settings["cardinality"],
                                     settings["search"], seed, covariance=settings["covariance"])
    else:
        raise ValueError(f"model must be one of {list(LIKELIHOOD_MODELS)}, got {model!r}")
    seconds = time.perf_counter() - start
    estimate = fitted.importance_log_likelihood(post, torch.from_numpy(x[test]), k=settings["k"],
                                                batch_size=min(settings["k"], 500), seed=seed)
    return {"train": int(len(train)), "test": int(len(test)), "k": int(settings["k"]),
            "log_likelihood": float(estimate.mean),
            "standard_error": float(estimate.standard_error), "seconds": seconds}


def facets_unit(settings: dict, seed: int) -> dict:
    """Table 4 and Fig. 5: LTVAE with structure learning (``z`` of ``settings["latent_dim"]``
    dimensions) on the training rows of ``settings["set"]`` (pixels in ``[0,
    settings["pixel_range"]]``); on the held-out rows the soft
    NMI matrix among the classes and every facet, and per facet and cluster the data-set
    rows (in :func:`load_images`' order) of its ``settings["top"]`` most probable images."""
    from ...metrics import soft_nmi

    x, y = load_images(settings["set"], settings["points"], seed)
    x = x * np.float32(settings["pixel_range"])
    train, test = split(len(x), settings["held_out"])
    net, latent = settings["net"], settings["latent_dim"]
    ae = _autoencoder(x[train], net, latent, seed)
    model, post, seconds = _ltvae_fit(x[train], net, latent, settings["cardinality"],
                                      settings["search"], seed, ae, settings["covariance"])
    probs = model.facet_probabilities(post, torch.from_numpy(x[test]))
    truth = np.eye(int(y.max()) + 1)[y[test]]
    named = {"Groundtruth": truth, **{k: v.cpu() for k, v in probs.items()}}
    names = list(named)
    matrix = [[soft_nmi(named[a], named[b]) for b in names] for a in names]
    top = {}
    for facet, p in probs.items():
        p = p.cpu().numpy()
        hard = p.argmax(1)
        top[facet] = {str(k): [int(test[i]) for i in np.argsort(-p[:, k])[:settings["top"]]]
                      for k in range(p.shape[1]) if (hard == k).any()}
    from ...trees import LatentTree

    return {"names": names, "nmi": matrix, "top": top, "seconds": seconds,
            "structure": _structure(LatentTree.from_dict(post.attrs["tree"])),
            "train": int(len(train)), "test": int(len(test))}
