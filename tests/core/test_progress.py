"""Progress bars stay out of logs, nest on separate lines, and count EM's own iterations."""

from __future__ import annotations

import contextlib
import importlib.util
import io

import torch

from pyromodels.core import progress
from pyromodels.core.progress import bars_drawn, progress_bar, tqdm_class


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_is_silent_when_stderr_is_not_a_terminal(capsys):
    with progress_bar(5, "work", enabled=True) as bar:
        assert bar.disable
        for _ in range(5):
            bar.update()
    assert capsys.readouterr().err == ""
    assert not bars_drawn(True, io.StringIO())
    assert bars_drawn(True, _Terminal()) and not bars_drawn(False, _Terminal())


def test_bar_draws_on_a_terminal(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress_bar(3, "work", enabled=True) as bar:
        assert not bar.disable
        bar.update(3)
    assert "work" in terminal.getvalue()


def test_nested_bars_take_their_own_lines(monkeypatch):
    monkeypatch.setattr("sys.stderr", _Terminal())
    with progress_bar(2, "outer", enabled=True) as outer:
        with progress_bar(2, "inner", enabled=True) as inner:
            positions = (abs(outer.pos), abs(inner.pos))
    assert positions == (0, 1)
    with progress_bar(2, "again", enabled=True) as again:
        assert abs(again.pos) == 0


def test_plain_bar_without_ipywidgets(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ipywidgets" else real(name, *a))
    assert tqdm_class().__module__ == "tqdm.std"


class _Recorder:
    """Stands in for a tqdm bar and records what the engine tells it."""

    def __init__(self, total):
        self.total, self.n, self.disable, self.resets = total, 0, False, 0

    def update(self, n=1):
        self.n += n

    def reset(self, total=None):
        self.total, self.n, self.resets = total, 0, self.resets + 1

    def set_description(self, desc):
        self.desc = desc

    def set_postfix(self, **kwargs):
        self.postfix = kwargs


def test_em_bar_counts_the_iterations_of_each_start(monkeypatch):
    from pyromodels.core import em as em_module
    from pyromodels.mixture import GaussianMixtureModel

    bars = []

    @contextlib.contextmanager
    def recording_bar(total, desc, enabled):
        bars.append(_Recorder(total))
        yield bars[-1]

    monkeypatch.setattr(em_module, "progress_bar", recording_bar)
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(40, 2, generator=g, dtype=torch.float64) - 3,
                   torch.randn(40, 2, generator=g, dtype=torch.float64) + 3])
    post = GaussianMixtureModel(num_components=2).fit(x, method="em", seed=0, n_init=2,
                                                 max_iter=200, progress=True)
    (bar,) = bars
    assert bar.total == 200  # one start's iterations, not n_init * max_iter
    assert bar.resets == 2 and bar.desc == "em start 2/2"
    assert 0 < bar.n < 200  # stopped early on convergence: the bar says after how many
    assert "objective" in bar.postfix
    assert progress._open_bars == [0]
    assert post.diagnostics["converged"]
