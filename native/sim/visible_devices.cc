// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER, as the simulated driver applies them.
#include "visible_devices.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace cudasim {
namespace {

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string Trim(const std::string& text) {
  size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// Pools whose UUID (with `prefix`) starts with `text`; whole GPUs or MIG instances only.
std::vector<int> ByUuidPrefix(const Machine& machine, const std::string& text, bool mig) {
  std::vector<int> found;
  for (size_t pool = 0; pool < machine.pools.size(); ++pool) {
    const Pool& candidate = machine.pools[pool];
    if ((candidate.mig >= 0) != mig) continue;
    std::string uuid = Lower(FormatUuid(candidate.uuid, mig ? "MIG" : "GPU"));
    if (uuid.compare(0, text.size(), Lower(text)) == 0) found.push_back(static_cast<int>(pool));
  }
  return found;
}

}  // namespace

std::vector<int> VisiblePools(const Machine& machine) {
  size_t gpus = machine.config.devices.size();
  std::vector<int> order(gpus);
  for (size_t i = 0; i < gpus; ++i) order[i] = static_cast<int>(i);
  const char* deviceOrder = std::getenv("CUDA_DEVICE_ORDER");
  if (deviceOrder != nullptr && std::string(deviceOrder) == "PCI_BUS_ID") {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return machine.config.devices[a].pciBus < machine.config.devices[b].pciBus;
    });
  }
  auto expand = [&](int gpu) {
    return machine.migPools[gpu].empty() ? std::vector<int>{machine.gpuPool[gpu]} : machine.migPools[gpu];
  };

  std::vector<int> listed;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) {
    for (int gpu : order) {
      for (int pool : expand(gpu)) listed.push_back(pool);
    }
  } else {
    std::string text = visible;
    size_t start = 0;
    for (;;) {
      size_t comma = text.find(',', start);
      std::string entry = Trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      std::vector<int> pools;
      if (!entry.empty() && entry.find_first_not_of("0123456789") == std::string::npos) {
        size_t index = entry.size() <= 6 ? std::strtoul(entry.c_str(), nullptr, 10) : gpus;
        if (index < gpus) pools = expand(order[index]);
      } else if (entry.compare(0, 4, "GPU-") == 0 || entry.compare(0, 4, "MIG-") == 0) {
        bool mig = entry[0] == 'M';
        std::vector<int> found = ByUuidPrefix(machine, entry, mig);
        if (found.size() == 1) pools = mig ? found : expand(machine.pools[found[0]].gpu);
      }
      bool repeated = false;
      for (int pool : pools) repeated = repeated || std::find(listed.begin(), listed.end(), pool) != listed.end();
      if (pools.empty() || repeated) break;  // the first invalid entry ends the list
      listed.insert(listed.end(), pools.begin(), pools.end());
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }

  std::vector<int> visiblePools;
  bool migSeen = false;
  for (int pool : listed) {
    if (machine.pools[pool].mig >= 0) {
      if (migSeen) continue;  // one MIG device per process
      migSeen = true;
    }
    visiblePools.push_back(pool);
  }
  return visiblePools;
}

}  // namespace cudasim
