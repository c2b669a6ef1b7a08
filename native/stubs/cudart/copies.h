// Copies and memsets of the stub runtime: host->device discarded, device->host reads zeros (and is
// counted: a job that reads results back sees zeros, and issue 20's warning says so).
#ifndef VRAMFIT_STUBS_CUDART_COPIES_H
#define VRAMFIT_STUBS_CUDART_COPIES_H

#include <cstdint>

namespace cudart {

struct CopyCounters {
  uint64_t deviceToHostCopies = 0;
  uint64_t deviceToHostBytes = 0;
  uint64_t hostToDeviceBytes = 0;
};
CopyCounters ReadCopyCounters();

}  // namespace cudart

#endif  // VRAMFIT_STUBS_CUDART_COPIES_H
