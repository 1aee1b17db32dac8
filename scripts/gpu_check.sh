#!/usr/bin/env bash
# Verify the vLLM path on one CUDA GPU in a few minutes, with nothing downloaded but
# packages: the gpu-marked test (a tiny random Llama built locally) and the harness
# overhead benchmark (runner's vLLM backbone vs raw batched vllm.generate, same prompts).
#
#   bash scripts/gpu_check.sh            # from the repository root, venv active or not
#
# Needs: an NVIDIA GPU, and vllm importable (pip install -e ".[vllm,dev]"; install the
# CUDA torch that your vllm wants first). Writes gpu_check/ (JUnit XML, benchmark JSON)
# under $OUT if set, else under the current directory. Exit code: 0 = all passed.
set -euo pipefail

cd "$(dirname "$0")/.."
if [[ -f .venv/bin/activate && -z "${VIRTUAL_ENV:-}" ]]; then
  # shellcheck disable=SC1091
  . .venv/bin/activate
fi
out="${OUT:-.}/gpu_check"
mkdir -p "$out"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # prove nothing is fetched from the hub

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
  echo "gpu_check: nvidia-smi failed: no usable NVIDIA GPU here" >&2
  exit 2
}
python - <<'PY'
import sys
try:
    import torch, vllm
except ImportError as exc:
    sys.exit(f"gpu_check: {exc}; pip install -e '.[vllm,dev]' (CUDA torch first)")
if not torch.cuda.is_available():
    sys.exit("gpu_check: torch sees no CUDA device (a CPU-only torch build?)")
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), vllm {vllm.__version__}")
PY

start=$SECONDS
echo "== 1/2 gpu-marked tests (timeout 240 s)"
timeout 240 python -m pytest -q -p no:cacheprovider -m gpu tests/test_backbones_vllm.py \
  -rs --junitxml="$out/pytest-gpu.xml" 2>&1 | tee "$out/pytest-gpu.log"
# -m gpu selects the test; a skip means vllm/CUDA were not seen: treat it as a failure.
if grep -q " skipped" "$out/pytest-gpu.log"; then
  echo "gpu_check: the GPU test was skipped, see $out/pytest-gpu.log" >&2
  exit 1
fi

echo "== 2/2 harness overhead benchmark (timeout 240 s)"
timeout 240 python -m chronobench bench vllm-overhead --n 512 --max-new-tokens 32 \
  --json "$out/vllm_overhead.json"

echo "gpu_check: passed in $((SECONDS - start)) s; results in $out"
