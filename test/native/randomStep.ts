// A seeded random step for the replay tests (replayStep.test.ts, replayExpandable.test.ts): sizes of every power of two mixed in each pool, frees of random live tensors.

/** A seeded step of allocations (sizes log-uniform from 512 B to 64 MiB) and frees of random live tensors, as scripts/replay-speed.mjs makes. */
export function randomStep(events: number, seed: number): { order: Int32Array; bytes: Float64Array } {
  let state = seed;
  const random = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const order = new Int32Array(events);
  const bytes = new Float64Array(Math.ceil(events * 0.6));
  const live: number[] = [];
  let made = 0;
  for (let k = 0; k < events; k++) {
    if (live.length > 0 && (made === bytes.length || random() < 0.4)) order[k] = ~live.splice(Math.floor(random() * live.length), 1)[0]!;
    else {
      bytes[made] = Math.round(2 ** (9 + random() * 17));
      live.push(made);
      order[k] = made++;
    }
  }
  return { order, bytes };
}
