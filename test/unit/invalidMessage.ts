// The one-line message of the VramfitError a call throws, for tests of bad input.
import { expect } from "vitest";
import { VramfitError } from "../../src/errors.js";

/** Calls `f`, expects it to throw a VramfitError, and returns its message. */
export function invalidMessage(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    expect(error).toBeInstanceOf(VramfitError);
    return (error as Error).message;
  }
  throw new Error("no error");
}
