#include "server/group_commit.h"
#include "util/thread_annotations.h"

#include <vector>

namespace trainyard::server {

util::Status GroupCommitter::commit(std::function<util::Status(store::Store&)> write) {
  Writer self{std::move(write), util::Status::ok(), false};
  util::UniqueLock lock(mu_);
  queue_.push_back(&self);
  while (!self.done && queue_.front() != &self) lock.wait(cv_);
  if (self.done) return self.result;

  // Leader: take everything queued so far (up to kMaxBatch), commit it without the lock.
  std::deque<Writer*> batch;
  for (auto it = queue_.begin(); it != queue_.end() && batch.size() < kMaxBatch; ++it)
    batch.push_back(*it);
  lock.unlock();
  run_batch(batch);
  lock.lock();
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]->done = true;
    queue_.pop_front();
  }
  cv_.notify_all();
  return self.result;
}

void GroupCommitter::run_batch(std::deque<Writer*>& batch) {
  std::vector<Writer*> failed;
  util::Status st = store_.transaction([&]() -> util::Status {
    for (Writer* w : batch) {
      w->result = w->write(store_);
      if (!w->result.is_ok()) return w->result;
    }
    return util::Status::ok();
  });
  if (st.is_ok()) return;
  // Something failed and the whole transaction rolled back: commit each write on its own, so
  // only the failing one reports an error.
  for (Writer* w : batch) {
    w->result = store_.transaction([&] { return w->write(store_); });
  }
}

}  // namespace trainyard::server
