// package.json's links and the files the CLI's help points at (issue 25, item 7): no invented URL,
// and every document the help names is one the package ships.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { root, runCli } from "../cli/runCli.js";

const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as Record<string, unknown> & { files: string[] };

/** The checkout's `origin`, or null where there is none (this project has no public remote yet). */
function origin(): string | null {
  try {
    return execFileSync("git", ["remote", "get-url", "origin"], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

describe("package.json's links", () => {
  it("name a repository only where the checkout has one: repository, homepage and bugs point at its origin, or are absent", () => {
    const remote = origin();
    const links = [pkg.repository, pkg.homepage, pkg.bugs].filter((link) => link !== undefined).map((link) => JSON.stringify(link));
    if (remote === null) expect(links).toEqual([]);
    else for (const link of links) expect(link).toContain(remote.replace(/\.git$/, "").replace(/^git@github\.com:/, "github.com/"));
  });

  it("the documents the help names ship in the package (docs/**/*.md) and exist", async () => {
    const help = (await Promise.all(["batch", "check", "plan", "gpus", "trace"].map((command) => runCli([command, "--help"])))).map((run) => run.stdout).join("\n");
    const named = [...new Set(help.replace(/\n\s+/g, "").match(/docs\/[\w./-]+\.md/g) ?? [])];
    expect(named.length).toBeGreaterThan(0);
    expect(pkg.files).toContain("docs/**/*.md");
    for (const doc of named) expect(existsSync(join(root, doc)), doc).toBe(true);
  });
});
