// A device that failed while others answered: its row in `batch`/`check --device all`, and the exit status of a partial result.
import { ExitStatus, type Target, type VramfitError } from "../index.js";
import { outcomesOf, type DeviceOutcome } from "../devices/perDevice.js";

/** The JSON row of a failed device: which device, and its error (no answer). */
export interface FailedDevice {
  device: { ordinal: number | null; name: string; uuid: string | null; totalBytes: number; freeBytes: null };
  error: { code: string; message: string };
}

export function failedDevice(target: Target, error: VramfitError): FailedDevice {
  const device = target.kind === "device" ? target.device : undefined;
  return {
    device: { ordinal: device?.ordinal ?? null, name: device?.name ?? "", uuid: device?.uuid ?? null, totalBytes: device?.totalBytes ?? 0, freeBytes: null },
    error: { code: error.code, message: error.message },
  };
}

/**
 * Evaluates every target at once; a device whose driver fails gives its error instead. When
 * every target failed there is no result to show: the first failure is thrown (exit 4).
 */
export function evaluateEach<T>(targets: readonly Target[], work: (target: Target) => Promise<T>): Promise<DeviceOutcome<T>[]> {
  return evaluateAll(targets.map(work));
}

/** {@link evaluateEach} of work already started, one promise per target. */
export async function evaluateAll<T>(work: readonly Promise<T>[]): Promise<DeviceOutcome<T>[]> {
  const outcomes = await outcomesOf(work);
  const first = outcomes.find((o): o is { ok: false; error: VramfitError } => !o.ok);
  if (first !== undefined && outcomes.every((o) => !o.ok)) throw first.error;
  return outcomes;
}

/** 1 when a healthy answer does not fit (certain), else 6 when a device failed (partial), else 0. */
export function exitStatusOfOutcomes(anyShort: boolean, anyFailed: boolean): number {
  if (anyShort) return ExitStatus.doesNotFit;
  return anyFailed ? ExitStatus.partial : ExitStatus.ok;
}
