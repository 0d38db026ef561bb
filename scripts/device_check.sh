#!/usr/bin/env bash
# The GPU path, run on an NVIDIA GPU machine (issue 32 item 3; docs/lab-training.md, "GPU check"):
#
#   bash scripts/device_check.sh [--out DIR] [--plan] [--gpus N]
#
# Steps, each logged to DIR/<step>.log and summed up in DIR/summary.md:
#   gpu        nvidia-smi lists the GPUs (none: stop, exit 3: nothing below can run here)
#   venv       the project's .venv (scripts/install.sh when it is missing)
#   torch      a CUDA build of torch in .venv (installed from $TORCH_INDEX when the venv's has no CUDA;
#              DEVICE_CHECK_NO_INSTALL=1: never install, stop with exit 4 instead)
#   train      the cuda-small profile for 3 steps on nccl (min(2, GPUs) ranks); run.json must say cuda/nccl
#   bands      reference bands recorded on these GPUs, cuda-small's and cpu-tiny's, when there are 2 (their
#              2 ranks need one GPU each); written under reference/traces/ and copied to DIR
#   grade      the three training exercises' solutions graded with --devices detect (the job asks for 2
#              devices and falls back to CPU ranks with fewer); each result's status, score and device
#   vllm       VLLMRolloutEngine on the shipped tiny checkpoint, if vLLM installs (else skipped, said so)
#
# --plan prints the commands it would run for N GPUs (default: what nvidia-smi lists) and runs nothing.
# Exit codes: 0 every step ran (a skipped vllm included), 1 a step failed, 3 no GPU, 4 no CUDA torch.
# Tested here (no GPU) up to the device: tests/scripts/test_device_check.py.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/device-check-out}
PLAN=0
GPUS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --plan) PLAN=1; shift ;;
    --gpus) GPUS=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "device_check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
PY=$ROOT/.venv/bin/python
TORCH_INDEX=${TORCH_INDEX:-https://download.pytorch.org/whl/cu124}
TRAINING=(ch05.per_tensor_param ch06.context_parallel ch07.three_step_training)
mkdir -p "$OUT"
SUMMARY=$OUT/summary.md
[ "$PLAN" = 1 ] || printf '# device check %s\n\n| step | result |\n|---|---|\n' "$(date -u +%FT%TZ)" > "$SUMMARY"

note() {  # step, result
  echo "== $1: $2"
  [ "$PLAN" = 1 ] || printf '| %s | %s |\n' "$1" "$2" >> "$SUMMARY"
}

run_step() {  # step, command...: run it, log it, note ok/failed; returns its status
  local step=$1; shift
  if [ "$PLAN" = 1 ]; then echo "$step: $*"; return 0; fi
  echo "== $step: $*"
  if "$@" > "$OUT/$step.log" 2>&1; then note "$step" "ok"; return 0; fi
  note "$step" "FAILED (exit $?; last lines in $step.log)"; tail -n 20 "$OUT/$step.log"; return 1
}

# -- gpu ----------------------------------------------------------------------------------------------
if [ -z "$GPUS" ]; then
  if ! command -v nvidia-smi > /dev/null 2>&1; then
    note gpu "stopped: no NVIDIA GPU here (nvidia-smi not found); every step below needs one"
    exit 3
  fi
  GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  if [ "${GPUS:-0}" -lt 1 ]; then
    note gpu "stopped: nvidia-smi lists no GPU ($(nvidia-smi -L 2>&1 | head -n 1))"
    exit 3
  fi
  [ "$PLAN" = 1 ] || nvidia-smi -L > "$OUT/gpu.log" 2>&1
fi
RANKS=$(( GPUS < 2 ? GPUS : 2 ))
note gpu "$GPUS GPU(s); the cuda-small run uses $RANKS rank(s) on nccl"
failed=0

# -- venv and a CUDA torch ----------------------------------------------------------------------------
if [ "$PLAN" = 1 ]; then
  echo "venv: bash scripts/install.sh (when .venv is missing)"
  echo "torch: $PY -m pip install torch==<the venv's version> --index-url $TORCH_INDEX (when it has no CUDA)"
else
  if [ ! -x "$PY" ]; then run_step venv bash scripts/install.sh || exit 1; else note venv "ok (.venv present)"; fi
  cuda_ok() { "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' > /dev/null 2>&1; }
  if ! cuda_ok; then
    version=$("$PY" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || echo "")
    if [ "${DEVICE_CHECK_NO_INSTALL:-0}" = 1 ] || [ -z "$version" ]; then
      note torch "stopped: the torch in .venv ($version) has no CUDA and installing is off; install a CUDA build"
      exit 4
    fi
    "$PY" -m pip install "torch==$version" --index-url "$TORCH_INDEX" > "$OUT/torch.log" 2>&1
    if ! cuda_ok; then
      note torch "stopped: no CUDA torch after installing from $TORCH_INDEX (torch.log)"
      exit 4
    fi
  fi
  note torch "ok ($("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)'))"
fi

# -- train, bands, grade --------------------------------------------------------------------------------
run_step train env TITANGRADE_DEVICE=cuda "$PY" -m exercises.lab.train --profile cuda-small --steps 3 \
  --world-size "$RANKS" --out "$OUT/cuda-small" || failed=1
if [ "$PLAN" = 0 ] && [ -f "$OUT/cuda-small/run.json" ]; then
  "$PY" - "$OUT/cuda-small/run.json" <<'EOF' >> "$OUT/train.log" 2>&1 || { note train "FAILED: run.json is not a cuda/nccl run"; failed=1; }
import json, sys
run = json.load(open(sys.argv[1]))
print("run.json:", {k: run.get(k) for k in ("device", "backend", "dtype", "rollout_dtype", "world_size")})
sys.exit(0 if (run.get("device"), run.get("backend")) == ("cuda", "nccl") else 1)
EOF
fi
if [ "$GPUS" -ge 2 ]; then  # both profiles run 2 ranks, one GPU each
  run_step bands-cuda-small "$PY" scripts/record_reference_traces.py band --profile cuda-small --seeds 1 2 3 \
    || failed=1
  run_step bands-cpu-tiny env TITANGRADE_DEVICE=cuda "$PY" scripts/record_reference_traces.py band \
    --profile cpu-tiny || failed=1
else
  note bands "skipped: the bands' 2 ranks need 2 GPUs (this machine has $GPUS); the graded exercise falls back to CPU ranks here"
fi
if [ "$PLAN" = 0 ]; then
  for band in reference/traces/*/cuda-*/band.json; do
    [ -f "$band" ] && cp "$band" "$OUT/band-$(echo "$band" | cut -d/ -f3)-$(basename "$(dirname "$band")").json"
  done
fi
for id in "${TRAINING[@]}"; do
  solution=$(ls reference/"$id"/solution.ipynb)
  run_step "grade-$id" sh -c "\"$PY\" -m service.cli grade \"$solution\" --devices detect --json > \"$OUT/grade-$id.json\"" \
    || failed=1
  if [ "$PLAN" = 0 ] && [ -s "$OUT/grade-$id.json" ]; then
    note "grade-$id" "$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["status"], r["score"], "/", r["max_score"], "on", r["device"], "x", r.get("device_count"), r.get("dtype") or "")' "$OUT/grade-$id.json")"
  fi
done

# -- vLLM ----------------------------------------------------------------------------------------------
if [ "$PLAN" = 1 ]; then
  echo "vllm: $PY -m pip install vllm; VLLMRolloutEngine on exercises/lab/assets/qwen3-tiny-wordle-sft"
elif "$PY" -c 'import vllm' > /dev/null 2>&1 || "$PY" -m pip install vllm > "$OUT/vllm-install.log" 2>&1; then
  run_step vllm "$PY" - <<'EOF' || failed=1
from exercises.lab.rollout import VLLMRolloutEngine
engine = VLLMRolloutEngine("exercises/lab/assets/qwen3-tiny-wordle-sft", stop_ids=[0], max_model_len=512)
engine.seed(1)
print("generated", len(engine.generate([1, 2, 3], 8)), "tokens")
EOF
else
  note vllm "skipped: vLLM did not install (vllm-install.log)"
fi
[ "$PLAN" = 1 ] || echo "summary: $SUMMARY"
exit $failed
