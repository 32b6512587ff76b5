"""The how-to guides and the README quick start run as written, so they cannot fall behind the code.

Each guide's ```python blocks run in order in one namespace, as a reader pasting them one after
another would run them, under the library's default settings (float32 default dtype).
"""

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted(p for p in (ROOT / "guides").glob("*.md") if p.name != "README.md")
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def python_blocks(path: Path) -> list[str]:
    """The bodies of the ```python fenced blocks of a Markdown file, in order."""
    return FENCE.findall(path.read_text(encoding="utf-8"))


def run_blocks(path: Path, tmp_path: Path, monkeypatch) -> dict:
    """Execute every ```python block of ``path`` in one fresh namespace; return it."""
    blocks = python_blocks(path)
    assert blocks, f"{path.name} has no ```python blocks"
    # Readers run the snippets with torch's defaults, not the float64 the other tests use.
    torch.set_default_dtype(torch.float32)
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"guide_{path.stem.replace('-', '_')}"}
    try:
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"{path.name}[block {i}]", "exec"), namespace)
            except Exception as exc:  # re-raised with the block that failed
                raise AssertionError(f"{path.name}, python block {i} failed:\n{code}") from exc
    finally:
        plt.close("all")
    return namespace


def test_python_blocks_are_extracted_in_order():
    text = "intro\n```python\na = 1\n```\n\n```sh\nmake\n```\n```python title\nb = a + 1\n```\n"
    path = ROOT / "guides" / "README.md"
    assert FENCE.findall(text) == ["a = 1\n", "b = a + 1\n"]
    assert not python_blocks(path), "the index page should hold links, not code"


def test_every_task_page_is_indexed_and_every_link_resolves():
    index = ROOT / "guides" / "README.md"
    linked = set(LINK.findall(index.read_text(encoding="utf-8")))
    expected = {
        "writing-a-model.md",
        "writing-a-gibbs-block.md",
        "enumerating-discrete-latents.md",
        "diagnostics-with-arviz.md",
        "reproducibility.md",
        "bad-input-errors.md",
    }
    assert expected <= {p.name for p in GUIDES}
    assert {p.name for p in GUIDES} <= linked
    for page in [index, ROOT / "README.md", *GUIDES]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


#: guides whose snippets take over ten seconds (fits, a Dask cluster): run with the slow checks
_LONG_GUIDES = {"scale-out.md", "using-with-plain-pyro.md",
                "checking-a-sampler-against-exact-posteriors.md", "diagnostics-with-arviz.md",
                "choosing-an-engine.md"}


@pytest.mark.parametrize("path", [
    pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in _LONG_GUIDES else [])
    for p in GUIDES])
def test_guide_snippets_run(path, tmp_path, monkeypatch):
    run_blocks(path, tmp_path, monkeypatch)


def test_readme_quick_start_runs(tmp_path, monkeypatch):
    namespace = run_blocks(ROOT / "README.md", tmp_path, monkeypatch)
    # The quick start fits the reference mixture with two engines and summarises one of them.
    assert {"em", "gibbs", "idata"} <= set(namespace)
    assert namespace["em"].method == "em" and namespace["gibbs"].method == "gibbs"
    assert set(namespace["idata"].groups()) >= {"posterior", "log_likelihood", "sample_stats"}
    # Its section on automatic Gibbs runs a plain Pyro program whose plan has both kinds of update.
    plan_text = namespace["auto"].attrs["plan"]
    assert "conjugate" in plan_text and "discrete" in plan_text, plan_text
    assert "posterior" in namespace["auto_idata"].groups()


def test_readme_starts_with_the_two_set_up_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```(\w+)\n(.*?)```", text, re.S)
    assert first_block.group(1) in ("sh", "shell", "bash")
    assert first_block.group(2).splitlines() == ["make demo", "make test"]


DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "guides").glob("*.md")),
             *sorted((ROOT / "tutorials").glob("*.py"))]
MD_NAME = re.compile(r"`([\w./-]+\.md)`")


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_name_only_files_a_clone_has(page):
    # A reader of a clone has the repository and nothing beside it: no implementation specs.
    text = page.read_text(encoding="utf-8")
    assert "shared/spec" not in text and not re.search(r"\bspecs?\b[^.\n]*`[\w-]+\.md`", text), (
        f"{page.name} sends readers to a spec file that is not in the repository")
    in_repo = {p.name for folder in ("guides", "benchmarks", "pyromodels")
               for p in (ROOT / folder).rglob("*.md")}
    in_repo |= {p.name for p in ROOT.glob("*.md")}
    missing = sorted(set(MD_NAME.findall(text)) - in_repo)
    assert not missing, f"{page.name} names files the repository lacks: {missing}"


def test_readme_says_how_to_install_into_ones_own_environment():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = "\n".join(re.findall(r"```(?:sh|bash|shell)\n(.*?)```", text, re.S))
    assert "pip install ." in blocks and "pip install -e '.[dev]'" in blocks
    # the CPU note: a plain torch requirement pulls the CUDA build
    assert "CPU-only" in text and "CUDA build" in text
    extras = set(re.findall(r"^(\w+) = \[", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M))
    assert {"dev", "peers", "experiments"} <= extras
    for extra in ("dev", "peers", "experiments"):
        assert f"`{extra}`" in text, f"the README does not say what the {extra} extra holds"


def test_docstrings_cite_the_papers_not_implementation_notes_a_clone_lacks():
    # "spec 3.2", "spec section 2.2", "spec eq. 22": sections of notes that are not shipped
    note_reference = re.compile(r"\bspec(?:'s)? (?:sections? |eqs?\. |\d)")
    cited = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "pyromodels").rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if note_reference.search(line)]
    assert not cited, f"docstrings refer to implementation notes a reader does not have: {cited}"


def test_plain_pyro_guide_goes_both_ways_plain_callable_first():
    """The page on plain Pyro covers both directions, titled so, and shows a plain function on
    every engine (and under Pyro's MCMC) before any Model subclass or library model."""
    text = (ROOT / "guides" / "using-with-plain-pyro.md").read_text(encoding="utf-8")
    title = text.splitlines()[0]
    assert "plain pyro" in title.lower() and "both ways" in title, title
    code = "".join(python_blocks(ROOT / "guides" / "using-with-plain-pyro.md"))
    first_class = min(code.index("(Model):"), code.index("GaussianMixtureModel"))
    for call in ("run_nuts(regression", "run_svi(regression", "run_gibbs(regression",
                 "GibbsKernel(regression", "NUTS(regression)"):
        assert code.index(call) < first_class, call
