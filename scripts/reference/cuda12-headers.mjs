#!/usr/bin/env node
// Produced test/fixtures/cuda12-headers.json; reproduce: the fixture's `command` field.
// What CUDA 12's headers say, for test/native/cuda12Stubs.test.ts (no CUDA 12 toolkit, torch or wheel is on this
// project's machines): the runtime's functions and the names its header maps calls to (cuda_runtime_api.h), cuBLAS's
// functions (cublas_api.h), and cudaDeviceProp's layout (driver_types.h: each field's offset and size, and the
// struct's, as g++ lays it out on x86-64). Names, offsets and sizes only: no header text is kept.
// The headers used: CUDA 12.5's, as vendored by github.com/SciNim/nimcuda at commit 319b8de (include/cuda12_5/),
// where the renaming #defines are commented out for c2nim (they are read all the same).
//   node scripts/reference/cuda12-headers.mjs INCLUDE_DIR > test/fixtures/cuda12-headers.json
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node scripts/reference/cuda12-headers.mjs INCLUDE_DIR (CUDA 12's include/)");
  process.exit(2);
}
const read = (name) => readFileSync(join(dir, name), "utf8");
const names = (text, marker) => [...new Set([...text.replace(/\s+/g, " ").matchAll(new RegExp(`${marker} +([A-Za-z0-9_]+) *\\(`, "g"))].map((m) => m[1]))].sort();

const runtime = read("cuda_runtime_api.h");
const version = Number(runtime.match(/#define CUDART_VERSION +(\d+)/)[1]);
// The calls the header sends to another entry point for every program (not the per-thread-stream ones).
const renames = Object.fromEntries(
  [...runtime.matchAll(/^(?:\/\/ *)?#define +(cuda[A-Za-z0-9_]+) +(?:__CUDART_API_PTSZ\()?(cuda[A-Za-z0-9_]+_v\d+)\)?\s*$/gm)]
    .filter((m) => m[1] !== m[2]) // the per-thread-stream block maps names to themselves
    .map((m) => [m[1], m[2]]),
);

// cudaDeviceProp: the struct alone (with the UUID type it embeds), measured by the compiler.
const struct = read("driver_types.h").match(/^struct __device_builtin__ cudaDeviceProp\s*\{[\s\S]*?^\};/m)[0].replace("__device_builtin__ ", "");
const fields = [...struct.matchAll(/^\s+[A-Za-z_][A-Za-z0-9_ ]*?\s\**([A-Za-z0-9_]+)(?:\[\d+\])*;/gm)].map((m) => m[1]);
const scratch = mkdtempSync(join(tmpdir(), "vramfit-cuda12-"));
const program = [
  "#include <cstddef>",
  "#include <cstdio>",
  "struct CUuuid_st { char bytes[16]; }; typedef struct CUuuid_st cudaUUID_t;",
  struct,
  `int main() { std::printf("%zu\\n", sizeof(cudaDeviceProp));`,
  ...fields.map((f) => `  std::printf("${f} %zu %zu\\n", offsetof(cudaDeviceProp, ${f}), sizeof(cudaDeviceProp::${f}));`),
  "}",
].join("\n");
writeFileSync(join(scratch, "prop.cc"), program);
const build = spawnSync("g++", ["-std=c++17", "-o", join(scratch, "prop"), join(scratch, "prop.cc")], { encoding: "utf8" });
if (build.status !== 0) throw new Error(build.stderr);
const [size, ...rows] = spawnSync(join(scratch, "prop"), { encoding: "utf8" }).stdout.trim().split("\n");

const fixture = {
  command: "node scripts/reference/cuda12-headers.mjs <nimcuda@319b8de>/include/cuda12_5 > test/fixtures/cuda12-headers.json",
  source: "CUDA 12.5 headers as vendored by github.com/SciNim/nimcuda, commit 319b8deb31812fd9277c6232f0ae3fca31c6d55d, include/cuda12_5/",
  cudartVersion: version,
  runtimeFunctions: names(runtime, "CUDARTAPI"),
  runtimeRenames: renames,
  cublasFunctions: names(read("cublas_api.h"), "CUBLASWINAPI"),
  deviceProp: { size: Number(size), fields: rows.map((row) => { const [name, offset, bytes] = row.split(" "); return [name, Number(offset), Number(bytes)]; }) },
};
process.stdout.write(`${JSON.stringify(fixture, null, 1)}\n`);
