// The CLI reference (docs/cli.md) is generated from the options table; this fails when it is stale.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cliReferenceMarkdown } from "../../src/cli/reference.js";

describe("docs/cli.md", () => {
  it("carries the current CLI reference (regenerate: node scripts/cli-reference.mjs --write)", () => {
    const readme = readFileSync(new URL("../../docs/cli.md", import.meta.url), "utf8");
    const between = readme.split("<!-- cli-reference:begin -->")[1]?.split("<!-- cli-reference:end -->")[0];
    expect(between?.trim()).toBe(cliReferenceMarkdown());
  });
});
