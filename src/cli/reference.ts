// The CLI reference (docs/cli.md), generated from the options table (one source of truth).
import { OPTIONS, type CommandName } from "./options.js";

const COMMAND_ORDER: readonly CommandName[] = ["info", "batch", "check", "plan", "models", "gpus", "trace"];

export function cliReferenceMarkdown(): string {
  const rows = OPTIONS.map((o) => {
    const commands = COMMAND_ORDER.filter((c) => o.commands.includes(c)).join(", ");
    const fallback = o.defaultText === undefined ? "" : ` (default: ${o.defaultText})`;
    return `| \`${o.flags}\` | ${commands} | ${o.description.replace(/\|/g, "\\|")}${fallback} |`;
  });
  return ["| option | commands | meaning |", "|---|---|---|", ...rows].join("\n");
}
