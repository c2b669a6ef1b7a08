// `vramfit info`: the backend (or why there is none) and each visible device's memory, from NVML
// where it can answer (no CUDA context created), else from CUDA.
import { ExitStatus, VramfitError } from "../errors.js";
import { formatDriverVersion, inventory, type DeviceReport } from "../devices/inventory.js";
import { openBackend, openNvml } from "../native/binding.js";
import { formatBytes } from "../units.js";
import { writeJson, type Io } from "./io.js";
import { integratedNotes } from "./integratedNote.js";
import { renderTable } from "./table.js";

export interface InfoOptions {
  json?: boolean;
  requireGpu?: boolean;
}

export interface InfoReport {
  backend: "cuda" | "none";
  reason: string | null;
  driverVersion: string | null;
  /** NVML: its library and driver version, or why it is not used; null without a CUDA backend. */
  nvml: { available: boolean; libraryPath: string | null; driverVersion: string | null; reason: string | null } | null;
  devices: DeviceReport[];
}

export async function infoCommand(options: InfoOptions, io: Io): Promise<number> {
  const backend = await openBackend();
  const nvml = backend.kind === "none" ? undefined : await openNvml();
  const report: InfoReport =
    backend.kind === "none"
      ? { backend: "none", reason: backend.reason, driverVersion: null, nvml: null, devices: [] }
      : {
          backend: "cuda",
          reason: null,
          driverVersion: formatDriverVersion(backend.driver.version),
          nvml:
            nvml?.kind === "nvml"
              ? { available: true, libraryPath: nvml.info.libraryPath, driverVersion: nvml.info.driverVersion, reason: null }
              : { available: false, libraryPath: null, driverVersion: null, reason: nvml?.reason ?? null },
          devices: await inventory(backend.addon, nvml),
        };
  if (options.requireGpu && report.devices.length === 0) {
    throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${report.reason ?? "no device"}`);
  }
  if (options.json) {
    writeJson(io, report);
    return ExitStatus.ok;
  }
  if (report.backend === "none") {
    io.out(`backend  none: ${report.reason}\nvramfit answers analytically (see \`vramfit batch --gpu ID\`).`);
    return ExitStatus.ok;
  }
  const nvmlText = report.nvml?.available ? `NVML ${report.nvml.driverVersion ?? "(version unknown)"}` : `no NVML (${report.nvml?.reason})`;
  io.out(`backend  cuda, driver ${report.driverVersion}; ${nvmlText}`);
  const rows = report.devices.map((d) => [
    String(d.ordinal),
    d.name,
    d.uuid,
    formatBytes(d.totalBytes),
    formatBytes(d.freeBytes),
    formatBytes(d.usedBytes),
    d.memorySource,
    describeProcesses(d),
  ]);
  io.out(renderTable(["#", "name", "uuid", "total", "free", "used", "from", "processes"], rows));
  for (const d of report.devices) {
    if (d.memorySourceReason !== null) io.err(`device ${d.ordinal}: memory read through CUDA (a context): ${d.memorySourceReason}`);
  }
  for (const note of integratedNotes(report.devices)) io.err(note);
  return ExitStatus.ok;
}

/** `2: pid 123 3 GiB, pid 456`, `none`, or `-` when unknown (no NVML). */
function describeProcesses(d: DeviceReport): string {
  if (d.processes === null) return "-";
  if (d.processes.length === 0) return "none";
  const list = d.processes.map((p) => `pid ${p.pid}${p.usedBytes === null ? "" : ` ${formatBytes(p.usedBytes)}`}`);
  return `${d.processes.length}: ${list.join(", ")}`;
}
