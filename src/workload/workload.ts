// The workload kinds a MemoryPlan can be built from.

/**
 * A raw affine workload: a model of `parameterCount` parameters (weights, gradients and optimizer
 * states follow from the precision and optimizer) plus `perSampleBytes` of activations for each
 * sample and `fixedBytes` of anything else.
 */
export interface AffineWorkload {
  kind: "affine";
  parameterCount: number;
  perSampleBytes: number;
  fixedBytes: number;
}

export type Workload = AffineWorkload;
