// `vramfit batch --solve seq --batch B`: the longest sequence that fits at a batch, on each device or analytic target.
import { ExitStatus, invalidArgument } from "../errors.js";
import { formatDuration } from "../duration.js";
import { seqSearchFor } from "../fit/findMaxSeq.js";
import { settleAll } from "../devices/perDevice.js";
import { findMaxSeq, formatBytes, type SeqResult } from "../index.js";
import type { BatchOptions } from "./batchOptions.js";
import { deviceAccess, warnIfBusy } from "./deviceAccess.js";
import { writeJson, type Io } from "./io.js";
import { allocConfLine, jobLimits, reserveText } from "./jobOptions.js";
import { cliProgress, showProbes } from "./progress.js";
import { BUDGET_HEADER, budgetCells } from "./budgetCells.js";
import { renderTable } from "./table.js";
import { resolveCliTargets } from "./targets.js";
import { plannedFromOptions } from "./workloadOptions.js";

/** The options --solve seq refuses, each with why: they ask the batch question. */
function checkOptions(options: BatchOptions & { batch?: number }): number {
  if (options.batch === undefined) throw invalidArgument("--batch", "none", "the batch the sequence must fit at, with --solve seq");
  if (options.seq !== undefined) throw invalidArgument("--seq", options.seq, "no --seq with --solve seq (the sequence is what it finds)");
  for (const [option, value] of [["--max-batch", options.maxBatch], ["--min-batch", options.minBatch], ["--exec", options.exec]] as const) {
    if (value !== undefined) throw invalidArgument(option, value, `no ${option} with --solve seq (the batch is fixed by --batch)`);
  }
  return options.batch;
}

/**
 * Finds the longest `--seq` at `--batch` with the same seeded search as the batch: the analytic
 * answer for the measured budget, decided by probes of the job's segments at that sequence and
 * the next (the library's findMaxSeq on each target the library's resolver gives).
 * Text transformers only (a vision transformer's tokens follow --image). The model's context
 * length (`max_position_embeddings`: the learned table's size, or what rotary positions were
 * trained for), less `--generate`'s tokens, caps it: an answer at the cap says so
 * (`limitedBy: "context"`), since memory would allow more.
 */
export async function solveSeqCommand(options: BatchOptions & { batch?: number }, io: Io): Promise<number> {
  const batch = checkOptions(options);
  if (options.trace !== undefined) throw invalidArgument("--trace", options.trace, "a workload vramfit plans with --solve seq (a trace's sequence length is baked in: trace again with another --seq)");
  const planned = await plannedFromOptions(options, io.signal);
  const { planAt } = seqSearchFor(planned.workload, planned.setup);
  const limits = jobLimits(options);
  const { targets, fallback, reason } = await resolveCliTargets(options, "examples");
  const progress = cliProgress(io, options.json);
  const onProbe = showProbes(progress);
  const access = deviceAccess(options.lockTimeout, io);
  const busy = warnIfBusy(targets, reserveText(options), io).catch(() => undefined); // NVML only: no context for it
  let results: SeqResult[];
  try {
    results = await settleAll(
      targets.map((target) =>
        findMaxSeq(planned.workload, planned.setup, batch, { ...limits, ...access, touch: options.touch, target, ...(onProbe !== undefined && { onProbe }) }),
      ),
    );
  } finally {
    progress.done();
    await busy;
  }
  const many = options.device === "all" || fallback;
  if (options.json) {
    writeJson(io, many ? results : results[0]);
  } else {
    const description = planAt(Math.max(1, results[0]?.seq ?? 1)).description.replace(/, seq \d+/, "");
    io.out(`workload  ${description}, batch ${batch}${planned.assumed.length > 0 ? ` (assumed ${planned.assumed.join(" ")})` : ""}`);
    const allocatorLine = allocConfLine(options);
    if (allocatorLine !== undefined) io.out(allocatorLine);
    if (fallback) {
      io.err(`${reason}\nanalytic answers for common GPUs follow; name one with --gpu ID (see \`vramfit gpus\`) or --memory SIZE`);
    }
    io.out(renderSeqTable(results));
  }
  return results.some((r) => r.seq === 0) ? ExitStatus.doesNotFit : ExitStatus.ok;
}

function renderSeqTable(results: SeqResult[]): string {
  const rows = results.map((r) => [
    r.device.ordinal !== null ? `${r.device.ordinal}: ${r.device.name}` : (r.device.id ?? r.device.name),
    r.source,
    ...budgetCells(r),
    r.seq === 0 ? "does not fit" : r.limitedBy === "context" ? `${r.seq} (context length)` : String(r.seq),
    r.seq === 0 ? "-" : formatBytes(r.bytesAtBatch),
    r.source === "device" ? `${r.probes} (predicted ${r.predictedSeq})` : "-",
    formatDuration(r.elapsedMs),
  ]);
  return renderTable(["target", "source", ...BUDGET_HEADER, "max seq", "uses", "probes", "time"], rows);
}
