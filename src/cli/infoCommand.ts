// `vramfit info`: the backend (or why there is none) and each visible device's memory.
import { ExitStatus, VramfitError } from "../errors.js";
import { formatDriverVersion, inventory, type DeviceReport } from "../devices/inventory.js";
import { openBackend } from "../native/binding.js";
import { formatBytes } from "../units.js";
import { writeJson, type Io } from "./io.js";
import { renderTable } from "./table.js";

export interface InfoOptions {
  json?: boolean;
  requireGpu?: boolean;
}

export interface InfoReport {
  backend: "cuda" | "none";
  reason: string | null;
  driverVersion: string | null;
  devices: DeviceReport[];
}

export async function infoCommand(options: InfoOptions, io: Io): Promise<number> {
  const backend = await openBackend();
  const report: InfoReport =
    backend.kind === "none"
      ? { backend: "none", reason: backend.reason, driverVersion: null, devices: [] }
      : {
          backend: "cuda",
          reason: null,
          driverVersion: formatDriverVersion(backend.driver.version),
          devices: await inventory(backend.addon),
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
  io.out(`backend  cuda, driver ${report.driverVersion}`);
  const rows = report.devices.map((d) => [
    String(d.ordinal),
    d.name,
    d.uuid,
    formatBytes(d.totalBytes),
    formatBytes(d.freeBytes),
    formatBytes(d.usedBytes),
  ]);
  io.out(renderTable(["#", "name", "uuid", "total", "free", "used"], rows));
  return ExitStatus.ok;
}
