# node-gyp build, for machines without CMake (`node-gyp rebuild`); the same sources and outputs as
# CMakeLists.txt: build/Release/vramfit.node, and the simulated driver and NVML for the tests
# (libcudasim.so, libnvmlsim.so, their _legacy variants, and libsimgpu.so that they share).
{
  "target_defaults": {
    "cflags": ["-Wall", "-Wextra", "-fvisibility=hidden"],
    "cflags_cc": ["-std=c++17", "-fvisibility-inlines-hidden"]
  },
  "targets": [
    {
      "target_name": "vramfit",
      "sources": [
        "native/addon/arguments.cc",
        "native/addon/device_allocations.cc",
        "native/addon/device_contexts.cc",
        "native/addon/device_session.cc",
        "native/addon/device_task.cc",
        "native/addon/device_threads.cc",
        "native/addon/driver.cc",
        "native/addon/driver_library.cc",
        "native/addon/js_error.cc",
        "native/addon/list_devices.cc",
        "native/addon/load_driver.cc",
        "native/addon/load_nvml.cc",
        "native/addon/mem_get_info.cc",
        "native/addon/module.cc",
        "native/addon/native_error.cc",
        "native/addon/nvml.cc",
        "native/addon/nvml_abi.cc",
        "native/addon/nvml_devices.cc",
        "native/addon/nvml_library.cc",
        "native/addon/probe.cc",
        "native/addon/promise_worker.cc",
        "native/addon/release_devices.cc",
        "native/addon/replay_step.cc",
        "native/addon/try_lock_file.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-fno-exceptions"],
      "libraries": ["-ldl"]
    },
    {
      # The simulated machine both simulated libraries share, so that in one process they see one
      # ledger. product_dir puts every library next to the addon instead of build/Release/lib.target/.
      "target_name": "simgpu",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "sources": [
        "native/sim/accounting.cc",
        "native/sim/call_hooks.cc",
        "native/sim/fault_injection.cc",
        "native/sim/machine.cc",
        "native/sim/sim_config.cc"
      ],
      "ldflags": ["-Wl,--version-script=<(module_root_dir)/native/sim/simgpu.map"]
    },
    {
      "target_name": "cudasim",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "dependencies": ["simgpu"],
      "sources": ["native/sim/error_table.cc", "native/sim/sim_driver.cc", "native/sim/visible_devices.cc"],
      "ldflags": ["-Wl,--version-script=<(module_root_dir)/native/sim/exports.map", "-Wl,-rpath,'$$ORIGIN'"],
      # gyp passes -soname=libcudasim.so before these and the linker keeps the last -soname, so
      # this, placed among the libraries (the link line's tail), gives the driver's real SONAME.
      "libraries": ["-Wl,-soname,libcuda.so.1"]
    },
    {
      "target_name": "cudasim_legacy",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "dependencies": ["simgpu"],
      "sources": ["native/sim/error_table.cc", "native/sim/sim_driver.cc", "native/sim/visible_devices.cc"],
      "ldflags": ["-Wl,--version-script=<(module_root_dir)/native/sim/exports_legacy.map", "-Wl,-rpath,'$$ORIGIN'"],
      "libraries": ["-Wl,-soname,libcuda.so.1"]
    },
    {
      "target_name": "nvmlsim",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "dependencies": ["simgpu"],
      "sources": ["native/sim/nvml_sim.cc"],
      "ldflags": ["-Wl,--version-script=<(module_root_dir)/native/sim/nvml_exports.map", "-Wl,-rpath,'$$ORIGIN'"],
      "libraries": ["-Wl,-soname,libnvidia-ml.so.1"]
    },
    {
      "target_name": "nvmlsim_legacy",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "dependencies": ["simgpu"],
      "sources": ["native/sim/nvml_sim.cc"],
      "ldflags": ["-Wl,--version-script=<(module_root_dir)/native/sim/nvml_exports_legacy.map", "-Wl,-rpath,'$$ORIGIN'"],
      "libraries": ["-Wl,-soname,libnvidia-ml.so.1"]
    }
  ]
}
