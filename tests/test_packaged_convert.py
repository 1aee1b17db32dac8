"""The packaged model's converted folder: recipe 2 drops the GGUF quantization config,
and a recipe-1 folder is carried over without converting again."""

from __future__ import annotations

import json
import os
from pathlib import Path

from chronobench.backbones.packaged import converted_folder
from chronobench.backbones.split_models import SPLIT, model_file


def test_a_recipe_1_folder_is_carried_over_with_a_plain_config(tmp_path: Path) -> None:
    m = SPLIT["qwen2.5-0.5b"]
    gguf = model_file(m, tmp_path)
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"")  # present: nothing is converted or verified from it here
    old = gguf.parent / f"{m.name}-{m.sha256[:12]}-r1"
    old.mkdir()
    quant = {"quant_method": "gguf", "gguf_file": m.filename, "dequantize": False}
    config = {"model_type": "qwen2", "dtype": "float32", "quantization_config": quant}
    (old / "config.json").write_text(json.dumps(config))
    (old / "model.safetensors").write_bytes(b"tensors")

    new = converted_folder("qwen-0b5", tmp_path)

    assert new.name == f"{m.name}-{m.sha256[:12]}-r2"
    assert json.loads((new / "config.json").read_text()) == {
        "model_type": "qwen2",
        "dtype": "float32",
    }
    # The tensors are the same file (a hard link), and the old folder is untouched.
    assert os.path.samefile(new / "model.safetensors", old / "model.safetensors")
    assert json.loads((old / "config.json").read_text()) == config
    assert converted_folder("qwen-0b5", tmp_path) == new  # carried over once
