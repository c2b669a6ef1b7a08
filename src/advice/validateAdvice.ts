// The library's checks of advise's request and gpusFit's arguments.
import { object, shown, rejectUnknown, integer, bytes, oneOf, boolean, fn, string, abortSignal, optionalFields } from "../checks.js";
import { invalidArgument } from "../errors.js";
import { ALLOCATOR_KINDS } from "../fit/allocator.js";
import { LIMIT_CHECKS, LIMIT_FIELDS } from "../fit/validateTargets.js";
import { checkSetupApplies } from "../plan/applicability.js";
import { validateSetup } from "../plan/validateSetup.js";
import { LIMITS } from "../workload/limits.js";
import { validateWorkload } from "../workload/validateWorkload.js";

/** `advise(request)`. */
export function validateAdviceRequest(value: unknown): void {
  const request = object("request", value);
  rejectUnknown("request", request, ["workload", "setup", "targetBatch", "fromBatchSize", "target", "limits", "hostBudgetBytes", "limit", "signal"]);
  validateWorkload(request.workload, "request.workload");
  validateSetup(request.setup, "request.setup");
  checkSetupApplies(request.workload, request.setup);
  integer("request.targetBatch", request.targetBatch, 1, Number.MAX_SAFE_INTEGER);
  integer("request.fromBatchSize", request.fromBatchSize, 0, Number.MAX_SAFE_INTEGER);
  const target = object("request.target", request.target);
  rejectUnknown("request.target", target, ["budgetBytes", "allocator", "maxBatch", "totalBytes", "id", "measure"]);
  bytes("request.target.budgetBytes", target.budgetBytes);
  bytes("request.target.totalBytes", target.totalBytes);
  const allocator = object("request.target.allocator", target.allocator);
  // An AllocatorModel, as jobModel makes it: a PYTORCH_CUDA_ALLOC_CONF's settings and a fraction's cap too.
  rejectUnknown("request.target.allocator", allocator, ["kind", "contextBytes", "conf", "allowedBytes"]);
  oneOf("request.target.allocator.kind", allocator.kind, ALLOCATOR_KINDS);
  bytes("request.target.allocator.contextBytes", allocator.contextBytes);
  optionalFields("request.target.allocator", allocator, { conf: (l, v) => void object(l, v), allowedBytes: (l, v) => void bytes(l, v) });
  optionalFields("request.target", target, { maxBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER), id: string, measure: fn });
  if (request.limits !== undefined) {
    const limits = object("request.limits", request.limits);
    rejectUnknown("request.limits", limits, LIMIT_FIELDS);
    optionalFields("request.limits", limits, LIMIT_CHECKS);
  }
  optionalFields("request", request, {
    hostBudgetBytes: (l, v) => void bytes(l, v),
    limit: (l, v) => void integer(l, v, 0, Number.MAX_SAFE_INTEGER),
    signal: abortSignal,
  });
}

/** `gpusFit(workload, setup, options)`. */
export function validateGpusFit(workload: unknown, setup: unknown, options: unknown): void {
  validateWorkload(workload);
  validateSetup(setup);
  checkSetupApplies(workload, setup);
  const o = object("options", options, true);
  rejectUnknown("options", o, ["minBatch", "maxDataParallel", "catalog", "signal", ...LIMIT_FIELDS]);
  optionalFields("options", o, {
    ...LIMIT_CHECKS,
    minBatch: (l, v) => void integer(l, v, 1, Number.MAX_SAFE_INTEGER),
    maxDataParallel: (l, v) => void integer(l, v, 1, LIMITS.gpus, "GPUs"),
    signal: abortSignal,
    catalog: (l, v) => {
      if (!Array.isArray(v)) throw invalidArgument(l, shown(v), "an array of GPUs");
      v.forEach((item, i) => {
        const gpu = object(`${l}[${i}]`, item);
        string(`${l}[${i}].id`, gpu.id);
        string(`${l}[${i}].name`, gpu.name);
        bytes(`${l}[${i}].totalBytes`, gpu.totalBytes, 1);
        boolean(`${l}[${i}].integrated`, gpu.integrated);
      });
    },
  });
}
