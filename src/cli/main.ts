// The CLI: builds the commander program from the options table and maps every outcome to an exit status.
import { readFileSync } from "node:fs";
import { Command, CommanderError, Option } from "commander";
import { EXCERPT_CHARS, ExitStatus, VramfitError, excerpt, exitStatusOf, invalidArgument } from "../errors.js";
import { driverLoaded } from "../fit/driverLoaded.js";
import type { BatchOptions } from "./batchOptions.js";
import type { CheckOptions } from "./checkCommand.js";
import { checkConflicts, optionWarnings } from "./conflicts.js";
import type { InfoOptions } from "./infoCommand.js";
import { watchSignals } from "./interrupt.js";
import { ignoreStderrErrors, processIo, writeStdout, type Io } from "./io.js";
import { optionsFor, type CommandName, type OptionSpec } from "./options.js";

type Action = (options: never, io: Io) => Promise<number>;

// Each command's module is imported only when that command runs: a cold start loads the code of one
// command, not of all six (docs/benchmarks.md, "CLI cold start").
const COMMANDS: Record<CommandName, { summary: string; action: () => Promise<Action> }> = {
  info: { summary: "driver, backend and each visible GPU's free and total memory", action: async () => (await import("./infoCommand.js")).infoCommand },
  batch: { summary: "the largest batch that fits, measured on the GPU or predicted analytically", action: async () => (await import("./batchCommand.js")).batchCommand },
  check: { summary: "does a workload at --batch N, or --need SIZE, fit? exit 0 (yes) or 1 (no)", action: async () => (await import("./checkCommand.js")).checkCommand },
  plan: { summary: "the memory breakdown of a workload at --batch N", action: async () => (await import("./planCommand.js")).planCommand },
  models: { summary: "the preset models, with their parameter counts", action: async () => (await import("./modelsCommand.js")).modelsCommand },
  gpus: { summary: "the GPU catalog used for analytic targets (--gpu ID)", action: async () => (await import("./gpusCommand.js")).gpusCommand },
  trace: { summary: "record one training step of a PyTorch model without a GPU, for --trace FILE", action: async () => (await import("./traceCommand.js")).traceCommand },
};

function packageVersion(): string {
  const url = new URL("../../package.json", import.meta.url);
  return (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
}

/** How sizes are written (docs/cli.md, "Sizes"), under the help of every command that takes one. */
const SIZES_HELP = "\nSizes take a unit: 80GiB, 512MiB, 40GB, 16G; a number alone is bytes (1.5e9), and one from 1 to below 1 MiB (--need 40) is refused as a missing unit.";

function buildProgram(argv: readonly string[], io: Io, setStatus: (status: number) => void): Command {
  const program = new Command("vramfit")
    .description("Will it fit? The largest batch that fits in GPU memory, measured or predicted.")
    .version(packageVersion())
    .exitOverride()
    .showSuggestionAfterError()
    .configureOutput({
      writeOut: (text) => io.out(text),
      writeErr: (text) => io.err(text),
      // One line per error, the suggestion included, with the prefix of every other error:
      // "vramfit: unknown option '--mdoel' (Did you mean --model?)".
      outputError: (text, write) => write(`${commanderLine(text)}\n`),
    });
  // Only the command being run is built, with its options: building them all is most of the CLI's
  // start-up work. With no command, an unknown one (for the suggestion), or `help <command>`, all are.
  const invoked = argv.find((arg) => !arg.startsWith("-"));
  const everyCommand = invoked === undefined || !Object.hasOwn(COMMANDS, invoked);
  for (const [name, command] of Object.entries(COMMANDS)) {
    if (!everyCommand && name !== invoked) continue;
    const sub = program.command(name).description(command.summary).exitOverride();
    if (optionsFor(name as CommandName).some((spec) => spec.flags.includes("<size>"))) sub.addHelpText("after", SIZES_HELP);
    for (const spec of everyCommand ? optionsFor(name as CommandName) : optionsNamed(name as CommandName, argv)) {
      const description = spec.defaultText === undefined ? spec.description : `${spec.description} (default: ${spec.defaultText})`;
      const option = new Option(spec.flags, description);
      if (spec.flags.includes("<") || spec.flags.includes("[")) option.argParser(onlyOnce(option, spec.parse));
      sub.addOption(option);
    }
    sub.action(async (options: object) => {
      checkConflicts(name as CommandName, options);
      for (const warning of optionWarnings(name as CommandName, options)) io.err(`warning: ${warning}`);
      setStatus(await (await command.action())(options as never, io));
    });
  }
  return program;
}

/** An option's long flag: `--memory` of `--memory <size>`. */
const longFlag = (spec: OptionSpec): string => spec.flags.split(" ", 1)[0]!;

/**
 * The options of `command` that `argv` names, and the negated ones (`--no-advice` alone makes
 * `advice` true, which the command reads); all of them where argv holds anything else that
 * begins with a dash (`--help`, `--`, a misspelt option commander suggests a name for, a value such
 * as `-5`): commander then sees every option, as it always did. Making 61 options for `batch`,
 * each with its listener, was a tenth of `batch --params …`'s work after Node's start
 * (docs/benchmarks.md, "Sixth round"). Options not named are not parsed, so leaving them out
 * changes no answer and no message.
 */
function optionsNamed(command: CommandName, argv: readonly string[]): readonly OptionSpec[] {
  const specs = optionsFor(command);
  const named = new Set<string>();
  for (const arg of argv) {
    if (!arg.startsWith("-")) continue;
    const equals = arg.indexOf("=");
    const flag = equals < 0 ? arg : arg.slice(0, equals);
    if (!specs.some((spec) => longFlag(spec) === flag)) return specs;
    named.add(flag);
  }
  return specs.filter((spec) => named.has(longFlag(spec)) || longFlag(spec).startsWith("--no-"));
}

/** commander's error text as one `vramfit: …` line, its echo of the argument cut short. */
function commanderLine(text: string): string {
  return `vramfit: ${excerpt(text.trimEnd().replace(/^error: /, "").replace(/\s*\n\s*/g, " "), 4 * EXCERPT_CHARS)}`;
}

/**
 * The option's value parser, refusing the option a second time: commander would keep the last
 * silently, so `--model a --model b` would plan b without a word.
 */
function onlyOnce(option: Option, parse: ((text: string) => unknown) | undefined): (text: string, previous: unknown) => unknown {
  return (text, previous) => {
    if (previous !== undefined) throw invalidArgument(option.long ?? option.flags, text, `${option.long ?? option.flags} once (it was given twice)`);
    return parse ? parse(text) : text;
  };
}

/**
 * Runs the CLI on `argv` (without `node` and the script) and returns the exit status. For the real
 * process (processIo) it also handles SIGINT and SIGTERM (interrupt.ts) and holds the results
 * until the command has finished: an interrupted command prints nothing on stdout, never half a
 * table. A reader that went away (EPIPE) ends it quietly; a write that fails otherwise is one line.
 */
export async function run(argv: readonly string[], io: Io = processIo): Promise<number> {
  if (io !== processIo) return runCommand(argv, io);
  ignoreStderrErrors();
  const interruption = watchSignals();
  const results: string[] = [];
  const held: Io = { out: (text) => void results.push(text.endsWith("\n") ? text : `${text}\n`), err: processIo.err, signal: interruption.signal };
  try {
    const status = await runCommand(argv, held);
    const reason: unknown = interruption.signal.reason;
    if (reason instanceof VramfitError) {
      // Interrupted, but the work finished first (or failed of it): say so, print no results, exit 130/143.
      processIo.err(`vramfit: ${reason.message}`);
      return exitStatusOf(reason);
    }
    if (results.length === 0) return status;
    const error = await writeStdout(results.join(""));
    if (error === undefined || error.code === "EPIPE") return status;
    processIo.err(`vramfit: cannot write the results to stdout (${excerpt(error.message)})`);
    return ExitStatus.failure;
  } finally {
    interruption.dispose();
  }
}

/**
 * Whether the process may end as soon as run() has returned and nothing is left on the event loop
 * (bin/vramfit.js asks): true when no CUDA driver was loaded. Ending with process.exit skips
 * Node's teardown of the environment (its heap freed, background compiles of the run's hot
 * functions waited for): for `batch --model resnet152`, ~1 ms of wall from the answer to the exit
 * and ~7 ms of CPU (docs/benchmarks.md, "Ninth round"). It also skips the
 * addon's teardown hook, which releases the driver's primary contexts: where a driver was loaded
 * (a GPU, the simulated one) the process ends the ordinary way.
 */
export async function exitsAtOnce(): Promise<boolean> {
  return !(await driverLoaded());
}

async function runCommand(argv: readonly string[], io: Io): Promise<number> {
  let status: number = ExitStatus.ok;
  const program = buildProgram(argv, io, (s) => (status = s));
  // No command at all (`vramfit`, `vramfit --`): one line, like every other usage error.
  if (!argv.some((arg) => !arg.startsWith("-") || ["-h", "--help", "-V", "--version"].includes(arg))) {
    io.err(`vramfit: expected a command: ${Object.keys(COMMANDS).join(", ")} (\`vramfit --help\` explains each)`);
    return ExitStatus.usage;
  }
  // An unknown command with --help would print the root help and exit 0: it is an error like any other.
  const invoked = argv.find((arg) => !arg.startsWith("-"));
  if (invoked !== undefined && invoked !== "help" && !Object.hasOwn(COMMANDS, invoked) && argv.some((arg) => arg === "-h" || arg === "--help")) {
    io.err(`vramfit: unknown command '${excerpt(invoked)}': expected one of ${Object.keys(COMMANDS).join(", ")} (\`vramfit --help\` explains each)`);
    return ExitStatus.usage;
  }
  try {
    await program.parseAsync([...argv], { from: "user" });
    return status;
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander has already printed its one line; help and --version are successes.
      return error.exitCode === 0 ? ExitStatus.ok : ExitStatus.usage;
    }
    if (error instanceof VramfitError) {
      // An interruption is reported once, by run().
      if (error !== io.signal?.reason) io.err(`vramfit: ${error.message}`);
      return exitStatusOf(error);
    }
    io.err(`vramfit: internal error: ${(error as Error).message ?? String(error)}`);
    if (process.env.VRAMFIT_DEBUG) io.err(String((error as Error).stack));
    return ExitStatus.failure;
  }
}

export type { BatchOptions, CheckOptions, InfoOptions };
