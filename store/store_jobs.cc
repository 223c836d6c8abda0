// Store's job rows: insert, update and the listings the API and the reconcile loop read.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "store/internal/sqlite_stmt.h"
#include "store/internal/store_impl.h"
#include "store/store.h"

namespace trainyard::store {
namespace {

using internal::Query;
using internal::time_from_us;
using internal::to_us;

constexpr const char* kJobColumns =
    "id, name, team, state, attempt, priority, manifest_json, submitted_us, updated_us, "
    "queued_since_us, started_us, finished_us, not_before_us, failures, attained_gpu_us, reason, "
    "placement_json, held, array_job_id, array_index, array_limit";

constexpr const char* kInsertJob =
    "INSERT INTO jobs (name, team, state, attempt, priority, manifest_json, submitted_us, "
    "updated_us, queued_since_us, started_us, finished_us, not_before_us, failures, "
    "attained_gpu_us, reason, placement_json, held, array_job_id, array_index, array_limit) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

constexpr const char* kUpdateJob =
    "UPDATE jobs SET name = ?, team = ?, state = ?, attempt = ?, priority = ?, manifest_json = ?, "
    "submitted_us = ?, updated_us = ?, queued_since_us = ?, started_us = ?, finished_us = ?, "
    "not_before_us = ?, failures = ?, attained_gpu_us = ?, reason = ?, placement_json = ?, "
    "held = ?, array_job_id = ?, array_index = ?, array_limit = ? WHERE id = ?";

// Binds every column but id, in kInsertJob's order.
void bind_job_fields(Query& q, const JobRecord& job) {
  q.bind(job.name).bind(job.team).bind(model::job_state_name(job.state));
  q.bind(job.attempt).bind(job.priority).bind(job.manifest_json);
  q.bind(to_us(job.submitted)).bind(to_us(job.updated)).bind(to_us(job.queued_since));
  q.bind(to_us(job.started)).bind(to_us(job.finished)).bind(to_us(job.not_before));
  q.bind(job.failures).bind(to_us(job.attained_gpu_time)).bind(job.reason);
  q.bind(job.placement_json);
  q.bind(job.held ? 1 : 0).bind(job.array_job_id.value()).bind(job.array_index);
  q.bind(job.array_limit);
}

// Reads a row selected with kJobColumns.
util::Result<JobRecord> read_job(const Query& q) {
  JobRecord job;
  job.id = util::JobId(q.int64(0));
  job.name = q.text(1);
  job.team = q.text(2);
  std::string state = q.text(3);
  util::Result<model::JobState> parsed = model::parse_job_state(state);
  if (!parsed.is_ok()) {
    return util::internal_error(
        fmt::format("job {} has unknown state '{}' in the store", job.id.value(), state));
  }
  job.state = *parsed;
  job.attempt = q.int32(4);
  job.priority = q.int32(5);
  job.manifest_json = q.text(6);
  job.submitted = time_from_us(q.int64(7));
  job.updated = time_from_us(q.int64(8));
  job.queued_since = time_from_us(q.int64(9));
  job.started = time_from_us(q.int64(10));
  job.finished = time_from_us(q.int64(11));
  job.not_before = time_from_us(q.int64(12));
  job.failures = q.int32(13);
  job.attained_gpu_time = util::Duration(q.int64(14));
  job.reason = q.text(15);
  job.placement_json = q.text(16);
  job.held = q.int32(17) != 0;
  job.array_job_id = util::JobId(q.int64(18));
  job.array_index = q.int32(19);
  job.array_limit = q.int32(20);
  return job;
}

util::Result<std::vector<JobRecord>> read_jobs(Query& q) {
  std::vector<JobRecord> jobs;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.next());
    if (!row) return jobs;
    TY_ASSIGN_OR_RETURN(JobRecord job, read_job(q));
    jobs.push_back(std::move(job));
  }
}

util::Result<std::optional<JobRecord>> read_optional_job(Query& q) {
  TY_ASSIGN_OR_RETURN(bool row, q.next());
  if (!row) return std::optional<JobRecord>();
  TY_ASSIGN_OR_RETURN(JobRecord job, read_job(q));
  return std::optional<JobRecord>(std::move(job));
}

const char* sort_column(JobSort sort) {
  switch (sort) {
    case JobSort::Name:
      return "name";
    case JobSort::State:
      return "state";
    case JobSort::Team:
      return "team";
    case JobSort::Id:
      break;
  }
  return "id";
}

// The listing walks rows in descending order: newest first, or a descending sort, or an
// ascending one read backward.
bool walks_down(const JobFilter& filter) {
  return filter.ascending == filter.backward;
}

// The text `placement_json` holds for a worker on `node` (placements are compact JSON arrays of
// objects with a "node" key, written by nlohmann::json::dump: no spaces, strings escaped).
std::string node_needle(const std::string& node) {
  std::string out = "\"node\":\"";
  for (char c : node) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + '"';
}

// " WHERE ..." for a filter; parameters are bound by bind_filter in the same order. The SQL
// differs per combination of filters so that each statement can use its index.
std::string filter_where(const JobFilter& filter, bool paged) {
  std::vector<std::string> conditions;
  if (filter.state) conditions.emplace_back("state = ?");
  if (!filter.team.empty()) conditions.emplace_back("team = ?");
  if (!filter.name.empty()) conditions.emplace_back("name = ?");
  if (filter.array_job_id > 0) conditions.emplace_back("array_job_id = ?");
  if (!filter.node.empty()) conditions.emplace_back("instr(placement_json, ?) > 0");
  if (paged && filter.before > 0) {
    const char* op = walks_down(filter) ? "<" : ">";
    if (filter.sort == JobSort::Id)
      conditions.push_back(fmt::format("id {} ?", op));
    else  // a row value, which SQLite compares with the (column, id) index
      conditions.push_back(fmt::format("({}, id) {} (?, ?)", sort_column(filter.sort), op));
  }
  if (conditions.empty()) return "";
  return fmt::format(" WHERE {}", fmt::join(conditions, " AND "));
}

void bind_filter(Query& q, const JobFilter& filter, bool paged) {
  if (filter.state) q.bind(model::job_state_name(*filter.state));
  if (!filter.team.empty()) q.bind(filter.team);
  if (!filter.name.empty()) q.bind(filter.name);
  if (filter.array_job_id > 0) q.bind(filter.array_job_id);
  if (!filter.node.empty()) q.bind(node_needle(filter.node));
  if (paged && filter.before > 0) {
    if (filter.sort != JobSort::Id) q.bind(filter.before_key);
    q.bind(filter.before);
  }
}

std::string order_by(const JobFilter& filter) {
  const char* dir = walks_down(filter) ? "DESC" : "ASC";
  if (filter.sort == JobSort::Id) return fmt::format(" ORDER BY id {}", dir);
  return fmt::format(" ORDER BY {} {}, id {}", sort_column(filter.sort), dir, dir);
}

// "SELECT ... WHERE state IN ('pending', ...)": the states a job can leave, listed from the
// model so that a new state cannot be forgotten here.
const std::string& active_jobs_sql() {
  static const std::string sql = [] {
    constexpr std::array kStates = {model::JobState::Pending,    model::JobState::Admitted,
                                    model::JobState::Placed,     model::JobState::Running,
                                    model::JobState::Preempting, model::JobState::Succeeded,
                                    model::JobState::Failed,     model::JobState::Cancelled};
    std::vector<std::string> active;
    for (model::JobState s : kStates) {
      if (!model::is_terminal(s)) active.push_back(fmt::format("'{}'", model::job_state_name(s)));
    }
    return fmt::format("SELECT {} FROM jobs WHERE state IN ({}) ORDER BY id", kJobColumns,
                       fmt::join(active, ", "));
  }();
  return sql;
}

}  // namespace

util::Result<util::JobId> Store::insert_job(const JobRecord& job) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kInsertJob, "inserting a job"));
  bind_job_fields(q, job);
  TY_RETURN_IF_ERROR(q.run());
  return util::JobId(sqlite3_last_insert_rowid(impl_->db));
}

util::Status Store::update_job(const JobRecord& job) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kUpdateJob, "updating a job"));
  bind_job_fields(q, job);
  q.bind(job.id.value());
  TY_RETURN_IF_ERROR(q.run());
  if (sqlite3_changes(impl_->db) == 0) {
    return util::not_found(fmt::format("updating job {}: no such job", job.id.value()));
  }
  return util::Status::ok();
}

util::Result<std::optional<JobRecord>> Store::get_job(util::JobId id) {
  static const std::string sql = fmt::format("SELECT {} FROM jobs WHERE id = ?", kJobColumns);
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(sql, "reading a job"));
  q.bind(id.value());
  return read_optional_job(q);
}

util::Result<std::vector<JobRecord>> Store::list_jobs(const JobFilter& filter) {
  if (filter.limit < 1) {
    return util::invalid_argument(
        fmt::format("job list limit must be at least 1 (got {})", filter.limit));
  }
  std::string sql = fmt::format("SELECT {} FROM jobs{}{} LIMIT ?", kJobColumns,
                                filter_where(filter, /*paged=*/true), order_by(filter));
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(sql, "listing jobs"));
  bind_filter(q, filter, /*paged=*/true);
  q.bind(std::min(filter.limit, kMaxListLimit));
  TY_ASSIGN_OR_RETURN(auto jobs, read_jobs(q));
  if (filter.backward) std::reverse(jobs.begin(), jobs.end());
  return jobs;
}

util::Result<int64_t> Store::count_jobs(const JobFilter& filter) {
  std::string sql =
      fmt::format("SELECT COUNT(*) FROM jobs{}", filter_where(filter, /*paged=*/false));
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(sql, "counting jobs"));
  bind_filter(q, filter, /*paged=*/false);
  TY_ASSIGN_OR_RETURN(bool row, q.next());
  return row ? q.int64(0) : 0;
}

util::Result<std::vector<JobRecord>> Store::active_jobs() {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(active_jobs_sql(), "listing active jobs"));
  return read_jobs(q);
}

util::Result<std::optional<JobRecord>> Store::find_job_by_name(const std::string& team,
                                                               const std::string& name) {
  static const std::string any_team =
      fmt::format("SELECT {} FROM jobs WHERE name = ? ORDER BY id DESC LIMIT 1", kJobColumns);
  static const std::string one_team = fmt::format(
      "SELECT {} FROM jobs WHERE name = ? AND team = ? ORDER BY id DESC LIMIT 1", kJobColumns);
  TY_ASSIGN_OR_RETURN(Query q,
                      impl_->query(team.empty() ? any_team : one_team, "finding a job by name"));
  q.bind(name);
  if (!team.empty()) q.bind(team);
  return read_optional_job(q);
}

}  // namespace trainyard::store
