// `vramfit info`: the backend (or why there is none) and each visible device's memory, from NVML
// where it can answer (no CUDA context created), else from CUDA; a failing device is a row with its error.
import { ExitStatus, VramfitError } from "../errors.js";
import { formatDriverVersion } from "../devices/inventory.js";
import { backend as openBackend, devices as listDevices, formatBytes, nvmlBackend, type DeviceReport } from "../index.js";
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
  /** Every visible device; one that failed has `error` set and null figures. */
  devices: DeviceReport[];
}

export async function infoCommand(options: InfoOptions, io: Io): Promise<number> {
  const backend = await openBackend();
  const nvml = backend.kind === "none" ? undefined : await nvmlBackend();
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
          devices: await listDevices(),
        };
  const healthy = report.devices.filter((d) => d.error === null);
  if (options.requireGpu && healthy.length === 0) {
    const failed = report.devices.find((d) => d.error !== null)?.error?.message;
    throw new VramfitError("ERR_GPU_REQUIRED", `no usable GPU: ${report.reason ?? failed ?? "no device"}`);
  }
  // Like nvidia-smi: the healthy devices and each failing one with its error; exit 6 says the list is partial.
  const status = healthy.length < report.devices.length ? ExitStatus.partial : ExitStatus.ok;
  if (options.json) {
    writeJson(io, report);
    return status;
  }
  if (report.backend === "none") {
    io.out(`backend  none: ${report.reason}\nvramfit answers analytically (see \`vramfit batch --gpu ID\`).`);
    return ExitStatus.ok;
  }
  const nvmlText = report.nvml?.available ? `NVML ${report.nvml.driverVersion ?? "(version unknown)"}` : `no NVML (${report.nvml?.reason})`;
  io.out(`backend  cuda, driver ${report.driverVersion}; ${nvmlText}`);
  const rows = report.devices.map((d) =>
    d.error !== null
      ? [String(d.ordinal), d.name, d.uuid, formatBytes(d.totalBytes), "-", "-", "failed", describeProcesses(d)]
      : [String(d.ordinal), d.name, d.uuid, formatBytes(d.totalBytes), formatBytes(d.freeBytes), formatBytes(d.usedBytes), d.memorySource, describeProcesses(d)],
  );
  io.out(renderTable(["#", "name", "uuid", "total", "free", "used", "from", "processes"], rows));
  for (const d of report.devices) {
    if (d.error !== null) io.out(`error    ${d.error.message}`);
    else if (d.memorySourceReason !== null) io.err(`device ${d.ordinal}: memory read through CUDA (a context): ${d.memorySourceReason}`);
  }
  for (const note of integratedNotes(report.devices)) io.err(note);
  return status;
}

/** `2: pid 123 3 GiB, pid 456`, `none`, or `-` when unknown (no NVML). */
function describeProcesses(d: DeviceReport): string {
  if (d.processes === null) return "-";
  if (d.processes.length === 0) return "none";
  const list = d.processes.map((p) => `pid ${p.pid}${p.usedBytes === null ? "" : ` ${formatBytes(p.usedBytes)}`}`);
  return `${d.processes.length}: ${list.join(", ")}`;
}
