// `vramfit models`: the preset models with their parameter counts (computed from the architecture).
import { ExitStatus } from "../errors.js";
import { listPresets } from "../workload/presets.js";
import { writeJson, type Io } from "./io.js";
import { renderTable } from "./table.js";

export interface ModelsOptions {
  json?: boolean;
}

export async function modelsCommand(options: ModelsOptions, io: Io): Promise<number> {
  const presets = listPresets();
  if (options.json) {
    writeJson(io, presets);
    return ExitStatus.ok;
  }
  const rows = presets.map((p) => {
    const active = p.activeParameterCount < p.parameterCount ? ` (${p.activeParameterCount.toLocaleString("en-US")} active)` : "";
    return [p.name, p.kind, p.parameterCount.toLocaleString("en-US") + active, p.description];
  });
  io.out(renderTable(["model", "kind", "parameters", "description"], rows));
  return ExitStatus.ok;
}
