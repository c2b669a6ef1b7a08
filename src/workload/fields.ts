// Validated reads of JSON fields, each failure a one-line error naming the file and the field.
import { invalidArgument, type VramfitError } from "../errors.js";
import { LIMITS, checkJsonDepth, countExpected } from "./limits.js";

/** A value as the error message shows it: short, on one line. */
function shown(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  const text = JSON.stringify(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** Reads fields of one JSON object; `path` is the object's place in the file (`layers[3].`). */
export class FieldReader {
  private constructor(
    readonly file: string,
    readonly object: Record<string, unknown>,
    readonly path: string,
  ) {}

  /** The reader of a parsed file's top-level object. */
  static root(file: string, json: unknown): FieldReader {
    if (json === null || typeof json !== "object" || Array.isArray(json)) throw invalidArgument(file, shown(json), "a JSON object");
    checkJsonDepth(file, json);
    return new FieldReader(file, json as Record<string, unknown>, "");
  }

  /** `<file>: <path><key>`, the option name of the error. */
  label(key: string): string {
    return `${this.file}: ${this.path}${key}`;
  }

  fail(key: string, expected: string, value: unknown = this.object[key]): VramfitError {
    return invalidArgument(this.label(key), shown(value), expected);
  }

  has(key: string): boolean {
    return this.object[key] !== undefined && this.object[key] !== null;
  }

  /** The first of `keys` present (Hugging Face configs name one thing several ways: `hidden_size`, `n_embd`). */
  firstKey(keys: readonly string[]): string | undefined {
    return keys.find((k) => this.has(k));
  }

  /**
   * A whole number from `min` to `max` (default: the limit on any dimension, LIMITS.dimension);
   * `fallback` when absent (required when there is none).
   */
  count(key: string, options: { min?: number; max?: number; fallback?: number; expected?: string; what?: string } = {}): number {
    const min = options.min ?? 1;
    const max = options.max ?? LIMITS.dimension;
    const expected = () => options.expected ?? countExpected(min, max, options.what);
    if (!this.has(key)) {
      if (options.fallback !== undefined) return options.fallback;
      throw this.fail(key, expected(), undefined);
    }
    const value = this.object[key];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) throw this.fail(key, expected());
    return value;
  }

  /** The count under the first present name of `keys` (required unless `fallback`). */
  countOf(keys: readonly string[], options: { min?: number; max?: number; fallback?: number; what?: string } = {}): number {
    const key = this.firstKey(keys);
    if (key === undefined) {
      if (options.fallback !== undefined) return options.fallback;
      throw invalidArgument(this.label(keys.join(" or ")), undefined, countExpected(options.min ?? 1, options.max ?? LIMITS.dimension, options.what));
    }
    return this.count(key, options);
  }

  /** A probability in [0, 1). */
  probability(key: string, fallback: number): number {
    if (!this.has(key)) return fallback;
    const value = this.object[key];
    if (typeof value !== "number" || !(value >= 0 && value < 1)) throw this.fail(key, "a probability in [0, 1)");
    return value;
  }

  boolean(key: string, fallback: boolean): boolean {
    if (!this.has(key)) return fallback;
    const value = this.object[key];
    if (typeof value !== "boolean") throw this.fail(key, "true or false");
    return value;
  }

  string(key: string, fallback?: string): string {
    if (!this.has(key)) {
      if (fallback !== undefined) return fallback;
      throw this.fail(key, "a string", undefined);
    }
    const value = this.object[key];
    if (typeof value !== "string" || value.length > LIMITS.nameChars) throw this.fail(key, `a string of at most ${LIMITS.nameChars} characters`);
    return value;
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], fallback?: T): T {
    const expected = `one of ${allowed.join(", ")}`;
    if (!this.has(key)) {
      if (fallback !== undefined) return fallback;
      throw this.fail(key, expected, undefined);
    }
    const value = this.object[key];
    if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) throw this.fail(key, expected);
    return value as T;
  }

  /** A nested object's reader (`image.`). */
  child(key: string): FieldReader {
    const value = this.object[key];
    if (value === null || typeof value !== "object" || Array.isArray(value)) throw this.fail(key, "an object");
    return new FieldReader(this.file, value as Record<string, unknown>, `${this.path}${key}.`);
  }

  /** A non-empty array of at most `max` objects, each with its own reader (`layers[2].`). */
  objects(key: string, max = Number.POSITIVE_INFINITY): FieldReader[] {
    const value = this.object[key];
    if (!Array.isArray(value) || value.length === 0) throw this.fail(key, "a non-empty array of objects");
    if (value.length > max) throw this.fail(key, `at most ${max} objects (vramfit's input limit)`, `an array of ${value.length}`);
    return value.map((item, index) => {
      if (item === null || typeof item !== "object" || Array.isArray(item)) {
        throw invalidArgument(this.label(`${key}[${index}]`), shown(item), "an object");
      }
      return new FieldReader(this.file, item as Record<string, unknown>, `${this.path}${key}[${index}].`);
    });
  }

  /** An optional array of objects (absent: empty). */
  optionalObjects(key: string): FieldReader[] {
    return this.has(key) ? this.objects(key) : [];
  }

  /** Rejects fields not in `allowed`: a typo in a hand-written spec must not pass silently. */
  rejectUnknown(allowed: readonly string[]): void {
    for (const key of Object.keys(this.object)) {
      if (!allowed.includes(key)) throw invalidArgument(this.label(key), shown(this.object[key]), `no such field (known: ${allowed.join(", ")})`);
    }
  }
}
