// The README's CLI reference is generated from the options table; this fails when it is stale.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cliReferenceMarkdown } from "../../src/cli/reference.js";

describe("README", () => {
  it("carries the current CLI reference (regenerate: node scripts/cli-reference.mjs --write)", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const between = readme.split("<!-- cli-reference:begin -->")[1]?.split("<!-- cli-reference:end -->")[0];
    expect(between?.trim()).toBe(cliReferenceMarkdown());
  });
});
