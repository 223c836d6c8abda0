// The simulator's future events, ordered by (time, sequence number) so that events at the
// same time run in the order they were scheduled: ties are deterministic. Cancellation is
// lazy: an event carries the job's generation, and a handler ignores an event whose
// generation is stale. Thread-compatible; one queue per simulation.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "util/clock.h"

namespace trainyard::sim {

enum class EventKind : uint8_t {
  Arrival,  // the job is submitted
  Finish,   // the job's remaining work is done
  Stop,     // a preempted job's grace period ended: it leaves its GPUs
  Replan,   // the policy's order changes with time alone (e.g. a Tiresias demotion)
  Wake,     // the cloud has news (a node ready, a notice) or an idle node's timeout ends
};

struct Event {
  util::Time time;
  uint64_t seq;
  EventKind kind;
  int32_t job;          // index into the simulator's job table; -1 for Replan
  uint32_t generation;  // must match the job's current generation to take effect
};

class EventQueue {
 public:
  void push(util::Time time, EventKind kind, int32_t job, uint32_t generation) {
    heap_.push({time, next_seq_++, kind, job, generation});
  }
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  size_t size() const { return heap_.size(); }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace trainyard::sim
