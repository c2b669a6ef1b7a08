// Parses the CUDASIM_* environment variables into a SimConfig.
#include "sim_config.h"

#include <cstdlib>

namespace cudasim {
namespace {

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::string Trim(const std::string& text) {
  size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}

// Decimal digits only: a stray sign or unit suffix is an error, not a silent 0.
bool ParseUnsigned(const std::string& text, uint64_t& value) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  value = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

bool ParseHex(const std::string& text, uint64_t& value) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return false;
  }
  value = std::strtoull(text.c_str(), nullptr, 16);
  return true;
}

// `PID@BYTES` or `PID@na`.
bool ParseProcess(const std::string& value, OtherProcess& process) {
  size_t at = value.find('@');
  uint64_t pid = 0;
  if (at == std::string::npos || !ParseUnsigned(value.substr(0, at), pid) || pid == 0 || pid > 0x7fffffff) return false;
  process.pid = static_cast<unsigned>(pid);
  std::string bytes = value.substr(at + 1);
  if (bytes == "na") {
    process.bytesKnown = false;
    return true;
  }
  return ParseUnsigned(bytes, process.bytes);
}

// Optional trailing `key=value` fields: cc=8.0, sm=108, l2=BYTES, integrated=1, reserved=BYTES, bus=3B,
// delay=MS, proc=PID@BYTES (repeatable), mig=BYTES+BYTES+..., mode=default|exclusive-process|prohibited,
// hidden=BYTES
bool ApplyExtra(const std::string& field, DeviceSpec& spec) {
  size_t eq = field.find('=');
  std::string key = field.substr(0, eq), value = field.substr(eq + 1);
  uint64_t number = 0;
  if (key == "cc") {
    size_t dot = value.find('.');
    uint64_t major = 0, minor = 0;
    if (dot == std::string::npos || !ParseUnsigned(value.substr(0, dot), major) ||
        !ParseUnsigned(value.substr(dot + 1), minor)) {
      return false;
    }
    spec.ccMajor = static_cast<int>(major);
    spec.ccMinor = static_cast<int>(minor);
    return true;
  }
  if (key == "sm" && ParseUnsigned(value, number) && number > 0) {
    spec.multiprocessorCount = static_cast<int>(number);
    return true;
  }
  if (key == "l2" && ParseUnsigned(value, number) && number > 0 && number <= 0x7fffffff) {
    spec.l2CacheBytes = number;  // cudaDeviceProp's l2CacheSize is an int
    return true;
  }
  if (key == "integrated" && (value == "0" || value == "1")) {
    spec.integrated = value == "1";
    return true;
  }
  if (key == "reserved") return ParseUnsigned(value, spec.reservedBytes);
  if (key == "hidden") return ParseUnsigned(value, spec.hiddenBytes);
  if (key == "bus" && ParseHex(value, number) && number <= 0xFF) {
    spec.pciBus = static_cast<int>(number);
    return true;
  }
  if (key == "delay" && ParseUnsigned(value, number) && number <= 60000) {
    spec.delayMs = static_cast<unsigned>(number);
    return true;
  }
  if (key == "proc") {
    OtherProcess process;
    if (!ParseProcess(value, process)) return false;
    spec.processes.insert(spec.processes.begin(), process);  // fields are read right to left
    return true;
  }
  if (key == "mode") {
    if (value == "default") spec.computeMode = kComputeModeDefault;
    else if (value == "exclusive-process") spec.computeMode = kComputeModeExclusiveProcess;
    else if (value == "prohibited") spec.computeMode = kComputeModeProhibited;
    else return false;
    return true;
  }
  if (key == "mig") {
    for (const std::string& part : Split(value, '+')) {
      if (!ParseUnsigned(part, number) || number == 0) return false;
      spec.migInstanceBytes.push_back(number);
    }
    return spec.migInstanceBytes.size() <= 7;  // an A100/H100 has at most 7 instances
  }
  return false;
}

// `name:totalBytes[:usedBytes][:key=value...]`. Names may hold spaces (and even colons), so the
// numeric fields are taken from the right.
bool ParseDevice(const std::string& entry, DeviceSpec& spec) {
  std::vector<std::string> fields = Split(entry, ':');
  while (fields.size() > 2 && fields.back().find('=') != std::string::npos) {
    if (!ApplyExtra(fields.back(), spec)) return false;
    fields.pop_back();
  }
  if (fields.size() < 2) return false;
  uint64_t last = 0, beforeLast = 0;
  if (!ParseUnsigned(fields.back(), last)) return false;
  fields.pop_back();
  if (fields.size() >= 2 && ParseUnsigned(fields.back(), beforeLast)) {
    spec.totalBytes = beforeLast;
    spec.usedBytes = last;
    fields.pop_back();
  } else {
    spec.totalBytes = last;
  }
  for (size_t i = 0; i < fields.size(); ++i) spec.name += (i ? ":" : "") + fields[i];
  spec.name = Trim(spec.name);
  uint64_t others = 0, instances = 0;
  for (const OtherProcess& process : spec.processes) others += process.bytes;
  for (uint64_t bytes : spec.migInstanceBytes) instances += bytes;
  return !spec.name.empty() && spec.totalBytes > 0 && spec.usedBytes <= spec.totalBytes && others <= spec.usedBytes &&
         instances <= spec.totalBytes - spec.usedBytes;
}

bool ReadUnsignedEnv(const char* name, uint64_t& value, std::string& error) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return true;
  if (ParseUnsigned(text, value)) return true;
  error = std::string(name) + ": expected a decimal integer, got \"" + text + "\"";
  return false;
}

}  // namespace

std::optional<SimConfig> ReadConfig(std::string& error) {
  SimConfig config;
  const char* devices = std::getenv("CUDASIM_DEVICES");
  config.devicesText = devices ? devices : "";
  if (devices != nullptr && Trim(devices) != "") {
    for (const std::string& entry : Split(devices, ';')) {
      if (Trim(entry).empty()) continue;  // tolerate a trailing ';'
      DeviceSpec spec;
      if (!ParseDevice(entry, spec)) {
        error = "CUDASIM_DEVICES: expected name:totalBytes[:usedBytes][:cc=M.m][:sm=N][:l2=BYTES][:integrated=0|1]"
                "[:reserved=BYTES][:bus=HEX][:delay=MS][:proc=PID@BYTES|na][:mig=BYTES+...]"
                "[:mode=default|exclusive-process|prohibited][:hidden=BYTES], got \"" +
                entry + "\"";
        return std::nullopt;
      }
      config.devices.push_back(spec);
    }
  }
  uint64_t syncDelayMs = 0, callDelayMs = 0;
  if (!ReadUnsignedEnv("CUDASIM_GRANULARITY", config.granularity, error) ||
      !ReadUnsignedEnv("CUDASIM_SYNC_DELAY_MS", syncDelayMs, error) ||
      !ReadUnsignedEnv("CUDASIM_CALL_DELAY_MS", callDelayMs, error) ||
      !ReadUnsignedEnv("CUDASIM_CONTEXT_BYTES", config.contextBytes, error) ||
      !ReadUnsignedEnv("CUDASIM_SMALL_ALLOC_MAX", config.smallAllocMaxBytes, error) ||
      !ReadUnsignedEnv("CUDASIM_ALLOC_ALIGNMENT", config.allocAlignment, error)) {
    return std::nullopt;
  }
  if (config.allocAlignment == 0) {
    error = "CUDASIM_ALLOC_ALIGNMENT: expected a positive number of bytes, got 0";
    return std::nullopt;
  }
  if (config.granularity == 0) {
    error = "CUDASIM_GRANULARITY: expected a positive number of bytes, got 0";
    return std::nullopt;
  }
  config.syncDelayMs = static_cast<unsigned>(syncDelayMs);
  config.callDelayMs = static_cast<unsigned>(callDelayMs);
  const char* state = std::getenv("CUDASIM_STATE");
  config.statePath = state ? state : "";
  for (size_t i = 0; i < config.devices.size(); ++i) {
    if (config.devices[i].pciBus < 0) config.devices[i].pciBus = static_cast<int>((0x1B + i) % 256);
  }
  return config;
}

int ReadDriverVersion() {
  const char* text = std::getenv("CUDASIM_DRIVER_VERSION");
  uint64_t version = 0;
  if (text != nullptr && ParseUnsigned(text, version) && version <= 1000000) return static_cast<int>(version);
  return 12040;
}

}  // namespace cudasim
