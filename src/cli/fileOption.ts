// Which option a JSON file given on the command line belongs to: a Hugging Face config, a vramfit
// spec and a step trace look alike to a user, and a file given to the wrong one should say so
// rather than complain about a field the file was never meant to have.
import { invalidArgument } from "../errors.js";

/** The workload files vramfit reads, by the option that takes each. */
export type FileOption = "--hf-config" | "--spec" | "--trace";

const WHAT: Record<FileOption, string> = {
  "--hf-config": "a Hugging Face config.json",
  "--spec": "a vramfit spec",
  "--trace": "a step trace (vramfit trace --out)",
};

/** The option a parsed file is for, by the field only that kind has; undefined when it has none of them. */
export function fileOptionOf(json: unknown): FileOption | undefined {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return undefined;
  const fields = json as Record<string, unknown>;
  if (fields.format === "vramfit-step-trace") return "--trace";
  if (typeof fields.kind === "string" && fields.model_type === undefined) return "--spec";
  if (typeof fields.model_type === "string" || Array.isArray(fields.architectures)) return "--hf-config";
  return undefined;
}

/** Refuses a file given to `option` that is plainly another option's, naming that option. */
export function checkFileOption(option: FileOption, path: string, json: unknown): void {
  const belongs = fileOptionOf(json);
  if (belongs === undefined || belongs === option) return;
  const kind = belongs === "--hf-config" && typeof (json as { model_type?: unknown }).model_type === "string" ? ` (model_type ${(json as { model_type: string }).model_type})` : "";
  throw invalidArgument(option, path, `${WHAT[option]}, not ${WHAT[belongs]}${kind}: give this file to ${belongs}`);
}
