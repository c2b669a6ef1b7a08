// The trace-agreement comparison, one definition for test/unit/traceAgreement.test.ts (the library's source) and the
// documents' generated counts (scripts/readme-examples.mjs, the built library): vramfit's peak over the traced one.
import { readFileSync } from "node:fs";

/** The vramfit options of the tracer's arguments (the same names: docs/trace-format.md). */
export function tracerOptions(args) {
  const value = (flag) => {
    const i = args.indexOf(flag);
    return i < 0 ? undefined : args[i + 1];
  };
  return {
    precision: value("--precision") ?? "fp32",
    optimizer: value("--optimizer") ?? "adamw",
    ...(value("--seq") !== undefined && !args.includes("--torchvision") && { seq: value("--seq") }),
    ...(value("--image") !== undefined && { image: value("--image") }),
    ...(args.includes("--checkpointing") && { checkpointing: "full" }),
    ...(value("--lora-rank") !== undefined && { loraRank: value("--lora-rank") }),
    computeCapability: "9.0",
  };
}

// Each case is planned once (a case object belongs to one caller, with its one library).
const planned = new WeakMap();

/** The case's plan without cuBLAS's workspaces (a trace charges them beside its events, in `charged`), and their bytes. */
export function casePlan(library, c) {
  if (!planned.has(c)) planned.set(c, planOf(library, c));
  return planned.get(c);
}

function planOf(library, c) {
  const plan = library.buildPlan(library.presetWorkload(c.preset), library.parseSetup(tracerOptions(c.tracerArgs)));
  const isWorkspace = (t) => t.name.startsWith(library.BLAS_WORKSPACE_PREFIX);
  const workspaces = plan.tensors.filter(isWorkspace).reduce((sum, t) => sum + t.fixedBytes, 0);
  return { plan: { ...plan, tensors: plan.tensors.filter((t) => !isWorkspace(t)) }, workspaces };
}

const allocated = (bytes) => Math.ceil(bytes / 512) * 512;

/** vramfit's peak / the trace's at `batch`, tensors rounded to 512 B as PyTorch's allocator rounds them. */
export function peakRatio(library, c, batch) {
  return library.peakBytes(casePlan(library, c).plan, batch, allocated) / c.peaks[String(batch)].peak;
}

export const FIXTURE = new URL("../../test/fixtures/trace-agreement.json", import.meta.url);

let measured;
/** Every case's ratios at the fixture's batches, from the built library (dist/), computed once per process. */
async function measuredRatios() {
  const load = (module) => import(new URL(`../../dist/${module}`, import.meta.url).href);
  const [{ buildPlan }, { parseSetup }, { presetWorkload }, { peakBytes }, { BLAS_WORKSPACE_PREFIX }] = await Promise.all(
    ["plan/buildPlan.js", "plan/setup.js", "workload/presets.js", "plan/memoryPlan.js", "plan/blasWorkspace.js"].map(load),
  );
  const library = { buildPlan, parseSetup, presetWorkload, peakBytes, BLAS_WORKSPACE_PREFIX };
  const fixture = JSON.parse(readFileSync(FIXTURE, "utf8"));
  return fixture.cases.map((c) => ({ preset: c.preset, ratios: fixture.batches.map((b) => peakRatio(library, c, b)) }));
}

/**
 * The counts the documents quote, from the built library (dist/): cases, presets, comparisons, within1 (|ratio − 1| <
 * 1 %), lowest, highest; of the cases of the presets named (all when none are).
 */
export async function agreementCounts(presets = []) {
  measured ??= measuredRatios();
  const cases = (await measured).filter((c) => presets.length === 0 || presets.includes(c.preset));
  if (cases.length === 0) throw new Error(`the trace-agreement fixture has no case of ${presets.join(", ")}`);
  const ratios = cases.flatMap((c) => c.ratios);
  return {
    cases: cases.length,
    presets: new Set(cases.map((c) => c.preset)).size,
    comparisons: ratios.length,
    within1: ratios.filter((r) => Math.abs(r - 1) < 0.01).length,
    lowest: Math.min(...ratios).toFixed(4),
    highest: Math.max(...ratios).toFixed(4),
  };
}
