// SIGINT and SIGTERM: stop the work, let every probe in flight free its memory, then exit 130/143.
import { VramfitError } from "../errors.js";
import { probesStartedInThisProcess } from "../fit/device.js";

export interface Interruption {
  /** Aborted (with an ERR_INTERRUPTED VramfitError as its reason) at the first signal. */
  signal: AbortSignal;
  dispose(): void;
}

/**
 * Installs the handlers for one run. The first signal aborts: the search stops between probes,
 * a probe in flight stops before its next allocation and frees what it holds, a lock wait ends;
 * the CLI then exits 128 + the signal's number once every probe has settled. A second signal
 * exits at once (on a real GPU the driver reclaims a dead process's memory; this is for a hang).
 */
export function watchSignals(exit: (status: number) => void = (status) => process.exit(status)): Interruption {
  const controller = new AbortController();
  const handler = (name: "SIGINT" | "SIGTERM") => () => {
    if (controller.signal.aborted) return exit(name === "SIGINT" ? 130 : 143);
    // Only after probes is there memory to have freed: after analytic work the clause would claim what did not happen.
    const freed = probesStartedInThisProcess() > 0 ? "; every probe freed its memory" : "";
    controller.abort(new VramfitError("ERR_INTERRUPTED", `interrupted by ${name}${freed}`, { signal: name }));
  };
  const onInt = handler("SIGINT");
  const onTerm = handler("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    },
  };
}
