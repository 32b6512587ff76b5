"""A checkpoint is bound to what made it: resuming it on other data of the same shape is
refused for every engine that writes one, damaged files are refused before they are read, and
a checkpoint path that cannot hold a file is refused before the run starts."""

import dataclasses
import io
import zipfile

import pytest
import torch

from pyromodels.core import run_em, run_gibbs
from pyromodels.core.checkpoint import load_checkpoint
from pyromodels.core.fingerprint import data_fingerprint
from pyromodels.crowd.ds import DawidSkene
from pyromodels.crowd.hmm import SequentialDawidSkene
from pyromodels.data.simulate_crowd import simulate_annotations, simulate_sequential_annotations
from pyromodels.ddpm import DPMixture, DPMixturePrior, TruncatedDPMixture
from pyromodels.ddpm.mcem import MCEMSettings
from pyromodels.mixture import GaussianMixtureModel

OTHER_DATA = "^resume: the checkpoint was written for other data"


@pytest.fixture(scope="module")
def points():
    gen = torch.Generator().manual_seed(0)
    return torch.cat([torch.randn(12, 2, generator=gen) - 2, torch.randn(12, 2, generator=gen) + 2])


def _nudged(x: torch.Tensor) -> torch.Tensor:
    """``x`` with one value moved a little: the same shape and dtype, other data."""
    y = x.clone()
    y[0, 0] += 1e-3
    return y


def _relabelled(table):
    """``table`` with its first label changed to another class: the same shape, other data."""
    labels = table.label_idx.clone()
    labels[0] = (labels[0] + 1) % table.num_classes
    return dataclasses.replace(table, label_idx=labels)


def _crowd_table():
    return simulate_annotations(15, 4, 3, seed=3)[0]


def _sequences():
    seqs, _ = simulate_sequential_annotations([5, 4], 3, 2, seed=4)
    return seqs, dataclasses.replace(seqs, data=_relabelled(seqs.data))


CHAINS = dict(num_samples=3, num_warmup=1, num_chains=1, progress=False)
CASES = {
    "mixture-em": (lambda: GaussianMixtureModel(2), "em", dict(max_iter=3, progress=False)),
    "mixture-gibbs": (lambda: GaussianMixtureModel(2), "gibbs", CHAINS),
    "mixture-svi": (lambda: GaussianMixtureModel(2), "svi",
                    dict(num_steps=2, num_samples=2, progress=False)),
    "mixture-nuts": (lambda: GaussianMixtureModel(2), "nuts",
                     dict(num_samples=2, num_warmup=2, num_chains=1, progress=False)),
    "truncated-svi": (lambda: TruncatedDPMixture(truncation=3), "svi",
                      dict(num_steps=2, num_samples=2, progress=False)),
    "truncated-gibbs": (lambda: TruncatedDPMixture(truncation=3), "gibbs", CHAINS),
    "ddpm-mcem": (lambda: DPMixture(DPMixturePrior()), "mcem",
                  dict(settings=MCEMSettings(rounds=2, init_clusters=2), progress=False)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_resume_on_other_points_of_the_same_shape_is_refused(points, tmp_path, case):
    make, method, options = CASES[case]
    path = tmp_path / "run.ckpt"
    make().fit(points, method=method, seed=1, checkpoint=path, **options)
    assert load_checkpoint(path)["data"] == data_fingerprint(make().prepare(points))
    with pytest.raises(ValueError, match=OTHER_DATA):
        make().fit(_nudged(points), method=method, seed=1, resume=path, **options)
    make().fit(points, method=method, seed=1, resume=path, **options)  # the same data resume


@pytest.mark.parametrize("method", ["em", "gibbs"])
def test_dawid_skene_resume_on_other_labels_is_refused(tmp_path, method):
    table, path = _crowd_table(), tmp_path / "ds.ckpt"
    options = dict(max_iter=3, progress=False) if method == "em" else CHAINS
    DawidSkene().fit(table, method=method, seed=1, checkpoint=path, **options)
    with pytest.raises(ValueError, match=OTHER_DATA):
        DawidSkene().fit(_relabelled(table), method=method, seed=1, resume=path, **options)


def test_sequential_dawid_skene_gibbs_resume_on_other_labels_is_refused(tmp_path):
    seqs, other = _sequences()
    path = tmp_path / "hmm.ckpt"
    SequentialDawidSkene().fit(seqs, method="gibbs", seed=1, checkpoint=path, **CHAINS)
    with pytest.raises(ValueError, match=OTHER_DATA):
        SequentialDawidSkene().fit(other, method="gibbs", seed=1, resume=path, **CHAINS)


def _tensor_record_offset(content: bytes) -> tuple[int, int]:
    """``(offset, size)`` in a checkpoint file of the largest tensor record of its zip."""
    start = content.index(b"PK\x03\x04")
    archive = zipfile.ZipFile(io.BytesIO(content[start:]))
    info = max((i for i in archive.infolist() if "/data/" in i.filename),
               key=lambda i: i.file_size)
    assert info.compress_type == zipfile.ZIP_STORED
    header = content[start + info.header_offset:start + info.header_offset + 30]
    name_len, extra_len = int.from_bytes(header[26:28], "little"), int.from_bytes(header[28:30], "little")
    return start + info.header_offset + 30 + name_len + extra_len, info.file_size


def test_flipped_bytes_in_a_tensor_record_are_refused(points, tmp_path):
    path = tmp_path / "gibbs.ckpt"
    options = dict(num_samples=4, num_warmup=2, num_chains=1, seed=2, progress=False)
    run_gibbs(GaussianMixtureModel(2), points, checkpoint=path, **options)
    content = bytearray(path.read_bytes())
    offset, size = _tensor_record_offset(bytes(content))
    assert size >= 64
    for i in range(offset, offset + 64):
        content[i] ^= 0xFF
    path.write_bytes(bytes(content))
    with pytest.raises(ValueError, match="^resume: .* is damaged: its contents do not match"):
        run_gibbs(GaussianMixtureModel(2), points, resume=path, **options)
    with pytest.raises(ValueError, match="is damaged"):
        load_checkpoint(path)


@pytest.mark.parametrize("engine", ["gibbs", "em", "mcem"])
def test_a_directory_as_checkpoint_is_refused_before_the_run_starts(points, tmp_path, engine,
                                                                   monkeypatch):
    calls = []
    if engine == "gibbs":
        def fit(**kw):
            return run_gibbs(GaussianMixtureModel(2), points, progress=False, num_samples=2,
                             callbacks=[lambda step, info: calls.append(step)], **kw)
    elif engine == "em":
        def fit(**kw):
            return run_em(GaussianMixtureModel(2), points, progress=False, max_iter=2,
                          callbacks=[lambda step, info: calls.append(step)], **kw)
    else:
        from pyromodels.ddpm import mcem

        monkeypatch.setattr(mcem, "_round", lambda *args: calls.append(args))

        def fit(**kw):
            settings = MCEMSettings(rounds=2, init_clusters=2)
            return DPMixture(DPMixturePrior()).fit(points, settings=settings, progress=False, **kw)
    with pytest.raises(ValueError, match="^checkpoint must be a file path, got the directory"):
        fit(checkpoint=tmp_path)
    with pytest.raises(ValueError, match="^checkpoint cannot be written to .* is not a directory"):
        (tmp_path / "file").write_text("")
        fit(checkpoint=tmp_path / "file" / "run.ckpt")
    assert calls == []


def test_the_fingerprint_covers_values_dtypes_and_structure():
    x = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    base = data_fingerprint({"x": x, "n": 2})
    assert base == data_fingerprint({"x": x.clone(), "n": 2})
    variants = [{"x": x.float(), "n": 2}, {"x": x.reshape(3, 2), "n": 2}, {"x": x, "n": 3},
                {"x": _nudged(x), "n": 2}, {"y": x, "n": 2}, [x, 2], {"x": x, "n": 2.0}]
    assert [data_fingerprint(v) == base for v in variants] == [False] * len(variants)
    table = _crowd_table()
    renamed = dataclasses.replace(table, classes=table.classes.astype(str))
    assert data_fingerprint(table) != data_fingerprint(renamed)
    with pytest.raises(TypeError, match=r"^data\['f'\] holds a builtins.function"):
        data_fingerprint({"f": lambda: None})


def test_the_fingerprint_covers_sparse_tensors_by_their_entries():
    dense = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    for sparse in (dense.to_sparse_csr(), dense.to_sparse()):
        base = data_fingerprint({"g": sparse})
        assert base == data_fingerprint({"g": sparse.to_dense().to_sparse(layout=sparse.layout)})
        moved = dense.clone()
        moved[0, 1], moved[0, 0] = 0.0, 1.0  # the same values at another place
        assert base != data_fingerprint({"g": moved.to_sparse(layout=sparse.layout)})
        assert base != data_fingerprint({"g": (2 * dense).to_sparse(layout=sparse.layout)})
        assert base != data_fingerprint({"g": dense})
    assert (data_fingerprint(dense.to_sparse_csr())
            != data_fingerprint(dense.to_sparse()))
    with pytest.raises(TypeError, match="sparse_csc tensor, which has no fingerprint"):
        data_fingerprint(dense.to_sparse_csc())


def test_a_checkpoint_resumes_on_another_backend_of_the_same_data(tmp_path):
    """The fingerprint covers what the data are, not how the passes run: a Dawid-Skene EM
    checkpoint written on the torch passes resumes on the compiled ones (and an HMM Gibbs
    checkpoint likewise), rather than being refused as other data."""
    table, path = _crowd_table(), tmp_path / "ds.ckpt"
    options = dict(max_iter=3, progress=False)
    DawidSkene(backend="torch").fit(table, method="em", seed=1, checkpoint=path, **options)
    DawidSkene(backend="auto").fit(table, method="em", seed=1, resume=path, **options)
    seqs, _ = _sequences()
    path = tmp_path / "hmm.ckpt"
    SequentialDawidSkene(backend="torch").fit(seqs, method="gibbs", seed=1, checkpoint=path, **CHAINS)
    SequentialDawidSkene(backend="numba").fit(seqs, method="gibbs", seed=1, resume=path, **CHAINS)
