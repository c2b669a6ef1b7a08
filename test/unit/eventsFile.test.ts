// The events log (`plan --events`): the exact sequence the emulation replays, readable back.
import { describe, expect, it } from "vitest";
import { cachingAllocatorSegments } from "../../src/fit/cachingAllocator.js";
import { deviceAllocations } from "../../src/fit/allocator.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { allocationEvents } from "../../src/step/allocationTrace.js";
import { eventsLog, parseEventsLog } from "../../src/step/eventsFile.js";
import { presetWorkload } from "../../src/workload/presets.js";

describe("eventsLog", () => {
  const plan = buildPlan(presetWorkload("bert-base")!, { mode: "train", precision: "amp", optimizer: "adamw", seq: 128 });

  it("writes a header, then every allocation and free in the step's order", () => {
    const text = eventsLog(plan, 3, [["workload", "bert-base\nsecond line"], ["batch", "3"]]);
    const lines = text.trimEnd().split("\n");
    expect(lines[0]).toBe("# vramfit-events 1");
    expect(lines[1]).toBe("# workload: bert-base second line");
    const events = allocationEvents(plan, 3);
    const frees = events.filter((e) => e.kind === "free").length;
    expect(lines[3]).toBe(`# events: ${events.length - frees} allocations, ${frees} frees`);
    expect(lines.length).toBe(4 + events.length);
    expect(parseEventsLog(text)).toEqual(events.map((e) => (e.kind === "alloc" ? { ...e, bytes: Math.ceil(e.bytes) } : e)));
  });

  it("replays to the same segments as the plan itself, at batches where bert-base's memory is not monotone", () => {
    for (const batch of [1, 515, 516]) {
      const replayed = cachingAllocatorSegments(parseEventsLog(eventsLog(plan, batch, [])));
      expect(replayed).toEqual(deviceAllocations(plan, batch, "pytorch"));
    }
  });

  it("names the line it cannot read", () => {
    expect(() => parseEventsLog("# h\na 1 512\nx 3\n")).toThrow(/line 3: expected "a ID BYTES" or "f ID", got "x 3"/);
  });
});
