// The emulation on the hand-worked edges of the allocator's configuration (test/reference/allocConfEdges.ts), where torch's wheel is absent too: the fraction with expandable segments, the collection's ages.
import { describe, expect, it } from "vitest";
import { allowedMemoryBytes, parseAllocConf } from "../../src/fit/allocConf.js";
import { EDGES, edgeEvents } from "../reference/allocConfEdges.js";
import { emulatedCalls } from "../reference/emulation.js";

const MiB = 2 ** 20;

describe("the allocator configuration's edges, worked by hand", () => {
  it.each(EDGES.map((edge) => [edge.why, edge] as const))("%s", (_, edge) => {
    const conf = parseAllocConf(edge.conf);
    const replay = emulatedCalls(edgeEvents(edge), Number.POSITIVE_INFINITY, conf, allowedMemoryBytes(conf, edge.totalMiB * MiB));
    expect([replay.fits, replay.deviceCalls.map((bytes) => bytes / MiB)]).toEqual([edge.fits, edge.callsMiB]);
  });
});
