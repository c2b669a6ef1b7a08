// A step trace file as a workload: read and validated (one line per problem), and replayed as the trace ran it.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cachingAllocatorSegments, type AllocationStep } from "../../src/fit/cachingAllocator.js";
import { DEFAULT_ALLOC_CONF } from "../../src/fit/allocConf.js";
import { replayExpandable } from "../../src/fit/expandableSegments.js";
import { bytesByCategory, peakBytes, type Category } from "../../src/plan/memoryPlan.js";
import { allocationTrace, type AllocationEvent } from "../../src/step/allocationTrace.js";
import { readStepTrace, type StepTrace, type TraceEvent } from "../../src/step/traceFile.js";
import { tracePlan } from "../../src/step/tracePlan.js";
import { planTrace } from "../../src/index.js";
import { invalidMessage } from "./invalidMessage.js";

/** What expandable segments map for a step with no memory limit: the bytes of each map_block, in order. */
const expandableMaps = (step: AllocationStep) => replayExpandable(step, Number.POSITIVE_INFINITY, DEFAULT_ALLOC_CONF, { segments: true }).mapLog;

const MiB = 2 ** 20;
const FILE = "test/fixtures/trace/hand-made.json";
const fixture = () => JSON.parse(readFileSync(new URL(`../../${FILE}`, import.meta.url), "utf8")) as Record<string, unknown> & { events: unknown[][] };

/**
 * The reference: the trace's events at a batch exactly as written (the charged workspaces before
 * the first allocation after the resident states), with no phases: what PyTorch's allocator saw.
 */
function eventsAt(trace: StepTrace, batch: number): AllocationEvent[] {
  const out: AllocationEvent[] = [];
  const charges = [trace.charged.cublasWorkspaceBytes ?? 0, trace.charged.cublasLtWorkspaceBytes ?? 0].filter((b) => b > 0);
  let charged = false;
  for (const e of trace.events) {
    if (e.kind === "alloc" && e.op !== "resident" && !charged) {
      charges.forEach((bytes, i) => out.push({ kind: "alloc", tensor: -1 - i, bytes }));
      charged = true;
    }
    out.push(e.kind === "alloc" ? { kind: "alloc", tensor: e.id, bytes: e.fixedBytes + e.perSampleBytes * batch } : { kind: "free", tensor: e.id });
  }
  return out;
}

/** The most bytes live at once, walking the events. */
function livePeak(events: AllocationEvent[]): number {
  const sizes = new Map<number, number>();
  let live = 0;
  let peak = 0;
  for (const e of events) {
    if (e.kind === "alloc") {
      sizes.set(e.tensor, e.bytes);
      peak = Math.max(peak, (live += e.bytes));
    } else live -= sizes.get(e.tensor)!;
  }
  return peak;
}

describe("readStepTrace and tracePlan", () => {
  const trace = readStepTrace(FILE, fixture());
  const plan = tracePlan(trace);

  it("reads the hand-made trace: its storages, the charged workspaces, and phases folded by the trace's own", () => {
    expect(trace.events).toHaveLength(fixture().events.length);
    expect(plan.tensors).toHaveLength(trace.events.filter((e) => e.kind === "alloc").length + 2);
    expect(plan.parameterCount).toBe(335_544_320);
    expect(plan.description).toBe("traced examples/tiny.py:build (torch): 335544320 parameters; train, fp32, adamw (foreach), for H100-80GB; torch 2.13.0+cpu");
    // Each run of frees then allocations, cut where the trace's phase changes; zero_grad only frees.
    expect(plan.phases).toEqual([
      "forward (traced) aten::gelu",
      "forward (traced) aten::mm",
      "loss (traced) aten::nll_loss_forward",
      "backward (traced) aten::_log_softmax_backward_data",
      "backward (traced) aten::mm",
      "backward (traced) aten::mm",
      "backward (traced) aten::embedding_dense_backward",
      "optimizer (traced) aten::_foreach_sqrt",
    ]);
  });

  it("peaks where the trace peaks, at every batch (the optimizer's sqrt copy at small ones, backward's activations at large)", () => {
    for (const batch of [1, 2, 7, 16, 40, 100, 1000]) expect(peakBytes(plan, batch)).toBe(livePeak(eventsAt(trace, batch)));
    // By hand: parameters 1280 MiB, Adam 2560, gradients 1280, the sqrt copy 1280, cuBLAS 4 + 32 MiB.
    expect(peakBytes(plan, 1)).toBe((1280 + 2560 + 1280 + 1280 + 36) * MiB);
    const categories = bytesByCategory(plan, 1);
    expect(categories.optimizerStates).toBe(2560 * MiB);
    expect(categories.workspace).toBe((1280 + 36) * MiB);
  });

  it("replays through the caching allocator and expandable segments as the trace's own order does", () => {
    for (const batch of [1, 3, 50]) {
      expect(cachingAllocatorSegments(allocationTrace(plan, batch))).toEqual(cachingAllocatorSegments(eventsAt(trace, batch)));
      expect(expandableMaps(allocationTrace(plan, batch))).toEqual(expandableMaps(eventsAt(trace, batch)));
    }
  });

  it("replays any trace as written: runs of frees reordered leave the allocators' segments the same", () => {
    // Random steps of small and large storages, frees of random live ones: the allocator's pools
    // (small ≤ 1 MiB, 2 MiB and 20 MiB segments, splits) are all exercised.
    const size = fc.oneof(fc.integer({ min: 1, max: 2048 }).map((k) => k * 512), fc.integer({ min: 1, max: 64 }).map((k) => k * 512 * 1024));
    const step = fc.array(fc.oneof(size.map((bytes) => ({ bytes })), fc.nat(1000).map((pick) => ({ pick }))), { minLength: 1, maxLength: 200 });
    fc.assert(
      fc.property(step, (ops) => {
        const events: TraceEvent[] = [];
        const live: number[] = [];
        ops.forEach((op, id) => {
          if ("bytes" in op) {
            events.push({ kind: "alloc", id, fixedBytes: op.bytes, perSampleBytes: 0, phase: 0, category: "activations" as Category, op: "aten::empty" });
            live.push(id);
          } else if (live.length > 0) {
            events.push({ kind: "free", id: live.splice(op.pick % live.length, 1)[0]!, phase: 0, op: "aten::empty" });
          }
        });
        const random: StepTrace = { ...trace, events, charged: {} };
        const p = tracePlan(random);
        expect(cachingAllocatorSegments(allocationTrace(p, 1))).toEqual(cachingAllocatorSegments(eventsAt(random, 1)));
        expect(expandableMaps(allocationTrace(p, 1))).toEqual(expandableMaps(eventsAt(random, 1)));
        expect(peakBytes(p, 1)).toBe(livePeak(eventsAt(random, 1)));
      }),
      { numRuns: 300 },
    );
  });

  it("refuses a bad file with one line naming the file and the field", () => {
    const bad = (change: (json: ReturnType<typeof fixture>) => void) => {
      const json = fixture();
      change(json);
      const message = invalidMessage(() => readStepTrace(FILE, json));
      expect(message).not.toContain("\n");
      return message;
    };
    expect(bad((j) => (j.format = "chrome-trace"))).toBe(`${FILE}: format: expected "vramfit-step-trace" (a trace file written by vramfit trace), got "chrome-trace"`);
    expect(bad((j) => (j.version = 2))).toMatch(/: version: expected 1 \(the trace is newer than this vramfit: upgrade vramfit, or trace again with this one\), got 2$/);
    expect(bad((j) => (j.events[13]![5] = "temporaries"))).toMatch(/: events\[13\]\[5\]: expected one of parameters, gradients, .*, got "temporaries"$/);
    expect(bad((j) => (j.events[11]![2] = -512))).toMatch(/: events\[11\]\[2\]: expected a whole number from 0 to .*, got -512$/);
    expect(bad((j) => (j.events[11]![3] = 1.5))).toMatch(/: events\[11\]\[3\]: expected a whole number/);
    expect(bad((j) => j.events.push(["f", 12, 4, "python"]))).toMatch(/: events\[\d+\]\[1\]: expected a live storage \(this one was freed already\), got 12$/);
    expect(bad((j) => j.events.push(["f", 999, 4, "python"]))).toMatch(/: events\[\d+\]\[1\]: expected the id of a storage allocated before it, got 999$/);
    expect(bad((j) => j.events.push(["a", 3, 512, 0, 4, "workspace", "aten::add"]))).toMatch(/: events\[\d+\]\[1\]: expected an id not allocated before \(ids are never reused\), got 3$/);
    expect(bad((j) => j.events.push(["a", 1000, 512, 0, 0, "workspace", "aten::add"]))).toMatch(/: events\[\d+\]\[4\]: expected a phase ≥ 4 \(events are in execution order\), got 0$/);
    expect(bad((j) => j.events.push(["a", 1000, 512, 0, 5, "workspace", "aten::add"]))).toMatch(/: events\[\d+\]\[4\]: expected a whole number from 0 to 4, got 5$/);
    expect(bad((j) => j.events.push(["x", 1000]))).toMatch(/: events\[\d+\]: expected \["a", id, fixedBytes/);
    expect(bad((j) => ((j.charged as Record<string, number>).cudnnWorkspaceBytes = 512))).toMatch(/: charged\.cudnnWorkspaceBytes: expected one of cublasWorkspaceBytes, cublasWorkspaces, cublasLtWorkspaceBytes, contextBytes/);
    expect(bad((j) => (j.batches = [2, 2, 4]))).toMatch(/: batches: expected b1 < b2/);
    expect(bad((j) => (j.affine = false))).toMatch(/: batch: expected a whole number from 1/);
    expect(
      bad((j) => {
        j.affine = false;
        j.batch = 4;
      }),
    ).toMatch(/: events\[9\]\[3\]: expected 0 \(the trace is not affine/);
    expect(bad((j) => ((j.workload as Record<string, unknown>).source = "onnx"))).toMatch(/: workload\.source: expected one of hf-config, torchvision, timm, torch, got "onnx"$/);
    expect(bad((j) => (j.attention = [{ module: "m", kernel: "sdpa" }]))).toMatch(/: attention\[0\]\.kernel: expected one of flash, efficient, cudnn, math, got "sdpa"$/);
    // The library's door: the file's shape, then its content.
    expect(invalidMessage(() => planTrace({ path: 3 as never, json: fixture() }))).toMatch(/^file\.path: expected /);
    expect(invalidMessage(() => planTrace({ path: FILE, json: [] }))).toMatch(/^test\/fixtures\/trace\/hand-made\.json: expected a JSON object/);
  });

  it("answers a trace that is not affine at its one batch: every byte fixed", () => {
    const json = fixture();
    json.affine = false;
    json.batch = 4;
    for (const e of json.events) if (e[0] === "a") [e[2], e[3]] = [(e[2] as number) + 4 * (e[3] as number), 0];
    const fixed = tracePlan(readStepTrace(FILE, json));
    expect(fixed.description).toContain("at batch 4 only");
    expect(peakBytes(fixed, 1)).toBe(peakBytes(plan, 4));
    expect(peakBytes(fixed, 100)).toBe(peakBytes(plan, 4));
  });
});
