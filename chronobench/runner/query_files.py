"""User query files of a suite: which cells carry one, and checking each against its
built dataset before any cell runs (sequentially here, or in the workers of
:mod:`chronobench.runner.parallel`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def query_file_cells(cells: Sequence[Any]) -> list[Any]:
    """One cell per distinct (dataset with a user query file, data folder) of ``cells``:
    what :func:`validate_query_files` checks."""
    seen: set[str] = set()
    out = []
    for cell in cells:
        dspec = cell.spec.dataset
        if not dspec.queries_file or cell.dataset is None:
            continue
        key = f"{dspec.model_dump_json()}|{cell.spec.paths.data_dir}"
        if key not in seen:
            seen.add(key)
            out.append(cell)
    return out


def validate_query_file(cell: Any) -> None:
    """Check the cell's user query file against its built dataset (built first when
    needed): sample ids, sessions, versions."""
    from chronobench.runner.datasets import validate_queries

    validate_queries(cell.spec.dataset, data_dir=Path(cell.spec.paths.data_dir))


def validate_query_files(cells: Sequence[Any]) -> None:
    """Check every user query file of the suite against its built dataset, before any
    cell runs (resolving the cells already checked each file's shape; this checks its
    sample ids and targets, building the dataset first when needed)."""
    for cell in query_file_cells(cells):
        validate_query_file(cell)
