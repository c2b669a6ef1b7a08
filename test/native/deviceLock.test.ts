// The per-device lock: flock on a file named after the device's UUID, with a bounded wait.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, chownSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

import { lockDevice, lockPath, privateLockDirectory } from "../../src/devices/deviceLock.js";
import { VramfitError } from "../../src/errors.js";
import { addonPath, loadAddon, temporaryPath } from "./simulator.js";

const addon = loadAddon();
const device = { ordinal: 0, uuid: "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" };

/** dist/ and the addon copied into a fresh folder anyone may read (0755, under the system's temporary folder). */
function readableCopy(): string {
  const copy = mkdtempSync(join(tmpdir(), "vramfit-readable-"));
  cpSync(fileURLToPath(new URL("../../dist", import.meta.url)), join(copy, "dist"), { recursive: true });
  writeFileSync(join(copy, "package.json"), JSON.stringify({ type: "module" }));
  copyFileSync(addonPath, join(copy, "vramfit.node"));
  for (const path of [copy, join(copy, "dist")]) chmodSync(path, 0o755);
  return copy;
}

function lockDir(): string {
  const dir = dirname(temporaryPath("x"));
  return dir;
}

describe("lockDevice", () => {
  it("names the file after the UUID's hex digits, so GPU- and MIG- spellings of one device agree", () => {
    expect(lockPath(device.uuid, "/run/lock")).toBe("/run/lock/vramfit-8932f937d72c4106c12f20bd9faed9f6.lock");
    expect(lockPath("MIG-8932F937-D72C-4106-C12F-20BD9FAED9F6", "/run/lock")).toBe(lockPath(device.uuid, "/run/lock"));
  });

  it("holds the device until released, recording the holder's pid", async () => {
    const directory = lockDir();
    const first = await lockDevice(addon, device, { directory });
    expect(readFileSync(lockPath(device.uuid, directory), "utf8")).toBe(`${process.pid}\n`);
    const waits: (number | undefined)[] = [];
    const second = lockDevice(addon, device, { directory, timeoutMs: 2000, onWait: (pid) => waits.push(pid) });
    setTimeout(() => first.release(), 150);
    const lock = await second;
    expect(waits).toEqual([process.pid]); // told once that it waits, and for whom
    expect(lock.waitedMs).toBeGreaterThanOrEqual(140);
    lock.release();
    lock.release(); // twice is harmless
  });

  it("records its pid over a longer record left by an earlier holder, leaving no trace of it", async () => {
    const directory = lockDir();
    const path = lockPath(device.uuid, directory);
    writeFileSync(path, `${"9".repeat(20)}\n`, { mode: 0o600 }); // longer than any pid: the record is overwritten in place, then cut
    const lock = await lockDevice(addon, device, { directory });
    expect(readFileSync(path, "utf8")).toBe(`${process.pid}\n`);
    lock.release();
  });

  it("gives up after the timeout with ERR_DEVICE_BUSY naming the device and the holder", async () => {
    const directory = lockDir();
    const held = await lockDevice(addon, device, { directory });
    const started = performance.now();
    const error = await lockDevice(addon, device, { directory, timeoutMs: 200 }).catch((e: unknown) => e);
    expect(performance.now() - started).toBeGreaterThanOrEqual(195);
    expect(error).toBeInstanceOf(VramfitError);
    expect((error as VramfitError).code).toBe("ERR_DEVICE_BUSY");
    expect((error as VramfitError).message).toBe(
      `device 0 (${device.uuid}) is being probed by another vramfit process (pid ${process.pid}); gave up after 0.2 s (--lock-timeout)`,
    );
    const immediate = await lockDevice(addon, device, { directory, timeoutMs: 0 }).catch((e: unknown) => e);
    expect((immediate as VramfitError).code).toBe("ERR_DEVICE_BUSY");
    held.release();
  });

  it("stops waiting when its signal aborts", async () => {
    const directory = lockDir();
    const held = await lockDevice(addon, device, { directory });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("interrupted")), 50);
    await expect(lockDevice(addon, device, { directory, signal: controller.signal })).rejects.toThrow("interrupted");
    held.release();
  });

  it("never follows a symlink (a hostile one in a shared /tmp), and goes ahead unlocked saying why", async () => {
    const directory = lockDir();
    const target = temporaryPath("target");
    writeFileSync(target, "precious\n");
    symlinkSync(target, lockPath(device.uuid, directory));
    const reasons: string[] = [];
    const lock = await lockDevice(addon, device, { directory, onUnlocked: (reason) => reasons.push(reason) });
    lock.release();
    expect(reasons[0]).toMatch(/^cannot open the lock file .*vramfit-8932f937d72c4106c12f20bd9faed9f6\.lock: ELOOP/);
    expect(readFileSync(target, "utf8")).toBe("precious\n");
  });

  it("another user's lock file (read-only to us, in a sticky shared directory) still locks: flock needs no write access", async () => {
    // The file belongs to this process's user, mode 0644, in a world-writable sticky directory
    // like /tmp; the locker is someone else: `nobody` when this runs as root, else this user on a
    // file made read-only.
    const directory = mkdtempSync(join(tmpdir(), "vramfit-sticky-"));
    chmodSync(directory, 0o1777);
    const file = lockPath(device.uuid, directory);
    writeFileSync(file, "");
    chmodSync(file, 0o644);
    if (process.getuid?.() !== 0) chmodSync(file, 0o444);
    // The other user runs vramfit's lock from a world-readable copy: the clone's own dist/ and
    // addon may sit under a parent only this user can enter (CI's `mktemp -d` folder is 0700).
    const copy = readableCopy();
    const script = `
      import { createRequire } from "node:module";
      import { lockDevice } from ${JSON.stringify(pathToFileURL(join(copy, "dist", "devices", "deviceLock.js")).href)};
      const addon = createRequire(import.meta.url)(${JSON.stringify(join(copy, "vramfit.node"))});
      const lock = await lockDevice(addon, ${JSON.stringify(device)}, { directory: ${JSON.stringify(directory)}, onUnlocked: (r) => console.log("unlocked: " + r) });
      console.log("locked");
      process.stdin.once("data", () => { lock.release(); process.exit(0); });
    `;
    const asOther = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { ...asOther, cwd: copy, stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, "exit").then(([code]) => code as number | null);
    // Whichever comes first: the child's line, or its exit (a failure to start fails here, at once).
    const first = await Promise.race([once(child.stdout!, "data").then(([line]) => (line as Buffer).toString().trim()), exited.then((code) => `exited with status ${code}: ${stderr.trim()}`)]);
    expect(first).toBe("locked");
    const busy = await lockDevice(addon, device, { directory, timeoutMs: 0 }).catch((e: VramfitError) => e.code);
    expect(busy).toBe("ERR_DEVICE_BUSY");
    child.stdin!.write("done\n");
    expect(await exited).toBe(0);
    (await lockDevice(addon, device, { directory, timeoutMs: 0 })).release();
  });
});

describe("lock files another user cannot pre-create (issue 13, item 9)", () => {
  /** Runs `body` with the default lock directory in a fresh temporary directory (TMPDIR), VRAMFIT_LOCK_DIR unset. */
  async function withPrivateDefault<T>(body: (tmp: string) => Promise<T>): Promise<T> {
    const saved = { TMPDIR: process.env.TMPDIR, VRAMFIT_LOCK_DIR: process.env.VRAMFIT_LOCK_DIR };
    const tmp = mkdtempSync(join(tmpdir(), "vramfit-tmpdir-"));
    process.env.TMPDIR = tmp;
    delete process.env.VRAMFIT_LOCK_DIR;
    try {
      return await body(tmp);
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  }
  const uid = process.getuid!();

  it("by default the files live in a directory private to the user (0700), each file 0600", async () => {
    await withPrivateDefault(async (tmp) => {
      expect(privateLockDirectory()).toBe(join(tmp, `vramfit-${uid}`));
      const lock = await lockDevice(addon, device);
      expect(statSync(privateLockDirectory()).mode & 0o777).toBe(0o700);
      expect(statSync(lockPath(device.uuid)).mode & 0o777).toBe(0o600);
      lock.release();
    });
  });

  it.each([
    ["open to others (0777)", (dir: string) => { mkdirSync(dir); chmodSync(dir, 0o777); }, /is open to others \(mode 777\), so its locks could be taken away: remove it, or set VRAMFIT_LOCK_DIR/],
    ["a symlink to a directory someone else controls", (dir: string) => symlinkSync(mkdtempSync(join(tmpdir(), "elsewhere-")), dir), /is not a directory \(a symlink\)/],
  ])("refuses a private directory that is %s: ERR_LOCK, never unlocked in silence", async (_, plant, message) => {
    await withPrivateDefault(async () => {
      plant(privateLockDirectory());
      const reasons: string[] = [];
      const error = await lockDevice(addon, device, { onUnlocked: (r) => reasons.push(r) }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(VramfitError);
      expect((error as VramfitError).code).toBe("ERR_LOCK");
      expect((error as VramfitError).message).toMatch(message);
      expect(reasons).toEqual([]);
    });
  });

  it.runIf(uid === 0)("refuses a private directory another user created first (0700, theirs)", async () => {
    await withPrivateDefault(async () => {
      mkdirSync(privateLockDirectory(), { mode: 0o700 });
      chownSync(privateLockDirectory(), 65534, 65534);
      const error = await lockDevice(addon, device).catch((e: VramfitError) => e);
      expect((error as VramfitError).message).toMatch(/belongs to uid 65534, not to this user \(uid 0\)/);
    });
  });

  it("in a shared VRAMFIT_LOCK_DIR the files are 0644: others can lock them, not write them (they were 0666)", async () => {
    const directory = mkdtempSync(join(tmpdir(), "vramfit-shared-"));
    const lock = await lockDevice(addon, device, { directory });
    expect(statSync(lockPath(device.uuid, directory)).mode & 0o777).toBe(0o644 & ~process.umask());
    lock.release();
  });
});
