// The `progress` object of the job list and detail (docs/api.md): a running job's step,
// throughput and ETA from its metrics file, through ProgressCache.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <string>

#include "exec/checkpoint_reader.h"
#include "exec/executor.h"
#include "server/control_plane.h"
#include "server/progress_cache.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

// Reads the last `max_bytes` of an open file; sets `from_start` when that is the whole file.
std::optional<std::string> read_tail(int fd, int64_t size, int64_t max_bytes, bool& from_start) {
  const int64_t offset = std::max<int64_t>(0, size - max_bytes);
  from_start = offset == 0;
  std::string text(static_cast<size_t>(size - offset), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + done, text.size() - done,
                              static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;  // truncated meanwhile
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return text;
}

bool shows_progress(model::JobState state) {
  return state == model::JobState::Running || state == model::JobState::Preempting;
}

}  // namespace

std::optional<telemetry::StepProgress> ProgressCache::get(int64_t job,
                                                          const std::filesystem::path& file) {
  // A job controls this path: no link in the last place, and a FIFO must not block us.
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  const int64_t size = st.st_size;
  const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  {
    util::MutexLock lock(mu_);
    auto it = entries_.find(job);
    if (it != entries_.end() && it->second.file == file && it->second.size == size &&
        it->second.mtime_ns == mtime_ns) {
      ::close(fd);
      return it->second.progress;
    }
  }
  bool from_start = false;
  const auto text = read_tail(fd, size, kTailBytes, from_start);
  ::close(fd);
  if (!text) return std::nullopt;
  const auto lines = telemetry::parse_metrics_tail(*text, from_start);
  auto progress = telemetry::step_progress(lines);
  util::MutexLock lock(mu_);
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_[job] = Entry{.file = file, .size = size, .mtime_ns = mtime_ns, .progress = progress};
  return progress;
}

std::optional<model::JobProgressView> ControlPlane::progress_view(int64_t id, int attempt,
                                                                  const std::string& team) {
  const auto identity = file_identity(team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  if (!as_job.ok()) return std::nullopt;
  const auto file = run_dir(util::JobId(id), attempt, 0) / exec::kMetricsFile;
  const auto p = progress_->get(id, file);
  if (!p) return std::nullopt;
  const auto finite = [](const std::optional<double>& v) {
    return v && std::isfinite(*v) ? v : std::nullopt;
  };
  model::JobProgressView out{.attempt = attempt,
                             .step = p->step,
                             .total_steps = p->total_steps,
                             .fraction = finite(p->fraction()),
                             .steps_per_second = finite(p->steps_per_s),
                             .samples_per_second = finite(p->samples_per_s),
                             .reported = util::format_time_ms(p->reported)};
  if (p->eta_s) {
    // The estimate is as of the last report; counted down to now, not below zero.
    const util::Time finish =
        p->reported + std::chrono::milliseconds(std::llround(*p->eta_s * 1000));
    const int64_t left_ms = util::to_millis(finish) - util::to_millis(clock_.now());
    out.eta_seconds = std::max<int64_t>(0, (left_ms + 999) / 1000);
    out.finish_estimate = util::format_time_ms(finish);
  }
  return out;
}

void ControlPlane::add_step_progress(model::JobView& job) {
  if (!shows_progress(job.state)) return;
  job.progress = progress_view(job.id, job.attempt, job.team);
}

}  // namespace trainyard::server
