// Which run options apply to which workload: an option that cannot change the plan is an error, not a silent no-op.
import { invalidArgument } from "../errors.js";
import type { Workload } from "../workload/workload.js";
import { checkModelSetupApplies } from "./modelSetup.js";
import { SETUP_DEFAULTS, type RunSetup } from "./setup.js";

/** How a workload is named in these errors. */
function what(workload: Workload): string {
  switch (workload.kind) {
    case "affine":
      return "a raw --params workload";
    case "cnn":
      return "a CNN";
    case "unet":
      return "a diffusion UNet";
    case "transformer":
      return workload.architecture.kind === "encoder" ? "an encoder" : "a decoder";
  }
}

/**
 * Throws `ERR_INVALID_ARGUMENT` naming the option when the setup asks for something the workload
 * does not have (docs/memory-model.md, "Options that do not apply"): tensor parallelism, attention
 * kernels, recomputation, `--seq` or `--image` on a raw `--params` workload; attention and
 * generation on a CNN; generation on an encoder; a prompt plus generated tokens beyond a learned
 * position table. A field set to its default (`tp: 1`, `checkpointing: "none"`) changes nothing
 * and is accepted. The rest (a `--tp` that does not divide the heads, …) the plan builders check.
 */
export function checkSetupApplies(workload: Workload, setup: RunSetup): void {
  const name = what(workload);
  const refuse = (option: string, value: unknown, why: string): never => {
    throw invalidArgument(option, value, `no ${option} for ${name} (${why})`);
  };
  checkModelSetupApplies(workload, setup, refuse);
  const generated = setup.generatedTokens ?? SETUP_DEFAULTS.generatedTokens;
  const attention = setup.attention ?? SETUP_DEFAULTS.attention;
  if (workload.kind === "affine") {
    const layers = "it has no layers";
    if (setup.seq !== undefined) refuse("--seq", setup.seq, `${layers}: its bytes per sample are given by --per-sample`);
    if (setup.image !== undefined) refuse("--image", setup.image, `${layers}: its bytes per sample are given by --per-sample`);
    if ((setup.tp ?? 1) !== 1) refuse("--tp", setup.tp, `${layers} to split`);
    if (setup.sequenceParallel === true) refuse("--sequence-parallel", true, `${layers} to split`);
    if ((setup.checkpointing ?? "none") !== "none") refuse("--checkpointing", setup.checkpointing, `${layers} to recompute`);
    if (attention !== SETUP_DEFAULTS.attention) refuse("--attention", attention, "it has no attention");
    if (generated !== 0) refuse("--generate", generated, "it has no KV cache");
    return;
  }
  if (workload.kind === "unet") {
    if ((setup.tp ?? 1) !== 1) refuse("--tp", setup.tp, "tensor parallelism applies to transformers");
    if (setup.sequenceParallel === true) refuse("--sequence-parallel", true, "tensor parallelism applies to transformers");
    if (generated !== 0) refuse("--generate", generated, "it generates no tokens");
    return;
  }
  if (workload.kind === "cnn") {
    if (attention !== SETUP_DEFAULTS.attention) refuse("--attention", attention, "it has no attention");
    if (setup.sequenceParallel === true) refuse("--sequence-parallel", true, "tensor parallelism applies to transformers");
    if (generated !== 0) refuse("--generate", generated, "it generates no tokens");
    return;
  }
  const arch = workload.architecture;
  if (generated === 0) return;
  if (arch.kind === "encoder") refuse("--generate", generated, "it has no KV cache: only decoders generate");
  if (arch.positions === "learned" && !arch.vision) {
    const prompt = setup.seq ?? arch.maxPositions;
    if (prompt + generated > arch.maxPositions) {
      const seq = setup.seq === undefined ? `the default --seq ${prompt}` : `--seq ${prompt}`;
      throw invalidArgument("--generate", generated, `at most ${Math.max(0, arch.maxPositions - prompt)} after ${seq}: ${workload.name}'s learned position table holds ${arch.maxPositions} tokens, prompt and generated together`);
    }
  }
}
