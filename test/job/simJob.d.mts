// Types of simJob.mjs, for the tests that import it.
export interface SimJob {
  fixedBytes?: number;
  perSampleBytes: number;
  parts?: number;
  smallCount?: number;
  smallBytes?: number;
  /** Bound it below one sample's bytes, so that the bytes still grow with the batch. */
  noiseBytes?: number;
  seed?: number;
  holdMs?: number;
  /** Print VRAMFIT_PEAK_BYTES: the bytes requested (true), or the device bytes the allocations took ("device"). */
  printPeak?: boolean | "device";
  oom?: string;
}
export interface SimulatorMemory {
  granularityBytes?: number;
  contextBytes?: number;
  smallAllocMaxBytes?: number;
  allocAlignmentBytes?: number;
}
export const simJobPath: string;
export function buildSimJob(): string;
export function noiseBytes(batch: number, noise: number, seed?: number): number;
export function jobSizes(job: SimJob, batch: number): number[];
export function requestedBytes(job: SimJob, batch: number): number;
export function deviceBytes(job: SimJob, batch: number, simulator?: SimulatorMemory): number;
export function trueMaxBatch(job: SimJob, freeBytes: number, simulator?: SimulatorMemory): number;
export function jobEnv(job: SimJob): Record<string, string>;
export function jobPids(file: string): number[];
export function processAlive(pid: number): boolean;
