// The torch 2.13 CPU venv's python that PyTorch-running tests use (VRAMFIT_TORCH_CPU_PYTHON, made by .ci/python-envs.sh), or why they skip.
import { existsSync } from "node:fs";
import { ciResource } from "./ciResources.js";

// In CI the venv is made beside the tests (.ci/run): wait for it before reading its variable.
await ciResource("cpu");

const python = process.env.VRAMFIT_TORCH_CPU_PYTHON;

/** The python to run, or undefined when the tests that need it skip. */
export const torchCpuPython: string | undefined = python !== undefined && python !== "" && existsSync(python) ? python : undefined;

/** Why the tests that need it skip (undefined: they run). */
export const torchCpuSkip: string | undefined =
  python === undefined || python === ""
    ? "VRAMFIT_TORCH_CPU_PYTHON is unset (source .ci/python-envs.sh: the torch 2.13 CPU venv)"
    : torchCpuPython === undefined
      ? `VRAMFIT_TORCH_CPU_PYTHON=${python} does not exist`
      : undefined;

/** Says in one line which tests of `file` skip, and why; returns whether they do. */
export function skipsWithoutTorchCpu(file: string): boolean {
  if (torchCpuSkip !== undefined) console.log(`${file} skips its PyTorch tests: ${torchCpuSkip}`);
  return torchCpuSkip !== undefined;
}

/**
 * The environment torch runs its CPU steps in here: one OpenMP thread. torch 2.13 uses two on this 2-core machine,
 * and when a core is taken they wait on each other: torch-reference.py --dry-run --models resnet152 took 49 s of
 * wall and 20 s of CPU with two, 16 s and 6.6 s with one, at load 11 (torch 1.13's Debian build ran one).
 */
export const ONE_THREAD = { OMP_NUM_THREADS: "1" } as const;
