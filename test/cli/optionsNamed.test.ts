// The CLI builds only the options a run names (src/cli/main.ts, optionsNamed), and every option where it must: help, and a misspelt option's suggestion.
import { describe, expect, it } from "vitest";
import { run } from "../../src/cli/main.js";
import { optionsFor } from "../../src/cli/options.js";

async function cli(argv: string[]): Promise<{ status: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const status = await run(argv, { out: (text) => void (out += text), err: (text) => void (err += text) });
  return { status, out, err };
}

describe("options built for a run", () => {
  it("suggests the option a misspelt one was meant to be, as when every option was built", async () => {
    // --memory is named nowhere else: commander can suggest it only if it was built.
    const typo = await cli(["batch", "--model", "resnet18", "--memroy", "40GiB"]);
    expect(typo.status).toBe(2);
    expect(typo.err).toBe("vramfit: unknown option '--memroy' (Did you mean --memory?)\n");
  });

  it("lists every option of the command under --help, whatever else is named", async () => {
    const help = await cli(["batch", "--model", "resnet18", "--help"]);
    expect(help.status).toBe(0);
    const flags = optionsFor("batch").map((spec) => spec.flags.split(" ", 1)[0]!);
    expect(flags.length).toBeGreaterThan(40);
    for (const flag of flags) expect(help.out, flag).toContain(flag);
  });

  it("answers the same with the options in any order and --name=value", async () => {
    const strip = (text: string) => text.replace(/"elapsedMs": [0-9.]+/, "");
    const a = await cli(["batch", "--model", "resnet18", "--gpu", "H100-80GB", "--json"]);
    const b = await cli(["batch", "--json", "--gpu=H100-80GB", "--model=resnet18"]);
    expect(a.status).toBe(0);
    expect(strip(b.out)).toBe(strip(a.out));
    expect(JSON.parse(a.out)).toMatchObject({ source: "analytic" });
  });
});
