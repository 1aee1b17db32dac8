"""What a dataset is to the harness: one object carrying its build parameters (a pydantic
model holding their defaults), its granularities, its own check and its builder.

A :class:`Dataset` is the target of a ``dataset`` registry entry
(:data:`chronobench.runner.components.DATASETS`, or a plug-in under the entry-point group
``chronobench.datasets``); :func:`data_builders.build_dataset` builds one into a folder.
Nothing here names a dataset: LoCoMo and MemoryAgentBench are two such objects
(``data_builders/locomo/dataset.py``, ``data_builders/mab/dataset.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from chronobench.options import model_defaults
from data_builders.errors import DatasetError
from data_builders.result import BuildResult


@dataclass(frozen=True)
class BuildPlan:
    """One build, its source read and checked: the folder's granularity (its name under
    ``<out>/<dataset>/``), the source's name and sha256 (recorded in the manifest and
    compared for reuse), and ``run`` to build the streams and queries."""

    granularity: str
    source_name: str
    source_sha256: str
    run: Callable[[], BuildResult]


# f(granularity or None, source path or None, validated params) -> BuildPlan
Planner = Callable[[str | None, str | Path | None, Any], BuildPlan]
# f(dataset spec, where) -> None: the dataset's own rules on a run's dataset config
Check = Callable[[Any, str], None]


@dataclass(frozen=True)
class Dataset:
    """A dataset: everything the harness, the build command and a run's check need.

    ``params``: a pydantic model (``extra="forbid"``) of its build parameters, holding
    their defaults (the one place they are written: config files carry deviations only).
    ``plan``: reads the source and returns the :class:`BuildPlan` (None: a task kind
    builds and reads the dataset itself, as the repair track does). ``granularities``:
    the values ``dataset.granularity`` may take, the first the default (empty: the plan
    derives it from the params). ``check``: the dataset's own rules on a run's dataset
    config, beyond its params model. ``recorded``: the params a run's spec records even
    at their default value; published run ids hash exactly the keys the shipped configs
    always gave, so these are those keys (any other key is recorded when it is given).
    ``title``: one line for ``chronobench build --help``. ``provenance``: which source
    fields feed what (indexed text, anchors, probes, ...), recorded in each manifest.
    """

    name: str
    params: type[BaseModel]
    title: str = ""
    plan: Planner | None = None
    granularities: tuple[str, ...] = ()
    check: Check | None = None
    recorded: tuple[str, ...] = ()
    provenance: Mapping[str, list[str]] = field(default_factory=dict)

    def defaults(self) -> dict[str, Any]:
        """The build parameters that have a default, with it."""
        return model_defaults(self.params)

    def build_params(self, given: Mapping[str, Any]) -> BaseModel:
        """``given`` validated by the params model (defaults filled in); a bad or unknown
        key is a :class:`DatasetError` naming it."""
        try:
            return self.params.model_validate(dict(given))
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                known = ", ".join(self.params.model_fields)
                raise DatasetError(
                    f"unknown {self.name} build parameter {key!r}; known: {known}"
                ) from None
            raise DatasetError(
                f"{self.name} build parameter {key!r}: {err['msg']} (got {err.get('input')!r})"
            ) from None
