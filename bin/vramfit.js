#!/usr/bin/env node
// The `vramfit` command: a thin shim over the CLI's run(), so the library holds all the logic.
import { run } from "../dist/cli/main.js";

process.exitCode = await run(process.argv.slice(2));
