// The progress of running jobs (telemetry/step_progress.h) for the job list and detail, read
// from the tail of rank 0's metrics file and kept per job until the file's size or modification
// time changes, so that `trainyard ls` costs one fstat per running job while nothing new was
// written, and never more than one bounded read of the newest bytes when something was.
// Thread-safe (its own mutex; callers need not hold the control plane's lock, and should not).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>

#include "telemetry/step_progress.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

class ProgressCache {
 public:
  // How much of the end of a metrics file is read: a few hundred lines, enough for the rates.
  static constexpr int64_t kTailBytes = 64 << 10;
  // Entries kept at most; the whole cache is dropped beyond (cheap to refill, never stale).
  static constexpr size_t kMaxEntries = 4096;

  // The progress in `file` (job `job`'s current metrics file); nullopt when it is missing, not a
  // regular file, or holds no step. The caller has taken on the job's file identity.
  std::optional<telemetry::StepProgress> get(int64_t job, const std::filesystem::path& file)
      TY_EXCLUDES(mu_);

 private:
  struct Entry {
    std::filesystem::path file;
    int64_t size = -1;
    int64_t mtime_ns = -1;
    std::optional<telemetry::StepProgress> progress;
  };
  util::Mutex mu_;
  std::map<int64_t, Entry> entries_ TY_GUARDED_BY(mu_);  // by job id
};

}  // namespace trainyard::server
