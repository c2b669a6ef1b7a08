// What a test file needs that CI makes beside the tests: the torch venvs and the prebuilds. .ci/run starts vitest as
// soon as npm ci is done and makes these in the background; a file that needs one awaits it at its top, at collection,
// where no test's or hook's time limit runs (the files that need none run meanwhile: vitest.config.ts starts them first).
// Outside CI (VRAMFIT_CI_RESOURCES unset) it returns at once and the environment is what the shell gave.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * What each is: "cpu" the torch 2.13 CPU venv (VRAMFIT_TORCH_CPU_PYTHON), "cuda" the torch 2.14.1 CUDA venv and the CUDA
 * headers (VRAMFIT_TORCH_CUDA_PYTHON, VRAMFIT_CUDA_INCLUDE), "prebuilds" prebuilds/ and the bullseye root
 * (VRAMFIT_PREBUILD_SKIP where CI could not make them), "settled" all three and pytest done (for the files whose checks
 * are times, which assume a machine that is not also installing or running pytest beside the tests).
 */
export type CiResource = "cpu" | "cuda" | "prebuilds" | "settled";

/** The longest a file waits: more than any fresh machine's set-up (~9 min beside two CPU hogs); then it says what never came. */
const LONGEST_MS = 30 * 60_000;

/**
 * Waits until .ci/run has made `resource` (it writes VRAMFIT_CI_RESOURCES/<resource>.env, NAME=value lines, empty where
 * it could not be made), then sets those variables in process.env, so that the file and the processes it starts see
 * them as if the shell had exported them.
 */
export async function ciResource(resource: CiResource): Promise<void> {
  const dir = process.env.VRAMFIT_CI_RESOURCES;
  if (!dir) return;
  const file = join(dir, `${resource}.env`);
  const started = Date.now();
  while (!existsSync(file)) {
    if (Date.now() - started > LONGEST_MS) throw new Error(`.ci/run never made ${file} (${LONGEST_MS / 60_000} min)`);
    await sleep(500);
  }
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) process.env[line.slice(0, at)] = line.slice(at + 1);
  }
}
