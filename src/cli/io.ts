// Where the CLI writes: results to stdout, progress and warnings to stderr.
import { writeSync } from "node:fs";

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Aborted by SIGINT/SIGTERM (set by run() for the real process): commands pass it to the device work. */
  signal?: AbortSignal;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => writeStderr(text.endsWith("\n") ? text : `${text}\n`),
};

/** Set once a write to stderr had to wait: later ones queue behind it on the stream, in order. */
let stderrQueued = false;

/**
 * Straight to file descriptor 2, as writeStdout does for 1: most runs that write there write one
 * note (no GPU, say), and making process.stderr for it (a socket when it is a pipe, as under
 * scripts/bench.mjs) took about a tenth of `batch --model resnet152`'s start (`node --cpu-prof`:
 * getStderr, 13 of 105 ms). A full non-blocking pipe waits on the stream; a closed one (EPIPE)
 * says nothing, as ignoreStderrErrors has it.
 */
function writeStderr(text: string): void {
  if (stderrQueued) {
    process.stderr.write(text);
    return;
  }
  const bytes = Buffer.from(text);
  let written = 0;
  try {
    while (written < bytes.length) written += writeSync(2, bytes, written);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return;
    stderrQueued = true;
    process.stderr.write(bytes.subarray(written));
  }
}

export function writeJson(io: Io, value: unknown): void {
  io.out(JSON.stringify(value, null, 2));
}

/**
 * Writes to the process's stdout and resolves once written, with the error instead of a crash:
 * EPIPE when the reader is gone (`vramfit … | head -1`), ENOSPC on a full disk (`> /dev/full`).
 */
export function writeStdout(text: string): Promise<NodeJS.ErrnoException | undefined> {
  // Straight to file descriptor 1 while it takes the bytes: making process.stdout (a socket when it
  // is a pipe) costs one to two milliseconds of the CLI's start (docs/benchmarks.md).
  const bytes = Buffer.from(text);
  let written = 0;
  try {
    while (written < bytes.length) written += writeSync(1, bytes, written);
    return Promise.resolve(undefined);
  } catch (error) {
    // A full non-blocking pipe: the stream waits for the reader. Anything else (EPIPE, ENOSPC) is the answer.
    if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return Promise.resolve(error as NodeJS.ErrnoException);
  }
  // With a listener, a failed write is the callback's error, not an unhandled 'error' event.
  if (process.stdout.listenerCount("error") === 0) process.stdout.on("error", () => undefined);
  return new Promise((resolve) => process.stdout.write(bytes.subarray(written), (error) => resolve(error ?? undefined)));
}

/**
 * stderr may be a closed pipe too (`2>&1 | head -1`): nothing more can be said there, so say nothing.
 * Node makes process.stderr on first use, which costs a millisecond and a half of the CLI's start
 * (docs/benchmarks.md), and most runs never write there: the handler is added when it is made.
 */
export function ignoreStderrErrors(): void {
  const guard = (stream: NodeJS.WriteStream): NodeJS.WriteStream => {
    if (stream.listenerCount("error") === 0) stream.on("error", () => undefined);
    return stream;
  };
  const own = Object.getOwnPropertyDescriptor(process, "stderr");
  if (!own?.get || !own.configurable) {
    guard(process.stderr);
    return;
  }
  const make = own.get;
  Object.defineProperty(process, "stderr", { ...own, get: () => guard(make.call(process) as NodeJS.WriteStream) });
}
