// One vramfit probe per device across processes: an advisory flock on a file named after the
// device's UUID, so two jobs probing one GPU do not see each other's transient allocations.
import { closeSync, constants, fchmodSync, fstatSync, openSync, readSync, writeSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VramfitError } from "../errors.js";
import type { Addon } from "../native/addonTypes.js";
import { uuidKey } from "./nvmlMatch.js";

/** A minute: a search takes well under a second on a GPU, so this covers a long queue of them. */
export const DEFAULT_LOCK_TIMEOUT_MS = 60_000;

export interface DeviceLockOptions {
  /** How long to wait for another process's probe (default 60 s); 0 tries once. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Where the lock files live: `VRAMFIT_LOCK_DIR`, else the system's temporary directory. */
  directory?: string;
  /** Called once when the device is busy and vramfit starts to wait. */
  onWait?: (holderPid: number | undefined, timeoutMs: number) => void;
  /** Called when no lock can be taken at all (e.g. a read-only directory); the probe goes ahead. */
  onUnlocked?: (reason: string) => void;
}

export interface DeviceLock {
  /** Releases the lock (closing the file); safe to call twice. */
  release(): void;
  /** How long the wait took. */
  waitedMs: number;
}

/** The lock file of a device: the UUID's hex digits, so a MIG instance locks on its own. */
export function lockPath(uuid: string, directory = process.env.VRAMFIT_LOCK_DIR ?? tmpdir()): string {
  return join(directory, `vramfit-${uuidKey(uuid) ?? uuid.replace(/[^0-9A-Za-z-]/g, "_")}.lock`);
}

/**
 * Opens the lock file without following a symlink (a hostile one in /tmp could point anywhere,
 * and vramfit often runs as root). Read-write when possible, to record the holder's pid; read-only
 * serves too, since flock needs no write access (the file may be another user's).
 */
function openLockFile(path: string): { fd: number; writable: boolean } {
  const flags = constants.O_CREAT | constants.O_NOFOLLOW; // libuv adds O_CLOEXEC itself
  try {
    const fd = openSync(path, flags | constants.O_RDWR, 0o666);
    try {
      // Let other users' vramfit record their pid too (umask would leave 0644); best effort.
      if (fstatSync(fd).uid === process.getuid?.()) fchmodSync(fd, 0o666);
    } catch {
      /* not ours to change */
    }
    return { fd, writable: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EACCES") throw error;
    // Another user's file. Without O_CREAT, which fs.protected_regular refuses in a sticky /tmp.
    return { fd: openSync(path, constants.O_NOFOLLOW | constants.O_RDONLY), writable: false };
  }
}

function holderPid(fd: number): number | undefined {
  try {
    const buffer = Buffer.alloc(32);
    const text = buffer.subarray(0, readSync(fd, buffer, 0, 32, 0)).toString("utf8").trim();
    return /^\d+$/.test(text) ? Number(text) : undefined;
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Takes the device's lock, waiting (polling every 10 to 100 ms) up to `timeoutMs` for another
 * process to finish. Throws `ERR_DEVICE_BUSY` on timeout and `signal.reason` when aborted. When
 * the lock file cannot be opened at all, it says why through `onUnlocked` and goes ahead unlocked:
 * the lock is a courtesy between vramfit processes, not a reason to refuse a capacity check.
 */
export async function lockDevice(addon: Addon, device: { ordinal: number | null; uuid: string }, options: DeviceLockOptions = {}): Promise<DeviceLock> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS;
  const path = lockPath(device.uuid, options.directory);
  options.signal?.throwIfAborted();
  let file: { fd: number; writable: boolean };
  try {
    file = openLockFile(path);
  } catch (error) {
    options.onUnlocked?.(`cannot open the lock file ${path}: ${(error as Error).message}`);
    return { release: () => {}, waitedMs: 0 };
  }
  const started = performance.now();
  let released = false;
  const release = () => {
    if (!released) closeSync(file.fd); // closing drops the flock
    released = true;
  };
  try {
    let pause = 10;
    let announced = false;
    while (!addon.tryLockFile(file.fd)) {
      const waited = performance.now() - started;
      if (waited >= timeoutMs) {
        const pid = holderPid(file.fd);
        const who = pid === undefined ? "another vramfit process" : `another vramfit process (pid ${pid})`;
        throw new VramfitError(
          "ERR_DEVICE_BUSY",
          `device ${device.ordinal ?? "?"} (${device.uuid}) is being probed by ${who}; gave up after ${formatSeconds(timeoutMs)} (--lock-timeout)`,
        );
      }
      if (!announced) options.onWait?.(holderPid(file.fd), timeoutMs);
      announced = true;
      await sleep(Math.min(pause, timeoutMs - waited), options.signal);
      pause = Math.min(pause * 2, 100);
    }
    if (file.writable) {
      ftruncateSync(file.fd, 0);
      writeSync(file.fd, `${process.pid}\n`, 0);
    }
  } catch (error) {
    release();
    throw error;
  }
  return { release, waitedMs: performance.now() - started };
}

export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
