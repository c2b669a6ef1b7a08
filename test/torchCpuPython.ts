// The torch 2.13 CPU venv's python that PyTorch-running tests use (VRAMFIT_TORCH_CPU_PYTHON, made by .ci/python-envs.sh), or why they skip.
import { existsSync } from "node:fs";

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
