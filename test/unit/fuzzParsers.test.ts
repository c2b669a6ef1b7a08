// Property-based fuzzing of every parser of user input, in process: size strings, counts,
// durations, JSON specs and Hugging Face configs. Each input ends in a value or in one
// ERR_INVALID_ARGUMENT line; never another exception, never NaN or a negative size, never a
// number silently rounded past 2^53. Fixed seed and counts (stated below), so a failure replays.
import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { parseCount } from "../../src/count.js";
import { parseDuration } from "../../src/duration.js";
import { VramfitError } from "../../src/errors.js";
import { buildPlan } from "../../src/plan/buildPlan.js";
import { checkPlanBytes } from "../../src/plan/planLimits.js";
import { parseSetup } from "../../src/plan/setup.js";
import { parseBytes } from "../../src/units.js";
import { readHfConfig } from "../../src/workload/hfConfig.js";
import { readSpec } from "../../src/workload/spec.js";
import { runs, tally, timed, writeTallies, type Tally } from "../fuzz/tally.js";

const SEED = 20_240_917;
// 9,500 inputs in all (times VRAMFIT_FUZZ_SCALE), in about 10 s on one core (an HF plan of a 70B
// model is the costly step). scripts/fuzz.mjs runs more, for docs/reliability.md's figures.
const RUNS = { sizes: runs(4000), counts: runs(2000), durations: runs(1000), specs: runs(1000), hfConfigs: runs(500) } as const;
const TALLY = {
  sizes: tally("parseBytes (sizes)"),
  counts: tally("parseCount (counts)"),
  durations: tally("parseDuration (durations)"),
  specs: tally("readSpec (--spec files)"),
  hfConfigs: tally("readHfConfig (--hf-config files)"),
  plans: tally("buildPlan (plans of the accepted files)"),
};
afterAll(() => writeTallies("fuzzParsers"));
const MAX = 2n ** 53n;

/**
 * The value, or the one-line ERR_INVALID_ARGUMENT naming `option`; anything else (a TypeError, a
 * RangeError: what a user would see as a stack trace) is counted and fails the property.
 */
function outcome<T>(option: string, body: () => T, t: Tally): { value: T } | { rejected: string } {
  return timed(t, () => {
    let value: T;
    try {
      value = body();
    } catch (error) {
      if (!(error instanceof VramfitError) || error.code !== "ERR_INVALID_ARGUMENT") {
        t.stackTraces += 1;
        throw error;
      }
      expect(error.message).not.toContain("\n");
      if (option) expect(error.message.startsWith(`${option}: expected `)).toBe(true);
      t.rejections += 1;
      return { rejected: error.message };
    }
    t.answers += 1;
    return { value };
  });
}

// Numbers the way people (and typos) write them.
const digits = fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: 1, maxLength: 22 });
const decimalText = fc
  .record({
    whole: fc.oneof(digits, fc.constant("")),
    fraction: fc.option(fc.string({ unit: fc.constantFrom(..."0123456789"), maxLength: 20 })),
    exponent: fc.option(fc.tuple(fc.constantFrom("e", "E"), fc.constantFrom("", "+", "-"), fc.integer({ min: 0, max: 40 }))),
  })
  .filter((r) => r.whole !== "" || (r.fraction ?? "") !== "")
  .map(({ whole, fraction, exponent }) => ({
    text: `${whole}${fraction === null ? "" : `.${fraction}`}${exponent === null ? "" : `${exponent[0]}${exponent[1]}${exponent[2]}`}`,
    whole,
    fraction: fraction ?? "",
    power: exponent === null ? 0 : exponent[1] === "-" ? -exponent[2] : exponent[2],
  }));
const UNITS: Record<string, bigint> = { "": 1n, b: 1n, kb: 1000n, mb: 10n ** 6n, gb: 10n ** 9n, tb: 10n ** 12n, kib: 1024n, mib: 2n ** 20n, gib: 2n ** 30n, tib: 2n ** 40n, pb: 10n ** 15n, pib: 2n ** 50n, k: 1024n, m: 2n ** 20n, g: 2n ** 30n, t: 2n ** 40n, p: 2n ** 50n };
const unit = fc.constantFrom(...Object.keys(UNITS), "B", "GiB", "GB", "MiB", "PB", "PiB", "EiB", "bytes", "gigs", "i", "KIB");
const junk = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.constantFrom("", " ", "-1", "+1", "NaN", "Infinity", "-0", "0x10", "1_000", "1,5GB", "½GiB", "1e999999999", "١٢٣", "\u00a080GiB", "80GiB\n", "Ⅻ", "0b101"),
);

/** The exact value of digits × 10^power × unit as a fraction. */
function exact(whole: string, fraction: string, power: number, scale: bigint): { n: bigint; d: bigint } {
  const p = power - fraction.length;
  const n = BigInt(`${whole}${fraction}` || "0") * scale * (p > 0 ? 10n ** BigInt(p) : 1n);
  return { n, d: p < 0 ? 10n ** BigInt(-p) : 1n };
}

describe(`parseBytes (${RUNS.sizes} generated sizes, seed ${SEED})`, () => {
  it("is exact: a whole size up to 2^53 comes back to the byte, anything larger is rejected, never rounded into range", () => {
    fc.assert(
      fc.property(decimalText, unit, fc.constantFrom("", " ", "  "), (number, u, space) => {
        const result = outcome("--memory", () => parseBytes(`${number.text}${space}${u}`, "--memory"), TALLY.sizes);
        const scale = UNITS[u.toLowerCase()];
        if (scale === undefined) {
          expect("rejected" in result).toBe(true);
          return;
        }
        const { n, d } = exact(number.whole, number.fraction, number.power, scale);
        // One rule: a fraction of a unit rounds to the nearest byte (half up); a count of bytes is whole.
        const nearest = (2n * n + d) / (2n * d);
        if (nearest > MAX) {
          expect(result).toHaveProperty("rejected");
          return;
        }
        if (n % d === 0n || scale > 1n) {
          // Very small fractions (beyond 400 decimal places) are refused rather than computed.
          if ("rejected" in result && number.power - number.fraction.length < -400) return;
          expect(result).toEqual({ value: Number(nearest) });
          return;
        }
        expect(result).toHaveProperty("rejected");
      }),
      {
        seed: SEED,
        numRuns: RUNS.sizes,
        // The edges a floating-point parser gets wrong: 2^53 + 1 reads as 2^53 in a double.
        examples: [
          [{ text: "9007199254740993", whole: "9007199254740993", fraction: "", power: 0 }, "", ""],
          [{ text: "9007199254740992", whole: "9007199254740992", fraction: "", power: 0 }, "", ""],
          [{ text: "8192", whole: "8192", fraction: "", power: 0 }, "TiB", ""],
          [{ text: "8192.000000000001", whole: "8192", fraction: "000000000001", power: 0 }, "TiB", ""],
          [{ text: "0.3", whole: "0", fraction: "3", power: 0 }, "GiB", ""],
          [{ text: "8", whole: "8", fraction: "", power: 0 }, "PiB", ""],
          [{ text: "8.000000000000001", whole: "8", fraction: "000000000000001", power: 0 }, "PiB", ""],
          [{ text: "1.1", whole: "1", fraction: "1", power: 0 }, "KiB", ""],
          [{ text: "1.3", whole: "1", fraction: "3", power: 0 }, "", ""],
        ],
      },
    );
  });

  it("answers anything else with a whole number of bytes in [0, 2^53] or one line naming the option", () => {
    fc.assert(
      fc.property(junk, (text) => {
        const result = outcome("--need", () => parseBytes(text, "--need"), TALLY.sizes);
        if ("value" in result) expect(Number.isInteger(result.value) && result.value >= 0 && result.value <= 2 ** 53).toBe(true);
      }),
      { seed: SEED, numRuns: RUNS.sizes / 4 },
    );
  });
});

describe(`parseCount and parseDuration (${RUNS.counts} + ${RUNS.durations} generated, seed ${SEED})`, () => {
  it("a count is an exact whole number ≥ min and below 2^53, or one line", () => {
    fc.assert(
      fc.property(fc.oneof(decimalText.map((d) => d.text), junk), fc.constantFrom(0, 1), (text, min) => {
        const result = outcome("--batch", () => parseCount("--batch", text, min), TALLY.counts);
        if (!("value" in result)) return;
        expect(Number.isSafeInteger(result.value) && result.value >= min).toBe(true);
        const match = /^([0-9]*)(?:\.([0-9]*))?(?:e\+?([0-9]+))?$/i.exec(text.trim())!;
        const { n, d } = exact(match[1] ?? "", match[2] ?? "", Number(match[3] ?? 0), 1n);
        expect(n).toBe(BigInt(result.value) * d);
      }),
      { seed: SEED, numRuns: RUNS.counts },
    );
  });

  it("a duration is whole milliseconds in [0, a day], or one line", () => {
    fc.assert(
      fc.property(fc.oneof(fc.tuple(decimalText.map((d) => d.text), fc.constantFrom("", "s", "ms", "m", "h", " s")).map(([a, b]) => a + b), junk), (text) => {
        const result = outcome("--lock-timeout", () => parseDuration("--lock-timeout", text), TALLY.durations);
        if ("value" in result) expect(Number.isSafeInteger(result.value) && result.value >= 0 && result.value <= 86_400_000).toBe(true);
      }),
      { seed: SEED, numRuns: RUNS.durations },
    );
  });
});

/** A JSON value nested `depth` levels deep. */
const nested = (depth: number): unknown => Array.from({ length: depth }).reduce<unknown>((inner) => [inner], 0);

// JSON values of every type, numbers that break naive code, and values past the input limits:
// a layer count or dimension past its limit is refused before anything is built, so the huge
// ones cost nothing; deep nesting and long strings are refused in one line.
const nasty = fc.oneof(
  fc.integer({ min: -5, max: 2048 }),
  fc.constantFrom(0, -1, 0.5, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 1e-300, 4096, 32, 7),
  fc.constantFrom(1000, 1001, 10_000_000, 2 ** 24, 2 ** 24 + 1, 1e15),
  fc.constantFrom(nested(63), nested(65), nested(2_000), "x".repeat(300), "x".repeat(1_000_000)),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 6 }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer({ min: -2, max: 64 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
);
const setup = parseSetup({});

/**
 * A plan built from the workload has exact (whole, ≤ 2^53), non-negative bytes everywhere, or is
 * refused in one line (as the CLI and planMemory refuse it: checkPlanBytes).
 */
function expectSanePlan(workload: Parameters<typeof buildPlan>[0]): void {
  const result = outcome(
    "",
    () => {
      const plan = buildPlan(workload, setup);
      checkPlanBytes(plan);
      return plan;
    },
    TALLY.plans,
  );
  if (!("value" in result)) return;
  expect(Number.isSafeInteger(result.value.parameterCount) && result.value.parameterCount >= 0).toBe(true);
  // One expect for all tensors (a timeline plan has thousands): the first bad one is named.
  const sane = (bytes: number) => Number.isSafeInteger(bytes) && bytes >= 0;
  const bad = result.value.tensors.find((t) => !sane(t.fixedBytes) || !sane(t.perSampleBytes));
  expect(bad, bad && `${bad.name}: fixedBytes = ${bad.fixedBytes}, perSampleBytes = ${bad.perSampleBytes}`).toBeUndefined();
}

/** Every path into a JSON value (objects and arrays), the value itself first. */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const found = [prefix];
  if (prefix.length > 70) return found; // past the nesting limit: the reader refuses it anyway
  if (Array.isArray(value)) value.forEach((v, i) => found.push(...paths(v, [...prefix, i])));
  else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) found.push(...paths(v, [...prefix, k]));
  return found;
}

interface Edit {
  at: number;
  action: "set" | "delete" | "add";
  key: string;
  value: unknown;
}

/** A real file's JSON with a few fields replaced, removed or added: near-valid input reaches deep. */
function mutate(base: unknown, edits: Edit[]): unknown {
  const json = structuredClone(base) as Record<string, unknown>;
  for (const edit of edits) {
    const all = paths(json);
    const path = all[edit.at % all.length]!;
    if (path.length === 0) continue;
    const parent = path.slice(0, -1).reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], json) as Record<string | number, unknown>;
    const key = path[path.length - 1]!;
    if (edit.action === "set") parent[key] = edit.value;
    else if (edit.action === "delete" && !Array.isArray(parent)) delete parent[key];
    else if (!Array.isArray(parent)) parent[edit.key] = edit.value;
  }
  return json;
}

const plausible = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 512 }) }, { weight: 2, arbitrary: nasty });
const edits = (keys: string[]) =>
  fc.array(fc.record({ at: fc.nat(), action: fc.constantFrom("set", "delete", "add"), key: fc.constantFrom(...keys), value: plausible }) as fc.Arbitrary<Edit>, { maxLength: 3 });

function fixtures(dir: string): unknown[] {
  const folder = new URL(`../fixtures/${dir}/`, import.meta.url);
  return readdirSync(folder).filter((name) => name.endsWith(".json")).map((name) => JSON.parse(readFileSync(new URL(name, folder), "utf8")) as unknown);
}

describe(`readSpec (${RUNS.specs} generated specs, seed ${SEED})`, () => {
  const spec = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...fixtures("spec")), edits(["seq", "image", "kvHeads", "headDim", "stride", "padding", "groups", "extra"])).map(([base, e]) => mutate(base, e)) },
    { weight: 1, arbitrary: fc.jsonValue() },
  );

  it("returns a workload whose plan is sane, or rejects in one line naming the file", () => {
    let accepted = 0;
    fc.assert(
      fc.property(spec, (json) => {
        const result = outcome("", () => readSpec("model.json", json), TALLY.specs);
        if ("rejected" in result) {
          expect(result.rejected).toMatch(/model\.json/);
          return;
        }
        accepted += 1;
        expectSanePlan(result.value);
      }),
      { seed: SEED, numRuns: RUNS.specs },
    );
    expect(accepted).toBeGreaterThan(RUNS.specs / 10); // the valid paths were exercised too
  });
});

describe(`readHfConfig (${RUNS.hfConfigs} generated configs, seed ${SEED})`, () => {
  const config = fc.oneof(
    { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...fixtures("hf")), edits(["num_key_value_heads", "head_dim", "n_inner", "sliding_window", "extra"])).map(([base, e]) => mutate(base, e)) },
    { weight: 1, arbitrary: fc.jsonValue() },
  );

  it("returns a workload whose plan is sane, or rejects in one line naming the file", () => {
    let accepted = 0;
    fc.assert(
      fc.property(config, (json) => {
        const result = outcome("", () => readHfConfig("config.json", json), TALLY.hfConfigs);
        if ("rejected" in result) {
          expect(result.rejected).toMatch(/config\.json/);
          return;
        }
        accepted += 1;
        expectSanePlan(result.value);
      }),
      { seed: SEED, numRuns: RUNS.hfConfigs },
    );
    expect(accepted).toBeGreaterThan(RUNS.hfConfigs / 10);
  });
});
