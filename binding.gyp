# node-gyp build, for machines without CMake (`node-gyp rebuild`); the same sources and outputs as
# CMakeLists.txt: build/Release/vramfit.node and build/Release/libcudasim.so.
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
        "native/addon/driver.cc",
        "native/addon/driver_library.cc",
        "native/addon/js_error.cc",
        "native/addon/list_devices.cc",
        "native/addon/load_driver.cc",
        "native/addon/mem_get_info.cc",
        "native/addon/module.cc",
        "native/addon/native_error.cc",
        "native/addon/probe.cc",
        "native/addon/promise_worker.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-fno-exceptions"],
      "libraries": ["-ldl"]
    },
    {
      # The simulated driver for the tests. product_dir puts it next to the addon instead of
      # build/Release/lib.target/.
      "target_name": "cudasim",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "sources": [
        "native/sim/error_table.cc",
        "native/sim/fault_injection.cc",
        "native/sim/sim_config.cc",
        "native/sim/sim_driver.cc"
      ],
      "ldflags": ["-Wl,--version-script=<(module_root_dir)/native/sim/exports.map"],
      # gyp passes -soname=libcudasim.so before these and the linker keeps the last -soname, so
      # this, placed among the libraries (the link line's tail), gives the driver's real SONAME.
      "libraries": ["-Wl,-soname,libcuda.so.1"]
    }
  ]
}
