// readInputFile: regular files within the size limit, pipes within the time limit, nothing that
// blocks the process (src/cli/inputFile.ts).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readInputFile } from "../../src/cli/inputFile.js";
import { VramfitError } from "../../src/errors.js";

const dir = mkdtempSync(join(tmpdir(), "vramfit-input-"));

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

describe("readInputFile", () => {
  it("reads a regular file, and refuses one over the limit before reading it", async () => {
    const path = join(dir, "small.json");
    writeFileSync(path, '{"kind":"affine"}');
    expect(await readInputFile("--spec", path)).toBe('{"kind":"affine"}');
    const error = await rejection(readInputFile("--spec", path, { maxBytes: 10 }));
    expect(error).toBeInstanceOf(VramfitError);
    expect(error.message).toBe(`--spec: expected a file of at most 10 B (vramfit's input limit), got "${path}"`);
  });

  it("reads a regular file whose size stat does not know (/proc reports 0)", async () => {
    expect(await readInputFile("--spec", "/proc/self/status")).toMatch(/^Name:/);
  });

  it("reads a FIFO once its writer has written and closed it", async () => {
    const fifo = join(dir, "written.fifo");
    execFileSync("mkfifo", [fifo]);
    const writer = spawn("sh", ["-c", `sleep 0.1; printf hello > '${fifo}'`]);
    expect(await readInputFile("--spec", fifo)).toBe("hello");
    writer.kill();
  });

  it("gives up on a FIFO that delivers nothing within the time limit, in one line", async () => {
    const fifo = join(dir, "silent.fifo");
    execFileSync("mkfifo", [fifo]);
    const error = await rejection(readInputFile("--spec", fifo, { pipeTimeoutMs: 200 }));
    expect(error.message).toBe(`--spec: expected a pipe that delivers its content within 0.2 s (vramfit's input limit); it sent nothing, got "${fifo}"`);
  });

  it("stops waiting when the signal aborts, with the signal's reason", async () => {
    const fifo = join(dir, "aborted.fifo");
    execFileSync("mkfifo", [fifo]);
    const controller = new AbortController();
    const reading = readInputFile("--spec", fifo, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("stop")), 50);
    expect((await rejection(reading)).message).toBe("stop");
  });

  it.each([
    ["/dev/zero", "a character device"],
    ["/dev/null", "a character device"],
  ])("refuses %s: %s", async (path, kind) => {
    expect((await rejection(readInputFile("--hf-config", path))).message).toBe(`--hf-config: expected a regular file or a pipe, not ${kind}, got "${path}"`);
  });
});
