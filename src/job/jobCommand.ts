// The user's job command: checked once, then written out for each batch size.
import { readFileSync, statSync } from "node:fs";
import { invalidArgument } from "../errors.js";

export const BATCH_PLACEHOLDER = "{batch}";
/** The variable every run gets, for jobs that read the batch size themselves. */
export const BATCH_VARIABLE = "VRAMFIT_BATCH";
/** The longest command accepted (Linux's own limit for one argument is 128 KiB). */
const MAX_COMMAND_CHARS = 128 * 1024;

/** Throws, naming `--exec`, unless `command` is something to run. */
export function checkJobCommand(command: unknown, option = "--exec"): string {
  if (typeof command !== "string" || command.trim() === "") throw invalidArgument(option, command, "a command to run (through the shell), e.g. 'python train.py --batch-size {batch}'");
  if (command.length > MAX_COMMAND_CHARS) throw invalidArgument(option, `${command.slice(0, 40)}…`, `a command of at most ${MAX_COMMAND_CHARS} characters`);
  if (command.includes("\0")) throw invalidArgument(option, command.replace(/\0/g, "\\0"), "a command without NUL characters");
  return command;
}

/** The command for one run: every `{batch}` replaced by the batch size. */
export function commandForBatch(command: string, batch: number): string {
  return command.split(BATCH_PLACEHOLDER).join(String(batch));
}

/**
 * Whether the job can know the batch size: `{batch}` in the command, `VRAMFIT_BATCH` in it, or
 * `VRAMFIT_BATCH` in a script it names (a file up to 1 MiB among its words). False means every run
 * would be the same job, which is allowed (the job may read the batch some other way) but worth a
 * warning.
 */
export function jobSeesBatch(command: string): boolean {
  if (command.includes(BATCH_PLACEHOLDER) || command.includes(BATCH_VARIABLE)) return true;
  for (const word of command.split(/\s+/)) {
    const path = word.replace(/^['"]|['"]$/g, "");
    if (path === "") continue;
    try {
      const stat = statSync(path);
      if (stat.isFile() && stat.size <= 2 ** 20 && readFileSync(path, "latin1").includes(BATCH_VARIABLE)) return true;
    } catch {
      // not a file: a program name, an option, a value
    }
  }
  return false;
}
