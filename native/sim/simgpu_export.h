// Marks what libsimgpu.so (the simulated machine shared by the simulated driver and NVML) exports.
#ifndef CUDASIM_SIMGPU_EXPORT_H
#define CUDASIM_SIMGPU_EXPORT_H

#define SIMGPU_API __attribute__((visibility("default")))

#endif  // CUDASIM_SIMGPU_EXPORT_H
