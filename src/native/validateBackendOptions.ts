// The library's check of backend()'s options: the addon's and the driver's paths.
import { object, rejectUnknown, string, optionalFields } from "../checks.js";

/** `backend(options)`: paths are strings. */
export function validateBackendOptions(value: unknown): void {
  const options = object("options", value, true);
  rejectUnknown("options", options, ["addonPath", "cudaLibrary", "nvmlLibrary"]);
  optionalFields("options", options, { addonPath: string, cudaLibrary: string, nvmlLibrary: string });
}
