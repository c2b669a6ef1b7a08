// Whether this process has loaded a CUDA driver, asked without loading one.
import { openedBackend } from "../native/binding.js";

/**
 * True once a CUDA driver is loaded in this process (resolving a device target opens the backend,
 * and so may a library call); false where none was opened or none was found. Loads nothing. The
 * CLI asks it before ending at once (src/cli/main.ts, exitsAtOnce), through this layer: the CLI
 * does not reach src/native (test/unit/targets.test.ts).
 */
export async function driverLoaded(): Promise<boolean> {
  const backend = await openedBackend();
  return backend !== undefined && backend.kind !== "none";
}
