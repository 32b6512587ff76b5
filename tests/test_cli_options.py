"""Every option that ``pyromodels fit MODEL --help`` lists works for that model.

For each declared model the test reads the options from the model's help, then fits the
model with each of its methods on small data, giving every option of that method at once
(small sizes, valid priors), and once more with ``--checkpoint-every`` and ``--resume`` and,
where the model reads named data sets, with ``--dataset``. Each run must exit 0, each
declared constructor argument must reach the model's factory, and the runs together must
have used every option the help lists.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels import registry
from pyromodels.cli import main
from pyromodels.cli.parser import CHECKPOINT_ENGINES, ENGINE_OPTIONS, flag
from pyromodels.data import (
    WorkerPopulation,
    load_crowd,
    simulate_annotations,
    simulate_networked_annotations,
    simulate_sequential_annotations,
)

registry.load_builtin()
MODELS = [m.name for m in registry.infos()]

#: small, valid values of the engine options
ENGINE_VALUES = {"num_samples": "4", "num_warmup": "3", "num_chains": "1", "num_steps": "3",
                 "lr": "0.01", "max_iter": "3", "n_init": "2", "rounds": "2", "device": "cpu"}
#: valid values of the declared constructor arguments, by kind, and where a model needs more
ARGUMENT_VALUES = {"positive": "1.5", "nonnegative": "0.5", "real": "0.0", "count": "2",
                   "components": "2"}
SPECIAL_VALUES = {"degrees_of_freedom": "4.0"}  # > d for EM on two columns


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small data of every kind the models read: name -> path."""
    folder = tmp_path_factory.mktemp("data")
    out = {}
    table, truth = simulate_annotations(30, 4, 3, seed=0)
    table.to_frame().to_csv(folder / "answers.csv", index=False)
    pd.DataFrame({"task": table.items, "label": truth["z"].numpy()}).to_csv(folder / "gold.csv",
                                                                      index=False)
    seqs, _ = simulate_sequential_annotations([8, 7], 3, 3, stickiness=0.6, seed=1)
    frame = seqs.data.to_frame()
    codes = torch.as_tensor(frame["task"].to_numpy().copy())
    frame["sequence"] = seqs.sequence_ids()[codes].numpy()
    frame["position"] = seqs.positions()[codes].numpy()
    frame.to_csv(folder / "sequences.csv", index=False)
    net, graph, _ = simulate_networked_annotations(30, WorkerPopulation(4, labels_per_item=3), 3,
                                                   mean_degree=3, seed=0)
    net.to_frame().to_csv(folder / "networked.csv", index=False)
    pd.DataFrame(graph.edges.numpy(), columns=["a", "b"]).to_csv(folder / "edges.csv",
                                                                 index=False)
    tasks = load_crowd("bluebirds")[0]["task"].unique()
    pd.DataFrame({"a": tasks[:-1], "b": tasks[1:]}).to_csv(folder / "bluebird_edges.csv",
                                                           index=False)
    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(-3, 1, (20, 2)), rng.normal(3, 1, (20, 2))])
    np.savetxt(folder / "points.csv", points, delimiter=",")
    pd.DataFrame({"item_a": [0, 1, 0, 20], "item_b": [1, 2, 20, 21], "worker": ["u", "u", "v", "v"],
                  "link": [1, 1, 0, 1]}).to_csv(folder / "pairs.csv", index=False)
    for name in ("answers", "gold", "sequences", "networked", "edges", "bluebird_edges",
                 "points", "pairs"):
        out[name] = str(folder / f"{name}.csv")
    return out


def _data(name: str, files) -> list[str]:
    """The data arguments of model ``name`` (besides its loader options)."""
    model = registry.info(name)
    if not model.reads_data:  # the links alone: it takes no --data
        return ["--pairs", files["pairs"]]
    if "sequence_col" in model.options:
        return ["--data", files["sequences"]]
    if "edges" in model.options:
        return ["--data", files["networked"], "--edges", files["edges"]]
    if "task_col" in model.options:
        return ["--data", files["answers"]]
    if "pairs" in model.options:
        return ["--data", files["points"], "--pairs", files["pairs"]]
    return ["--data", files["points"]]


def _model_options(name: str, files) -> tuple[list[str], dict]:
    """Every model-specific option and constructor argument of ``name``, with valid values,
    and the keywords the model's factory must then receive."""
    model = registry.info(name)
    values = {"task_col": "task", "worker_col": "worker", "label_col": "label",
              "sequence_col": "sequence", "position_col": "position", "gold": files["gold"],
              "regularisation": "1.0", "margin": "1.0", "epochs": "2", "batch_size": "16",
              "coin_init": "0.9", "kl_warmup_epochs": "1", "search": "east",
              "search_every": "1"}
    argv, expected = [], {}
    for option in model.options:
        if option in values:
            argv += [flag(option), values[option]]
    for argument in model.arguments:
        value = SPECIAL_VALUES.get(argument.dest, ARGUMENT_VALUES[argument.kind])
        argv += [flag(argument.dest), value]
        integer = argument.kind in ("count", "components")
        expected[argument.dest] = int(value) if integer else float(value)
    return argv, expected


def _engine_options(method: str, name: str) -> list[str]:
    """Every engine option of ``method`` that model ``name`` takes, with a valid value."""
    taken = registry.info(name).engine_options
    argv = []
    for dest, engines in ENGINE_OPTIONS.items():
        if method in engines and (taken is None or dest in taken):
            argv += [flag(dest), ENGINE_VALUES[dest]]
    return argv


def _listed_options(name: str, capsys) -> set[str]:
    """The options that ``pyromodels fit NAME --help`` lists."""
    assert main(["fit", name, "--help"]) == 0
    text = capsys.readouterr().out
    return set(re.findall(r"^  (?:-h, )?(--[a-z0-9][a-z0-9-]*)", text, flags=re.MULTILINE))


def _recording_factory(monkeypatch, name: str) -> list[dict]:
    """Make model ``name``'s factory record the keywords it is called with."""
    entry = registry.get(name)
    calls = []

    def factory(**kwargs):
        calls.append(kwargs)
        return entry.factory(**kwargs)

    monkeypatch.setitem(registry._REGISTRY, name, replace(entry, factory=factory))
    return calls


@pytest.mark.parametrize("name", MODELS)
def test_every_option_a_models_help_lists_works(name, files, tmp_path, capsys, monkeypatch):
    listed = _listed_options(name, capsys)
    model = registry.info(name)
    calls = _recording_factory(monkeypatch, name)
    used = {"--help"}

    def run(argv: list[str], model_name: list[str] = [name]) -> None:  # noqa: B006
        status = main(["fit", *model_name, *argv])
        captured = capsys.readouterr()
        assert status == 0, f"fit {name} {' '.join(argv)}: {captured.err}"
        used.update(a for a in argv if a.startswith("--"))

    model_options, arguments = _model_options(name, files)
    for method in model.engines:
        out = tmp_path / method
        run(["--method", method, *_data(name, files), *model_options, *_engine_options(method, name),
             "--seed", "1", "--no-progress", "--out", str(out)])
        assert (out / "index.html").is_file()
        assert calls[-1] == arguments  # every constructor argument reached the factory
    if set(model.engines) & set(CHECKPOINT_ENGINES):
        method = next(e for e in model.engines if e in CHECKPOINT_ENGINES)
        out = tmp_path / "checkpointed"
        run(["--method", method, *_data(name, files), *_engine_options(method, name),
             "--checkpoint-every", "1", "--no-progress", "--out", str(out)])
        run(["--resume", str(out), "--no-progress"], [])  # the saved model and arguments
    if "dataset" in model.options:
        edges = ["--edges", files["bluebird_edges"]] if "edges" in model.options else []
        run(["--dataset", "bluebirds", *edges, "--max-iter", "3", "--no-progress",
             "--out", str(tmp_path / "dataset")])
    assert listed <= used, f"listed but never run: {sorted(listed - used)}"
