// Batches concurrent writes into one durable transaction (group commit, as in LevelDB's writer
// queue): the first caller to arrive becomes the leader, takes every write queued so far, runs
// them in one Store::transaction() and wakes the others. With synchronous=FULL one commit costs
// a WAL fsync, so N concurrent submissions share one fsync instead of paying N.
//
// Thread-safe. A write whose body fails is reported to its caller alone: the batch is retried
// without it, so one bad request never fails its neighbours.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>

#include "store/store.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

class GroupCommitter {
 public:
  explicit GroupCommitter(store::Store& store) : store_(store) {}

  // Runs `write` (store calls only) inside a committed transaction; returns once durable.
  util::Status commit(std::function<util::Status(store::Store&)> write) TY_EXCLUDES(mu_);

  // Most writes one transaction takes; bounds the latency of the leader.
  static constexpr size_t kMaxBatch = 512;

 private:
  struct Writer {
    std::function<util::Status(store::Store&)> write;
    util::Status result;
    bool done = false;
  };
  void run_batch(std::deque<Writer*>& batch) TY_EXCLUDES(mu_);

  store::Store& store_;
  util::Mutex mu_;
  std::condition_variable cv_;  // with mu_: a batch was committed
  // Front is the current leader. A Writer's done and result are written under mu_ too.
  std::deque<Writer*> queue_ TY_GUARDED_BY(mu_);
};

}  // namespace trainyard::server
