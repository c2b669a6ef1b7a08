// The progress line: drawn only on a terminal, never with --json, after a delay, without colour under NO_COLOR.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { NO_PROGRESS, createProgress, showProbes } from "../../src/cli/progress.js";

class FakeTerminal {
  written: string[] = [];
  constructor(readonly isTTY: boolean, readonly columns = 80) {}
  write(text: string): boolean {
    this.written.push(text);
    return true;
  }
}

let clock = 0;
const now = () => clock;
beforeEach(() => {
  vi.useFakeTimers();
  clock = 0;
});
afterEach(() => vi.useRealTimers());
const advance = (ms: number) => {
  clock += ms;
  vi.advanceTimersByTime(ms);
};

describe("createProgress", () => {
  it("draws nothing when stderr is not a terminal, or with --json", () => {
    const pipe = new FakeTerminal(false);
    const json = new FakeTerminal(true);
    expect(createProgress({ stream: pipe, env: {}, now })).toBe(NO_PROGRESS);
    expect(createProgress({ stream: json, env: {}, now, json: true })).toBe(NO_PROGRESS);
    expect(createProgress({ stream: new FakeTerminal(true), env: { TERM: "dumb" }, now })).toBe(NO_PROGRESS);
  });

  it("draws after the delay, overwriting one line, with the elapsed time, and clears it when done", () => {
    const tty = new FakeTerminal(true);
    const progress = createProgress({ stream: tty, env: {}, now, delayMs: 300, intervalMs: 100 });
    progress.update("device 0: probing");
    advance(200);
    expect(tty.written).toEqual([]); // quick work shows nothing
    advance(100);
    expect(tty.written).toEqual(["\r\x1b[2K\x1b[36m⠋\x1b[39m device 0: probing \x1b[2m0.3 s\x1b[22m"]);
    progress.update("device 0: probing again");
    advance(100);
    expect(tty.written.at(-1)).toBe("\r\x1b[2K\x1b[36m⠙\x1b[39m device 0: probing again \x1b[2m0.4 s\x1b[22m");
    progress.done();
    expect(tty.written.at(-1)).toBe("\r\x1b[2K");
    const count = tty.written.length;
    advance(1000);
    expect(tty.written).toHaveLength(count); // the timer is gone
  });

  it("honours NO_COLOR: the same line without colour codes", () => {
    const tty = new FakeTerminal(true);
    const progress = createProgress({ stream: tty, env: { NO_COLOR: "1" }, now, delayMs: 0 });
    progress.update("validate: 3/6 probe boundary");
    expect(tty.written).toEqual(["\r\x1b[2K⠋ validate: 3/6 probe boundary 0.0 s"]);
    expect(tty.written.join("")).not.toMatch(/\x1b\[\d+m/);
  });

  it("fits the line to the terminal's width", () => {
    const tty = new FakeTerminal(true, 30);
    const progress = createProgress({ stream: tty, env: { NO_COLOR: "1" }, now, delayMs: 0 });
    progress.update("x".repeat(100));
    const line = tty.written[0]!.replace("\r\x1b[2K", "");
    expect([...line].length).toBeLessThanOrEqual(30);
    expect(line).toContain("…");
  });

  it("clears nothing when nothing was drawn", () => {
    const tty = new FakeTerminal(true);
    const progress = createProgress({ stream: tty, env: {}, now });
    progress.update("fast");
    progress.done();
    expect(tty.written).toEqual([]);
  });
});

describe("showProbes", () => {
  it("shows the probes made and what each device is allocating", () => {
    const texts: string[] = [];
    const onProbe = showProbes({ update: (t) => texts.push(t), done: () => undefined }, () => "step 1")!;
    onProbe({ phase: "start", ordinal: 0, batch: 12, bytes: 2 * 2 ** 30, allocations: 2 });
    onProbe({ phase: "start", ordinal: 1, batch: 7, bytes: 3 * 2 ** 30, allocations: 1 });
    expect(texts.at(-1)).toBe("step 1 · 2 probes · device 0: allocating 2 GiB in 2 allocations (batch 12) · device 1: allocating 3 GiB in 1 allocation (batch 7)");
    onProbe({ phase: "end", ordinal: 0, batch: 12, fits: true, limit: null });
    expect(texts.at(-1)).toBe("step 1 · 2 probes · device 1: allocating 3 GiB in 1 allocation (batch 7)");
    onProbe({ phase: "end", ordinal: 1, batch: 7, fits: false, limit: "reserve" });
    expect(texts.at(-1)).toBe("step 1 · 2 probes");
  });

  it("observes nothing when there is no progress line", () => {
    expect(showProbes(NO_PROGRESS)).toBeUndefined();
  });
});
