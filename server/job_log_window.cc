// Where GET /api/v1/jobs/{id}/logs?sinceSeconds=|sinceTime=|tailLines= starts reading: the
// offset of the first line that arrived since a time (exec/log_times.h) and/or of the last N
// lines, as Kubernetes' pod log options. Following goes on from there with `offset`.
#include <fmt/format.h>

#include "exec/log_times.h"
#include "server/control_plane.h"

namespace trainyard::server {

util::Result<int64_t> ControlPlane::job_log_start(util::JobId id, int attempt, int rank,
                                                  const LogWindow& window, const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, id, rec.team));
  if (attempt <= 0) {
    attempt = rec.attempt;
    if (rec.state == model::JobState::Pending && attempt > 1) attempt -= 1;  // latest that ran
  }
  if (attempt > rec.attempt) return int64_t{0};  // job_log() says there is no such attempt
  const auto log = run_dir(id, attempt, rank) / exec::kLogFile;
  std::optional<util::Time> from = window.since_time;
  if (window.since_seconds >= 0) from = clock_.now() - util::seconds(window.since_seconds);
  int64_t start = 0;
  if (from) {
    auto since = exec::log_offset_since(log, *from);
    if (!since.is_ok())
      return util::Status(since.status().code(),
                          fmt::format("job {} attempt {} rank {}: {}", id.value(), attempt, rank,
                                      since.status().message()));
    start = *since;
  }
  if (window.tail_lines >= 0) start = exec::log_offset_of_tail(log, start, window.tail_lines);
  return start;
}

}  // namespace trainyard::server
