// A run's log file that keeps the end of the output and never grows past a bound: a job printing
// without end (`yes >&2` wrote 3.3 GB in ten minutes) costs at most twice LOG_TAIL_BYTES of disk.
import { closeSync, openSync, readSync, renameSync, rmSync, statSync, writeSync, writeFileSync } from "node:fs";

/** What each stream's log keeps: its last 4 MiB, enough for any traceback. */
export const LOG_TAIL_BYTES = 4 * 1024 * 1024;

/**
 * Written synchronously, so a job that prints faster than the disk takes it waits on its pipe
 * rather than filling vramfit's memory. Past `tailBytes` the file becomes `PATH.1` and a new one
 * starts; `close()` joins the two's last `tailBytes`, under a first line saying how much was dropped.
 */
export class CappedLog {
  private fd: number;
  private written = 0;
  private total = 0;
  private rotated = false;

  constructor(
    readonly path: string,
    private readonly tailBytes = LOG_TAIL_BYTES,
  ) {
    this.fd = openSync(path, "w");
  }

  write(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.written + chunk.length > this.tailBytes && this.written > 0) {
      closeSync(this.fd);
      renameSync(this.path, `${this.path}.1`);
      this.fd = openSync(this.path, "w");
      this.written = 0;
      this.rotated = true;
    }
    const part = chunk.length > this.tailBytes ? chunk.subarray(chunk.length - this.tailBytes) : chunk;
    writeSync(this.fd, part);
    this.written += part.length;
  }

  /** Closes the file; returns how many bytes of output were dropped from its front (0: the log is whole). */
  close(): number {
    closeSync(this.fd);
    const kept = this.written;
    const older = `${this.path}.1`;
    const olderBytes = this.rotated ? statSync(older).size : 0;
    const fromOlder = Math.min(olderBytes, this.tailBytes - kept);
    const dropped = this.total - fromOlder - kept;
    if (!this.rotated && dropped === 0) return 0;
    const head = Buffer.alloc(fromOlder);
    if (fromOlder > 0) {
      const fd = openSync(older, "r");
      readSync(fd, head, 0, fromOlder, olderBytes - fromOlder);
      closeSync(fd);
    }
    const tail = Buffer.alloc(kept);
    const current = openSync(this.path, "r");
    readSync(current, tail, 0, kept, 0);
    closeSync(current);
    const note = dropped === 0 ? "" : `[vramfit: the first ${dropped} bytes of this output were dropped; the last ${fromOlder + kept} follow]\n`;
    writeFileSync(this.path, Buffer.concat([Buffer.from(note), head, tail]));
    rmSync(older, { force: true });
    return dropped;
  }
}
