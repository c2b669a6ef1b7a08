// The events log (`vramfit plan --batch B --events FILE`): the step's allocations and frees at one batch, one line each, for any allocator to replay.
//
// Format (docs/memory-model.md, "The replayed events"), version 1:
//   # vramfit-events 1
//   # <key>: <value>        header lines naming the workload and setup (free text after the key)
//   a ID BYTES              allocate tensor ID (a whole number of bytes, before any rounding)
//   f ID                    free tensor ID
// Events are in execution order, exactly the sequence vramfit's caching-allocator emulation and
// the device probe replay; IDs index the plan's tensors (an ID is allocated at most once);
// tensors live to the end of the step are never freed; empty tensors are left out.
import type { MemoryPlan } from "../plan/memoryPlan.js";
import { allocationTrace } from "./allocationTrace.js";

export const EVENTS_FORMAT = "vramfit-events";
export const EVENTS_VERSION = 1;

/** The events log of a plan at a batch size, the header's `key: value` lines first. */
export function eventsLog(plan: MemoryPlan, batch: number, header: readonly (readonly [string, string])[]): string {
  const { order, bytes } = allocationTrace(plan, batch);
  const lines: string[] = [`# ${EVENTS_FORMAT} ${EVENTS_VERSION}`];
  for (const [key, value] of header) lines.push(`# ${key}: ${value.replace(/[\r\n]+/g, " ")}`);
  let allocations = 0;
  let frees = 0;
  const body: string[] = [];
  for (const code of order) {
    const tensor = code >= 0 ? code : ~code;
    if (bytes[tensor]! <= 0) continue;
    // Bytes are whole: the allocator rounds a request up to 512 B, so rounding a fraction up first changes nothing.
    if (code >= 0) {
      body.push(`a ${tensor} ${Math.ceil(bytes[tensor]!)}`);
      allocations += 1;
    } else {
      body.push(`f ${tensor}`);
      frees += 1;
    }
  }
  lines.push(`# events: ${allocations} allocations, ${frees} frees`);
  return `${lines.join("\n")}\n${body.join("\n")}${body.length > 0 ? "\n" : ""}`;
}

/** One event of a log read back: what a replay (a test, the reference harness) takes. */
export type LoggedEvent = { kind: "alloc"; tensor: number; bytes: number } | { kind: "free"; tensor: number };

/** Reads an events log back (header lines skipped); throws on a line of no known form, naming it. */
export function parseEventsLog(text: string): LoggedEvent[] {
  const events: LoggedEvent[] = [];
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    if (line === "" || line.startsWith("#")) continue;
    const alloc = /^a (\d+) (\d+)$/.exec(line);
    if (alloc !== null) events.push({ kind: "alloc", tensor: Number(alloc[1]), bytes: Number(alloc[2]) });
    else {
      const free = /^f (\d+)$/.exec(line);
      if (free === null) throw new Error(`events log line ${n + 1}: expected "a ID BYTES" or "f ID", got ${JSON.stringify(line.slice(0, 80))}`);
      events.push({ kind: "free", tensor: Number(free[1]) });
    }
  }
  return events;
}
