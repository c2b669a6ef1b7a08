// The parameter count of any workload, computed from its architecture.
import { traceCnn } from "./cnn.js";
import { transformerParameterCount } from "./transformer.js";
import { unetParameterCount } from "./unet.js";
import type { Workload } from "./workload.js";

export function parameterCount(workload: Workload): number {
  switch (workload.kind) {
    case "affine":
      return workload.parameterCount;
    case "transformer":
      return transformerParameterCount(workload.architecture);
    case "cnn":
      return traceCnn(workload.network, workload.network.imageSize).parameterCount;
    case "unet":
      return unetParameterCount(workload.network);
  }
}
