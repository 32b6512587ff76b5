"""The declarations of the built-in models: what ``pyromodels list`` and ``fit --help`` show.

Each :class:`~pyromodels.registry.ModelInfo` here is plain data (this module imports no model
family, nor torch): the command line answers ``list``, ``fit MODEL --help`` and usage errors
from it alone. The module each one names registers the model's callables with
``register(INFO.entry(factory=..., ...))``, so that what the command line says and what it
runs come from this one declaration.
"""

from __future__ import annotations

from ..registry import Argument, ModelInfo

__all__ = [
    "ANSWERS_FORMAT",
    "NUMBERS_FORMAT",
    "DAWID_SKENE",
    "SEQUENTIAL_DAWID_SKENE",
    "NETWORKED_DAWID_SKENE",
    "CROWD",
    "GAUSSIAN_MIXTURE",
    "DDPM",
    "TRUNCATED_DP_MIXTURE",
    "BHMC",
    "PAIRS_FORMAT",
    "SCDC",
    "OBSERVED_BAYES_SCDC",
    "BAYES_SCDC",
    "LINKS_FORMAT",
    "PAIRWISE_DAWID_SKENE",
    "LATENT_TREE",
    "LTVAE_INFO",
    "MODELS",
]

ANSWERS_FORMAT = ("a CSV with one row per judgement and columns task (or item), worker, label "
                  "(other names: --task-col, --worker-col, --label-col), or --dataset NAME (a "
                  "bundled crowd set or a folder NAME/answers.csv under $PYROMODELS_DATA)")
SEQUENTIAL_FORMAT = ("a CSV with one row per judgement and columns task (or item), worker, "
                     "label, sequence, position (the task's sequence and its place in it; other "
                     "names: --task-col, --worker-col, --label-col, --sequence-col, "
                     "--position-col)")
NETWORKED_FORMAT = (ANSWERS_FORMAT + ", and --edges FILE: a CSV whose first two columns hold "
                    "the task ids of each edge of the graph between tasks")
#: the numeric tables of the clustering models
NUMBERS_FORMAT = "a CSV of numbers, one row per point, with or without a header line"

_CROWD_OPTIONS = ("dataset", "task_col", "worker_col", "label_col", "gold")


def _concentration(what: str) -> Argument:
    return Argument(f"{what}_concentration", "positive",
                    f"Dirichlet concentration > 0 of the {what.replace('_', ' ')} (default 1)")


_DS_ARGUMENTS = (
    Argument("prior_concentration", "positive",
             "Dirichlet concentration > 0 of the class prior (default 1)"),
    Argument("confusion_concentration", "positive",
             "Dirichlet concentration > 0 of every confusion row (default 1)"),
    Argument("diagonal", "nonnegative",
             "extra pseudo-count >= 0 on each confusion row's true class, a belief that "
             "workers beat chance (default: the model's)"),
)
#: the DP mixture's prior; the defaults are the synthetic warped set's prior
_DP_ARGUMENTS = (
    Argument("mu0", "real", "prior mean of the cluster means, in every dimension (default 0)"),
    Argument("kappa0", "positive", "pseudo-count > 0 of the cluster means (default 0.04)"),
    Argument("alpha0", "positive", "Gamma shape > 0 of the cluster precisions (default 100)"),
    Argument("beta0", "positive", "Gamma rate > 0 of the cluster precisions (default 100)"),
    Argument("alpha", "positive", "concentration > 0 of the Dirichlet process (default 1)"),
)

DAWID_SKENE = ModelInfo(
    name="dawid-skene",
    title="Dawid-Skene: true labels of independent tasks from crowd labels",
    paper="Dawid & Skene (1979), Bayesian with Dirichlet priors",
    engines=("em", "gibbs", "svi", "nuts"),
    default_method="em",
    module="pyromodels.experiments.crowd.fit_entries",
    data_format=ANSWERS_FORMAT + "; default: the bundled bluebirds set",
    options=_CROWD_OPTIONS,
    arguments=_DS_ARGUMENTS,
)

SEQUENTIAL_DAWID_SKENE = ModelInfo(
    name="sequential-dawid-skene",
    title="Sequential Dawid-Skene: tasks in sequences, true labels a Markov chain",
    paper="Traganitis & Giannakis (IEEE TKDE), HMM ensemble",
    engines=("em", "gibbs"),
    default_method="em",
    module="pyromodels.experiments.crowd.fit_entries",
    data_format=SEQUENTIAL_FORMAT,
    options=("task_col", "worker_col", "label_col", "sequence_col", "position_col", "gold"),
    arguments=(_concentration("initial"), _concentration("transition"),
               _concentration("confusion"), _DS_ARGUMENTS[2]),
)

NETWORKED_DAWID_SKENE = ModelInfo(
    name="networked-dawid-skene",
    title="Networked Dawid-Skene: tasks on a graph, true labels a Potts field",
    paper="Traganitis & Giannakis (IEEE TKDE), MRF ensemble",
    engines=("em", "gibbs"),
    default_method="em",
    module="pyromodels.experiments.crowd.fit_entries",
    data_format=NETWORKED_FORMAT,
    options=_CROWD_OPTIONS + ("edges",),
    arguments=(_concentration("confusion"),),
)

CROWD = ModelInfo(
    name="crowd",
    title="Crowd ensembles: Dawid-Skene, HMM and MRF extensions",
    paper="Traganitis & Giannakis, Unsupervised Ensemble Classification with Sequential "
          "and Networked Data (IEEE TKDE)",
    engines=("em", "gibbs", "svi", "nuts"),
    default_method="em",
    module="pyromodels.experiments.crowd.reproduction",
    data_format=("as dawid-skene (this entry fits plain Dawid-Skene; the sequential and "
                 "networked models are the entries sequential-dawid-skene and "
                 "networked-dawid-skene): " + ANSWERS_FORMAT),
    options=_CROWD_OPTIONS,
    arguments=_DS_ARGUMENTS,
)

GAUSSIAN_MIXTURE = ModelInfo(
    name="gaussian-mixture",
    title="Finite Bayesian Gaussian mixture (reference model)",
    paper="reference model of the inference core",
    engines=("em", "gibbs", "svi", "nuts"),
    default_method="em",
    module="pyromodels.experiments.reference_mixture.reproduction",
    scales=("small", "medium"),
    data_format=(NUMBERS_FORMAT + " and one column per dimension (no saved index column); "
                 "default: the wine data projected on two principal components"),
    arguments=(
        Argument("num_components", "components", "number of mixture components (default 3)",
                 metavar="K"),
        Argument("weight_concentration", "positive",
                 "Dirichlet concentration > 0 of the weights (default 1; EM needs >= 1)"),
        Argument("mean_precision", "positive",
                 "kappa > 0, the pseudo-count of the component means (default 1)"),
        Argument("degrees_of_freedom", "positive",
                 "Wishart degrees of freedom nu > d - 1 (default d + 2; EM needs nu > d)"),
    ),
)

DDPM = ModelInfo(
    name="ddpm",
    title="Deep Dirichlet process mixture (DP mixture on NICE-flow features)",
    paper="Deep Dirichlet Process Mixture Models (UAI 2022)",
    engines=("mcem",),
    module="pyromodels.experiments.ddpm.reproduction",
    data_format=(NUMBERS_FORMAT + " and at least two columns (the flow couples coordinates); "
                 "default: the demo's synthetic warped clusters"),
    arguments=_DP_ARGUMENTS,
)

TRUNCATED_DP_MIXTURE = ModelInfo(
    name="truncated-dp-mixture",
    title="Truncated stick-breaking DP mixture of isotropic Gaussians",
    paper="Deep Dirichlet Process Mixture Models (UAI 2022), truncated baseline",
    engines=("gibbs", "svi"),
    default_method="gibbs",
    module="pyromodels.experiments.ddpm.fit_entries",
    data_format=NUMBERS_FORMAT + "; default: the demo's synthetic warped clusters",
    arguments=(Argument("truncation", "count", "number of stick-breaking components "
                        "(default 20)", metavar="T"),
               *_DP_ARGUMENTS),
)

BHMC = ModelInfo(
    name="bhmc",
    title="Bayesian hierarchical mixture clustering (BHMC / max-margin RBHMC)",
    paper="Posterior Regularisation on Bayesian Hierarchical Mixture Clustering",
    engines=("gibbs",),
    module="pyromodels.experiments.bhmc.reproduction",
    data_format=NUMBERS_FORMAT + "; default: the 33 animals' 7 principal components",
    options=("regularisation", "margin"),
    arguments=(
        Argument("alpha", "positive", "nested-CRP concentration > 0 (default 0.4, the "
                 "paper's animals value)"),
        Argument("gamma", "positive", "child concentration > 0 of the HDP weight diffusion "
                 "(default 1)"),
        Argument("gamma0", "positive", "root stick-breaking concentration > 0 (default 0.85)"),
        Argument("depth", "count", "the level L >= 1 of the leaves (default 3)", metavar="L"),
        Argument("num_components", "components", "truncation K >= 2 of the root's stick "
                 "breaking (default 20)", metavar="K"),
        Argument("nu0", "positive", "prior scale > 0 of RBHMC's max-margin discriminants "
                 "(default 1)"),
        Argument("loc", "real", "the data's centre, the same in every column (default: the "
                 "column means)"),
        Argument("scale", "positive", "the data's unit of spread > 0 (default: the root mean "
                 "column variance over sqrt 2)"),
    ),
)

#: the data of the semi-crowdsourced clustering models
PAIRS_FORMAT = (NUMBERS_FORMAT + " (the features), and optionally --pairs FILE: a CSV of "
                "pairwise links with columns item_a, item_b (row numbers 0..N-1 of the data), "
                "worker, link (1 = same cluster, 0 = different); default: the paper's pinwheel "
                "(500 points) with 20 simulated workers' 980 links at alpha = beta = 0.9")


def _clusters(dest: str) -> Argument:
    """The number of clusters of a semi-crowdsourced clustering model, under its name."""
    return Argument(dest, "components", "number of clusters K >= 2 (default 15, the paper's "
                    "pinwheel K)", metavar="K")


#: SCDC's constructor arguments offered as options; ``hidden`` (and ``decoder_hidden``, the
#: same by default) as ``hidden_width`` and ``hidden_layers``; left out: ``likelihood`` (read
#: from the data: Bernoulli for 0/1 features, else Normal), ``covariance`` and ``activation``
#: (choices among names, which the numeric argument kinds do not carry; the Python API takes
#: them)
SCDC = ModelInfo(
    name="scdc",
    title="SCDC: semi-crowdsourced deep clustering from features and noisy pairwise links",
    paper="Luo, Li, Zhu et al., Semi-crowdsourced Clustering with Deep Generative Models "
          "(NeurIPS 2018)",
    engines=("svi",),
    module="pyromodels.experiments.scdc.reproduction",
    data_format=PAIRS_FORMAT,
    options=("pairs", "epochs", "batch_size", "coin_init", "kl_warmup_epochs"),
    engine_options=("lr", "device"),
    arguments=(
        _clusters("n_clusters"),
        Argument("latent_dim", "count", "dimension d >= 1 of the latent features x (default "
                 "2, the paper's pinwheel d)", metavar="D"),
        Argument("hidden_width", "count", "units of each hidden layer of the encoders and the "
                 "decoder (default 40, the paper's small-data networks)"),
        Argument("hidden_layers", "count", "hidden layers of each network (default 2)"),
    ),
)

#: the observed-feature sub-model's constructor arguments offered as options; left out:
#: ``mean_prior`` and ``covariance_scale`` (a vector and a matrix, resolved from the data by
#: default), ``alpha_prior`` and ``beta_prior`` (pairs of Beta concentrations), ``backend``
#: (a choice among names)
OBSERVED_BAYES_SCDC = ModelInfo(
    name="observed-bayes-scdc",
    title="BayesSCDC's conjugate sub-model with the features observed: Bayesian Gaussian "
          "mixture plus two-coin pairwise workers (reference Gibbs sampler)",
    paper="Luo, Li, Zhu et al., Semi-crowdsourced Clustering with Deep Generative Models "
          "(NeurIPS 2018), Section 3.1 with x observed",
    engines=("gibbs",),
    module="pyromodels.experiments.scdc.fit_entries",
    data_format=PAIRS_FORMAT + " (with --data, --pairs is required)",
    options=("pairs",),
    arguments=(
        _clusters("num_clusters"),
        Argument("weight_concentration", "positive",
                 "Dirichlet concentration > 0 of the weights (default 0.05 / K, the paper's "
                 "sparse prior)"),
        Argument("mean_precision", "positive",
                 "kappa > 0, the pseudo-count of the cluster means (default 0.5)"),
        Argument("degrees_of_freedom", "positive",
                 "Wishart degrees of freedom nu > d - 1 (default d + kappa)"),
    ),
)

#: BayesSCDC's constructor arguments offered as options; ``hidden`` (and ``decoder_hidden``,
#: the same by default) as ``hidden_width`` and ``hidden_layers``; left out: ``likelihood``
#: (read from the data), ``activation`` (a choice among names), ``alpha_prior`` and
#: ``beta_prior`` (pairs of Beta concentrations)
BAYES_SCDC = ModelInfo(
    name="bayes-scdc",
    title="BayesSCDC: semi-crowdsourced clustering with conjugate globals, natural-gradient "
          "SVI and message passing",
    paper="Luo, Li, Zhu et al., Semi-crowdsourced Clustering with Deep Generative Models "
          "(NeurIPS 2018), Section 3",
    engines=("natgrad",),
    module="pyromodels.experiments.scdc.bayes_entry",
    data_format=(PAIRS_FORMAT + "; features that are not all 0/1 are standardised (one "
                 "centre per column, one overall scale) before the fit, and the globals are "
                 "held for the first two thirds of the epochs (the settings under which the "
                 "pinwheel separates)"),
    options=("pairs", "epochs", "batch_size"),
    engine_options=("lr", "device"),
    arguments=(
        _clusters("n_clusters"),
        Argument("latent_dim", "count", "dimension d >= 1 of the latent features x (default "
                 "2, the paper's pinwheel d)", metavar="D"),
        Argument("hidden_width", "count", "units of each hidden layer of the recognition "
                 "network and the decoder (default 40, the paper's small-data networks)"),
        Argument("hidden_layers", "count", "hidden layers of each network (default 2)"),
        Argument("weight_concentration", "positive",
                 "Dirichlet concentration > 0 of the weights (default 0.05 / K, the paper's "
                 "sparse prior)"),
        Argument("mean_precision", "positive",
                 "kappa > 0 of the Normal-inverse-Wishart prior (default 0.5)"),
        Argument("degrees_of_freedom", "positive",
                 "Wishart degrees of freedom nu > d - 1 (default d + kappa)"),
        Argument("covariance_scale", "positive",
                 "S = this number times the identity (default d + kappa)"),
    ),
)

#: the data of the pairwise-only worker model
LINKS_FORMAT = ("--pairs FILE: a CSV of pairwise links with columns item_a, item_b (any item "
                "ids), worker, link (1 = same cluster, 0 = different); no --data: the model "
                "clusters the items from the links alone and reads no features")

#: the pairwise worker model's constructor arguments offered as options; left out:
#: ``alpha_prior`` and ``beta_prior`` (pairs of Beta concentrations)
PAIRWISE_DAWID_SKENE = ModelInfo(
    name="pairwise-dawid-skene",
    title="Pairwise Dawid-Skene: items clustered from two-coin workers' pairwise links alone",
    paper="Luo, Li, Zhu et al., Semi-crowdsourced Clustering with Deep Generative Models "
          "(NeurIPS 2018), the worker model without the features",
    engines=("em",),
    module="pyromodels.experiments.scdc.pairwise_entry",
    data_format=LINKS_FORMAT,
    options=("pairs",),
    reads_data=False,
    arguments=(
        Argument("num_clusters", "components", "number of clusters K >= 2 (default 5)",
                 metavar="K"),
        Argument("pi_concentration", "positive",
                 "Dirichlet concentration > 0 of the cluster weights (default 1, flat)"),
    ),
)

#: a learned variance floor of the leaves, in the units of their coordinates
_FLOOR = Argument("floor", "nonnegative", "least variance of a leaf Gaussian, >= 0 (default "
                  "0.01; 0: no floor)")

#: the fixed one-node latent tree fitted by EM; left out: ``covariance`` and ``alpha`` (each
#: column is its own leaf with a learned variance; the Python API,
#: :class:`~pyromodels.trees.LatentTreeModel`, takes them and any tree)
LATENT_TREE = ModelInfo(
    name="latent-tree",
    title="Latent tree model with Gaussian leaves: one latent node over every standardised "
          "column (a diagonal Gaussian mixture), fitted by EM",
    paper="Li, Chen, Poon, Zhang, Learning Latent Superstructures in Variational Autoencoders "
          "for Deep Multidimensional Clustering (ICLR 2019), the latent tree prior",
    engines=("em",),
    module="pyromodels.experiments.ltvae.tree_entry",
    data_format=(NUMBERS_FORMAT + ", no constant column; each column is standardised before "
                 "the fit; default: the iris measurements (150 flowers, 4 columns)"),
    engine_options=("max_iter", "n_init", "device"),
    arguments=(
        Argument("cardinality", "components", "number of states K >= 2 of the latent node "
                 "(default 3)", metavar="K"),
        _FLOOR,
    ),
)

#: LTVAE's constructor arguments offered as options; ``hidden`` as ``hidden_width`` and
#: ``hidden_layers``; left out: ``likelihood`` (read from the data: Bernoulli for 0/1
#: features, else Normal), ``tree`` (a structure), ``covariance`` and ``activation`` (choices
#: among names; the Python API takes them)
LTVAE_INFO = ModelInfo(
    name="ltvae",
    title="LTVAE: a VAE whose prior on the latent features is a latent tree, one clustering "
          "(facet) per latent node",
    paper="Li, Chen, Poon, Zhang, Learning Latent Superstructures in Variational Autoencoders "
          "for Deep Multidimensional Clustering (ICLR 2019)",
    engines=("svi",),
    module="pyromodels.experiments.ltvae.ltvae_entry",
    scales=("smoke", "small", "medium", "paper"),
    data_format=(NUMBERS_FORMAT + ", no constant column (all 0/1: a Bernoulli decoder, else "
                 "Normal); default: 500 points of the two-facet simulation (100 columns, seed "
                 "0)"),
    options=("epochs", "batch_size", "search", "search_every"),
    engine_options=("lr", "device"),
    arguments=(
        Argument("cardinality", "components", "number of states K >= 2 of the tree's latent "
                 "node (default 4)", metavar="K"),
        Argument("latent_dim", "count", "dimension d >= 1 of the latent features z (default "
                 "4; the paper: 10)", metavar="D"),
        Argument("hidden_width", "count", "units of each hidden layer of the encoder and the "
                 "decoder (default 64)"),
        Argument("hidden_layers", "count", "hidden layers of each network (default 2)"),
        Argument("alpha", "positive", "scale > 0 of the tree's leaf covariances, held at alpha "
                 "times the identity while the networks train (default 1)"),
        _FLOOR,
    ),
)

#: every built-in model, in the order of this module
MODELS = (DAWID_SKENE, SEQUENTIAL_DAWID_SKENE, NETWORKED_DAWID_SKENE, CROWD, GAUSSIAN_MIXTURE,
          DDPM, TRUNCATED_DP_MIXTURE, BHMC, SCDC, OBSERVED_BAYES_SCDC, BAYES_SCDC,
          PAIRWISE_DAWID_SKENE, LATENT_TREE, LTVAE_INFO)
