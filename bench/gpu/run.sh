#!/usr/bin/env bash
# The GPU device check in one command, sized for one run of a few minutes on one GPU:
# installs the carried wheels, builds the fused engine, makes an OPUS-sized random bundle (float32
# for the GPU engine and transformers, int8 of the same weights for the CPU engines) and prints
# bench/gpu/gpu_bench.py's table.
#
#   bash bench/gpu/run.sh [OUT_DIR]
#
# Wheels (Python 3.12, manylinux x86-64) in .whl/: ctranslate2, langcodes, rapidfuzz (the image
# has PyTorch, transformers, sentencepiece, numpy, pybind11).
set -euo pipefail
out=${1:-${OUT:-/tmp/gpu-bench}}
work=${TMPDIR:-/tmp}/gpu-bundles
mkdir -p "$out" "$work"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 setup.py -q build_ext --inplace >"$out/build.log" 2>&1 || echo "fused engine not built"
python3 bench/random_bundle.py "$work/opus" --quantization float32 >/dev/null
python3 bench/random_bundle.py "$work/opus-int8" --quantization int8 >/dev/null  # same seed
python3 bench/decoding_bench.py --device cuda --bundle "$work/opus" \
  --checkpoint "$work/opus-checkpoint" --int8-bundle "$work/opus-int8" \
  --json "$out/gpu_bench.json" "${@:2}" 2>&1 | tee "$out/gpu_bench.txt"
# where the time of a step goes (kernels, by GPU time), steps launched one by one
python3 bench/gpu/profile_step.py --bundle "$work/opus" --batch 128 >"$out/profile_128.txt" 2>&1
grep -E "^(torch.topk|reorder)" "$out/profile_128.txt" || tail -5 "$out/profile_128.txt"
