// A simulated PyTorch job with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (issue 23): torch 2.14.1 on the stub
// folder (build/Release/stubs/cuda13), in the environment `--exec … --gpu` gives a job. Its expandable segments ask
// NVML before their first map, which the folder's libnvidia-ml.so.1 (the simulated NVML) answers. Needs
// VRAMFIT_TORCH_CUDA_PYTHON (.ci/python-envs.sh); skips with one line without it.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_ALLOC_CONF } from "../../src/fit/allocConf.js";
import { replayExpandable } from "../../src/fit/expandableSegments.js";
import { prepareSimulatedGpu, simulatedRunEnv } from "../../src/job/simulatedGpu.js";
import { root } from "../cli/runCli.js";
import { withTorchDefaults } from "./torchDefaults.js";
import { ciResource } from "../ciResources.js";

// In CI, made beside the tests (.ci/run): wait for it here, before anything reads its variables.
await ciResource("cuda");

const python = process.env.VRAMFIT_TORCH_CUDA_PYTHON;
const skip = python === undefined || python === "" ? "VRAMFIT_TORCH_CUDA_PYTHON is unset (source .ci/python-envs.sh)" : undefined;
if (skip !== undefined) console.log(`test/job/expandableSegments.test.ts skips: ${skip}`);
const MiB = 2 ** 20;

describe.skipIf(skip !== undefined)("PyTorch's expandable segments on a simulated GPU", () => {
  it("map whole pages, 20 MiB for the large pool and 2 MiB for the small one, and the NVML beside the stubs counts the device", () => {
    const sim = prepareSimulatedGpu({ gpu: "H100-80GB", python: python! }, 512 * MiB);
    const prefix = join(mkdtempSync(join(tmpdir(), "vramfit-expandable-")), "run");
    const env = { ...withTorchDefaults(process.env), ...simulatedRunEnv(sim, prefix, process.env), CUDA_VISIBLE_DEVICES: "0", PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:True" };
    const out = execFileSync(python!, [join(root, "test", "fixtures", "simulated", "expandable_step.py")], { env, encoding: "utf8", timeout: 120_000 });
    const r = JSON.parse(out.trim().split("\n").pop()!) as { deviceCount: number; reserved: number; allocated: number; segments: [string, number][]; deviceAllocs: number };
    expect(r.deviceCount).toBe(1);
    // c10/cuda/CUDACachingAllocator.cpp (Note [Expandable Segments], torch 2.14.1): the large pool's segment grows by
    // kLargeBuffer (20 MiB) pages, the small pool's by kSmallBuffer (2 MiB); a request maps only the whole pages it lacks.
    // 30 MiB takes two large pages, 1 MiB one small page; without expandable segments the 30 MiB would be one 30 MiB
    // segment (a request above 10 MiB rounds to 2 MiB), so 32 MiB reserved.
    expect(r.allocated).toBe(31 * MiB);
    expect(r.reserved).toBe(2 * 20 * MiB + 2 * MiB);
    expect(r.segments.map(([type, bytes]) => `${type} ${bytes}`).sort()).toEqual([`large ${40 * MiB}`, `small ${2 * MiB}`]);
    // memory_stats()' num_device_alloc counts the maps (one map_block per request that lacked pages: the 30 MiB's two
    // large pages in one, the small page in another), as vramfit's replay of the same two requests counts them.
    const emulated = replayExpandable([{ kind: "alloc", tensor: 0, bytes: 30 * MiB }, { kind: "alloc", tensor: 1, bytes: MiB }], Number.POSITIVE_INFINITY, DEFAULT_ALLOC_CONF, { segments: true });
    expect(emulated.mapLog).toEqual([40 * MiB, 2 * MiB]);
    expect(r.deviceAllocs).toBe(emulated.cudaMallocs);
    expect(r.deviceAllocs).toBe(2);
  }, 120_000);
});
