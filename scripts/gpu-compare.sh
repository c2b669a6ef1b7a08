#!/usr/bin/env bash
# vramfit against the PyTorch batch-size search users write today, on one GPU, in one command.
#   scripts/gpu-compare.sh [--out DIR] [--device N] [--models resnet152,bert-large,gpt2-medium] [--dry-run]
# Per model: the PyTorch reference (scripts/torch-reference.py: real training steps, doubling then
# bisecting like Lightning), then vramfit's device search and its analytic answer for the same
# workload. Writes DIR/<model>.json (both batch sizes, their ratio, both wall times, their ratio,
# and the model's bytes against torch.cuda.max_memory_allocated() at PyTorch's batch), the raw
# outputs beside it, and DIR/summary.json; prints a table.
# Needs only Node and Python: node on PATH, or packed by ../shared/device/pack-node.sh into
# .device/ (sourced from there); the build outputs dist/, build/Release/vramfit.node and the runtime
# dependency node_modules/commander; python3 (or $PYTHON) with torch and torchvision (transformers
# is used when importable). --dry-run: PyTorch on the CPU at tiny shapes with a simulated OOM, and
# vramfit on whatever driver is configured (VRAMFIT_CUDA_LIBRARY: the simulator in the tests) —
# it checks the plumbing; its figures mean nothing. TORCH_REFERENCE_ARGS adds options to
# torch-reference.py (e.g. "--steps-per-trial 1").
set -euo pipefail
cd "$(dirname "$0")/.."

out="gpu-compare-$(date +%Y%m%dT%H%M%S)"
device=0
models="resnet152,bert-large,gpt2-medium"
dry_run=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --dry-run) dry_run=(--dry-run); shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu-compare: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-python3}"
read -r -a torch_extra <<< "${TORCH_REFERENCE_ARGS:-}"

if ! command -v node >/dev/null 2>&1; then
  if [[ -f .device/use-node.sh ]]; then
    # shellcheck disable=SC1091
    source .device/use-node.sh
  else
    echo "gpu-compare: node is not on PATH and .device/use-node.sh is missing (run ../shared/device/pack-node.sh where Node is)" >&2
    exit 2
  fi
fi
for needed in dist/cli/main.js build/Release/vramfit.node node_modules/commander/package.json; do
  if [[ ! -e "$needed" ]]; then
    echo "gpu-compare: missing $needed: build with \`npm ci\` (or \`npm run build\`) and bring dist/, build/ and node_modules/commander along" >&2
    exit 2
  fi
done
command -v "$PYTHON" >/dev/null 2>&1 || { echo "gpu-compare: $PYTHON not found (set PYTHON)" >&2; exit 2; }

# The workload of each model, in vramfit's options (torch-reference.py trains the same).
workload_args() {
  case "$1" in
    resnet152) echo "--model resnet152 --image 224 --precision fp32 --optimizer momentum" ;;
    bert-large) echo "--model bert-large --seq 512 --precision amp --optimizer adamw" ;;
    gpt2-medium) echo "--model gpt2-medium --seq 1024 --precision amp --optimizer adamw" ;;
    *) echo "gpu-compare: no workload for model $1" >&2; return 2 ;;
  esac
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
json_field() { node -e 'const v = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const x = process.argv[2].split(".").reduce((o, k) => (o == null ? o : o[k]), v); process.stdout.write(x == null ? "" : String(x));' "$1" "$2"; }

mkdir -p "$out"
echo "gpu-compare: writing to $out" >&2
IFS=',' read -r -a model_list <<< "$models"
for model in "${model_list[@]}"; do
  read -r -a wargs <<< "$(workload_args "$model")"

  echo "gpu-compare: $model: PyTorch reference ..." >&2
  started=$(now)
  set +e
  "$PYTHON" scripts/torch-reference.py --models "$model" --device "$device" "${dry_run[@]}" "${torch_extra[@]}" --out "$out/$model.torch.json" >/dev/null 2>"$out/$model.torch.log"
  torch_status=$?
  set -e
  torch_wall=$(elapsed "$started" "$(now)")
  [[ $torch_status -eq 0 ]] || { echo "gpu-compare: $model: torch-reference exited $torch_status (see $out/$model.torch.log)" >&2; rm -f "$out/$model.torch.json"; }

  # Match PyTorch's attention: SDPA (fused, no s² scores) is vramfit's flash; eager keeps them.
  attention=flash
  if [[ -s "$out/$model.torch.json" && "$(json_field "$out/$model.torch.json" models.0.attention)" == "eager" ]]; then attention=eager; fi
  attention_args=()
  [[ "$model" == resnet* ]] || attention_args=(--attention "$attention")

  echo "gpu-compare: $model: vramfit device search ..." >&2
  started=$(now)
  set +e
  node bin/vramfit.js batch "${wargs[@]}" "${attention_args[@]}" --device "$device" --require-gpu --json >"$out/$model.vramfit.json" 2>"$out/$model.vramfit.log"
  vramfit_status=$?
  set -e
  vramfit_wall=$(elapsed "$started" "$(now)")

  started=$(now)
  set +e
  node bin/vramfit.js batch "${wargs[@]}" "${attention_args[@]}" --device "$device" --analytic --json >"$out/$model.analytic.json" 2>"$out/$model.analytic.log"
  analytic_status=$?
  set -e
  analytic_wall=$(elapsed "$started" "$(now)")

  # The model's bytes at PyTorch's batch, to set against torch.cuda.max_memory_allocated().
  plan_status=skipped
  torch_batch=""
  [[ -s "$out/$model.torch.json" ]] && torch_batch=$(json_field "$out/$model.torch.json" models.0.batchSize)
  if [[ -n "$torch_batch" && "$torch_batch" -gt 0 ]]; then
    set +e
    node bin/vramfit.js plan "${wargs[@]}" "${attention_args[@]}" --batch "$torch_batch" --json >"$out/$model.plan.json" 2>"$out/$model.plan.log"
    plan_status=$?
    set -e
  fi

  node - "$out" "$model" "$torch_status" "$torch_wall" "$vramfit_status" "$vramfit_wall" "$analytic_status" "$analytic_wall" "$plan_status" "${#dry_run[@]}" "${wargs[*]} ${attention_args[*]}" <<'EOF'
const fs = require("fs");
const [dir, model, torchStatus, torchWall, vramfitStatus, vramfitWall, analyticStatus, analyticWall, planStatus, dryRun, args] = process.argv.slice(2);
const read = (suffix) => {
  try { return JSON.parse(fs.readFileSync(`${dir}/${model}.${suffix}.json`, "utf8")); } catch { return null; }
};
const tail = (suffix) => {
  try { return fs.readFileSync(`${dir}/${model}.${suffix}.log`, "utf8").trim().split("\n").slice(-3).join("\n"); } catch { return ""; }
};
const torchReport = read("torch");
const torch = torchReport?.models?.[0] ?? null;
const device = Number(vramfitStatus) === 0 ? read("vramfit") : null;
const analytic = Number(analyticStatus) === 0 ? read("analytic") : null;
const plan = planStatus === "0" ? read("plan") : null;
const ratio = (a, b) => (typeof a === "number" && typeof b === "number" && b !== 0 ? Number((a / b).toFixed(3)) : null);
const vramfitSeconds = Number(vramfitWall);
const report = {
  model,
  dryRun: dryRun !== "0",
  vramfitArgs: args.trim(),
  gpu: device?.device ?? (torchReport ? { name: torchReport.deviceName ?? torchReport.device, totalBytes: torchReport.totalBytes ?? null } : null),
  vramfit: device
    ? {
        batchSize: device.batchSize,
        source: device.source,
        predictedBatchSize: device.predictedBatchSize,
        probes: device.probes,
        budgetBytes: device.budgetBytes,
        bytesAtBatch: device.bytesAtBatch,
        elapsedMs: device.elapsedMs,
        wallSeconds: vramfitSeconds,
      }
    : { error: `exit ${vramfitStatus}: ${tail("vramfit")}`, wallSeconds: vramfitSeconds },
  vramfitAnalytic: analytic
    ? { batchSize: analytic.batchSize, budgetBytes: analytic.budgetBytes, reason: analytic.reason, wallSeconds: Number(analyticWall) }
    : { error: `exit ${analyticStatus}: ${tail("analytic")}` },
  torch: torch
    ? {
        batchSize: torch.batchSize,
        implementation: torch.implementation,
        attention: torch.attention ?? null,
        trials: torch.trialCount,
        stepsRun: torch.stepsRun,
        searchSeconds: torch.searchSeconds,
        seconds: torch.seconds,
        wallSeconds: Number(torchWall),
        maxMemoryAllocatedBytes: torch.atBatch?.maxMemoryAllocatedBytes ?? null,
        maxMemoryReservedBytes: torch.atBatch?.maxMemoryReservedBytes ?? null,
        segmentBytes: torch.atBatch?.segmentBytes ?? null,
        contextBytes: torch.atBatch?.contextBytes ?? null,
        allocatedBetweenStepsBytes: torch.allocatedBetweenStepsBytes ?? null,
        batchRefits: torch.atBatch?.fits ?? null,
      }
    : { error: `exit ${torchStatus}: ${tail("torch")}`, wallSeconds: Number(torchWall) },
};
// vramfit's answer over PyTorch's (1 = the same batch), and how many times faster vramfit answered.
report.batchRatio = ratio(report.vramfit.batchSize, report.torch.batchSize);
report.analyticBatchRatio = ratio(report.vramfitAnalytic.batchSize, report.torch.batchSize);
report.wallSecondsRatio = ratio(report.torch.wallSeconds, report.vramfit.wallSeconds);
report.searchSecondsRatio = ratio(report.torch.searchSeconds, typeof report.vramfit.elapsedMs === "number" ? report.vramfit.elapsedMs / 1000 : null);
report.withinTenPercent = report.batchRatio === null ? null : Math.abs(report.batchRatio - 1) <= 0.1;
if (plan && torch) {
  // The model at PyTorch's batch: the emulated segments (the CUDA context left out: PyTorch's counters have none).
  const modelBytes = plan.totalBytes - (plan.breakdown?.context ?? 0);
  report.atTorchBatch = {
    batch: plan.batch,
    modelBytes,
    breakdown: plan.breakdown,
    torchMaxMemoryAllocatedBytes: report.torch.maxMemoryAllocatedBytes,
    modelOverTorch: ratio(modelBytes, report.torch.maxMemoryAllocatedBytes),
    // The allocator emulation against PyTorch's own: its segments at their peak (plan's totalBytes
    // less the context) over max_memory_reserved(), and the job context assumed over the measured.
    emulatedReservedBytes: modelBytes,
    emulatedOverTorchReserved: ratio(modelBytes, report.torch.maxMemoryReservedBytes),
    jobContextBytes: plan.breakdown?.context ?? null,
    jobContextOverTorch: ratio(plan.breakdown?.context ?? null, report.torch.contextBytes),
  };
}
fs.writeFileSync(`${dir}/${model}.json`, JSON.stringify(report, null, 2) + "\n");
EOF
done

node - "$out" "$models" <<'EOF'
const fs = require("fs");
const [dir, models] = process.argv.slice(2);
const rows = models.split(",").filter(Boolean).map((m) => JSON.parse(fs.readFileSync(`${dir}/${m}.json`, "utf8")));
fs.writeFileSync(`${dir}/summary.json`, JSON.stringify({ createdAt: new Date().toISOString(), models: rows }, null, 2) + "\n");
const cells = [["model", "vramfit batch", "analytic", "torch batch", "ratio", "vramfit s", "torch s", "faster", "probes", "torch trials"]];
for (const r of rows) {
  cells.push([r.model, r.vramfit.batchSize ?? "error", r.vramfitAnalytic.batchSize ?? "error", r.torch.batchSize ?? "error", r.batchRatio ?? "-",
    r.vramfit.wallSeconds, r.torch.wallSeconds, r.wallSecondsRatio === null ? "-" : `${r.wallSecondsRatio}×`, r.vramfit.probes ?? "-", r.torch.trials ?? "-"].map(String));
}
const widths = cells[0].map((_, i) => Math.max(...cells.map((c) => c[i].length)));
console.log(cells.map((c) => c.map((x, i) => x.padEnd(widths[i])).join("  ").trimEnd()).join("\n"));
console.error(`gpu-compare: ${dir}/summary.json`);
EOF
