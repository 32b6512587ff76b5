"""Every tutorial runs end to end as a notebook in smoke mode, shows its figures, and converts
to a notebook cell for cell.

The tutorials are jupytext percent files (``# %%`` cells). Each one is executed as a notebook
by its own Jupyter kernel (nbclient, matplotlib's inline backend), from an empty working
directory, with ``SMOKE_TEST=1`` (every iteration count shrinks).
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


# Executes a tutorial as a notebook (its own Jupyter kernel, matplotlib's inline backend) and
# saves the executed notebook: argv = tutorial path, output path, working directory.
EXECUTE = """
import sys, jupytext, nbclient, nbformat
nb = jupytext.read(sys.argv[1])
nbclient.NotebookClient(nb, timeout=600, kernel_name=nb.metadata["kernelspec"]["name"],
                        resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, sys.argv[2])
"""
SHOW_CALL = re.compile(r"^\s*show\(", re.M)


@pytest.mark.tutorial
@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs_as_a_notebook_in_smoke_mode_and_shows_its_figures(path, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # the kernel's inline backend
    env["SMOKE_TEST"] = "1"
    out = tmp_path / f"{path.stem}.ipynb"
    result = _run([sys.executable, "-c", EXECUTE, str(path), str(out), str(tmp_path)],
                  cwd=tmp_path, env=env, timeout=600)
    assert result.returncode == 0, (
        f"{path.name} failed as a notebook (status {result.returncode})\n"
        f"--- stderr (last 6000 characters) ---\n{result.stderr[-6000:]}"
    )
    cells = json.loads(out.read_text(encoding="utf-8"))["cells"]
    images = sum("image/png" in output.get("data", {}) for cell in cells if cell["cell_type"] == "code"
                 for output in cell.get("outputs", []))
    # every figure handed to the tutorial's show() is displayed, none is closed unseen
    shown = len(SHOW_CALL.findall(path.read_text(encoding="utf-8")))
    assert images >= max(shown, 1), f"{path.name} displayed {images} figures, shows {shown}"


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
