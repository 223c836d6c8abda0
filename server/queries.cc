// ControlPlane's read-only API calls. Jobs that have not ended are answered from memory (which
// also knows why a pending job waits); ended ones from the read-only store connection.
#include <fstream>

#include "exec/checkpoint_reader.h"

#include <fmt/format.h>

#include "server/control_plane.h"
#include "server/job_arrays.h"
#include "server/job_list_query.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

nlohmann::json time_or_null(util::Time t) {
  if (t == util::kEpoch) return nullptr;
  return util::format_time_ms(t);
}

nlohmann::json parse_or_empty(const std::string& text) {
  if (text.empty()) return nlohmann::json::array();
  return nlohmann::json::parse(text, nullptr, false);
}

constexpr const char* kStopNames[] = {"", "preempt", "cancel", "deadline", "failure"};

}  // namespace

util::Result<store::JobRecord> ControlPlane::load_record(util::JobId id) {
  {
    util::MutexLock lock(mu_);
    if (auto it = active_.find(id); it != active_.end()) return it->second.rec;
  }
  util::MutexLock lock(reader_mu_);
  TY_ASSIGN_OR_RETURN(auto rec, reader_->get_job(id));
  if (!rec) return util::not_found(fmt::format("job {} does not exist", id.value()));
  return *rec;
}

nlohmann::json ControlPlane::job_json(const ActiveJob* active, const store::JobRecord& rec) const {
  nlohmann::json j = {{"id", rec.id.value()},
                      {"name", rec.name},
                      {"team", rec.team},
                      {"state", model::job_state_name(rec.state)},
                      {"attempt", rec.attempt},
                      {"priority", rec.priority},
                      {"failures", rec.failures},
                      {"submitted", time_or_null(rec.submitted)},
                      {"started", time_or_null(rec.started)},
                      {"finished", time_or_null(rec.finished)},
                      {"updated", time_or_null(rec.updated)},
                      {"reason", rec.reason},
                      {"attainedGpuSeconds", util::to_seconds(rec.attained_gpu_time)},
                      {"placement", parse_or_empty(rec.placement_json)}};
  const auto manifest = nlohmann::json::parse(rec.manifest_json, nullptr, false);
  if (!manifest.is_discarded()) {
    const auto& limits = manifest["spec"]["template"]["resources"]["limits"];
    j["workers"] = manifest["spec"].value("workers", 1);
    j["resources"] = limits;
    const auto meta = manifest.value("metadata", nlohmann::json::object());
    j["labels"] = meta.is_object() ? meta.value("labels", nlohmann::json::object())
                                   : nlohmann::json::object();
  }
  add_job_controls(j, rec);
  if (active != nullptr) {
    if (rec.state == model::JobState::Pending) j["waiting"] = active->wait_reason;
    if (!active->measured_speed.empty()) {
      nlohmann::json pace = nlohmann::json::object();
      for (const auto& [workers, steps] : active->measured_speed)
        pace[std::to_string(workers)] = steps;
      j["measuredStepsPerSecond"] = pace;  // per worker count: what goodput sizes it by
    }
    add_start_estimate(j, *active);
    if (active->stop != StopCause::None) j["stopping"] = kStopNames[static_cast<int>(active->stop)];
  }
  return j;
}

util::Result<nlohmann::json> ControlPlane::get_job(util::JobId id, const Principal& who) {
  nlohmann::json j;
  store::JobRecord rec;
  {
    util::MutexLock lock(mu_);
    auto it = active_.find(id);
    if (it != active_.end()) {
      rec = it->second.rec;
      j = job_json(&it->second, rec);
    }
  }
  if (j.is_null()) {
    TY_ASSIGN_OR_RETURN(rec, load_record(id));
    j = job_json(nullptr, rec);
  }
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  j["spec"] = nlohmann::json::parse(rec.manifest_json, nullptr, false);
  add_progress(j, rec, checkpoint_dir_of(rec));
  add_step_progress(j);
  // How the job used its GPUs over its life; the full series is GET .../telemetry.
  if (auto series = job_series(id); series.is_ok()) {
    nlohmann::json u = utilization_summary(*series);
    if (u["samples"].get<int64_t>() > 0) j["utilization"] = std::move(u);
  }
  util::MutexLock lock(reader_mu_);
  TY_ASSIGN_OR_RETURN(auto attempts, reader_->attempts(id));
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& a : attempts) {
    arr.push_back({{"attempt", a.attempt},
                   {"started", time_or_null(a.started)},
                   {"ended", time_or_null(a.ended)},
                   {"outcome", a.outcome},
                   {"exitCode", a.exit_code},
                   {"placement", parse_or_empty(a.placement_json)},
                   {"processes", parse_or_empty(a.processes_json)}});
  }
  j["attempts"] = std::move(arr);
  return j;
}

// What the job reported (last metrics line of rank 0) and its newest loadable checkpoint
// (sizes checked, not hashes: `show` must stay cheap), and the steps between them: the work a
// preemption now would lose.
void ControlPlane::add_progress(nlohmann::json& j, const store::JobRecord& rec,
                                const std::string& checkpoint) const {
  int attempt = rec.attempt;
  if (rec.state == model::JobState::Pending && attempt > 1) attempt -= 1;
  // The job controls these files: read them with its own permissions, never root's.
  const auto identity = file_identity(rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  if (!as_job.ok()) return;
  const auto metrics = exec::read_metrics_tail(run_dir(rec.id, attempt, 0) / exec::kMetricsFile);
  if (metrics) {
    j["metrics"] = {{"attempt", attempt}, {"lines", metrics->lines}, {"last", metrics->last}};
    if (!metrics->tuned.is_null()) j["metrics"]["tuned"] = metrics->tuned;
  }
  for (const auto& c : exec::list_checkpoints(checkpoint, {.check_hashes = false})) {
    if (!c.verified) continue;
    j["checkpoint"] = {{"step", c.step}, {"bytes", c.bytes}, {"created", c.created}};
    // Metrics are buffered by the job, so the last report may predate the checkpoint.
    if (metrics && metrics->last.contains("step") && metrics->last["step"].is_number_integer())
      j["stepsSinceCheckpoint"] =
          std::max<int64_t>(0, metrics->last["step"].get<int64_t>() - c.step);
    break;
  }
}

util::Result<nlohmann::json> ControlPlane::job_checkpoints(util::JobId id, const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  const std::string dir = checkpoint_dir_of(rec);
  nlohmann::json items = nlohmann::json::array();
  const auto identity = file_identity(rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  if (!as_job.ok())
    return util::unavailable("cannot read the job's checkpoints with its own permissions");
  for (const auto& c : exec::list_checkpoints(dir)) {
    items.push_back({{"step", c.step},
                     {"path", c.path},
                     {"bytes", c.bytes},
                     {"created", c.created},
                     {"verified", c.verified},
                     {"problem", c.problem}});
  }
  return nlohmann::json{{"dir", dir}, {"items", std::move(items)}};
}

util::Result<nlohmann::json> ControlPlane::list_jobs(store::JobFilter filter, const Principal& who,
                                                     bool with_total) {
  if (!who.admin) {
    if (!filter.team.empty() && filter.team != who.team)
      return util::Status(util::StatusCode::PermissionDenied,
                          fmt::format("your token is for team '{}'", who.team));
    filter.team = who.team;
  }
  // One row more than the page tells whether another page follows (ahead of it, backward).
  const int want = std::min(filter.limit, 10000);
  store::JobFilter probe = filter;
  probe.limit = want + 1;
  std::vector<store::JobRecord> recs;
  int64_t total = 0;
  {
    util::MutexLock lock(reader_mu_);
    TY_ASSIGN_OR_RETURN(recs, reader_->list_jobs(probe));
    if (with_total) {
      TY_ASSIGN_OR_RETURN(total, reader_->count_jobs(filter));
    }
  }
  const bool more = static_cast<int>(recs.size()) > want;
  if (more) {
    if (filter.backward)
      recs.erase(recs.begin());
    else
      recs.pop_back();
  }
  nlohmann::json items = nlohmann::json::array();
  // Rows read above as unfinished whose jobs have left memory since: a cycle ended them after
  // the read (and committed that before it let go of the lock), so the row is stale.
  std::vector<std::pair<size_t, util::JobId>> stale;
  util::UniqueLock lock(mu_);
  for (const auto& r : recs) {
    auto it = active_.find(r.id);
    // Memory may be a moment ahead of the store (a commit in flight); show the newer one.
    if (it == active_.end() && !model::is_terminal(r.state)) stale.emplace_back(items.size(), r.id);
    items.push_back(it != active_.end() ? job_json(&it->second, it->second.rec)
                                        : job_json(nullptr, r));
  }
  lock.unlock();  // progress may read metrics files
  for (const auto& [index, id] : stale) {
    // Otherwise a list could show a task that ended next to the one that took its place.
    if (auto fresh = load_record(id); fresh.is_ok()) items[index] = job_json(nullptr, *fresh);
  }
  for (auto& item : items) add_step_progress(item);
  // Rows after the page: more of them (forward) or the cursor's own row (backward); rows ahead
  // of it: the cursor's row (forward) or more of them (backward).
  const bool after = filter.backward ? filter.before > 0 : more;
  const bool ahead = filter.backward ? more : filter.before > 0;
  nlohmann::json out = {{"items", std::move(items)}, {"hasMore", after}};
  if (with_total) out["total"] = total;
  const auto& got = out["items"];
  if (!got.empty()) {
    if (after) out["nextCursor"] = job_cursor(true, filter, got.back());
    if (ahead) out["prevCursor"] = job_cursor(false, filter, got.front());
    if (after && filter.sort == store::JobSort::Id && !filter.ascending)
      out["nextBefore"] = got.back()["id"];
  }
  return out;
}

util::Result<nlohmann::json> ControlPlane::job_events(util::JobId id, int64_t after_seq,
                                                      const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  util::MutexLock lock(reader_mu_);
  TY_ASSIGN_OR_RETURN(auto events, reader_->events(id, after_seq, 10000));
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& e : events) {
    arr.push_back({{"seq", e.seq},
                   {"time", util::format_time_ms(e.at)},
                   {"type", e.type},
                   {"from", e.from_state},
                   {"to", e.to_state},
                   {"attempt", e.attempt},
                   {"reason", e.reason}});
  }
  return nlohmann::json{{"items", std::move(arr)}};
}

util::Result<LogChunk> ControlPlane::job_log(util::JobId id, int attempt, int rank, int64_t offset,
                                             int64_t max_bytes, const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  if (rank < 0 || rank >= 1024) return util::invalid_argument("rank must be in 0..1023");
  if (attempt <= 0) {
    attempt = rec.attempt;
    if (rec.state == model::JobState::Pending && attempt > 1) attempt -= 1;  // latest that ran
  }
  if (attempt > rec.attempt)
    return util::not_found(
        fmt::format("job {} has no attempt {} (latest is {})", id.value(), attempt, rec.attempt));
  const bool ended = attempt < rec.attempt || model::is_terminal(rec.state);
  LogChunk chunk{.next_offset = offset};
  std::ifstream in(run_dir(id, attempt, rank) / exec::kLogFile, std::ios::binary);
  if (!in) {
    chunk.complete = ended;
    return chunk;
  }
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  if (offset < size) {
    const int64_t n = std::min(max_bytes, size - offset);
    chunk.data.resize(static_cast<size_t>(n));
    in.seekg(offset);
    in.read(chunk.data.data(), n);
    chunk.next_offset = offset + n;
  }
  chunk.complete = ended && chunk.next_offset >= size;
  return chunk;
}

}  // namespace trainyard::server
