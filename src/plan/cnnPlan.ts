// The memory plan of a CNN: model states per block, and what autograd saves per layer at the run's image size.
import { invalidArgument } from "../errors.js";
import { CnnShapeError, traceCnn, type CnnTrace } from "../workload/cnn.js";
import type { CnnWorkload } from "../workload/workload.js";
import { autocastLayout } from "./autocast.js";
import { weightBytes } from "./bytesPerParameter.js";
import type { MemoryPlan, PlannedTensor } from "./memoryPlan.js";
import { hostStateTensors, modelStateTensors, type StateGroup } from "./modelStates.js";
import { cnnTape } from "./cnnStep.js";
import { sharedTimeline } from "./timelineCache.js";
import { describeSetup, type ResolvedSetup } from "./setup.js";

/**
 * The network traced at an image size, once per network (by identity) and size: `gpus --fit
 * --model resnet152` plans the same network for every GPU and rank count (16 plans), and each
 * traced it again. A trace is a value: plans read it and copy what they keep.
 */
function trace(workload: CnnWorkload, imageSize: number): CnnTrace {
  let bySize = traces.get(workload.network);
  if (bySize === undefined) traces.set(workload.network, (bySize = new Map()));
  let traced = bySize.get(imageSize);
  if (traced === undefined) {
    traced = traceNetwork(workload, imageSize);
    if (bySize.size >= SIZES_KEPT) bySize.clear(); // a search over image sizes keeps the last few, not all
    bySize.set(imageSize, traced);
  }
  return traced;
}
const SIZES_KEPT = 16;
const traces = new WeakMap<CnnWorkload["network"], Map<number, CnnTrace>>();

function traceNetwork(workload: CnnWorkload, imageSize: number): CnnTrace {
  try {
    return traceCnn(workload.network, imageSize);
  } catch (error) {
    if (error instanceof CnnShapeError) {
      throw invalidArgument("--image", imageSize, `an image size ${workload.name} accepts (layer ${error.layer} ${error.message})`);
    }
    throw error;
  }
}

function checkOptions(workload: CnnWorkload, setup: ResolvedSetup): void {
  if (setup.seq !== undefined) throw invalidArgument("--seq", setup.seq, `no --seq for ${workload.name}, a CNN (use --image)`);
  if (setup.tp > 1) throw invalidArgument("--tp", setup.tp, `1 for ${workload.name} (tensor parallelism applies to transformers)`);
  if (setup.checkpointing === "selective") {
    throw invalidArgument("--checkpointing", "selective", `none or full for ${workload.name} (selective recomputation is defined for attention)`);
  }
}

export function cnnPlan(workload: CnnWorkload, setup: ResolvedSetup): MemoryPlan {
  checkOptions(workload, setup);
  const network = workload.network;
  const imageSize = setup.image ?? network.imageSize;
  const reference = trace(workload, network.imageSize);
  const run = imageSize === network.imageSize ? reference : trace(workload, imageSize);
  if (run.parameterCount !== reference.parameterCount) {
    // Only a linear layer after a flatten changes size with the image: PyTorch would refuse the input.
    throw invalidArgument("--image", imageSize, `${network.imageSize} for ${workload.name} (its classifier's input size is fixed by the image size; add an adaptiveavgpool layer to accept others)`);
  }
  const e = weightBytes(setup.precision);
  const groups = stateGroups(reference);
  const host = hostStateTensors(groups, setup);
  let phases: string[] | undefined;
  let tensors: PlannedTensor[];
  if (setup.mode === "train") {
    // The step as a timeline (src/plan/cnnStep.ts); full checkpointing (torch.utils.checkpoint
    // around every top-level layer) recomputes each layer when backward reaches it.
    // The tape reads the image size, the precision, checkpointing and whether amp is torch.cuda.amp's
    // layout (its weights' 16-bit copies, src/plan/autocast.ts) only: other setups share it.
    const copies = autocastLayout(setup);
    const step = sharedTimeline(network, JSON.stringify([imageSize, setup.precision, setup.checkpointing, copies]), () => {
      const tape = cnnTape(network, run, e, setup.precision === "amp", copies);
      return tape.timeline(setup.checkpointing === "full" ? { recomputed: (op) => op.stage < tape.lossStage } : {});
    });
    phases = step.phases.names;
    // The timeline's tensors are non-empty already (TrainingTape.timeline leaves the empty out):
    // only the states are filtered, not the step's thousands again, cold, in every plan.
    const states = modelStateTensors(groups, setup, { ...step, largestTensorElements: run.largestTensorElements });
    tensors = states.filter(nonEmpty).concat(step.tensors);
  } else {
    const workspace: PlannedTensor = { name: "workspace.forward_peak", category: "workspace", fixedBytes: 0, perSampleBytes: run.inferencePeakElements * e };
    tensors = [...modelStateTensors(groups, setup), workspace].filter(nonEmpty);
  }

  return {
    description: `${workload.name}: ${reference.parameterCount} parameters; ${describeSetup({ ...setup, image: imageSize }, { transformer: false })}`,
    parameterCount: reference.parameterCount,
    ...(phases !== undefined && { phases }),
    tensors,
    ...(host !== undefined && { host }),
  };
}

/**
 * The trace's parameter groups as modelStateTensors takes them, made once per trace: the same
 * objects in every plan of the network, so the states made per group (src/plan/modelStates.ts)
 * are made once too.
 */
function stateGroups(trace: CnnTrace): readonly StateGroup[] {
  let groups = groupsOf.get(trace);
  // Fields written out, not spread: ~470 groups for resnet152, cold (a spread is V8's slowest object copy there).
  if (groups === undefined) groupsOf.set(trace, (groups = Object.freeze(trace.parameterGroups.map((g) => Object.freeze({ name: g.name, count: g.count, tensors: g.tensors, tensorParallelCount: 0 })))));
  return groups;
}
const groupsOf = new WeakMap<CnnTrace, readonly StateGroup[]>();

const nonEmpty = (t: PlannedTensor): boolean => t.fixedBytes > 0 || t.perSampleBytes > 0;
