// What a run's output says, read line by line as it streams: an out-of-memory message, the job's
// own VRAMFIT_PEAK_BYTES line, and the last lines of its stderr for an error report.
import { findOutOfMemory, type OutOfMemoryMatch } from "./outOfMemory.js";

/** `VRAMFIT_PEAK_BYTES=<n>`, alone on its line (a job prints it after its steps). */
const PEAK_LINE = /^\s*VRAMFIT_PEAK_BYTES\s*=\s*([0-9]+)\s*$/;
/** A line longer than this is scanned in pieces: a job printing megabytes without a newline stays bounded. */
const MAX_LINE_CHARS = 64 * 1024;
const TAIL_LINES = 20;

export class JobOutput {
  outOfMemory: OutOfMemoryMatch | undefined;
  /** The largest VRAMFIT_PEAK_BYTES the job printed (one line per rank, for a multi-GPU job). */
  peakBytes: number | undefined;
  private readonly tail: string[] = [];
  private readonly partial = { stdout: "", stderr: "" };

  /** Feeds a chunk of one stream. */
  write(stream: "stdout" | "stderr", chunk: Buffer | string): void {
    const lines = (this.partial[stream] + chunk.toString()).split("\n");
    let rest = lines.pop() ?? "";
    while (rest.length > MAX_LINE_CHARS) {
      lines.push(rest.slice(0, MAX_LINE_CHARS));
      rest = rest.slice(MAX_LINE_CHARS);
    }
    this.partial[stream] = rest;
    for (const line of lines) this.line(stream, line);
  }

  /** The streams have ended: the last line without a newline counts too. */
  end(): void {
    for (const stream of ["stdout", "stderr"] as const) {
      if (this.partial[stream] !== "") this.line(stream, this.partial[stream]);
      this.partial[stream] = "";
    }
  }

  /** The last lines of stderr (without trailing empty lines). */
  stderrTail(): string[] {
    return [...this.tail];
  }

  private line(stream: "stdout" | "stderr", text: string): void {
    const line = text.replace(/\r$/, "");
    this.outOfMemory ??= findOutOfMemory(line);
    const peak = PEAK_LINE.exec(line);
    if (peak) {
      const bytes = Number(peak[1]);
      if (Number.isSafeInteger(bytes)) this.peakBytes = Math.max(this.peakBytes ?? 0, bytes);
    }
    if (stream === "stderr" && line.trim() !== "") {
      this.tail.push(line);
      if (this.tail.length > TAIL_LINES) this.tail.shift();
    }
  }
}
