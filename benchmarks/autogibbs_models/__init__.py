"""The models of the automatic-Gibbs ESS/s benchmark, written once per engine.

* :mod:`.data`: the data of each model (drawn once with a fixed seed, or read from a vendored
  crowd set) and the label-invariant quantities whose effective sample size is measured;
* :mod:`.pyro_programs`: the Pyro programs, run by automatic Gibbs and by Pyro's NUTS (with
  the discrete sites enumerated);
* :mod:`.numpyro_programs`: the NumPyro programs (``DiscreteHMCGibbs`` around NUTS for the
  models with discrete latents, NUTS for the others, NUTS with enumeration when ``funsor`` is
  installed);
* :mod:`.pymc_programs`: the PyMC models (``pm.sample`` with the step methods it assigns);
* :mod:`.runner`: one engine on one model in a fresh process, printing its figures as JSON.

Every engine returns the same raw draws (``{name: array of shape (draws, ...)}``, the names of
:data:`.data.RAW`) so that :func:`.data.quantities` computes the same quantities for all.
"""

MODELS = ("mixture", "dawid_skene", "changepoint", "lda", "eight_schools", "beta_binomial")
ENGINES = ("autogibbs", "pyro_nuts", "numpyro", "numpyro_enum", "pymc")
#: the package each engine imports before its fit's clock starts (its ``import_s``), as every
#: engine's package is: a missing one marks the engine skipped (Pyro comes with the programs)
ENGINE_NEEDS = {"autogibbs": "pyromodels.autogibbs", "pyro_nuts": None, "numpyro": "numpyro",
                "numpyro_enum": "numpyro", "pymc": "pymc"}
#: the models with discrete latent sites
DISCRETE = ("mixture", "dawid_skene", "changepoint", "lda")

__all__ = ["MODELS", "ENGINES", "ENGINE_NEEDS", "DISCRETE"]
