"""The names users import stay at the top-level places the README and guides give."""

import importlib

import pytest

PUBLIC = {
    "pyromodels": ["Model", "Posterior", "GibbsBlock", "GibbsSweep", "run_em", "run_gibbs", "run_nuts",
                   "run_svi", "sample_discrete"],
    "pyromodels.crowd": ["DawidSkene", "DawidSkeneEstimator", "MajorityVote", "SequentialDawidSkene",
                         "NetworkedDawidSkene", "NetworkedData", "fit_moments", "fit_sequential_moments",
                         "majority_vote", "sample_moments"],
    "pyromodels.crowd.hmm": ["SequentialDawidSkene", "forward_backward", "viterbi", "brute_force"],
    "pyromodels.crowd.mrf": ["NetworkedDawidSkene", "icm", "networked_em", "sample_labels"],
    "pyromodels.mixture": ["BayesianGaussianMixture", "GaussianMixtureModel"],
    "pyromodels.scdc": ["PairwiseDawidSkene", "PairwiseDawidSkeneEstimator"],
    "pyromodels.ltvae": ["LTVAE", "TreePrior", "VAE", "IWAEBound", "importance_log_likelihood",
                         "ae_gmm", "vae_gmm"],
    "pyromodels.data": ["AnnotationTable", "Sequences", "Graph", "load_crowd", "load_planetoid",
                        "simulate_annotations", "simulate_gaussian_mixture"],
    "pyromodels.diagnostics": ["to_inference_data", "relabel", "summary"],
    "pyromodels.metrics": ["ari", "nmi", "clustering_accuracy", "macro_f1"],
    "pyromodels.bnp": ["crp_log_prob", "sample_crp", "canonical_labels", "set_partitions",
                       "new_cluster_log_predictive", "collapsed_log_joint", "log_joint",
                       "exact_partition_posterior", "init_state", "sweep", "run_chain", "DPState"],
    "pyromodels.trees": ["LatentTree", "TreeParams", "TreePosterior", "tree_log_likelihood",
                         "tree_posterior", "tree_map", "sample_tree", "tree_model",
                         "pyro_log_likelihood", "brute_force"],
    "pyromodels.nn": ["NICE", "AdditiveCoupling", "StackedAutoencoder", "pretrain_autoencoder",
                      "WeightCache"],
    "pyromodels.ddpm": ["DPMixture", "DPMixturePrior", "dp_mixture_crp", "state_values",
                        "complete_log_joint", "kmeans", "gmeans", "paper_scores",
                        "simulate_warped_clusters", "PAPER_PRESETS", "DPGaussianMixture",
                        "TruncatedDPGaussianMixture"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_import_from_their_documented_place(module):
    mod = importlib.import_module(module)
    missing = [name for name in PUBLIC[module] if not hasattr(mod, name)]
    assert not missing, f"{module} lacks {missing}"
    exported = set(getattr(mod, "__all__", PUBLIC[module]))
    assert set(PUBLIC[module]) <= exported, f"{module}.__all__ lacks {set(PUBLIC[module]) - exported}"
