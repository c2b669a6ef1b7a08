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
