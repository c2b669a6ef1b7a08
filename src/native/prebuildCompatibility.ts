// Why a prebuilt addon does not load here, beyond the loader's own words: built for another
// architecture (the ELF header says which), a C library that is not glibc (musl, on Alpine), or
// an older glibc than the prebuild needs (named by the loader's error or the prebuild's
// vramfit.json). The loader (binding.ts) and the install hook (scripts/install.mjs) add it to the
// error they report. docs/install.md has the floors.
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { dirname, join } from "node:path";

/** The C library of this process: glibc and its version, musl, or neither known. */
export interface SystemLibc {
  family: "glibc" | "musl" | "unknown";
  version: string | null;
}

/** What scripts/prebuild.mjs writes next to each prebuild (prebuilds/<platform>-<arch>/vramfit.json). */
export interface PrebuildManifest {
  /** The newest glibc symbol version the prebuild needs, e.g. "2.17". */
  glibc?: string;
  /** The oldest glibc the prebuilds promise to load on, e.g. "2.28". */
  floor?: string;
  arch?: string;
}

/** Node's diagnostic report says which C library it runs on: a glibc version, or musl's loader among the shared objects. */
export function systemLibc(): SystemLibc {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string }; sharedObjects?: string[] } | undefined;
  const version = report?.header?.glibcVersionRuntime;
  if (version) return { family: "glibc", version };
  if (report?.sharedObjects?.some((path) => /(^|\/)(ld-musl|libc\.musl)/.test(path))) return { family: "musl", version: null };
  return { family: "unknown", version: null };
}

/** The prebuild's vramfit.json, if it has one. */
export function readManifest(addonPath: string): PrebuildManifest | undefined {
  try {
    return JSON.parse(readFileSync(join(dirname(addonPath), "vramfit.json"), "utf8")) as PrebuildManifest;
  } catch {
    return undefined;
  }
}

/** Dotted versions compared number by number: "2.28" is above "2.3". */
const byVersion = (a: string, b: string): number => a.localeCompare(b, "en", { numeric: true });

/** ELF e_machine values of the architectures Node runs on Linux. */
const ELF_MACHINES: Record<number, string> = { 3: "ia32", 40: "arm", 62: "x64", 183: "arm64", 21: "ppc64", 22: "s390x", 243: "riscv64", 258: "loong64" };

/** The architecture an ELF file is built for, from its header; undefined when it is not ELF or unreadable. */
export function elfArch(path: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const header = Buffer.alloc(20);
    if (readSync(fd, header, 0, 20, 0) < 20 || header.readUInt32BE(0) !== 0x7f454c46) return undefined;
    const machine = header[5] === 2 ? header.readUInt16BE(18) : header.readUInt16LE(18);
    return ELF_MACHINES[machine] ?? `ELF machine ${machine}`;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * One clause on why the addon at `addonPath` did not load, when the machine or its C library is
 * the cause: "it is built for arm64, and this is x64", "this system has glibc 2.17; the prebuild
 * needs glibc 2.28 or newer", musl; else undefined. `error` is the loader's message.
 */
export function explainLoadFailure(addonPath: string, error: string, libc?: SystemLibc): string | undefined {
  // glibc says "No such file or directory" for a file of another machine: the header tells.
  const arch = elfArch(addonPath);
  if (arch !== undefined && arch !== process.arch) return `it is built for ${arch}, and this is ${process.arch}`;
  const manifest = readManifest(addonPath);
  const found = libc ?? systemLibc();
  const floor = manifest?.floor ?? manifest?.glibc;
  if (found.family === "musl") return `this system's C library is musl, and the prebuilds are built for glibc${floor ? ` ${floor} or newer` : ""}`;
  const named = [...error.matchAll(/GLIBC_(\d+(?:\.\d+)+)/g)].map((m) => m[1]!);
  const required = [...named, ...(manifest?.glibc ? [manifest.glibc] : [])].sort(byVersion).at(-1);
  if (found.family === "glibc" && found.version !== null && required !== undefined && byVersion(found.version, required) < 0) {
    return `this system has glibc ${found.version}; the prebuild needs glibc ${required} or newer`;
  }
  const cxx = /\b(GLIBCXX|CXXABI)_[\d.]+/.exec(error)?.[0];
  if (cxx) return `it needs a newer C++ runtime (${cxx}) than this system's libstdc++`;
  return undefined;
}
