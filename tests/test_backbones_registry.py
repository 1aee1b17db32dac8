"""Registry: lazy entries, registration, and no heavy imports on the default path."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _backbones_fixtures import make_request, texts

from chronobench.backbones import (
    available_backbones,
    create_backbone,
    register_backbone,
    resolve_backbone,
)
from chronobench.backbones.scripted import ScriptedBackbone
from chronobench.protocols import Backbone


def test_builtin_names() -> None:
    assert {"extractive", "scripted", "vllm", "openai", "transformers"} <= set(
        available_backbones()
    )


def test_create_extractive_is_a_backbone() -> None:
    bb = create_backbone("extractive", abstain_threshold=0.3)
    assert isinstance(bb, Backbone)
    assert bb.name == "extractive"


def test_unknown_name_lists_registered() -> None:
    with pytest.raises(KeyError, match="unknown backbone 'nope'.*extractive"):
        create_backbone("nope")


def test_register_string_and_decorator() -> None:
    register_backbone("scripted_alias", "chronobench.backbones.scripted:ScriptedBackbone")
    assert resolve_backbone("scripted_alias") is ScriptedBackbone

    @register_backbone("echo_test")
    class Echo:
        name = "echo_test"
        model = "echo"

        def generate(self, requests):  # type: ignore[no-untyped-def]
            return [r.question for r in requests]

    bb = create_backbone("echo_test")
    assert bb.generate([make_request("hi")]) == ["hi"]  # plain strings: the cache wraps them
    with pytest.raises(ValueError, match="module:Class"):
        register_backbone("bad", "no_colon_here")


def test_scripted_mapping_callable_and_default() -> None:
    bb = ScriptedBackbone({"q1": "a1"}, default="dunno")
    assert texts(bb.generate([make_request("q1"), make_request("q2")])) == ["a1", "dunno"]
    assert bb.batch_sizes == [2]
    upper = ScriptedBackbone(lambda r: r.question.upper())
    assert texts(upper.generate([make_request("x")])) == ["X"]


def test_default_path_imports_nothing_heavy() -> None:
    code = textwrap.dedent(
        """
        import sys
        import chronobench.backbones as b
        bb = b.create_backbone("extractive")
        bb.generate([])
        b.resolve_backbone("scripted")
        heavy = [m for m in ("vllm", "torch", "transformers", "httpx") if m in sys.modules]
        print(",".join(heavy))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "", f"heavy modules imported: {out.stdout}"
