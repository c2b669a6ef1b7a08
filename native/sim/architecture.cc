// The per-compute-capability table behind the simulated GPUs' properties and attributes.
#include "architecture.h"

namespace cudasim {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

struct Entry {
  int major, minor;
  Architecture arch;
};

// Threads, blocks and shared memory per SM: the Programming Guide's table (see architecture.h).
// L2 and bus width: V100 (Volta whitepaper: 6144 KB L2, 4096-bit HBM2), T4 (Turing whitepaper:
// 4 MB, 256-bit), A100 (A100 whitepaper: 40 MB L2, 5120-bit), RTX 3090 (GA102 whitepaper: 6 MB,
// 384-bit), Jetson AGX Orin (4 MB, 256-bit LPDDR5), RTX 4090 (Ada whitepaper: 72 MB, 384-bit),
// H100 SXM5 (H100 whitepaper: 50 MB L2, 5120-bit HBM3), B200 (126 MB, 8192-bit HBM3e), RTX 5090
// (Blackwell GB202 whitepaper: 96 MB, 512-bit).
const Entry kTable[] = {
    {7, 0, {2048, 32, 96 * KiB, 96 * KiB, 0, 6 * MiB, 4096, "Tesla V100"}},
    {7, 5, {1024, 16, 64 * KiB, 64 * KiB, 0, 4 * MiB, 256, "Tesla T4"}},
    {8, 0, {2048, 32, 164 * KiB, 163 * KiB, 1 * KiB, 40 * MiB, 5120, "A100"}},
    {8, 6, {1536, 16, 100 * KiB, 99 * KiB, 1 * KiB, 6 * MiB, 384, "GeForce RTX 3090"}},
    {8, 7, {2048, 16, 164 * KiB, 163 * KiB, 1 * KiB, 4 * MiB, 256, "Jetson AGX Orin"}},
    {8, 9, {1536, 24, 100 * KiB, 99 * KiB, 1 * KiB, 72 * MiB, 384, "GeForce RTX 4090"}},
    {9, 0, {2048, 32, 228 * KiB, 227 * KiB, 1 * KiB, 50 * MiB, 5120, "H100 SXM5"}},
    {10, 0, {2048, 32, 228 * KiB, 227 * KiB, 1 * KiB, 126 * MiB, 8192, "B200"}},
    {12, 0, {1536, 32, 100 * KiB, 99 * KiB, 1 * KiB, 96 * MiB, 512, "GeForce RTX 5090"}},
};

}  // namespace

const Architecture& ArchitectureOf(int ccMajor, int ccMinor) {
  const Entry* best = &kTable[0];
  for (const Entry& entry : kTable) {
    if (entry.major < ccMajor || (entry.major == ccMajor && entry.minor <= ccMinor)) best = &entry;
  }
  return best->arch;
}

}  // namespace cudasim
