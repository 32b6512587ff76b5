"""Every tutorial runs end to end as a notebook in smoke mode, shows its figures whatever
``MPLBACKEND`` says, labels the axes of every figure, prints no library noise, and converts to
a notebook cell for cell.

The tutorials are jupytext percent files (``# %%`` cells). Each one is executed once, by one test,
as a notebook by its own Jupyter kernel (nbclient), from an empty working directory,
with ``SMOKE_TEST=1`` (every iteration count shrinks) and ``MPLBACKEND=Agg``.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "tutorials").glob("*.py"))
SMOKE_FLAG = 'SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"'
CELL_MARKER = re.compile(r"^# %%", re.M)


def _run(args, cwd, env=None, timeout=300):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_tutorials_are_found():
    assert "00_write_your_own_model.py" in {p.name for p in TUTORIALS}


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_has_a_smoke_flag(path):
    # The flag is what lets the tests below run the tutorial in seconds.
    assert SMOKE_FLAG in path.read_text(encoding="utf-8")


# Executes a tutorial as a notebook (its own Jupyter kernel) and saves the executed notebook:
# argv = tutorial path, output path, working directory. A first cell added before the
# tutorial's own counts the figures the notebook displays and records the axes among them that
# lack an x or a y label; a last cell prints that record as one JSON line after AUDIT_MARK.
EXECUTE = """
import sys, jupytext, nbclient, nbformat
nb = jupytext.read(sys.argv[1])
nb.cells.insert(0, nbformat.v4.new_code_cell(sys.argv[4]))
nb.cells.append(nbformat.v4.new_code_cell(sys.argv[5]))
nbclient.NotebookClient(nb, timeout=600, kernel_name=nb.metadata["kernelspec"]["name"],
                        resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, sys.argv[2])
"""
AUDIT_MARK = "UNLABELLED-AXES "
# Every figure reaches the notebook through its canvas's print_figure (the inline backend and
# savefig both call it), so wrapping that method sees each displayed figure once per display.
# An axes needs an x and a y label, its own, its figure's (supxlabel / supylabel) or that of
# an axes it shares the axis with; exempt are hidden axes, axes drawn with the axis off
# (images, tree drawings, tables) and colorbars.
AUDIT_SETUP = r"""
import matplotlib.backend_bases as _backend_bases

_audit = {"figures": 0, "unlabelled": []}


def _has_label(ax, which):
    fig_label = getattr(ax.figure, f"_sup{which}label", None)
    if fig_label is not None and fig_label.get_text().strip():
        return True
    shared = ax.get_shared_x_axes() if which == "x" else ax.get_shared_y_axes()
    return any(getattr(a, f"get_{which}label")().strip() for a in shared.get_siblings(ax))


def _missing_labels(fig):
    title = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
    found = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison or getattr(ax, "_colorbar", None) is not None:
            continue
        missing = [w for w, axis in (("x", ax.xaxis), ("y", ax.yaxis))
                   if axis.get_visible() and not _has_label(ax, w)]
        if missing:
            found.append({"figure": title, "axes": ax.get_title() or ax.get_label(),
                          "missing": missing})
    return found


_print_figure = _backend_bases.FigureCanvasBase.print_figure


def _audited_print_figure(self, *args, **kwargs):
    _audit["figures"] += 1
    _audit["unlabelled"].extend(_missing_labels(self.figure))
    return _print_figure(self, *args, **kwargs)


_backend_bases.FigureCanvasBase.print_figure = _audited_print_figure
"""
AUDIT_REPORT = f"import json\nprint({AUDIT_MARK!r} + json.dumps(_audit))"
SHOW_CALL = re.compile(r"^\s*show\(", re.M)
# Noise a reader should never see in a tutorial's output: library deprecations, ArviZ's
# shape-validation log (R-hat or ESS asked of one chain or too few draws), tqdm's notebook bar
# without ipywidgets.
NOISE = re.compile(r"\w*DeprecationWarning|FutureWarning|TqdmWarning|IProgress not found"
                   r"|Shape validation failed")


def execute(path: Path, workdir: Path) -> dict:
    """Run ``path`` as a notebook in ``workdir`` with ``SMOKE_TEST=1`` and ``MPLBACKEND=Agg``
    (as the Makefile exports it); return the executed notebook's JSON."""
    env = {**os.environ, "SMOKE_TEST": "1", "MPLBACKEND": "Agg"}
    out = workdir / f"{path.stem}.ipynb"
    result = _run([sys.executable, "-c", EXECUTE, str(path), str(out), str(workdir),
                   AUDIT_SETUP, AUDIT_REPORT], cwd=workdir, env=env, timeout=600)
    assert result.returncode == 0, (
        f"{path.name} failed as a notebook (status {result.returncode})\n"
        f"--- stderr (last 6000 characters) ---\n{result.stderr[-6000:]}"
    )
    return json.loads(out.read_text(encoding="utf-8"))


def outputs(notebook: dict) -> list[dict]:
    """Every output of every code cell, in order."""
    return [output for cell in notebook["cells"] if cell["cell_type"] == "code"
            for output in cell.get("outputs", [])]


def output_text(output: dict) -> str:
    """The text an output shows: a stream, a plain-text result or a traceback."""
    text = output.get("text") or output.get("data", {}).get("text/plain") or output.get("traceback") or ""
    return "".join(text) if isinstance(text, list) else text


def missing_figures(notebook: dict, shown: int) -> list[str]:
    """Every figure handed to the tutorial's show() is displayed, none is closed unseen."""
    images = sum("image/png" in output.get("data", {}) for output in outputs(notebook))
    return [] if images >= max(shown, 1) else [f"displayed {images} figures, shows {shown}"]


def noise(notebook: dict) -> list[str]:
    """The output lines that match NOISE."""
    return [f"prints: {line}" for output in outputs(notebook)
            for line in output_text(output).splitlines() if NOISE.search(line)]


def unlabelled_axes(notebook: dict, shown: int) -> list[str]:
    """What the axes audit found: too few figures audited, or axes without labels."""
    report = [line for output in outputs(notebook)
              for line in output_text(output).splitlines() if line.startswith(AUDIT_MARK)]
    if len(report) != 1:
        return ["the axes audit did not report"]
    audit = json.loads(report[0][len(AUDIT_MARK):])
    problems = [f"axes without labels: {axes}" for axes in audit["unlabelled"]]
    if audit["figures"] < max(shown, 1):
        problems.append(f"only {audit['figures']} figures were audited, shows {shown}")
    return problems


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
@pytest.mark.tutorial
@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_as_a_notebook_shows_labelled_figures_and_no_noise(path, tmp_path):
    # One execution (the slow part) serves the three checks, even with MPLBACKEND=Agg in the
    # kernel's environment: figures displayed, every axes labelled, no library noise.
    notebook = execute(path, tmp_path)
    shown = len(SHOW_CALL.findall(path.read_text(encoding="utf-8")))
    problems = missing_figures(notebook, shown) + unlabelled_axes(notebook, shown) + noise(notebook)
    assert not problems, f"{path.name}:\n" + "\n".join(problems[:20])


@pytest.mark.tutorial
@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_converts_to_a_notebook(path, tmp_path):
    out = tmp_path / f"{path.stem}.ipynb"
    result = _run(
        [sys.executable, "-m", "jupytext", "--to", "ipynb", "--output", str(out), str(path)],
        cwd=tmp_path,
    )
    assert result.returncode == 0, f"jupytext failed on {path.name}:\n{result.stderr}"
    notebook = json.loads(out.read_text(encoding="utf-8"))
    cells = notebook["cells"]
    # one notebook cell per "# %%" marker, both kinds present, the first cell explains
    assert len(cells) == len(CELL_MARKER.findall(path.read_text(encoding="utf-8")))
    assert {c["cell_type"] for c in cells} == {"markdown", "code"}
    assert cells[0]["cell_type"] == "markdown"
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert SMOKE_FLAG in code


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_header_names_a_kernel(path):
    # Without a kernelspec, a converted notebook asks which kernel to start.
    header = path.read_text(encoding="utf-8").split("# %%", 1)[0]
    assert "#   kernelspec:" in header and "#     name: python3" in header


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_shows_its_figures_before_closing_them(path):
    # A figure closed without plt.show() never appears in the notebook.
    text = path.read_text(encoding="utf-8")
    for match in re.finditer(r"plt\.close\(", text):
        before = text[max(0, match.start() - 80):match.start()]
        assert "plt.show()" in before, f"{path.name} closes a figure it never showed"


def test_first_tutorial_fits_a_plain_pyro_function_by_hand():
    # The on-ramp writes Pyro's own inference calls before it introduces Model.
    text = (ROOT / "tutorials" / "00_write_your_own_model.py").read_text(encoding="utf-8")
    first_model_class = text.index("(Model)")
    for call in ("TraceEnum_ELBO(", "SVI(", "NUTS(", "init_strategy=", "infer_discrete(",
                 "Predictive(", "config_enumerate"):
        assert call in text[:first_model_class], f"{call} is not written by hand before Model"


def test_tutorial_00_fits_a_plain_function_on_every_engine_before_any_model_class():
    code = (Path(__file__).resolve().parents[1] / "tutorials"
            / "00_write_your_own_model.py").read_text(encoding="utf-8")
    first_class = code.index("(Model):")
    for call in ("run_nuts(plain_mixture", "run_svi(plain_mixture", "run_gibbs(plain_mixture"):
        assert call in code and code.index(call) < first_class, call


def test_automatic_gibbs_tutorial_covers_the_workflow_on_a_plain_pyro_program():
    # Tutorial 09 takes a plain function through the plan, several chains, Pyro's MCMC, an
    # override, an unsupported site and a pyro.markov chain, diagnosing label-invariantly.
    text = (ROOT / "tutorials" / "09_your_own_model_gibbs_for_free.py").read_text(encoding="utf-8")
    assert "(Model)" not in text
    for call in ("print(plan(", "fit_gibbs(", "num_chains=size(4", "az.summary(", "sorted_locs",
                 "MCMC(kernel", "AutoGibbs(", "overrides={\"tau\"", "except ValueError",
                 "pyro.markov(", "plot_trace("):
        assert call in text, call
