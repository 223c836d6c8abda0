// ControlPlane's read-only API calls. Jobs that have not ended are answered from memory (which
// also knows why a pending job waits); ended ones from the read-only store connection.
#include <fstream>

#include "exec/checkpoint_reader.h"

#include <fmt/format.h>

#include "model/api_job_health_views.h"
#include "server/control_plane.h"
#include "server/job_arrays.h"
#include "server/job_list_query.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

std::optional<std::string> time_or_null(util::Time t) {
  if (t == util::kEpoch) return std::nullopt;
  return util::format_time_ms(t);
}

nlohmann::json parse_or_empty(const std::string& text) {
  if (text.empty()) return nlohmann::json::array();
  return nlohmann::json::parse(text, nullptr, false);
}

// A stored placement (the server's own writing, launch.cc); empty when it does not read.
std::vector<model::PlacementView> placement_of(const std::string& text) {
  std::vector<model::PlacementView> out;
  if (text.empty()) return out;
  if (!model::from_json(nlohmann::json::parse(text, nullptr, false), out).is_ok()) out.clear();
  return out;
}

// The request of a job that is no longer in memory, from its stored canonical spec; nullopt
// when that does not read (the job object then has no workers, resources or labels).
std::optional<model::JobRequestView> stored_request(const std::string& manifest_json) {
  const auto manifest = nlohmann::json::parse(manifest_json, nullptr, false);
  if (!manifest.is_object()) return std::nullopt;
  const auto& spec = manifest.value("spec", nlohmann::json::object());
  const auto& meta = manifest.value("metadata", nlohmann::json::object());
  model::JobRequestView out;
  if (!spec.is_object() || !meta.is_object()) return std::nullopt;
  const auto workers = spec.find("workers");
  if (workers != spec.end() && !workers->is_number_integer()) return std::nullopt;
  out.workers = workers == spec.end() ? 1 : workers->get<int>();
  const auto tmpl = spec.find("template");
  if (tmpl == spec.end() || !tmpl->is_object()) return std::nullopt;
  const auto& limits = tmpl->value("resources", nlohmann::json::object());
  if (!limits.is_object() || !limits.contains("limits") ||
      !model::from_json(limits["limits"], out.resources).is_ok())
    return std::nullopt;
  if (const auto labels = meta.find("labels"); labels != meta.end() && labels->is_object()) {
    for (const auto& [k, v] : labels->items())
      if (v.is_string()) out.labels[k] = v.get<std::string>();
  }
  return out;
}

// What a job asks for: the parsed spec of a job in memory; the stored one otherwise (and for a
// job whose stored spec recovery could not parse).
std::optional<model::JobRequestView> request_of(const ActiveJob* active,
                                                const store::JobRecord& rec) {
  if (active == nullptr || !active->unreadable_spec.empty())
    return stored_request(rec.manifest_json);
  const model::JobManifest& m = active->manifest;
  return model::JobRequestView{
      .workers = m.spec.workers, .resources = m.spec.worker, .labels = m.labels};
}

constexpr const char* kStopNames[] = {"", "preempt", "cancel", "deadline", "failure"};

// A team token lists its own team's jobs only: the filter gets its team, and another team's is
// refused.
util::Status scope_to_team(store::JobFilter& filter, const Principal& who) {
  if (who.admin) return util::Status::ok();
  if (!filter.team.empty() && filter.team != who.team)
    return util::Status(util::StatusCode::PermissionDenied,
                        fmt::format("your token is for team '{}'", who.team));
  filter.team = who.team;
  return util::Status::ok();
}

// Removes the row read beyond a page of `want` (the first one when paging backward); whether
// there was one.
bool drop_probe_row(std::vector<store::JobRecord>& recs, int want, bool backward) {
  const bool more = static_cast<int>(recs.size()) > want;
  if (more) {
    if (backward)
      recs.erase(recs.begin());
    else
      recs.pop_back();
  }
  return more;
}

// hasMore and the cursors of a page; `more`: a row beyond the page was read.
void add_page_links(model::JobListView& out, const store::JobFilter& filter, bool more) {
  // Rows after the page: more of them (forward) or the cursor's own row (backward); rows ahead
  // of it: the cursor's row (forward) or more of them (backward).
  const bool after = filter.backward ? filter.before > 0 : more;
  const bool ahead = filter.backward ? more : filter.before > 0;
  out.has_more = after;
  if (!out.items.empty()) {
    if (after) out.next_cursor = job_cursor(true, filter, out.items.back());
    if (ahead) out.prev_cursor = job_cursor(false, filter, out.items.front());
    if (after && filter.sort == store::JobSort::Id && !filter.ascending)
      out.next_before = out.items.back().id;
  }
}

}  // namespace

util::Result<store::JobRecord> ControlPlane::load_record(util::JobId id) {
  {
    util::MutexLock lock(mu_);
    if (const ActiveJob* job = jobs_.find(id)) return job->rec;
  }
  util::MutexLock lock(reader_mu_);
  TY_ASSIGN_OR_RETURN(auto rec, reader_->get_job(id));
  if (!rec) return util::not_found(fmt::format("job {} does not exist", id.value()));
  return *rec;
}

model::JobView ControlPlane::job_view(const ActiveJob* active, const store::JobRecord& rec) const {
  model::JobView v{.id = rec.id.value(),
                   .name = rec.name,
                   .team = rec.team,
                   .state = rec.state,
                   .attempt = rec.attempt,
                   .priority = rec.priority,
                   .failures = rec.failures,
                   .submitted = time_or_null(rec.submitted),
                   .started = time_or_null(rec.started),
                   .finished = time_or_null(rec.finished),
                   .updated = time_or_null(rec.updated),
                   .reason = rec.reason,
                   .attained_gpu_seconds = util::to_seconds(rec.attained_gpu_time),
                   .placement = placement_of(rec.placement_json),
                   .request = request_of(active, rec)};
  add_job_controls(v, rec);
  if (active != nullptr) {
    if (rec.state == model::JobState::Pending) v.waiting = active->wait_reason;
    // Per worker count: what goodput sizes the job by.
    v.measured_steps_per_second = active->measured_speed;
    v.start_estimate = start_estimate_view(*active);
    if (active->stop != StopCause::None) v.stopping = kStopNames[static_cast<int>(active->stop)];
  }
  return v;
}

util::Result<nlohmann::json> ControlPlane::get_job(util::JobId id, const Principal& who) {
  std::optional<model::JobView> job;
  store::JobRecord rec;
  {
    util::MutexLock lock(mu_);
    if (const ActiveJob* active = jobs_.find(id)) {
      rec = active->rec;
      job = job_view(active, rec);
    }
  }
  if (!job) {
    TY_ASSIGN_OR_RETURN(rec, load_record(id));
    job = job_view(nullptr, rec);
  }
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  model::JobDetailView d{.job = std::move(*job),
                         .spec = nlohmann::json::parse(rec.manifest_json, nullptr, false)};
  add_progress(d, rec, checkpoint_dir_of(rec));
  add_step_progress(d.job);
  // How the job used its GPUs over its life; the full series is GET .../telemetry.
  if (auto series = job_series(id); series.is_ok()) {
    model::UtilizationView u = utilization_summary(*series);
    if (u.samples > 0) d.utilization = std::move(u);
  }
  util::MutexLock lock(reader_mu_);
  TY_ASSIGN_OR_RETURN(auto attempts, reader_->attempts(id));
  for (const auto& a : attempts) {
    d.attempts.push_back({.attempt = a.attempt,
                          .started = time_or_null(a.started),
                          .ended = time_or_null(a.ended),
                          .outcome = a.outcome,
                          .exit_code = a.exit_code,
                          .placement = placement_of(a.placement_json),
                          .processes = parse_or_empty(a.processes_json)});
  }
  return model::to_json(d);
}

// What the job reported (last metrics line of rank 0) and its newest loadable checkpoint
// (sizes checked, not hashes: `show` must stay cheap), and the steps between them: the work a
// preemption now would lose.
void ControlPlane::add_progress(model::JobDetailView& d, const store::JobRecord& rec,
                                const std::string& checkpoint) const {
  int attempt = rec.attempt;
  if (rec.state == model::JobState::Pending && attempt > 1) attempt -= 1;
  // The job controls these files: read them with its own permissions, never root's.
  const auto identity = file_identity(rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  if (!as_job.ok()) return;
  const auto metrics = exec::read_metrics_tail(run_dir(rec.id, attempt, 0) / exec::kMetricsFile);
  if (metrics) {
    d.metrics = model::JobMetricsView{.attempt = attempt,
                                      .lines = metrics->lines,
                                      .last = metrics->last,
                                      .tuned = metrics->tuned};
  }
  for (const auto& c : exec::list_checkpoints(checkpoint, {.check_hashes = false})) {
    if (!c.verified) continue;
    d.checkpoint =
        model::CheckpointSummaryView{.step = c.step, .bytes = c.bytes, .created = c.created};
    // Metrics are buffered by the job, so the last report may predate the checkpoint.
    if (metrics && metrics->last.contains("step") && metrics->last["step"].is_number_integer())
      d.steps_since_checkpoint =
          std::max<int64_t>(0, metrics->last["step"].get<int64_t>() - c.step);
    break;
  }
}

util::Result<nlohmann::json> ControlPlane::job_checkpoints(util::JobId id, const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  const std::string dir = checkpoint_dir_of(rec);
  model::CheckpointListView out{.dir = dir};
  const auto identity = file_identity(rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  if (!as_job.ok())
    return util::unavailable("cannot read the job's checkpoints with its own permissions");
  for (const auto& c : exec::list_checkpoints(dir)) {
    out.items.push_back({.step = c.step,
                         .path = c.path,
                         .bytes = c.bytes,
                         .created = c.created,
                         .verified = c.verified,
                         .problem = c.problem});
  }
  return model::to_json(out);
}

util::Result<nlohmann::json> ControlPlane::list_jobs(store::JobFilter filter, const Principal& who,
                                                     bool with_total) {
  TY_ASSIGN_OR_RETURN(model::JobListView page, list_page(std::move(filter), who, with_total));
  return model::to_json(page);
}

util::Result<model::JobListView> ControlPlane::list_page(store::JobFilter filter,
                                                         const Principal& who, bool with_total) {
  TY_RETURN_IF_ERROR(scope_to_team(filter, who));
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
  const bool more = drop_probe_row(recs, want, filter.backward);
  model::JobListView out;
  // Rows read above as unfinished whose jobs have left memory since: a cycle ended them after
  // the read (and committed that before it let go of the lock), so the row is stale.
  std::vector<std::pair<size_t, util::JobId>> stale;
  util::UniqueLock lock(mu_);
  for (const auto& r : recs) {
    const ActiveJob* active = jobs_.find(r.id);
    // Memory may be a moment ahead of the store (a commit in flight); show the newer one.
    if (active == nullptr && !model::is_terminal(r.state))
      stale.emplace_back(out.items.size(), r.id);
    out.items.push_back(active ? job_view(active, active->rec) : job_view(nullptr, r));
  }
  lock.unlock();  // progress may read metrics files
  for (const auto& [index, id] : stale) {
    // Otherwise a list could show a task that ended next to the one that took its place.
    if (auto fresh = load_record(id); fresh.is_ok()) out.items[index] = job_view(nullptr, *fresh);
  }
  for (auto& item : out.items) add_step_progress(item);
  if (with_total) out.total = total;
  add_page_links(out, filter, more);
  return out;
}

util::Result<nlohmann::json> ControlPlane::job_events(util::JobId id, int64_t after_seq,
                                                      const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, rec.id, rec.team));
  util::MutexLock lock(reader_mu_);
  TY_ASSIGN_OR_RETURN(auto events, reader_->events(id, after_seq, 10000));
  model::JobEventListView out;
  for (const auto& e : events) {
    out.items.push_back({.seq = e.seq,
                         .time = util::format_time_ms(e.at),
                         .type = e.type,
                         .from = e.from_state,
                         .to = e.to_state,
                         .attempt = e.attempt,
                         .reason = e.reason});
  }
  return model::to_json(out);
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
