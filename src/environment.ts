// vramfit's own environment variables: one that is set but empty counts as unset (a shell's
// `VRAMFIT_LOCK_DIR= vramfit …`, or a container template with a blank value).

/** The variable's value, or undefined when it is unset or empty. CUDA_VISIBLE_DEVICES is not read here: empty means "no devices" to CUDA. */
export function envSetting(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === "" ? undefined : value;
}
