// The library's checks of findMaxBatchByRunning's and checkByRunning's arguments (running the real job).
import { type Fields, object, shown, rejectUnknown, integer, bytes, fn, string, abortSignal, optionalFields } from "../checks.js";
import { invalidArgument } from "../errors.js";
import { LIMIT_CHECKS, LIMIT_FIELDS, oneReserve, validateDevice, validateLock } from "../fit/validateTargets.js";
import { validatePlan } from "../plan/validatePlan.js";

// The budget and job-model fields as every other search takes them (LIMIT_FIELDS): a run is judged against the same budget.
const JOB_SESSION_FIELDS = ["device", ...LIMIT_FIELDS, "runTimeoutMs", "logDir", "env", "signal", "lock", "simulate"] as const;

/** The options every run of a job shares; `extra` are the caller's own fields, checked by it. */
function validateJobSession(label: string, value: unknown, extra: readonly string[]): Fields {
  const options = object(label, value, true);
  rejectUnknown(label, options, [...JOB_SESSION_FIELDS, ...extra]);
  optionalFields(label, options, {
    device: (l, v) => {
      if (v === "all") return;
      if (Array.isArray(v)) v.forEach((d, i) => validateDevice(`${l}[${i}]`, d));
      else validateDevice(l, v);
    },
    ...LIMIT_CHECKS,
    runTimeoutMs: (l, v) => void integer(l, v, 1, 24 * 3600 * 1000),
    logDir: string,
    env: (l, v) => void object(l, v),
    signal: abortSignal,
    lock: validateLock,
    simulate: (l, v) => {
      const simulate = object(l, v);
      rejectUnknown(l, simulate, ["gpu", "python", "cudnnWorkspaceBytes"]);
      string(`${l}.gpu`, simulate.gpu);
      if (simulate.python !== undefined) string(`${l}.python`, simulate.python);
      if (simulate.cudnnWorkspaceBytes !== undefined) bytes(`${l}.cudnnWorkspaceBytes`, simulate.cudnnWorkspaceBytes);
    },
  });
  oneReserve(label, options);
  return options;
}

/** `findMaxBatchByRunning(job, options)`: a command or a runner, and the search's options. */
export function validateFindMaxBatchByRunning(job: unknown, options: unknown): void {
  if (typeof job !== "string" && typeof job !== "function") throw invalidArgument("job", shown(job), "a command string or a function (batch) => RunOutcome");
  const o = validateJobSession("options", options, ["budgetBytes", "maxBatch", "calibrate", "model", "onStart", "onRun"]);
  optionalFields("options", o, {
    budgetBytes: (l, v) => void bytes(l, v),
    maxBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER),
    calibrate: (l, v) => {
      const ok = Array.isArray(v) && v.length === 2 && v.every((b) => Number.isSafeInteger(b) && b >= 1) && v[0] < v[1];
      if (!ok) throw invalidArgument(l, Array.isArray(v) ? v.join(",") : shown(v), "two batch sizes B1 < B2, both ≥ 1");
    },
    model: (l, v) => {
      const model = object(l, v);
      if ("tensors" in model) return validatePlan(model, l);
      rejectUnknown(l, model, ["fixedBytes", "perSampleBytes", "relativeError"]);
      bytes(`${l}.fixedBytes`, model.fixedBytes);
      bytes(`${l}.perSampleBytes`, model.perSampleBytes);
      const error = model.relativeError;
      if (error !== undefined && !(typeof error === "number" && error >= 0 && error <= 10)) throw invalidArgument(`${l}.relativeError`, shown(error), "a fraction from 0 to 10");
    },
    onStart: fn,
    onRun: fn,
  });
}

/** `checkByRunning(command, batch, options)`. */
export function validateCheckByRunning(command: unknown, batch: unknown, options: unknown): void {
  string("command", command);
  integer("batch", batch, 1, Number.MAX_SAFE_INTEGER);
  validateJobSession("options", options, []);
}
