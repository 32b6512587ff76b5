"""From a DataFrame to labels without slow detours: the compiled pass for the final
posteriors, integer ids coded without hashing, labels grouped by item without sorting, the
compiled passes loaded from disk."""

import json
import textwrap

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.core.device import default_dtype
from pyromodels.crowd.ds import em
from pyromodels.crowd.ds.kernels import compiled
from pyromodels.crowd.ds.kernels.groups import item_cells, item_groups
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import AnnotationTable, WorkerPopulation, columns, simulate_annotations


def _forbidden(*args, **kwargs):
    raise AssertionError("the slow path ran")


@pytest.fixture(scope="module")
def table():
    return simulate_annotations(400, WorkerPopulation(12, labels_per_item=4), 4, seed=3)[0]


@pytest.mark.parametrize("method", ["em", "gibbs"])
def test_predict_runs_the_compiled_pass_and_equals_the_torch_path(table, method, monkeypatch):
    kwargs = ({"num_samples": 20, "num_warmup": 10, "num_chains": 2} if method == "gibbs"
              else {})
    with default_dtype(torch.float64):
        post = DawidSkene().fit(table, method=method, seed=0, progress=False, **kwargs)
        torch_probs = DawidSkene(backend="torch").predict(post, table)
        torch_loglik = DawidSkene(backend="torch").log_likelihood_pointwise(post.data,
                                                                             post.samples)["y"]
        monkeypatch.setattr(em, "log_emissions", _forbidden)  # the torch sparse path
        probs = DawidSkene().predict(post, table)
        loglik = DawidSkene().log_likelihood_pointwise(post.data, post.samples)["y"]
    assert probs.dtype == torch.float64 and probs.shape == (table.num_items, 4)
    torch.testing.assert_close(probs, torch_probs, rtol=0, atol=1e-12)
    torch.testing.assert_close(loglik, torch_loglik, rtol=1e-12, atol=1e-12)
    assert torch.equal(probs.argmax(-1), torch_probs.argmax(-1))


@pytest.mark.parametrize("backend", compiled.BACKENDS)
def test_an_impossible_item_hands_the_posteriors_back_to_the_torch_path(table, backend):
    with default_dtype(torch.float64):
        data = DawidSkene().prepare(table)
        params = em.majority_start(data)
        confusion = params["confusion"].clone()
        w, y = int(table.worker_idx[0]), int(table.label_idx[0])
        confusion[w, :, y] = 0.0  # the first label is impossible under every class
        confusion[w] /= confusion[w].sum(-1, keepdim=True)
        q_n, norm_n = em.table_posteriors(table, params["prior"], confusion, backend)
        q_t, norm_t = em.table_posteriors(table, params["prior"], confusion, "torch")
    assert bool(torch.isinf(norm_n).any())
    torch.testing.assert_close(q_n, q_t, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(norm_n, norm_t, rtol=0, atol=0)


def _reference_codes(values: pd.Series):
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64), pd.Index(uniques)


@pytest.mark.parametrize("column", [
    np.array([7, 3, 3, 9, 7, 4]),
    np.array([-5, 2, -5, 0], dtype=np.int32),
    np.array([200, 3, 255, 3], dtype=np.uint8),
    np.array([2 ** 64 - 1, 2 ** 64 - 3, 2 ** 64 - 1], dtype=np.uint64),
    np.random.default_rng(0).integers(0, 5_000, size=20_000),
])
def test_integer_ids_are_coded_without_hashing_and_as_before(column, monkeypatch):
    values = pd.Series(column)
    expected = _reference_codes(values)
    monkeypatch.setattr(columns, "factorize_ids", _forbidden)  # hashing
    codes, index = columns.factorize_column(values, "df['task']", None, "items")
    np.testing.assert_array_equal(codes, expected[0])
    assert codes.dtype == np.int64
    assert index.equals(expected[1]) and index.dtype == expected[1].dtype


@pytest.mark.parametrize("column, known", [
    (pd.Series(["b", "a", "b"]), None),  # text ids: hashed
    (pd.Series([5, 10 ** 12, 5]), None),  # a range far wider than the column
    (pd.Series([1, None, 2], dtype="Int64"), None),  # nullable integers: the NaN check
    (pd.Series([3, 1, 3]), [3, 1]),  # a given id list fixes the order
])
def test_other_columns_still_go_through_factorize_ids(column, known, monkeypatch):
    calls = []
    original = columns.factorize_ids
    monkeypatch.setattr(columns, "factorize_ids",
                        lambda *a, **k: calls.append(a) or original(*a, **k))
    try:
        columns.factorize_column(column, "df['task']", known, "items")
    except ValueError as exc:  # the nullable column holds a missing id
        assert "missing value" in str(exc)
    assert len(calls) == 1


def test_a_dataframe_of_integer_ids_gives_the_table_it_gave_before(table):
    df = table.to_frame().sample(frac=1.0, random_state=0)
    df["task"] = df["task"] * 3 + 11  # sparse-ish, shifted ids
    built = AnnotationTable.from_dataframe(df)
    for column, index, codes in (("task", built.items, built.item_idx),
                                 ("worker", built.workers, built.worker_idx),
                                 ("label", built.classes, built.label_idx)):
        ref_codes, ref_index = _reference_codes(df[column])
        assert index.equals(ref_index)
        np.testing.assert_array_equal(codes.numpy(), ref_codes)


_FRAME = """
    import json, sys
    import pandas as pd
    df = pd.DataFrame({"task": [1, 0, 2, 0, 1, 1, 2, 0], "worker": [0, 0, 0, 1, 1, 2, 1, 2],
                       "label": [0, 0, 1, 1, 1, 1, 0, 2]})  # not in item order
"""


def test_a_fresh_process_fits_on_the_c_passes_without_starting_numba(fresh_python):
    code = textwrap.dedent(_FRAME) + textwrap.dedent("""
        from pyromodels.crowd.estimators import DawidSkeneEstimator
        est = DawidSkeneEstimator(n_iter=3).fit(df)
        numba_passes = [m for m in sys.modules if m.startswith("pyromodels.crowd.ds.kernels.")
                        and m.rsplit(".", 1)[1] in ("passes", "unrolled", "scaling")]
        print(json.dumps({"backend": est.posterior_.data.backend, "numba_passes": numba_passes,
                          "labels": est.labels_.tolist()}))
    """)
    out = json.loads(fresh_python(code).splitlines()[-1])
    namespace = {}
    exec(textwrap.dedent(_FRAME), namespace)
    from pyromodels.crowd.estimators import DawidSkeneEstimator

    here = DawidSkeneEstimator(n_iter=3).fit_predict(namespace["df"]).tolist()
    assert out == {"backend": "c", "numba_passes": [], "labels": here}


def test_the_numba_passes_load_from_the_disk_cache_in_a_fresh_process(fresh_python):
    # the fallback where the C passes were not built
    code = textwrap.dedent(_FRAME) + textwrap.dedent("""
        from pyromodels.crowd.ds.kernels import groups
        from pyromodels.crowd.ds.model import DawidSkene
        from pyromodels.data import AnnotationTable
        table = AnnotationTable.from_dataframe(df)
        DawidSkene(backend="numba").fit(table, method="em", max_iter=3, progress=False)
        from pyromodels.crowd.ds.kernels import passes, scaling, unrolled
        hits = misses = 0
        for module in (groups, passes, scaling, unrolled):
            for obj in vars(module).values():
                if hasattr(obj, "stats") and getattr(obj, "signatures", None):
                    hits += sum(obj.stats.cache_hits.values())
                    misses += sum(obj.stats.cache_misses.values())
        print(json.dumps({"hits": hits, "misses": misses}))
    """)
    fresh_python(code)  # fills the cache for these signatures if they are new
    again = json.loads(fresh_python(code).splitlines()[-1])
    # four compiled functions run (the grouping by item, the start's counts, the EM pass for
    # K = 3, the posteriors), each loaded from disk and none compiled
    assert again == {"hits": 4, "misses": 0}


@pytest.mark.parametrize("backend", compiled.BACKENDS)
@pytest.mark.parametrize("order", ["items", "shuffled", "workers"])
def test_labels_are_grouped_by_item_in_table_order_without_sorting(table, order, backend,
                                                                   monkeypatch):
    item, worker, label = table.item_idx, table.worker_idx, table.label_idx
    if order == "shuffled":
        perm = torch.randperm(len(item), generator=torch.Generator().manual_seed(0))
    else:
        perm = torch.argsort(item if order == "items" else worker, stable=True)
    shuffled = AnnotationTable.from_arrays(item[perm], worker[perm], label[perm],
                                           num_items=table.num_items + 2,  # two unlabelled
                                           num_workers=table.num_workers,
                                           num_classes=table.num_classes)
    rows = np.argsort(shuffled.item_idx.numpy(), kind="stable")
    monkeypatch.setattr(np, "argsort", _forbidden)
    workers = shuffled.worker_idx.numpy()[rows]
    labels = shuffled.label_idx.numpy()[rows]
    if backend == "numba":
        ptr, *grouped = item_groups(shuffled)
        expected = workers, labels
    else:  # the C passes read one cell per label, worker * K + label
        ptr, *grouped = item_cells(shuffled)
        expected = (workers * shuffled.num_classes + labels,)
    assert all(g.dtype == np.int32 for g in grouped)
    for got, want in zip(grouped, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    counts = np.bincount(shuffled.item_idx.numpy(), minlength=shuffled.num_items)
    np.testing.assert_array_equal(np.diff(ptr), counts)
    assert ptr[-1] == len(rows) and counts[-2:].tolist() == [0, 0]


def test_without_the_c_passes_a_fresh_process_fits_the_same_labels_on_numba(fresh_python):
    # what a machine without a C compiler runs: the numba passes and the NumPy table checks
    code = textwrap.dedent("""
        import json, os, sys
        os.environ["PYROMODELS_NO_C"] = "1"
        from pyromodels.crowd.estimators import DawidSkeneEstimator
        from pyromodels.data import WorkerPopulation, simulate_annotations
        table, _ = simulate_annotations(300, WorkerPopulation(15, labels_per_item=4), 4, seed=8)
        frame = table.to_frame().sample(frac=1.0, random_state=0)
        est = DawidSkeneEstimator(n_iter=30).fit(frame)
        loaded = [m.rsplit(".", 1)[1] for m in sys.modules
                  if m.startswith("pyromodels.") and m.rsplit(".", 1)[1] in ("_cpass", "_ctable")]
        print(json.dumps({"backend": est.posterior_.data.backend, "loaded": loaded,
                          "labels": est.labels_.tolist()}))
    """)
    out = json.loads(fresh_python(code).splitlines()[-1])
    from pyromodels.crowd.estimators import DawidSkeneEstimator
    from pyromodels.data import WorkerPopulation, simulate_annotations

    table, _ = simulate_annotations(300, WorkerPopulation(15, labels_per_item=4), 4, seed=8)
    here = DawidSkeneEstimator(n_iter=30).fit(table.to_frame().sample(frac=1.0, random_state=0))
    assert here.posterior_.data.backend == "c"
    assert out == {"backend": "numba", "loaded": [], "labels": here.labels_.tolist()}
