"""What the RBHMC paper states about its experiments: settings, run lengths, claims, labels.

*Posterior Regularisation on Bayesian Hierarchical Mixture Clustering* (Huang, Ng,
Laitonjam and Hurley) reports **no numbers**: its results are figures (Figs. 3-10) whose
content is lost in the text, so a reproduction can only compare with the settings and the
qualitative claims recorded here. Appendix B's Table 1, the manual classes of the 33 animals,
is the only table (:data:`ANIMAL_CLASSES`).

* :data:`HYPERPARAMETERS`: the model's fixed hyperparameters per data set (Sec. 5.1, 5.2).
* :data:`C_VALUES_MENTIONED`, :data:`EPS0_VALUES_MENTIONED`: the regularisation constants the
  text names (the grids of Figs. 4 and 8 are in the lost axes).
* :data:`FIGURES`: per figure, the data set, the protocol, the run lengths and the claims.

Example:
    >>> HYPERPARAMETERS["animals"].alpha, HYPERPARAMETERS["fashion_mnist"].depth
    (0.4, 4)
    >>> FIGURES["fig6"].settings, FIGURES["fig6"].burn_in, FIGURES["fig6"].draws
    (((0.1, 1.0),), 5000, 10000)
    >>> len(ANIMAL_CLASSES), ANIMAL_CLASSES[0], ANIMAL_CLASS_NAMES[6]
    (33, ('Elephant', 'land mammals'), 'mouse')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "PAPER",
    "Hyperparameters",
    "HYPERPARAMETERS",
    "C_VALUES_MENTIONED",
    "EPS0_VALUES_MENTIONED",
    "FigureProtocol",
    "FIGURES",
    "ANIMAL_CLASSES",
    "ANIMAL_CLASS_NAMES",
    "NO_NUMBERS",
]

PAPER = ("Huang, Ng, Laitonjam and Hurley, Posterior Regularisation on Bayesian Hierarchical "
         "Mixture Clustering (RBHMC)")

NO_NUMBERS = ("The paper prints no numeric results: Figs. 3-10 are lost from the text and "
              "Table 1 lists labels only. Reproductions are judged against the settings and "
              "the qualitative claims of FIGURES.")


@dataclass(frozen=True)
class Hyperparameters:
    """The fixed hyperparameters of one data set (no hyperpriors are used).

    Attributes:
        alpha: nested CRP concentration.
        gamma: HDP concentration of a child's weights around its parent's.
        gamma0: GEM concentration of the root's weights.
        depth: ``L``, the level of the leaves.
        nu0: prior scale of the max-margin vectors, ``eta_z ~ N(0, nu0^2 I)``.
        likelihood_scale: ``x_n | theta ~ N(theta, s^2 I)`` with ``s = 1`` ("G = N(., I)").
        base_scale: ``theta_k ~ N(0, s^2 I)`` with ``s = 1`` ("H = N(0, I)").
        pca_dim: ``D``, the PCA dimension the data are reduced to.
        num_points: ``N``.
    """

    alpha: float
    gamma: float
    gamma0: float
    depth: int
    nu0: float
    likelihood_scale: float
    base_scale: float
    pca_dim: int
    num_points: int


#: Sec. 5.1 (Animals, "roughly" the settings of the BHMC paper) and Sec. 5.2 (MNIST-fashion,
#: "part of the hyperparameters"); D and N from Secs. 5.1-5.2 and Table 1.
HYPERPARAMETERS = {
    "animals": Hyperparameters(alpha=0.4, gamma=1.0, gamma0=0.85, depth=3, nu0=1.0,
                               likelihood_scale=1.0, base_scale=1.0, pca_dim=7, num_points=33),
    "fashion_mnist": Hyperparameters(alpha=0.2, gamma=1.5, gamma0=0.85, depth=4, nu0=1.0,
                                     likelihood_scale=1.0, base_scale=1.0, pca_dim=10,
                                     num_points=100),
}

#: regularisation constants C named in the text (Figs. 3, 5, 6, 7, 9)
C_VALUES_MENTIONED = (0.001, 0.01, 0.1, 1.0)
#: margins eps_0 named in the text (every named setting uses 1)
EPS0_VALUES_MENTIONED = (1.0,)


@dataclass(frozen=True)
class FigureProtocol:
    """One figure: its data set, protocol and run lengths as stated, and its claims.

    Attributes:
        figure: ``"Fig. 3"`` ...
        dataset: ``"animals"`` or ``"fashion_mnist"``.
        protocol: ``"convergence"``, ``"sensitivity"``, ``"case_study"`` or ``"f_measure"``.
        settings: the ``(C, eps_0)`` pairs shown for RBHMC (``()`` where the text names none,
            or a grid whose values are lost); BHMC is the baseline of every figure but Fig. 3
            and Fig. 7.
        chains: chains per method (``None`` where not stated).
        repeats: independent runs per ``(C, eps_0)`` (sensitivity), else ``None``.
        burn_in: burn-in iterations (``None`` where not stated or not used).
        draws: iterations kept after burn-in, or the total iterations when ``burn_in`` is
            ``None`` (``None`` where not stated).
        selection: which tree is scored.
        claims: the paper's qualitative statements about the figure, as close to its words as
            a sentence allows.
    """

    figure: str
    dataset: str
    protocol: str
    settings: tuple[tuple[float, float], ...]
    chains: int | None
    repeats: int | None
    burn_in: int | None
    draws: int | None
    selection: str
    claims: tuple[str, ...]


FIGURES = {
    "fig3": FigureProtocol(
        "Fig. 3", "animals", "convergence", ((0.01, 1.0), (1.0, 1.0)), None, None, None, 15000,
        "CDL and PCDL trace of every iteration",
        ("Both CDL and PCDL increase to a certain level, then oscillate.",
         "C sets the range of change of the PCDL: at C = 0.01 PCDL and CDL are quite similar; "
         "at C = 1 the PCDL fluctuates far more strongly.",
         "Even where the CDL looks smooth, the PCDL may still fluctuate strongly.")),
    "fig4": FigureProtocol(
        "Fig. 4", "animals", "sensitivity", (), None, 50, None, 15000,
        "the tree of the last iteration",
        ("AID and AOD do not depend linearly (or monotonically) on C and eps_0.",
         "Some settings beat BHMC on both AID and AOD, e.g. C = 1, eps_0 = 1.",
         "Improvements hold across a rather large numeric range of the hyperparameters.",
         "Roughly, smaller C and eps_0 lead to stronger regularisation.",
         "C is more influential than eps_0, but eps_0 still matters.")),
    "fig5": FigureProtocol(
        "Fig. 5", "animals", "case_study", ((1.0, 1.0), (0.01, 1.0)), 5, None, 5000, 10000,
        "the highest-PCDL tree after burn-in (BHMC: highest CDL); the first two chains shown",
        ("BHMC performs pretty well but has flaws (its sample 1).",
         "The RBHMC trees look better.")),
    "fig6": FigureProtocol(
        "Fig. 6", "animals", "f_measure", ((0.1, 1.0),), 10, None, 5000, 10000,
        "the highest-PCDL tree after burn-in (BHMC: highest CDL), F-measure at each level "
        "against the 8 manual classes",
        ("At the first level RBHMC is sometimes worse than BHMC, but its score distribution is "
         "skewed towards better scores.",
         "At deeper levels RBHMC performs even better, although parity was expected.")),
    "fig7": FigureProtocol(
        "Fig. 7", "fashion_mnist", "convergence", ((0.01, 1.0), (1.0, 1.0)), 5, None, 5000,
        15000, "CDL and RCDL trace of every iteration",
        ("Convergence of both CDL and RCDL is steadier than on Animals.",
         "At C = 1 the RCDL varies more than at C = 0.01.",
         "All settings converge very nicely (attributed to N = 100).")),
    "fig8": FigureProtocol(
        "Fig. 8", "fashion_mnist", "sensitivity", (), None, 50, None, 20000,
        "the tree of the last iteration; runs whose tree is a single path are removed",
        ("Improving hyperparameters lie at smaller values than on Animals.",
         "The improvement changes smoothly over the range of values.",
         "Within a certain range the improvements are notable.",
         "C affects the improvement more sensitively than eps_0.")),
    "fig9": FigureProtocol(
        "Fig. 9", "fashion_mnist", "case_study", ((1.0, 1.0), (0.001, 1.0)), 4, None, None, None,
        "not stated (presumably as Fig. 5)",
        ("C = 1, eps_0 = 1 gives a poor, skewed hierarchy, blamed on the nCRP's rich-get-richer "
         "property (near-uniform allocations were expected).",
         "The BHMC tree is reasonable, but its third cluster from the left is less well "
         "clustered.",
         "RBHMC trees at C = 0.001 look better clustered.")),
    "fig10": FigureProtocol(
        "Fig. 10", "fashion_mnist", "f_measure", (), 10, None, 5000, 10000,
        "as Fig. 6, against the 10 Fashion-MNIST categories; the RBHMC (C, eps_0) is not stated",
        ("At the higher level RBHMC has the potential to perform much better; its scores are "
         "skewed towards better values.",
         "At the lower level RBHMC outperforms BHMC even more.")),
}

#: Appendix B, Table 1 ("Manual labels for Animals"), row by row as printed
ANIMAL_CLASSES = (
    ("Elephant", "land mammals"), ("Rhino", "land mammals"), ("Horse", "land mammals"),
    ("Cow", "land mammals"), ("Camel", "land mammals"), ("Giraffe", "land mammals"),
    ("Gorilla", "land mammals"), ("Chimp", "land mammals"), ("Mouse", "mouse"),
    ("Squirrel", "mouse"), ("Tiger", "predators"), ("Cat", "predators"), ("Dog", "predators"),
    ("Wolf", "predators"), ("Lion", "predators"), ("Seal", "water animals"),
    ("Dolphin", "water animals"), ("Robin", "birds"), ("Eagle", "birds"), ("Chicken", "birds"),
    ("Salmon", "fish"), ("Trout", "fish"), ("Bee", "insects"), ("Iguana", "amphibians"),
    ("Alligator", "amphibians"), ("Butterfly", "insects"), ("Ant", "insects"),
    ("Finch", "birds"), ("Penguin", "water animals"), ("Cockroach", "insects"),
    ("Whale", "water animals"), ("Ostrich", "birds"), ("Deer", "land mammals"),
)

#: the 8 classes in the order Sec. 5.1 lists them (the text's "mouses" is Table 1's "mouse");
#: class code ``i`` is ``ANIMAL_CLASS_NAMES[i]``
ANIMAL_CLASS_NAMES = ("birds", "land mammals", "predators", "insects", "amphibians",
                      "water animals", "mouse", "fish")
