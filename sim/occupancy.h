// The simulator's own ledger of what every GPU, MIG slice, CPU and byte of memory holds. It
// checks each start the scheduler returns — no GPU or slice given twice, capacity never
// exceeded, gangs whole — independently of the scheduler's own bookkeeping, so a scheduler bug
// stops the simulation instead of producing wrong numbers.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/snapshot.h"
#include "util/status.h"

namespace trainyard::sim {

class Occupancy {
 public:
  explicit Occupancy(const sched::Snapshot& snap);
  // Takes the placement of a job, or returns Internal naming the broken rule.
  util::Status take(const sched::SnapshotJob& job, const std::vector<sched::Assignment>& placement);
  void give_back(const sched::SnapshotJob& job, const std::vector<sched::Assignment>& placement);
  // A node joined the snapshot at `idx` (a new slot at the end, or a freed one reused).
  void add_node(int idx);
  // The node at `idx` left; it must hold nothing.
  void remove_node(int idx);
  int64_t allocated_milli() const { return allocated_milli_; }
  int64_t free_milli() const { return capacity_milli_ - allocated_milli_; }
  int64_t capacity_milli() const { return capacity_milli_; }

 private:
  struct NodeUse {
    int64_t cpu = 0;
    int64_t memory = 0;
    std::vector<int16_t> milli;
    std::vector<uint8_t> mig;
  };
  int64_t share(const sched::Assignment& a) const;

  const sched::Snapshot* snap_;
  std::vector<NodeUse> nodes_;
  int64_t allocated_milli_ = 0;
  int64_t capacity_milli_ = 0;
};

}  // namespace trainyard::sim
