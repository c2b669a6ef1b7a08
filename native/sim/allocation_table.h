// One simulated device's live cuMemAlloc allocations, by address: a vector in address order rather
// than a std::map, so an allocation costs no node of its own and no rebalancing (a probe makes
// thousands, on every device at once).
#ifndef CUDASIM_ALLOCATION_TABLE_H
#define CUDASIM_ALLOCATION_TABLE_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cudasim {

struct Allocation {
  uint64_t requestedBytes = 0;  // never 0 while held (the driver refuses 0 bytes): 0 marks a freed entry
  uint64_t reservedBytes = 0;   // a large one: rounded up to the granularity, what the device loses
  uint64_t page = 0;            // a small one: the shared page it lives in (its reservedBytes are 0)
  uint64_t pageBytes = 0;       // and its share of it, rounded up to the alignment
};

class AllocationTable {
 public:
  struct Entry {
    uint64_t address;
    Allocation allocation;
  };

  // Records an allocation. The driver's addresses only grow, so it normally goes at the end.
  void Add(uint64_t address, const Allocation& allocation) {
    if (entries_.empty() || entries_.back().address < address) {
      entries_.push_back({address, allocation});
    } else {  // not expected; kept correct all the same
      entries_.insert(Above(address), {address, allocation});
    }
    ++held_;
  }

  // The allocation held at exactly `address`, or nullptr.
  Entry* At(uint64_t address) {
    Entry* found = AtCursor(address);
    if (found == nullptr) {
      auto at = std::lower_bound(entries_.begin(), entries_.end(), address,
                                 [](const Entry& entry, uint64_t value) { return entry.address < value; });
      if (at == entries_.end() || at->address != address) return nullptr;
      found = &*at;
    }
    cursor_ = static_cast<size_t>(found - entries_.data()) + 1;
    return Held(*found) ? found : nullptr;
  }

  // The allocation held that starts nearest at or below `address`, or nullptr. A freed entry in
  // between means none: allocations never overlap, so one freed above a held one ends it.
  const Entry* Below(uint64_t address) {
    const Entry* entry = AtCursor(address);  // an exact start is the nearest one at or below
    if (entry == nullptr) {
      auto after = Above(address);
      if (after == entries_.begin()) return nullptr;
      entry = &*(after - 1);
    }
    cursor_ = static_cast<size_t>(entry - entries_.data()) + 1;
    return Held(*entry) ? entry : nullptr;
  }

  // Forgets the entry At returned (invalidating it and every other entry pointer).
  void Remove(Entry* entry) {
    entry->allocation.requestedBytes = 0;
    --held_;
    // Freed entries are dropped in one pass once they outnumber the held ones: amortized O(1).
    if (entries_.size() - held_ > held_ && entries_.size() > 64) {
      entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [](const Entry& e) { return !Held(e); }), entries_.end());
      cursor_ = 0;
    }
  }

  // Calls f(allocation) for every allocation held.
  template <typename F>
  void ForEach(F f) const {
    for (const Entry& entry : entries_) {
      if (Held(entry)) f(entry.allocation);
    }
  }

  void Clear() {
    entries_.clear();
    held_ = 0;
    cursor_ = 0;
  }

 private:
  static bool Held(const Entry& entry) { return entry.allocation.requestedBytes != 0; }

  // The entry after the one last looked up, when it starts at `address`: a probe frees and touches
  // its blocks in the order it made them, so most lookups end here, without a binary search.
  Entry* AtCursor(uint64_t address) {
    return cursor_ < entries_.size() && entries_[cursor_].address == address ? &entries_[cursor_] : nullptr;
  }

  std::vector<Entry>::iterator Above(uint64_t address) {
    return std::upper_bound(entries_.begin(), entries_.end(), address,
                            [](uint64_t value, const Entry& entry) { return value < entry.address; });
  }

  std::vector<Entry> entries_;  // by address, freed ones included until the next compaction
  size_t held_ = 0;
  size_t cursor_ = 0;  // AtCursor's guess
};

}  // namespace cudasim

#endif  // CUDASIM_ALLOCATION_TABLE_H
