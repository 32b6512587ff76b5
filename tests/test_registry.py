"""The model registry: registration, look-up, validation of entries, built-in index."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from dataclasses import replace

import pytest

from pyromodels import registry
from pyromodels.registry import ModelEntry, UnknownModelError


def _entry(name: str, **overrides) -> ModelEntry:
    fields = dict(name=name, title="A test model", paper="reference", engines=("em",), factory=dict)
    fields.update(overrides)
    return ModelEntry(**fields)


@pytest.fixture
def empty_registry(monkeypatch):
    """A registry holding nothing, restored after the test."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_DECLARED", {})


def test_register_get_unregister_round_trip(empty_registry):
    entry = registry.register(_entry("beta-model"))
    registry.register(_entry("alpha-model"))
    assert registry.get("beta-model") is entry
    assert [e.name for e in registry.entries()] == ["alpha-model", "beta-model"]
    assert registry.unregister("beta-model") is entry
    assert [e.name for e in registry.entries()] == ["alpha-model"]


def test_duplicate_name_raises(empty_registry):
    registry.register(_entry("twin"))
    with pytest.raises(ValueError, match="a model named 'twin' is already registered"):
        registry.register(_entry("twin", title="another"))
    assert registry.get("twin").title == "A test model"


def test_unknown_name_lists_the_known_ones(empty_registry):
    registry.register(_entry("zeta"))
    registry.register(_entry("eta"))
    with pytest.raises(UnknownModelError, match="unknown model 'nope'; known models: eta, zeta"):
        registry.get("nope")
    # It is a KeyError for mapping-style callers and a ValueError for the house convention.
    with pytest.raises(KeyError):
        registry.unregister("nope")
    with pytest.raises(ValueError, match="known models: eta, zeta"):
        registry.get(3)


def test_unknown_name_in_empty_registry(empty_registry):
    with pytest.raises(UnknownModelError, match="known models: none registered"):
        registry.get("anything")


def test_register_rejects_non_entries(empty_registry):
    with pytest.raises(TypeError, match="entry must be a ModelEntry, got dict"):
        registry.register({"name": "x"})


@pytest.mark.parametrize(
    ("overrides", "error", "message"),
    [
        ({"name": "has space"}, ValueError, "name must start with a letter or digit"),
        ({"name": "../up"}, ValueError, "name must start with a letter or digit"),
        ({"name": 5}, TypeError, "name must be a string, got int"),
        ({"title": None}, TypeError, "title must be a string, got NoneType"),
        ({"engines": ["em"]}, TypeError, "engines must be a tuple of strings, got list"),
        ({"engines": ()}, ValueError, "engines must name at least one method"),
        ({"engines": ("em", "em")}, ValueError, "engines must not repeat a method"),
        ({"factory": 3}, TypeError, "factory must be callable, got int"),
        ({"demo": "run"}, TypeError, "demo must be callable or None, got str"),
        ({"loader": 1.0}, TypeError, "loader must be callable or None, got float"),
    ],
)
def test_model_entry_validation(overrides, error, message):
    fields = {"name": "checked", **overrides}
    with pytest.raises(error, match=message):
        _entry(**fields)


def test_load_builtin_ignores_only_a_missing_index(monkeypatch, tmp_path, empty_registry):
    monkeypatch.syspath_prepend(str(tmp_path))
    # The index itself is missing: nothing to load, no error.
    monkeypatch.setattr(registry, "BUILTIN_INDEX", "pyromodels_test_absent_index")
    registry.load_builtin()
    assert registry.entries() == ()

    # The index exists but one of its imports is missing: that error must surface.
    (tmp_path / "pyromodels_test_broken_index.py").write_text(
        "import pyromodels_test_no_such_dep\n"
    )
    monkeypatch.setattr(registry, "BUILTIN_INDEX", "pyromodels_test_broken_index")
    with pytest.raises(ModuleNotFoundError, match="pyromodels_test_no_such_dep"):
        registry.load_builtin()

    # A working index registers its models.
    (tmp_path / "pyromodels_test_good_index.py").write_text(
        "from pyromodels.registry import ModelEntry, register\n"
        "register(ModelEntry(name='indexed', title='t', paper='p', engines=('em',),\n"
        "                    factory=dict))\n"
    )
    monkeypatch.setattr(registry, "BUILTIN_INDEX", "pyromodels_test_good_index")
    try:
        registry.load_builtin()
        assert [e.name for e in registry.entries()] == ["indexed"]
    finally:
        for module in ("pyromodels_test_good_index", "pyromodels_test_broken_index"):
            sys.modules.pop(module, None)


def test_registering_the_builtin_models_leaves_the_plotting_stack_unloaded(fresh_python):
    # `pyromodels list` registers every entry; the report (ArviZ, matplotlib) loads only once a
    # result is written, so the registry and the entries' modules must not import it.
    code = (
        "import sys\n"
        "from pyromodels import registry\n"
        "registry.load_builtin()\n"
        "print(sorted(m for m in ('arviz', 'matplotlib', 'pyromodels.report') if m in sys.modules))\n"
    )
    assert fresh_python(code) == "[]"


# ---------------------------------------------------------------- declarations
def test_a_declared_model_is_known_before_its_module_is_imported(monkeypatch, tmp_path,
                                                                 empty_registry):
    monkeypatch.syspath_prepend(str(tmp_path))
    module = "pyromodels_test_declared_model"
    (tmp_path / f"{module}.py").write_text(
        "from pyromodels import registry\n"
        "registry.register(registry.info('lazy').entry(factory=dict))\n")
    declared = registry.declare(registry.ModelInfo(
        name="lazy", title="t", paper="p", engines=("gibbs", "em"), default_method="em",
        module=module, arguments=(registry.Argument("alpha", "positive", "a prior"),)))
    try:
        assert registry.info("lazy") is declared and module not in sys.modules
        assert [m.name for m in registry.infos()] == ["lazy"]
        entry = registry.get("lazy")  # imports the module, which registers the entry
        assert module in sys.modules and entry.factory is dict
        assert entry.declaration() == declared and entry.default_method == "em"
        assert registry.info("lazy") is entry and registry.entries() == (entry,)
        assert registry.declare(declared) is declared  # the same declaration again: no-op
        with pytest.raises(ValueError, match="'lazy' is already declared"):
            registry.declare(replace(declared, title="another"))
    finally:
        sys.modules.pop(module, None)


def test_an_entry_must_carry_its_declaration(empty_registry):
    declared = registry.declare(registry.ModelInfo(name="kept", title="t", paper="p",
                                                   engines=("em",)))
    with pytest.raises(ValueError, match="differs from its declaration"):
        registry.register(_entry("kept", title="t", paper="p", engines=("em", "gibbs")))
    assert registry.register(declared.entry(factory=dict)).engines == ("em",)


@pytest.mark.parametrize(("overrides", "error", "message"), [
    ({"default_method": "nuts"}, ValueError, "default_method must be one of engines"),
    ({"arguments": ("alpha",)}, TypeError, "arguments must be a tuple of Argument"),
    ({"options": ("gold",), "arguments": (registry.Argument("gold", "real", "x"),)},
     ValueError, "must not repeat each other or the options"),
    ({"module": 3}, TypeError, "module must be a string"),
])
def test_declaration_validation(overrides, error, message):
    with pytest.raises(error, match=message):
        registry.ModelInfo(name="m", title="t", paper="p", engines=("em",), **overrides)


@pytest.mark.parametrize(("fields", "message"), [
    ({"dest": "not an identifier"}, "dest must be a Python identifier"),
    ({"kind": "string"}, "kind must be one of"),
])
def test_argument_validation(fields, message):
    with pytest.raises(ValueError, match=message):
        registry.Argument(**{"dest": "alpha", "kind": "positive", "help": "h", **fields})


def test_the_built_in_declarations_match_their_models():
    registry.load_builtin()
    for declared in registry.infos():
        entry = registry.get(declared.name)
        assert entry.declaration() == declared.declaration()
        # every declared constructor argument is a keyword of the factory, and the model the
        # factory makes has the declared engines
        parameters = inspect.signature(entry.factory).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        for argument in declared.arguments:
            assert takes_any or argument.dest in parameters, (declared.name, argument.dest)
        model = entry.factory()
        assert set(model.engines) == set(declared.engines), declared.name


def test_demos_are_first_looks_and_leave_the_long_protocols_to_reproduce():
    from pyromodels.experiments.ddpm import reproduction as ddpm
    from pyromodels.experiments.reference_mixture import reproduction as mixture

    def work(plan):  # Monte Carlo EM sweeps over points of the synthetic set
        mcem = plan.synthetic_protocol.mcem
        return plan.synthetic_points * mcem.rounds * mcem.restarts

    demo, small = ddpm.PLANS["demo"], ddpm.PLANS["small"]
    assert work(demo) * 10 <= work(small)
    assert demo.images_protocol.mcem.restarts == 1
    assert sum(demo.autoencoder.dims) < sum(small.autoencoder.dims)
    assert demo.autoencoder.finetune_epochs < small.autoencoder.finetune_epochs
    demo, small = mixture.SETTINGS["demo"], mixture.SETTINGS["small"]
    assert 2 * (demo.nuts_warmup + demo.nuts_samples) <= small.nuts_warmup + small.nuts_samples
    assert 2 * (demo.gibbs_warmup + demo.gibbs_samples) <= small.gibbs_warmup + small.gibbs_samples


#: constructor parameters of the built-in models that are not command-line options, and why
NOT_OFFERED = {
    "num_classes": "taken from the data",
    "update_prior": "a switch of the class prior's estimation, not a prior value",
    "class_prior": "a vector", "initial": "a mode, not a prior value",
    "initial_probs": "a vector", "mean_prior": "a vector", "covariance_prior": "a matrix",
    "delta": "the Potts coupling: a mode or a number, fitted by the EM",
    "allow_unlabelled": "a data contract", "em_floor": "a numerical floor",
    "backend": "a kernel choice", "paper_literal": "a switch to the paper's misprint",
    "num_layers": "the flow's architecture", "hidden": "the flow's architecture",
    "scaling": "the flow's architecture", "flow_seed": "a seed", "dtype": "a precision",
    "prior": "a prior object: its fields are checked instead",
    "decoder_hidden": "the decoder's architecture", "activation": "the networks' architecture",
    "likelihood": "taken from the data", "covariance": "a choice among names",
    "covariance_scale": "a matrix", "alpha_prior": "a pair of Beta concentrations",
    "beta_prior": "a pair of Beta concentrations",
    "tree": "a latent tree structure",
    "start": "how each restart begins: a choice among names",
}


def test_every_prior_of_the_built_in_models_is_an_option():
    registry.load_builtin()
    for declared in registry.infos():
        model = registry.get(declared.name).factory()
        names = [p for p in inspect.signature(type(model).__init__).parameters if p != "self"]
        prior = getattr(model, "prior", None)
        if dataclasses.is_dataclass(prior):
            names += [f.name for f in dataclasses.fields(prior)]
        offered = {a.dest for a in declared.arguments}
        missing = [n for n in names if n not in offered and n not in NOT_OFFERED]
        assert not missing, f"{declared.name}: constructor arguments not offered: {missing}"


def test_engine_options_declare_a_subset_of_option_names():
    base = {"name": "m", "title": "t", "paper": "p", "engines": ("svi",)}
    assert registry.ModelInfo(**base).engine_options is None
    assert registry.ModelInfo(**base, engine_options=("lr",)).engine_options == ("lr",)
    with pytest.raises(TypeError, match="engine_options must be None or a tuple"):
        registry.ModelInfo(**base, engine_options="lr")
    with pytest.raises(TypeError, match="engine_options must be None or a tuple"):
        registry.ModelInfo(**base, engine_options=("--lr",))


def test_scdc_help_lists_only_the_engine_options_it_takes(capsys):
    from pyromodels.cli import main

    registry.load_builtin()
    assert main(["fit", "scdc", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--lr" in text and "--epochs" in text and "--pairs" in text
    assert "--num-samples" not in text and "--num-steps" not in text
