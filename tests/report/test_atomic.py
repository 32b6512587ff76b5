"""A report is replaced whole or not at all, and a partial or mixed report is named as such."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pytest

from pyromodels.cli import main
from pyromodels.report import DemoResult, IncompleteReportError, read_report, write_report
from pyromodels.report.atomic import check_target, staged_directory


def _result(value: float) -> DemoResult:
    draws = np.full((2, 20), value)
    return DemoResult(
        name="run",
        summary=f"value {value}",
        metrics={"gibbs": {"value": value}},
        tables={"t": pd.DataFrame({"v": [value]})},
        inference_data={
            "gibbs": az.from_dict(posterior={"a": draws}),
            "em": az.from_dict(posterior={"a": draws + 1.0}),
        },
    )


def _write(value: float, out: Path) -> str:
    files = {"labels.csv": pd.DataFrame({"label": [value]})}
    write_report([_result(value)], out, f"report {value}", files=files)
    return read_report(out)[2]


class _Interrupter:
    """Counts the calls that write or move files, and raises KeyboardInterrupt at the k-th."""

    TARGETS = [
        (os, "rename"),
        (os, "replace"),
        (os, "mkdir"),
        (os, "chmod"),
        (Path, "write_text"),
        (az.InferenceData, "to_netcdf"),
        (pd.DataFrame, "to_csv"),
    ]

    def __init__(self, monkeypatch, at: int | None):
        self.calls, self.at = 0, at
        for owner, name in self.TARGETS:
            monkeypatch.setattr(owner, name, self._wrap(getattr(owner, name)))

    def _wrap(self, real):
        def call(*args, **kwargs):
            self.calls += 1
            if self.calls == self.at:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        return call


def _siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p != out)


def test_an_interrupted_write_leaves_the_old_report_whole(tmp_path, monkeypatch, capsys):
    out = tmp_path / "report"
    old_run = _write(1.0, out)
    (out / "notes.txt").write_text("mine")  # not a report file: kept by every write
    with monkeypatch.context() as patch:
        counter = _Interrupter(patch, at=None)
        _write(2.0, tmp_path / "scratch")
        total = counter.calls
    shutil.rmtree(tmp_path / "scratch")
    assert total >= 10  # mkdirs, NetCDFs, CSVs, page, metrics, moves and renames of the swap

    for k in range(1, total + 1):
        with monkeypatch.context() as patch:
            _Interrupter(patch, at=k)
            with pytest.raises(KeyboardInterrupt):
                write_report([_result(2.0)], out, "report 2.0",
                             files={"labels.csv": pd.DataFrame({"label": [2.0]})})
        # the old report, whole, and no temporary directory left beside it
        index, metrics, run_id = read_report(out)
        assert run_id == old_run, k
        assert metrics == {"run": {"gibbs": {"value": 1.0}}}, k
        assert (out / "notes.txt").read_text() == "mine"
        assert _siblings(out) == [], k
        assert main(["report", str(out)]) == 0
        assert "  gibbs / value: 1" in capsys.readouterr().out

    new_run = _write(2.0, out)  # uninterrupted, the new report replaces the old one whole
    assert new_run != old_run
    assert read_report(out)[1] == {"run": {"gibbs": {"value": 2.0}}}
    assert (out / "notes.txt").read_text() == "mine" and _siblings(out) == []


def test_each_file_records_the_run_id(tmp_path):
    run_id = _write(3.0, tmp_path / "r")
    record = json.loads((tmp_path / "r" / "metrics.json").read_text())["_report"]
    assert record["run_id"] == run_id
    assert sorted(record["files"]) == ["index.html", "labels.csv", "run/em.nc", "run/gibbs.nc"]
    assert f'<meta name="pyromodels-run-id" content="{run_id}">' in (
        (tmp_path / "r" / "index.html").read_text()
    )
    for engine in ("em", "gibbs"):
        assert az.from_netcdf(str(tmp_path / "r" / "run" / f"{engine}.nc")).attrs[
            "pyromodels_run_id"] == run_id
    # the caller's InferenceData is left without the run id
    result = _result(3.0)
    write_report([result], tmp_path / "s", "t")
    assert "pyromodels_run_id" not in result.inference_data["gibbs"].attrs


def _damage(kind: str, out: Path, other: Path) -> None:
    if kind == "truncated NetCDF":
        path = out / "run" / "gibbs.nc"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif kind == "missing NetCDF":
        (out / "run" / "gibbs.nc").unlink()
    elif kind == "NetCDF of another run":
        shutil.copy(other / "run" / "gibbs.nc", out / "run" / "gibbs.nc")
    elif kind == "page of another run":
        shutil.copy(other / "index.html", out / "index.html")
    elif kind == "metrics of another run":
        shutil.copy(other / "metrics.json", out / "metrics.json")
    elif kind == "edited CSV":
        (out / "labels.csv").write_text("label\n9\n")
    elif kind == "truncated metrics":
        (out / "metrics.json").write_text((out / "metrics.json").read_text()[:40])
    elif kind == "edited metric":
        metrics = json.loads((out / "metrics.json").read_text())
        metrics["run"]["gibbs"]["value"] = 0.5
        (out / "metrics.json").write_text(json.dumps(metrics))
    elif kind == "no run record":
        metrics = json.loads((out / "metrics.json").read_text())
        del metrics["_report"]
        (out / "metrics.json").write_text(json.dumps(metrics))


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("truncated NetCDF", "is partial: run/gibbs.nc cannot be read"),
        ("missing NetCDF", "is partial: run/gibbs.nc is missing"),
        ("NetCDF of another run", "is mixed: run/gibbs.nc belongs to run "),
        ("page of another run", "is mixed: index.html belongs to run "),
        ("metrics of another run", "is mixed: index.html belongs to run "),
        ("edited CSV", "is partial: labels.csv differs from the file run "),
        ("truncated metrics", "is partial: metrics.json cannot be read"),
        ("no run record", "metrics.json holds no run id"),
        ("edited metric", "is partial: metrics.json holds metrics that differ from those run "),
    ],
)
def test_a_partial_or_mixed_report_is_refused_in_one_line(tmp_path, capsys, kind, message):
    out, other = tmp_path / "out", tmp_path / "other"
    _write(1.0, out)
    _write(2.0, other)
    _damage(kind, out, other)
    with pytest.raises(IncompleteReportError, match=message):
        read_report(out)
    assert main(["report", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyromodels: error: report in ")
    assert message in lines[0]


def test_a_failed_build_leaves_the_target_untouched(tmp_path):
    target = tmp_path / "t"
    target.mkdir(mode=0o750)
    (target / "a").write_text("old")
    with pytest.raises(RuntimeError):
        with staged_directory(target) as stage:
            (stage / "a").write_text("new")
            raise RuntimeError("build failed")
    assert (target / "a").read_text() == "old" and _siblings(target) == []
    with staged_directory(target) as stage:
        (stage / "b").write_text("new")
    # the old entries the new directory lacks are kept, and so is the directory's mode
    assert sorted(os.listdir(target)) == ["a", "b"] and _siblings(target) == []
    assert target.stat().st_mode & 0o777 == 0o750


def test_check_target_refuses_unusable_directories(tmp_path, monkeypatch):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="out_dir must be a directory, but .* is a file"):
        check_target(a_file)
    with pytest.raises(ValueError, match="cannot be created: .*f is a file, not a directory"):
        check_target(a_file / "sub" / "dir")
    monkeypatch.chdir(tmp_path)
    for target in (".", tmp_path.parent):
        with pytest.raises(ValueError, match="must not be the current directory or one holding"):
            check_target(target)
    with pytest.raises(TypeError, match="out_dir must be a path"):
        check_target(3)

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(ValueError, match=r"cannot be written: .* \(Permission denied\)"):
        check_target(tmp_path / "new")


_WRITER = textwrap.dedent(
    """
    import sys
    import arviz as az, numpy as np
    from pyromodels.report import DemoResult, write_report
    draws = np.random.default_rng(0).normal(size=(4, 50_000))
    result = DemoResult("run", metrics={"gibbs": {"value": float(sys.argv[2])}},
                        inference_data={"gibbs": az.from_dict(posterior={"a": draws})})
    print("ready", flush=True)
    write_report([result], sys.argv[1], "t")
    """
)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_sigint_at_any_moment_leaves_one_whole_report(tmp_path):
    out = tmp_path / "report"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    subprocess.run([sys.executable, "-c", _WRITER, str(out), "1"], env=env, check=True,
                   capture_output=True, timeout=120)
    seen = set()
    for delay in (0.0, 0.02, 0.05, 0.1, 0.2, 0.35):  # a write takes about 0.3 s
        # SIGINT as a shell delivers it, even from a test runner's worker that ignores it
        child = subprocess.Popen([sys.executable, "-c", _WRITER, str(out), "2"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert child.stdout.readline().strip() == "ready"
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=120)
        _, metrics, _ = read_report(out)  # whole, whichever run it is
        seen.add(metrics["run"]["gibbs"]["value"])
        assert _siblings(out) == [], delay
        if metrics["run"]["gibbs"]["value"] == 2.0:  # put the old report back for the next try
            subprocess.run([sys.executable, "-c", _WRITER, str(out), "1"], env=env, check=True,
                           capture_output=True, timeout=120)
    assert seen <= {1.0, 2.0}


_KILLED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from pyromodels.report.atomic import staged_directory
    target, moment = Path(sys.argv[1]), sys.argv[2]
    rename = os.rename

    def rename_then_die(src, dst):  # SIGKILL right after the old target is set aside
        rename(src, dst)
        if ".old-" in str(dst):
            os.kill(os.getpid(), signal.SIGKILL)

    if moment == "swap":
        os.rename = rename_then_die
    with staged_directory(target) as stage:
        (stage / "a").write_text("new")
        if moment == "build":
            os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _killed_write(target: Path, moment: str) -> None:
    """Run a write of ``target`` in a child process that SIGKILLs itself at ``moment``."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.run([sys.executable, "-c", _KILLED, str(target), moment], env=env,
                           capture_output=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and flock")
def test_a_killed_write_leaves_a_staging_directory_that_the_next_write_removes(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    (target / "a").write_text("old")
    _killed_write(target, "build")
    assert (target / "a").read_text() == "old"
    assert [name.startswith(".t.new-") for name in _siblings(target)] == [True]
    with staged_directory(target) as stage:
        (stage / "a").write_text("next")
    assert (target / "a").read_text() == "next" and _siblings(target) == []


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL and flock")
def test_a_write_killed_mid_swap_is_completed_by_the_next_write(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    (target / "a").write_text("old")
    (target / "notes.txt").write_text("mine")  # moved into the new directory by the swap
    _killed_write(target, "swap")
    assert not target.exists() and len(_siblings(target)) == 2
    with staged_directory(target) as stage:
        (stage / "b").write_text("next")
    assert sorted(os.listdir(target)) == ["a", "b", "notes.txt"]
    assert (target / "a").read_text() == "new" and (target / "notes.txt").read_text() == "mine"
    assert _siblings(target) == []


@pytest.mark.skipif(os.name != "posix", reason="flock")
def test_the_staging_directory_of_a_live_write_is_left_alone(tmp_path):
    import fcntl

    target = tmp_path / "t"
    live = tmp_path / ".t.new-0123456789ab"
    live.mkdir()
    fd = os.open(live, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a writer in another process holds its own
        with staged_directory(target) as stage:
            (stage / "a").write_text("new")
        assert _siblings(target) == [live.name]
    finally:
        os.close(fd)
    with staged_directory(target) as stage:
        (stage / "a").write_text("newer")
    assert _siblings(target) == []
