// bin/vramfit.js: runs the bundled CLI (dist/cli/vramfit.cjs) through V8's code cache, kept per
// bundle build, kind of run (command, options named, model) and Node binary in $XDG_CACHE_HOME/vramfit. A cache it cannot use or write only costs time.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NO_DRIVER, root, runCli, simulatedGpus } from "../cli/runCli.js";

// 80 GiB less the default 5% reserve, three segments of 16e9 B of states and the 512 MiB job context: 60 samples.
const ARGS = ["batch", "--params", "1e9", "--per-sample", "1GiB", "--memory", "80GiB", "--json"];
const bundleHash = /^\/\/ vramfit-cli ([0-9a-f]{16})\n/.exec(readFileSync(join(root, "dist", "cli", "vramfit.cjs"), "utf8"))?.[1];

function answer(stdout: string): unknown {
  const { elapsedMs: _, ...rest } = JSON.parse(stdout) as { elapsedMs: number };
  return rest;
}

describe("bin/vramfit.js and its code cache", () => {
  it("writes one cache, named after the bundle's build and this Node, and answers the same from it", async () => {
    expect(bundleHash).toBeDefined();
    const cacheHome = mkdtempSync(join(tmpdir(), "vramfit-cache-"));
    const first = await runCli(ARGS, { XDG_CACHE_HOME: cacheHome });
    expect(first.stderr).toBe("");
    const files = readdirSync(join(cacheHome, "vramfit"));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(new RegExp(`^cli-${bundleHash}-batch-[0-9a-f]+-${process.version}-${process.arch}-[0-9a-f]+\\.v8cache$`));
    const second = await runCli(ARGS, { XDG_CACHE_HOME: cacheHome });
    expect(second.status).toBe(0);
    expect(answer(second.stdout)).toEqual(answer(first.stdout));
    expect(answer(first.stdout)).toMatchObject({ batchSize: 60, source: "analytic" });
  });

  it("keeps one cache per command (each holds what its command compiled), and none for a usage error", async () => {
    const cacheHome = mkdtempSync(join(tmpdir(), "vramfit-cache-"));
    await runCli(ARGS, { XDG_CACHE_HOME: cacheHome });
    await runCli(["models"], { XDG_CACHE_HOME: cacheHome });
    expect((await runCli(["batc", "--params", "1e9"], { XDG_CACHE_HOME: cacheHome })).status).toBe(2);
    expect((await runCli(["batch", "--paramz", "1e9"], { XDG_CACHE_HOME: cacheHome })).status).toBe(2);
    const names = readdirSync(join(cacheHome, "vramfit")).map((name) => name.split("-")[2]);
    expect(names.sort()).toEqual(["batch", "models"]);
  });

  it("keeps one cache per kind of run: the options named and the model, not the options' values or order", async () => {
    const cacheHome = mkdtempSync(join(tmpdir(), "vramfit-cache-"));
    const kinds = () => readdirSync(join(cacheHome, "vramfit")).map((name) => name.split("-").slice(2, 4).join("-")).sort();
    await runCli(ARGS, { XDG_CACHE_HOME: cacheHome });
    await runCli(["batch", "--json", "--memory=40GiB", "--params", "2e9", "--per-sample", "1GiB"], { XDG_CACHE_HOME: cacheHome });
    expect(kinds()).toHaveLength(1);
    await runCli(["batch", "--model", "resnet18", "--memory", "80GiB"], { XDG_CACHE_HOME: cacheHome });
    await runCli(["batch", "--model=resnet18", "--memory", "40GiB"], { XDG_CACHE_HOME: cacheHome });
    expect(kinds()).toHaveLength(2);
    await runCli(["batch", "--model", "gpt2", "--memory", "80GiB"], { XDG_CACHE_HOME: cacheHome });
    expect(kinds()).toHaveLength(3);
    expect(kinds().every((kind) => /^batch-[0-9a-f]+$/.test(kind))).toBe(true);
  });

  it("ignores a corrupt cache and writes a good one in its place", async () => {
    const cacheHome = mkdtempSync(join(tmpdir(), "vramfit-cache-"));
    await runCli(ARGS, { XDG_CACHE_HOME: cacheHome });
    const [name] = readdirSync(join(cacheHome, "vramfit"));
    const file = join(cacheHome, "vramfit", name!);
    const good = readFileSync(file);
    writeFileSync(file, Buffer.alloc(good.length, 0x5a));
    const run = await runCli(ARGS, { XDG_CACHE_HOME: cacheHome });
    expect(run.status).toBe(0);
    expect(answer(run.stdout)).toMatchObject({ batchSize: 60 });
    expect(readFileSync(file).equals(Buffer.alloc(good.length, 0x5a))).toBe(false);
  });

  it("runs where the cache cannot be written (a file where its directory should be)", async () => {
    const blocked = join(mkdtempSync(join(tmpdir(), "vramfit-cache-")), "not-a-directory");
    writeFileSync(blocked, "");
    const run = await runCli(ARGS, { XDG_CACHE_HOME: blocked });
    expect(run.stderr).toBe("");
    expect(answer(run.stdout)).toMatchObject({ batchSize: 60 });
  });

  it("keeps at most 32 caches, the newest (one per build × kind of run would grow without bound), and touches nothing else there", async () => {
    const cacheHome = mkdtempSync(join(tmpdir(), "vramfit-cache-"));
    const dir = join(cacheHome, "vramfit");
    mkdirSync(dir);
    const old = Array.from({ length: 40 }, (_, i) => `cli-${i.toString(16).padStart(16, "0")}-batch-v20.0.0-x64-0.v8cache`);
    old.forEach((name, i) => {
      writeFileSync(join(dir, name), "stale");
      utimesSync(join(dir, name), new Date(Date.now() - (100 - i) * 1000), new Date(Date.now() - (100 - i) * 1000)); // the last written is the newest
    });
    writeFileSync(join(dir, "notes.txt"), "not a cache");
    await runCli(["models"], { XDG_CACHE_HOME: cacheHome });
    const left = readdirSync(dir);
    expect(left.filter((name) => name.endsWith(".v8cache"))).toHaveLength(32);
    expect(left).toContain("notes.txt");
    expect(left.some((name) => name.startsWith(`cli-${bundleHash}-models-`))).toBe(true);
    expect(left).toEqual(expect.arrayContaining(old.slice(-31)));
    expect(left).not.toContain(old.at(-32));
  });

  it("ends at once after the answer where no driver was loaded, and through Node's teardown where one was (the addon's hook releases its contexts)", async () => {
    // A preloaded listener tells the two apart: process.exit() never emits beforeExit, an event loop that runs dry does.
    const dir = mkdtempSync(join(tmpdir(), "vramfit-exit-"));
    const hook = join(dir, "hook.cjs");
    writeFileSync(hook, 'process.on("beforeExit", () => require("node:fs").writeSync(2, "beforeExit\\n"));\n');
    const env = { XDG_CACHE_HOME: join(dir, "cache"), NODE_OPTIONS: `--require ${hook}` };
    // No backend opened (--memory), then one opened that found no driver: both end at once, answer and status whole.
    const analytic = await runCli(ARGS, { ...NO_DRIVER, ...env });
    expect(analytic.stderr).toBe("");
    expect(analytic.status).toBe(0);
    expect(answer(analytic.stdout)).toMatchObject({ batchSize: 60 });
    const fallback = await runCli(["batch", "--model", "resnet18", "--json"], { ...NO_DRIVER, ...env });
    expect(fallback.status).toBe(0);
    expect(fallback.stderr).toBe("");
    const rows = JSON.parse(fallback.stdout) as { reason: string }[];
    expect(rows).toHaveLength(4);
    expect(rows[0]!.reason).toMatch(/^no usable GPU: driver not found: /);
    // A (simulated) driver loaded: the ordinary end, beforeExit included.
    const device = await runCli([...ARGS.filter((arg, i) => arg !== "--memory" && ARGS[i - 1] !== "--memory"), "--device", "0"], { ...simulatedGpus("NVIDIA H100 80GB HBM3:85045477376"), ...env });
    expect(device.status).toBe(0);
    expect(answer(device.stdout)).toMatchObject({ source: "device" });
    expect(device.stderr).toBe("beforeExit\n");
  });
});
