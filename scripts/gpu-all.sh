#!/usr/bin/env bash
# Every prepared GPU check, in one command, for a session that is lent a GPU for a few minutes.
#   scripts/gpu-all.sh [--out DIR] [--device N] [--part 1|2|all] [--dry-run]
# Writes DIR (default $OUT, else gpu-all-<time>) with one file per check, its log beside it, and
# DIR/summary.json: each check's exit status and seconds. A check that fails or runs past its time
# is recorded and the next one runs. In order of value (docs/validation.md says what each checks):
#   part 1 (about 8 minutes at most):
#     nvidia-smi.txt        the GPU, its driver and its memory, before anything runs
#     validate.json         scripts/gpu-validate.mjs: info, probes, leaks, signals, contexts
#     sim-vs-gpu.json       scripts/sim-vs-gpu.mjs: a bare context, small allocations' pages
#     step-peaks.json       scripts/reference/measure-step-peak.py --device cuda: the step's allocated and
#                           reserved peaks at batches 2, 3 and 4, against the timeline
#     gpu-compare/          scripts/gpu-compare.sh: the device search against PyTorch's own
#                           real-step search, resnet152 and bert-large
#   part 2 (about 5 minutes at most):
#     gpu-exec/             scripts/gpu-exec-compare.mjs: batch --exec over a real PyTorch job
# Each command of the device tool may run 10 minutes: run part 1, then part 2, in two calls.
# Needs node on PATH (or .device/ from ../shared/device/pack-node.sh, sourced here), the build
# outputs (dist/, build/Release/, node_modules/commander) and python3 with torch and torchvision.
# --dry-run: every check on the simulated driver and PyTorch on the CPU at tiny shapes — the
# plumbing only; its figures mean nothing.
set -uo pipefail
cd "$(dirname "$0")/.."

out="${OUT:-gpu-all-$(date +%Y%m%dT%H%M%S)}"
device=0
part=all
dry_run=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --part) part="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu-all: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$part" in 1|2|all) ;; *) echo "gpu-all: --part: expected 1, 2 or all, got \"$part\"" >&2; exit 2 ;; esac
[[ "$device" =~ ^[0-9]+$ ]] || { echo "gpu-all: --device: expected a CUDA ordinal (0, 1, …), got \"$device\"" >&2; exit 2; }
if ! command -v node >/dev/null && [[ -f .device/use-node.sh ]]; then source .device/use-node.sh; fi
command -v node >/dev/null || { echo "gpu-all: no node on PATH and no .device/ (bash ../shared/device/pack-node.sh)" >&2; exit 2; }
python="${PYTHON:-python3}"
mkdir -p "$out"

dry=()
if (( dry_run )); then
  dry=(--dry-run)
  # The simulated driver and NVML of the build, an H200-sized device with a 512 MiB context.
  export VRAMFIT_CUDA_LIBRARY="$PWD/build/Release/libcudasim.so" VRAMFIT_NVML_LIBRARY="$PWD/build/Release/libnvmlsim.so"
  export CUDASIM_DEVICES="${CUDASIM_DEVICES:-NVIDIA H200:150109945856:536870912}" CUDASIM_STATE="$out/cudasim-ledger"
fi

summary=()
# check NAME SECONDS COMMAND…: runs it under a time limit, its output in DIR/NAME.log.
check() {
  local name=$1 limit=$2
  shift 2
  local started=$SECONDS
  echo "gpu-all: $name (at most ${limit} s)" >&2
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local status=$?
  local seconds=$((SECONDS - started))
  [[ $status -eq 124 || $status -eq 137 ]] && echo "gpu-all: $name ran past ${limit} s" >&2
  summary+=("{\"check\": \"$name\", \"status\": $status, \"seconds\": $seconds, \"timedOut\": $([[ $status -eq 124 || $status -eq 137 ]] && echo true || echo false)}")
}

if [[ $part == 1 || $part == all ]]; then
  if (( dry_run )); then echo "dry run: no nvidia-smi" >"$out/nvidia-smi.txt"; else check nvidia-smi 20 nvidia-smi -q -d MEMORY,COMPUTE; cp "$out/nvidia-smi.log" "$out/nvidia-smi.txt"; fi
  check validate 90 node scripts/gpu-validate.mjs --device "$device" --out "$out/validate.json"
  check sim-vs-gpu 45 bash -c "node scripts/sim-vs-gpu.mjs --device $device > '$out/sim-vs-gpu.json'"
  step_args=(--device cuda --batches 2,3 --check 4)
  (( dry_run )) && step_args=(--dry-run --cases resnet50/fp32/momentum/foreach)
  check step-peaks 150 "$python" scripts/reference/measure-step-peak.py "${step_args[@]}" --out "$out/step-peaks.json"
  check gpu-compare 180 env PYTHON="$python" scripts/gpu-compare.sh --out "$out/gpu-compare" --device "$device" --models resnet152,bert-large "${dry[@]}"
fi
if [[ $part == 2 || $part == all ]]; then
  check gpu-exec 300 env PYTHON="$python" node scripts/gpu-exec-compare.mjs --out "$out/gpu-exec" --device "$device" "${dry[@]}"
fi

{
  echo "["
  for i in "${!summary[@]}"; do echo "  ${summary[$i]}$([[ $i -lt $((${#summary[@]} - 1)) ]] && echo ,)"; done
  echo "]"
} >"$out/summary.json"
cat "$out/summary.json"
