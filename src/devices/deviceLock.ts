// One vramfit probe per device across processes: an advisory flock on a file named after the
// device's UUID, so two jobs probing one GPU do not see each other's transient allocations. The
// files live in a directory private to the user (another user cannot pre-create them to disable
// the lock), or in VRAMFIT_LOCK_DIR, a directory the users who share GPUs share.
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readSync, writeSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VramfitError } from "../errors.js";
import type { Addon } from "../native/addonTypes.js";
import { uuidKey } from "./nvmlMatch.js";
import { envSetting } from "../environment.js";

/** A minute: a search takes well under a second on a GPU, so this covers a long queue of them. */
export const DEFAULT_LOCK_TIMEOUT_MS = 60_000;

export interface DeviceLockOptions {
  /** How long to wait for another process's probe (default 60 s); 0 tries once. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * Where the lock files live: `VRAMFIT_LOCK_DIR` (shared by the users who share GPUs), else a
   * directory private to this user, `vramfit-<uid>` (mode 0700) in the system's temporary directory.
   */
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

/** This user's private lock directory: `vramfit-<uid>` in the system's temporary directory. */
export function privateLockDirectory(): string {
  return join(tmpdir(), `vramfit-${process.getuid?.() ?? "user"}`);
}

/** Where lock files go when the caller names no directory: VRAMFIT_LOCK_DIR, else the private one. */
export function defaultLockDirectory(): string {
  return envSetting("VRAMFIT_LOCK_DIR") ?? privateLockDirectory();
}

/** The lock file of a device: the UUID's hex digits, so a MIG instance locks on its own. */
export function lockPath(uuid: string, directory = defaultLockDirectory()): string {
  return join(directory, `vramfit-${uuidKey(uuid) ?? uuid.replace(/[^0-9A-Za-z-]/g, "_")}.lock`);
}

/**
 * Makes sure the private directory is this user's alone: created with mode 0700, or found as a
 * real directory (not a symlink) owned by this user that no one else can enter. Anything else
 * in its place was put there by someone else — to read or to disable the locks — and is refused
 * (ERR_LOCK, exit 4) rather than trusted or silently worked around.
 */
function ensurePrivateDirectory(directory: string): void {
  try {
    mkdirSync(directory, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const info = lstatSync(directory);
  const uid = process.getuid?.();
  const fix = `remove it, or set VRAMFIT_LOCK_DIR to a directory for vramfit's lock files`;
  if (!info.isDirectory()) throw new VramfitError("ERR_LOCK", `the lock directory ${directory} is not a directory (a ${info.isSymbolicLink() ? "symlink" : "file"}): ${fix}`);
  if (uid !== undefined && info.uid !== uid) throw new VramfitError("ERR_LOCK", `the lock directory ${directory} belongs to uid ${info.uid}, not to this user (uid ${uid}): ${fix}`);
  if ((info.mode & 0o077) !== 0) throw new VramfitError("ERR_LOCK", `the lock directory ${directory} is open to others (mode ${(info.mode & 0o777).toString(8)}), so its locks could be taken away: ${fix}`);
}

/**
 * Opens the lock file without following a symlink (a hostile one in /tmp could point anywhere,
 * and vramfit often runs as root). Read-write when possible, to record the holder's pid; read-only
 * serves too, since flock needs no write access (in a shared directory the file may be another
 * user's). Created 0600 in the private directory, 0644 in a shared one: never writable by others.
 */
function openLockFile(path: string, shared: boolean): { fd: number; writable: boolean } {
  const flags = constants.O_CREAT | constants.O_NOFOLLOW; // libuv adds O_CLOEXEC itself
  try {
    return { fd: openSync(path, flags | constants.O_RDWR, shared ? 0o644 : 0o600), writable: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EACCES" || !shared) throw error;
    // Another user's file. Without O_CREAT, which fs.protected_regular refuses in a sticky /tmp.
    return { fd: openSync(path, constants.O_NOFOLLOW | constants.O_RDONLY), writable: false };
  }
}

/**
 * Writes this process's pid over the file's start, and cuts the file only when a longer record
 * (a longer pid) was there. Truncating to 0 first, as before, freed and reallocated the file's
 * block on every lock: 0.2-3 ms each on ext4 (strace -T), and a search with advice locks each device
 * ~9 times (74 locks, 208 ms of ftruncate on 8 simulated H100s at load 10; issue 22). A reader
 * between the two calls finds no valid pid, as between the truncate and the write before, and
 * names "another vramfit process".
 */
function recordHolder(fd: number): void {
  const record = Buffer.from(`${process.pid}\n`);
  writeSync(fd, record, 0, record.length, 0);
  if (fstatSync(fd).size > record.length) ftruncateSync(fd, record.length);
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
  const directory = options.directory ?? defaultLockDirectory();
  const shared = directory !== privateLockDirectory();
  const path = lockPath(device.uuid, directory);
  options.signal?.throwIfAborted();
  if (!shared) ensurePrivateDirectory(directory);
  let file: { fd: number; writable: boolean };
  try {
    file = openLockFile(path, shared);
  } catch (error) {
    // The private directory is this user's: a file there that cannot be opened is not contention.
    if (!shared) throw new VramfitError("ERR_LOCK", `cannot open the lock file ${path}: ${(error as Error).message}`);
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
    if (file.writable) recordHolder(file.fd);
  } catch (error) {
    release();
    throw error;
  }
  return { release, waitedMs: performance.now() - started };
}

export function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
