// vramfit's input limits, in one place: what is read, what is built and what is computed stays
// bounded, so every input ends in an answer or one line within a second (docs/reliability.md).
import { formatLimit } from "../count.js";
import { invalidArgument } from "../errors.js";
import { transformerParameterCount, type TransformerArchitecture } from "./transformer.js";

/**
 * The limits. Each is far above any real model (the largest in use have about 200 layers,
 * hidden sizes near 25,000, vocabularies near 260,000, contexts of 10 million tokens and a few
 * trillion parameters) and low enough that the largest input allowed is answered in well under
 * a second and every byte count stays an exact integer.
 */
export const LIMITS = {
  /** Bytes read from a `--spec` or `--hf-config` file (a config.json is a few KiB; a CNN spec of 5,000 layers about 500 KiB). */
  inputFileBytes: 16 * 2 ** 20,
  /** Seconds a pipe or FIFO given as a file has to deliver all of its content. */
  inputPipeSeconds: 10,
  /** Nesting of arrays and objects in a JSON input (a CNN spec nests residual blocks, about 4 levels each). */
  jsonDepth: 64,
  /**
   * Layers of one transformer stack: twice the deepest LLMs (Llama 3.1 405B has 126, GPT-3 96,
   * PaLM 118). At 1,000 one plan of the step took 250 ms to build and a search's heap made
   * 230 ms garbage-collection pauses, too long between two looks at a signal (issue 13, item 1);
   * at 256 the longest stretch without one is about 220 ms (`node scripts/signal-latency.mjs`,
   * docs/reliability.md). DeepNet's 1,000-layer research model (Wang et al. 2022) is above it.
   */
  transformerLayers: 256,
  /**
   * Layers of a CNN spec, nested ones (residual bodies and shortcuts) included (ResNet-152 has
   * 519; a pre-activation ResNet-1001, He et al. 2016, about 3,340). At 10,000 one plan of the
   * step took 350 ms to build.
   */
  cnnLayers: 5_000,
  /** Any one dimension: hidden size, heads, FFN width, vocabulary, positions, tokens, image side, channels, kernel, … (2^24). */
  dimension: 2 ** 24,
  /** Parameters of a model: with 20 bytes each (the most any precision and optimizer keeps), its states stay below 2^53 bytes. */
  parameters: 1e14,
  /** GPUs of a job (--gpus, --tp, --gpus-per-node): 2^20. */
  gpus: 2 ** 20,
  /** Characters of a name (a spec's `name`, a config's `_name_or_path`). */
  nameChars: 256,
  /** Bytes: 2^53 = 8 PiB, the largest integer a JS number holds exactly (and every byte count must be exact). */
  bytes: 2 ** 53,
} as const;

export { formatLimit };

/**
 * The deepest nesting of arrays and objects in JSON text, scanning at most until `max` is
 * exceeded: checked before JSON.parse, so a 10-million-deep input costs a scan, not a stack.
 */
export function jsonTextDepth(text: string, max: number = LIMITS.jsonDepth): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
      if (deepest > max) return deepest;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/**
 * The deepest nesting of arrays and objects in a parsed value (iterative: no stack to overflow),
 * stopping once `max` is exceeded. For library callers who hand in parsed JSON.
 */
export function jsonValueDepth(value: unknown, max: number = LIMITS.jsonDepth): number {
  let deepest = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    const here = depth + 1;
    if (here > deepest) deepest = here;
    if (deepest > max) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push({ value: child, depth: here });
    }
  }
  return deepest;
}

/** Throws one line naming `label` when parsed JSON nests deeper than the limit. */
export function checkJsonDepth(label: string, json: unknown): void {
  const depth = jsonValueDepth(json);
  if (depth > LIMITS.jsonDepth) throw invalidArgument(label, `JSON nested more than ${LIMITS.jsonDepth} levels deep`, `at most ${LIMITS.jsonDepth} levels of nested arrays and objects (vramfit's input limit)`);
}

/** `a whole number from 1 to 16,777,216 (vramfit's limit on a dimension)`. */
export function countExpected(min: number, max: number, what = "a dimension"): string {
  return `a whole number from ${min} to ${formatLimit(max)} (vramfit's limit on ${what})`;
}

/** Throws when a model's computed parameter count passes the limit, naming where it came from. */
export function checkParameterCount(label: string, count: number): void {
  if (!(count <= LIMITS.parameters)) {
    throw invalidArgument(label, `${count.toPrecision(3)} parameters`, `a model of at most ${formatLimit(LIMITS.parameters)} parameters (vramfit's limit: its states must stay below 2^53 bytes)`);
  }
}

/** Throws when a transformer passes the layer or parameter limit; `label` names a field of its file. */
export function checkTransformerLimits(label: (key: string) => string, layersKey: string, arch: TransformerArchitecture): void {
  if (arch.layers > LIMITS.transformerLayers) throw invalidArgument(label(layersKey), arch.layers, countExpected(1, LIMITS.transformerLayers, "a transformer's layers"));
  checkParameterCount(label("the model"), transformerParameterCount(arch));
}
