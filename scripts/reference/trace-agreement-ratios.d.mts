// Types of trace-agreement-ratios.mjs, for the test that imports it.
import type { MemoryPlan } from "../../src/plan/memoryPlan.js";
import type { RunSetup, SetupOptions } from "../../src/plan/setup.js";
import type { Workload } from "../../src/workload/workload.js";

export interface AgreementCase {
  case: string;
  preset: string;
  tracerArgs: string[];
  affine: boolean;
  kernels: string[];
  charged: { cublasWorkspaceBytes?: number; cublasWorkspaces?: number };
  parameterCount: number;
  trainableParameterCount: number;
  peaks: Record<string, { peak: number; phase: string }>;
}
/** What the comparison needs of the library: the source's modules in the test, dist's in the documents. */
export interface AgreementLibrary {
  buildPlan: (workload: Workload, setup: RunSetup) => MemoryPlan;
  parseSetup: (options: SetupOptions) => RunSetup;
  presetWorkload: (name: string) => Workload | undefined;
  peakBytes: (plan: MemoryPlan, batch: number, round: (bytes: number) => number) => number;
  BLAS_WORKSPACE_PREFIX: string;
}
export function tracerOptions(args: string[]): SetupOptions;
export function casePlan(library: AgreementLibrary, c: AgreementCase): { plan: MemoryPlan; workspaces: number };
export function peakRatio(library: AgreementLibrary, c: AgreementCase, batch: number): number;
export const FIXTURE: URL;
export function agreementCounts(presets?: string[]): Promise<{ cases: number; presets: number; comparisons: number; within1: number; lowest: string; highest: string }>;
