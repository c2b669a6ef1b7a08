// Laying out the simulated machine's pools.
#include "machine.h"

#include <unistd.h>

#include <cstdio>

namespace cudasim {
namespace {

uint64_t Fnv1a(const std::string& text, uint64_t seed) {
  uint64_t hash = 14695981039346656037ull ^ seed;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

void MakeUuid(const std::string& key, unsigned char* uuid) {
  for (int half = 0; half < 2; ++half) {
    uint64_t hash = Fnv1a(key, static_cast<uint64_t>(half + 1));
    for (int i = 0; i < 8; ++i) uuid[half * 8 + i] = static_cast<unsigned char>(hash >> (8 * i));
  }
}

// What tells this machine's GPUs apart from another simulated machine's: its CUDASIM_STATE, made
// absolute (every process naming one file shares one machine). Without a state file each process
// has a machine of its own, and the key is empty: the UUIDs the simulator always gave.
std::string MachineKey(const std::string& statePath) {
  if (statePath.empty()) return "";
  std::string path = statePath;
  if (path[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) path = std::string(cwd) + "/" + path;
  }
  return path + "#";
}

}  // namespace

std::optional<Machine> BuildMachine(std::string& error) {
  std::optional<SimConfig> config = ReadConfig(error);
  if (!config) return std::nullopt;
  Machine machine;
  machine.config = *config;
  // Two simulated machines (two CUDASIM_STATEs) are two machines: their GPUs must not share UUIDs,
  // or vramfit's device lock (keyed by UUID) would make one wait for the other.
  const std::string key = MachineKey(config->statePath);
  for (size_t gpu = 0; gpu < config->devices.size(); ++gpu) {
    const DeviceSpec& spec = config->devices[gpu];
    Pool whole;
    whole.gpu = static_cast<int>(gpu);
    whole.totalBytes = spec.totalBytes;
    whole.baseUsedBytes = spec.usedBytes;
    whole.hiddenBytes = spec.hiddenBytes;
    // The key the single-device simulator always used (after the machine's), so GPU UUIDs did not change with MIG support.
    MakeUuid(key + std::to_string(gpu) + "#" + spec.name, whole.uuid);
    machine.gpuPool.push_back(static_cast<int>(machine.pools.size()));
    machine.pools.push_back(whole);
    machine.migPools.emplace_back();
    for (size_t k = 0; k < spec.migInstanceBytes.size(); ++k) {
      Pool instance;
      instance.gpu = static_cast<int>(gpu);
      instance.mig = static_cast<int>(k);
      instance.totalBytes = spec.migInstanceBytes[k];
      MakeUuid(key + std::to_string(gpu) + "#" + spec.name + "#mig#" + std::to_string(k), instance.uuid);
      machine.migPools.back().push_back(static_cast<int>(machine.pools.size()));
      machine.pools.push_back(instance);
    }
  }
  if (machine.pools.size() > static_cast<size_t>(kMaxPools)) {
    error = "CUDASIM_DEVICES: at most " + std::to_string(kMaxPools) + " GPUs and MIG instances in all";
    return std::nullopt;
  }
  machine.identity = Fnv1a(config->devicesText + "|" + std::to_string(config->granularity) + "|" +
                               std::to_string(config->contextBytes),
                           0);
  return machine;
}

std::string FormatUuid(const unsigned char* bytes, const char* prefix) {
  std::string text = std::string(prefix) + "-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    text += hex;
  }
  return text;
}

}  // namespace cudasim
