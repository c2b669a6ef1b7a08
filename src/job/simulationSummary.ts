// What a search on a simulated GPU reports beside its answer: the device and torch it simulated,
// and, from the stubs' counts, what the job did that a simulation cannot vouch for.
import { formatBytes } from "../units.js";
import type { JobRun } from "./runJob.js";
import type { SimulatedGpu } from "./simulatedGpu.js";

export interface SimulationSummary {
  gpu: string;
  name: string;
  computeCapability: string;
  multiprocessorCount: number;
  torch: string;
  cudaMajor: number;
  /** The job's context, charged inside the device as the job opens it (--job-context). */
  contextBytes: number;
  /** What the stub cuDNN answered every workspace query with (--cudnn-workspace). */
  cudnnWorkspaceBytes: number;
  /** The most any run read back from the device: those reads return zeros. */
  deviceToHostBytes: number;
  /** Over all runs: what the job touched that is not simulated (the largest count of any run). */
  touched: Record<string, number>;
  /** One sentence each, for people: what to distrust, and why. */
  warnings: string[];
}

/** The summary of `runs` on `sim`. */
export function simulationSummary(sim: SimulatedGpu, runs: readonly JobRun[]): SimulationSummary {
  let deviceToHostBytes = 0;
  const touched: Record<string, number> = {};
  for (const run of runs) {
    if (run.simulation === undefined) continue;
    deviceToHostBytes = Math.max(deviceToHostBytes, run.simulation.deviceToHostBytes);
    for (const [what, count] of Object.entries(run.simulation.touched)) touched[what] = Math.max(touched[what] ?? 0, count);
  }
  return {
    gpu: sim.gpu.id,
    name: sim.gpu.name,
    computeCapability: sim.gpu.computeCapability,
    multiprocessorCount: sim.multiprocessors.count,
    torch: sim.torchVersion,
    cudaMajor: sim.cudaMajor,
    contextBytes: sim.contextBytes,
    cudnnWorkspaceBytes: sim.cudnnWorkspaceBytes,
    deviceToHostBytes,
    touched,
    warnings: simulationWarnings(sim, deviceToHostBytes, touched),
  };
}

function simulationWarnings(sim: SimulatedGpu, deviceToHostBytes: number, touched: Record<string, number>): string[] {
  const warnings: string[] = [];
  if (deviceToHostBytes > 0) {
    warnings.push(
      `the job read ${formatBytes(deviceToHostBytes)} (${deviceToHostBytes} bytes) back from the simulated GPU (.item(), nonzero, boolean masks, a NaN check…), which read as zeros: where its control flow or shapes depend on those values, a real run may allocate differently`,
    );
  }
  if ((touched["cudnn.workspaceQueries"] ?? 0) > 0) {
    warnings.push(
      `cuDNN's workspace sizes are not simulated: its ${touched["cudnn.workspaceQueries"]} queries were answered ${formatBytes(sim.cudnnWorkspaceBytes)} (--cudnn-workspace); real cuDNN's depend on the engine it picks, which the reserve covers on other paths`,
    );
  }
  if ((touched["cudnn.benchmark"] ?? 0) > 0) warnings.push("torch.backends.cudnn.benchmark: the algorithm (and workspace) cuDNN's timing would pick is not simulated");
  if ((touched["cudnn.rnn"] ?? 0) > 0) warnings.push("cuDNN RNNs are not simulated: the stub refuses them (CUDNN_STATUS_NOT_SUPPORTED)");
  if ((touched["cudart.graphCaptures"] ?? 0) > 0) {
    warnings.push("the job captured CUDA graphs: their memory pools are PyTorch's and counted, but what the driver keeps for an instantiated graph on a real GPU is not simulated");
  }
  if ((touched["driver.virtualMemory"] ?? 0) > 0) {
    warnings.push("expandable segments (cuMemCreate): out of memory is simulated, but their memory is missing from the measured peaks");
  }
  if ((touched["driver.moduleLoads"] ?? 0) > 0 || (touched["driver.launches"] ?? 0) > 0) {
    warnings.push("the job built and launched its own kernels through the driver (NVRTC, Triton, torch.compile): what their compilers and autotuners allocate is not simulated");
  }
  return warnings;
}
