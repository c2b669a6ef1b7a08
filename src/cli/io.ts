// Where the CLI writes: results to stdout, progress and warnings to stderr.

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** Aborted by SIGINT/SIGTERM (set by run() for the real process): commands pass it to the device work. */
  signal?: AbortSignal;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

export function writeJson(io: Io, value: unknown): void {
  io.out(JSON.stringify(value, null, 2));
}

/**
 * Writes to the process's stdout and resolves once written, with the error instead of a crash:
 * EPIPE when the reader is gone (`vramfit … | head -1`), ENOSPC on a full disk (`> /dev/full`).
 */
export function writeStdout(text: string): Promise<NodeJS.ErrnoException | undefined> {
  // With a listener, a failed write is the callback's error, not an unhandled 'error' event.
  if (process.stdout.listenerCount("error") === 0) process.stdout.on("error", () => undefined);
  return new Promise((resolve) => process.stdout.write(text, (error) => resolve(error ?? undefined)));
}

/** stderr may be a closed pipe too (`2>&1 | head -1`): nothing more can be said there, so say nothing. */
export function ignoreStderrErrors(): void {
  if (process.stderr.listenerCount("error") === 0) process.stderr.on("error", () => undefined);
}
