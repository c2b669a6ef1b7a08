// One progress line on stderr for long device work: only on a terminal, never with --json; NO_COLOR honoured.
import { fstatSync, statSync } from "node:fs";
import { isatty } from "node:tty";
import type { ProbeEvent } from "../index.js";
import { formatBytes } from "../units.js";
import { processIo, type Io } from "./io.js";

/** Where the line is drawn: a terminal stream (process.stderr). */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export interface Progress {
  /** Replaces the line's text; drawn once the work has lasted `delayMs`, so quick work shows nothing. */
  update(text: string): void;
  /** Clears the line: call it before printing results or errors. */
  done(): void;
}

export interface ProgressOptions {
  json?: boolean | undefined;
  stream?: ProgressStream;
  env?: Record<string, string | undefined>;
  /** Nothing is drawn before this (default 300 ms). */
  delayMs?: number;
  /** Redraw period, for the spinner and the elapsed time (default 100 ms). */
  intervalMs?: number;
  now?: () => number;
}

export const NO_PROGRESS: Progress = { update: () => undefined, done: () => undefined };

const FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
const CLEAR_LINE = "\r\x1b[2K";

/** Colour on a terminal unless NO_COLOR is set to anything non-empty (no-color.org) or TERM is dumb. */
export function colorEnabled(stream: ProgressStream, env: Record<string, string | undefined> = process.env): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== "dumb";
}

/**
 * Whether file descriptor 2 is a terminal. A terminal is a character device, so a pipe or a file
 * is told apart by fstat alone, and `2>/dev/null` by the device it is: node:tty loads node:net
 * and the streams, some 4 % of a piped `batch --model resnet152` (`node --cpu-prof`: tty and net
 * 12 of 286 ms, load 5).
 */
function stderrIsTerminal(): boolean {
  try {
    const stderr = fstatSync(2);
    if (!stderr.isCharacterDevice()) return false;
    if (process.platform !== "win32" && stderr.rdev === statSync("/dev/null").rdev) return false;
  } catch {
    // no descriptor 2, or one fstat cannot read: isatty decides
  }
  return isatty(2);
}

/**
 * A progress line, or NO_PROGRESS where it must not appear: when `json` is set, or when the
 * stream is not a terminal (a pipe, a file, a CI log).
 */
export function createProgress(options: ProgressOptions = {}): Progress {
  if (options.json) return NO_PROGRESS;
  // Whether stderr is a terminal is asked of its descriptor first: process.stderr builds a stream
  // on first use, a few milliseconds of start-up that a piped or --json run never needs.
  if (options.stream === undefined && !stderrIsTerminal()) return NO_PROGRESS;
  const stream = options.stream ?? process.stderr;
  const env = options.env ?? process.env;
  if (stream.isTTY !== true || env.TERM === "dumb") return NO_PROGRESS;
  const color = colorEnabled(stream, env);
  const now = options.now ?? (() => performance.now());
  const delayMs = options.delayMs ?? 300;
  const started = now();
  let text = "";
  let frame = 0;
  let drawn = false;
  let timer: ReturnType<typeof setInterval> | undefined;

  const draw = (): void => {
    const elapsedMs = now() - started;
    if (elapsedMs < delayMs || text === "") return;
    const spinner = FRAMES[frame++ % FRAMES.length]!;
    const elapsed = `${(elapsedMs / 1000).toFixed(1)} s`;
    const room = Math.max(10, (stream.columns || 80) - elapsed.length - 4); // a pty may report 0 columns
    const shown = [...text].length > room ? `${[...text].slice(0, room - 1).join("")}…` : text;
    const line = color ? `\x1b[36m${spinner}\x1b[39m ${shown} \x1b[2m${elapsed}\x1b[22m` : `${spinner} ${shown} ${elapsed}`;
    stream.write(`${CLEAR_LINE}${line}`);
    drawn = true;
  };

  return {
    update(next) {
      text = next;
      if (timer === undefined) {
        timer = setInterval(draw, options.intervalMs ?? 100);
        timer.unref();
      }
      if (!drawn) draw(); // then the timer redraws: a burst of updates is not a burst of writes
    },
    done() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      if (drawn) stream.write(CLEAR_LINE);
      drawn = false;
    },
  };
}

/**
 * The CLI's progress line: only where the command writes to the process's own stderr (run()
 * hands commands processIo or a copy of it with a signal; an injected Io, as in tests, gets none).
 */
export function cliProgress(io: Io, json: boolean | undefined): Progress {
  return io.err === processIo.err ? createProgress({ json }) : NO_PROGRESS;
}

/**
 * A probe observer (the library's `onProbe`) that shows every probe on the progress line: how
 * many were made, and what each device is allocating now (a long probe shows its elapsed time
 * ticking). `label` prefixes the line with the step the caller is at. Undefined without a line.
 */
export function showProbes(progress: Progress, label?: () => string): ((event: ProbeEvent) => void) | undefined {
  if (progress === NO_PROGRESS) return undefined;
  const inFlight = new Map<number, string>();
  let probes = 0;
  const render = (): void => {
    const now = [...inFlight].sort(([a], [b]) => a - b).map(([ordinal, what]) => `device ${ordinal}: ${what}`);
    progress.update([label?.(), `${probes} probe${probes === 1 ? "" : "s"}`, ...now].filter(Boolean).join(" · "));
  };
  return (event) => {
    if (event.phase === "start") {
      probes += 1;
      inFlight.set(event.ordinal, `allocating ${formatBytes(event.bytes)} in ${event.allocations} allocation${event.allocations === 1 ? "" : "s"} (batch ${event.batch})`);
    } else {
      inFlight.delete(event.ordinal);
    }
    render();
  };
}
