"""The command's error contract: a user error is one line on standard error and exit status 2,
Ctrl-C one line and status 130, and a bug keeps its traceback."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from pyromodels import registry  # noqa: E402
from pyromodels.cli import main  # noqa: E402
from pyromodels.core import Posterior  # noqa: E402
from pyromodels.registry import ModelEntry  # noqa: E402
from pyromodels.report import DemoResult  # noqa: E402

_calls = {"fit": 0}
_demo_raises: list[BaseException] = []


class _CountingModel:
    def fit(self, data, method, seed, progress, **options):
        import torch

        _calls["fit"] += 1
        return Posterior(samples={"mu": torch.zeros(1, 4, dtype=torch.float64)}, method=method)


def _demo(*, smoke: bool, progress: bool, seed: int) -> DemoResult:
    if _demo_raises:
        raise _demo_raises[0]
    return DemoResult(name="counted", metrics={"seed": seed})


@pytest.fixture
def counted(monkeypatch):
    """A registry holding one fake model whose fits are counted and whose demo can be made
    to raise."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_DECLARED", {})
    monkeypatch.setattr(registry, "load_builtin", lambda: None)
    monkeypatch.setitem(_calls, "fit", 0)
    monkeypatch.setattr(sys.modules[__name__], "_demo_raises", [])
    registry.register(ModelEntry(name="counted", title="Counted", paper="none", engines=("em",),
                                 factory=_CountingModel, demo=_demo, loader=lambda path: 1.0))
    yield
    registry.unregister("counted")


def _one_error_line(capsys, *fragments: str) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("pyromodels: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def _out_cases(tmp_path: Path) -> list[tuple[str, str]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return [
        (str(a_file), "--out must be a directory, but"),
        (str(a_file / "report"), "--out cannot be created: "),
        (".", "--out must not be the current directory"),
    ]


def test_a_bad_out_fails_before_the_fit(counted, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for out, message in _out_cases(tmp_path):
        assert main(["fit", "counted", "--method", "em", "--out", out, "--no-progress"]) == 2
        _one_error_line(capsys, message)
        assert main(["demo", "--out", out, "--no-progress"]) == 2
        _one_error_line(capsys, message)
    assert _calls["fit"] == 0


def test_an_out_that_cannot_be_written_fails_before_the_fit(counted, tmp_path, monkeypatch,
                                                             capsys):
    def refuse(self, *args, **kwargs):  # a read-only place (root may write anywhere)
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    argv = ["fit", "counted", "--method", "em", "--out", str(tmp_path / "r"), "--no-progress"]
    assert main(argv) == 2
    _one_error_line(capsys, "--out cannot be written: ", "(Permission denied)")
    assert _calls["fit"] == 0


def test_a_report_that_cannot_be_written_is_one_line(counted, tmp_path, monkeypatch, capsys):
    from pyromodels.report import atomic

    def disk_full(stage, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "_swap", disk_full)
    out = tmp_path / "r"
    assert main(["fit", "counted", "--method", "em", "--out", str(out), "--no-progress"]) == 2
    _one_error_line(capsys, f"cannot write the report to {out}: ", "No space left on device")
    assert sorted(os.listdir(tmp_path)) == []  # the half-built report is gone


def test_missing_data_of_a_demo_is_one_line(counted, capsys):
    _demo_raises.append(FileNotFoundError("data set not found: looked in /nowhere\nset X"))
    assert main(["demo", "--no-progress"]) == 2
    _one_error_line(capsys, "data set not found: looked in /nowhere set X")


def test_ctrl_c_is_one_line_and_status_130(counted, capsys):
    _demo_raises.append(KeyboardInterrupt())
    assert main(["demo", "--no-progress"]) == 130
    assert capsys.readouterr().err == "pyromodels: interrupted\n"


def test_a_bug_keeps_its_traceback(counted):
    _demo_raises.append(RuntimeError("a bug"))
    with pytest.raises(RuntimeError, match="a bug"):
        main(["demo", "--no-progress"])


@pytest.mark.parametrize("command", [["reproduce", "crowd"], ["demo", "--smoke", "--only", "crowd"]])
def test_the_built_in_models_without_their_data_exit_2(command, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYROMODELS_DATA", str(tmp_path))  # an empty data folder
    out = tmp_path / "out"
    assert main([*command, "--out", str(out), "--no-progress"]) == 2
    _one_error_line(capsys, "not found", str(tmp_path))
    assert not out.exists()


def test_one_class_data_and_an_unknown_device_exit_2(tmp_path, capsys):
    one_class = tmp_path / "one.csv"
    one_class.write_text("task,worker,label\n0,0,1\n0,1,1\n1,0,1\n")
    out = str(tmp_path / "r")
    assert main(["fit", "dawid-skene", "--method", "em", "--data", str(one_class),
                 "--out", out, "--no-progress"]) == 2
    _one_error_line(capsys, "needs at least 2 classes")
    assert main(["fit", "gaussian-mixture", "--method", "em", "--device", "banana",
                 "--out", out, "--no-progress"]) == 2
    _one_error_line(capsys, "device must name a torch device", "'banana'")
    assert not Path(out).exists()


_SLOW_DEMO = textwrap.dedent(
    """
    import time
    from pyromodels import registry
    from pyromodels.cli import main
    from pyromodels.registry import ModelEntry

    def demo(**kwargs):
        print("ready", flush=True)
        time.sleep(60)

    registry._REGISTRY.clear()
    registry._DECLARED.clear()
    registry.load_builtin = lambda: None
    registry.register(ModelEntry(name="slow", title="Slow", paper="none", engines=("em",),
                                 factory=dict, demo=demo))
    raise SystemExit(main(["demo", "--no-progress"]))
    """
)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_sigint_exits_130_with_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    # a user's shell delivers SIGINT; a test runner's worker may ignore it, and an ignored
    # signal stays ignored in the child: give the child the default disposition back
    child = subprocess.Popen([sys.executable, "-c", _SLOW_DEMO], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130
    assert err == "pyromodels: interrupted\n"


def test_an_unusable_default_report_directory_is_one_line(counted, tmp_path, monkeypatch,
                                                          capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reports").write_text("a file where the default report directory goes")
    assert main(["demo", "--no-progress"]) == 2
    _one_error_line(capsys, "--out cannot be created: ", "reports is a file")
