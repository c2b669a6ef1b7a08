// `vramfit gpus`: the GPU catalog that analytic targets (`--gpu ID`) draw from.
import { GPU_CATALOG } from "../devices/catalog.js";
import { ExitStatus } from "../errors.js";
import { formatBytes } from "../units.js";
import { gpusFitCommand, wantsFit, type GpusFitOptions } from "./gpusFitCommand.js";
import { writeJson, type Io } from "./io.js";
import { renderTable } from "./table.js";

export interface GpusOptions extends GpusFitOptions {
  json?: boolean;
}

export async function gpusCommand(options: GpusOptions, io: Io): Promise<number> {
  if (wantsFit(options)) return gpusFitCommand(options, io);
  const gpus = [...GPU_CATALOG].sort((a, b) => a.totalBytes - b.totalBytes);
  if (options.json) {
    writeJson(io, gpus);
    return ExitStatus.ok;
  }
  const rows = gpus.map((g) => [
    g.id,
    g.name,
    formatBytes(g.totalBytes),
    g.totalIsNominal ? "nominal" : "reported",
    g.architecture,
    g.computeCapability,
  ]);
  io.out(renderTable(["id", "name", "total", "total is", "architecture", "cc"], rows));
  return ExitStatus.ok;
}
