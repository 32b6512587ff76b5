"""Moving contracts between devices: every tensor field moves, everything else is kept."""

import pandas as pd
import torch

from pyromodels.data import AnnotationTable, Graph, PairwiseAnnotations, Sequences


def _contracts():
    table = AnnotationTable.from_dataframe(
        pd.DataFrame({"task": ["a", "a", "b", "b"], "worker": ["u", "v", "u", "u"],
                      "label": ["x", "y", "x", "y"]}),
        allow_repeats=True,
    )
    pairs = PairwiseAnnotations.from_dataframe(
        pd.DataFrame({"i": ["a", "a"], "j": ["b", "c"], "worker": ["w", "v"], "link": [1, 0]})
    )
    graph = Graph.from_edges([[0, 2], [1, 2]], num_nodes=3, symmetric=False, nodes=["p", "q", "r"])
    seqs = Sequences(torch.tensor([1.0, 2.0, 3.0]), [1, 2])
    return {
        table: ("item_idx", "worker_idx", "label_idx"),
        pairs: ("i_idx", "j_idx", "worker_idx", "link"),
        graph: ("edges",),
        seqs: ("data", "lengths"),
    }


def test_to_moves_every_tensor_field_and_keeps_the_rest():
    for contract, tensors in _contracts().items():
        moved = contract.to("cpu")
        assert type(moved) is type(contract) and moved is not contract
        assert moved.device == torch.device("cpu") == contract.device
        assert contract._tensor_fields == tensors
        for field in contract.__dataclass_fields__:
            before, after = getattr(contract, field), getattr(moved, field)
            if field in tensors:
                assert torch.equal(before, after)
            elif isinstance(before, pd.Index):
                assert before.equals(after)
            else:
                assert before == after, field


def test_sequences_over_an_annotation_table_move_the_table():
    table = AnnotationTable.from_arrays([0, 1, 2], [0, 0, 1], [1, 0, 1])
    moved = Sequences(table, [2, 1]).to("cpu")
    assert isinstance(moved.data, AnnotationTable) and moved.data is not table
    assert moved.device == torch.device("cpu")
    assert torch.equal(moved.data.label_idx, table.label_idx)
