// Why a prebuild does not load: another arch (from its ELF header), musl, or an older glibc than it
// needs (from the loader's error or its vramfit.json), said in one clause next to the loader's error.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { elfArch, explainLoadFailure, type SystemLibc } from "../../src/native/prebuildCompatibility.js";

const MACHINE = { x64: 62, arm64: 183 } as const;
const here = process.arch === "arm64" ? "arm64" : "x64";
const other = here === "arm64" ? "x64" : "arm64";

/** A directory with vramfit.node (a 64-byte ELF header for `arch`) and, when given, its vramfit.json. */
function prebuild(arch: keyof typeof MACHINE, manifest?: object): string {
  const dir = mkdtempSync(join(tmpdir(), "vramfit-compat-"));
  const header = Buffer.alloc(64);
  header.writeUInt32BE(0x7f454c46, 0);
  header.set([2, 1, 1], 4); // 64-bit, little-endian, ELF version 1
  header.writeUInt16LE(3, 16); // a shared object
  header.writeUInt16LE(MACHINE[arch], 18);
  writeFileSync(join(dir, "vramfit.node"), header);
  if (manifest) writeFileSync(join(dir, "vramfit.json"), JSON.stringify(manifest));
  return join(dir, "vramfit.node");
}

const glibc = (version: string): SystemLibc => ({ family: "glibc", version });

describe("elfArch", () => {
  it("reads the machine from the ELF header", () => {
    expect(elfArch(prebuild("x64"))).toBe("x64");
    expect(elfArch(prebuild("arm64"))).toBe("arm64");
  });

  it("is undefined for a file that is not ELF, or is not there", () => {
    const text = join(mkdtempSync(join(tmpdir(), "vramfit-compat-")), "vramfit.node");
    writeFileSync(text, "#!/bin/sh\necho not a library, but long enough to have a header\n");
    expect(elfArch(text)).toBeUndefined();
    expect(elfArch(join(tmpdir(), "no-such-dir-vramfit", "vramfit.node"))).toBeUndefined();
  });
});

describe("explainLoadFailure", () => {
  it("says the prebuild is another arch's (glibc's own message is only 'No such file or directory')", () => {
    expect(explainLoadFailure(prebuild(other), "x.node: cannot open shared object file: No such file or directory", glibc("2.36"))).toBe(
      `it is built for ${other}, and this is ${process.arch}`,
    );
  });

  it("names the glibc found and the one the loader says is missing", () => {
    const error = "/lib64/libc.so.6: version `GLIBC_2.34' not found (required by vramfit.node)";
    expect(explainLoadFailure(prebuild(here, { glibc: "2.17", floor: "2.28" }), error, glibc("2.31"))).toBe("this system has glibc 2.31; the prebuild needs glibc 2.34 or newer");
  });

  it("takes what the prebuild needs from its vramfit.json when the error does not say, comparing versions number by number", () => {
    const file = prebuild(here, { glibc: "2.17", floor: "2.28" });
    expect(explainLoadFailure(file, "undefined symbol: foo", glibc("2.12"))).toBe("this system has glibc 2.12; the prebuild needs glibc 2.17 or newer");
    // 2.3 is older than 2.17 (not "2.3" > "2.1…" as text), and 2.31 is not the cause.
    expect(explainLoadFailure(file, "undefined symbol: foo", glibc("2.3"))).toBe("this system has glibc 2.3; the prebuild needs glibc 2.17 or newer");
    expect(explainLoadFailure(file, "undefined symbol: foo", glibc("2.31"))).toBeUndefined();
  });

  it("says musl is not glibc, with the floor the prebuilds are built for", () => {
    expect(explainLoadFailure(prebuild(here, { glibc: "2.17", floor: "2.28" }), "Error relocating vramfit.node: __memcpy_chk: symbol not found", { family: "musl", version: null })).toBe(
      "this system's C library is musl, and the prebuilds are built for glibc 2.28 or newer",
    );
  });

  it("names a C++ runtime requirement (a prebuild that did not link libstdc++ in)", () => {
    expect(explainLoadFailure(prebuild(here), "/lib64/libstdc++.so.6: version `GLIBCXX_3.4.30' not found", glibc("2.34"))).toBe(
      "it needs a newer C++ runtime (GLIBCXX_3.4.30) than this system's libstdc++",
    );
  });

  it("adds nothing when the machine is not the cause", () => {
    expect(explainLoadFailure(prebuild(here, { glibc: "2.17" }), "Module did not self-register", glibc("2.36"))).toBeUndefined();
  });
});
