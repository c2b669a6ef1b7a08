// How long vramfit's per-device lock takes and releases (issue 22): `node scripts/lock-speed.mjs [--locks 74] [--rounds 15]`.
// 74 is what `batch --model llama-3.1-8b --seq 4096 --device all` takes on 8 simulated H100s (9 on
// one). Needs `npm run build` (dist/ and the addon's tryLockFile); the lock files go in a fresh
// temporary folder. Run it from two checkouts, taking turns, to compare builds.
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { locks: { type: "string", default: "74" }, rounds: { type: "string", default: "15" } } });
const locks = Number(values.locks);
const rounds = Number(values.rounds);
const root = new URL("..", import.meta.url).pathname;
const { lockDevice } = await import(join(root, "dist/devices/deviceLock.js"));
// The addon itself (tryLockFile needs no driver): the build's, as the tests load it.
const addon = createRequire(import.meta.url)(join(root, "build", "Release", "vramfit.node"));
if (typeof addon.tryLockFile !== "function") throw new Error("the addon has no tryLockFile: run npm run build");
const directory = mkdtempSync(join(tmpdir(), "vramfit-lock-speed-"));
const uuids = Array.from({ length: 8 }, (_, i) => `GPU-${String(i).repeat(8)}-d72c-4106-c12f-20bd9faed9f6`);
const times = [];
try {
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    for (let i = 0; i < locks; i++) (await lockDevice(addon, { ordinal: i % 8, uuid: uuids[i % 8] }, { directory })).release();
    times.push(performance.now() - started);
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
const sorted = [...times].sort((a, b) => a - b);
console.log(`${locks} locks taken and released, ${rounds} rounds: median ${sorted[sorted.length >> 1].toFixed(1)} ms, min ${sorted[0].toFixed(1)}, max ${sorted.at(-1).toFixed(1)} (load ${loadavg()[0].toFixed(1)})`);
