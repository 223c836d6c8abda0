// ControlPlane's job-changing API calls: submit and cancel. Both commit before they return.
// A submission with an idempotency key stores the key with its job in one transaction, so a
// client that retries after a lost reply gets the first job back instead of a second one.
#include <algorithm>
#include <charconv>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "model/names.h"
#include "server/control_plane.h"
#include "server/job_arrays.h"
#include "server/tx.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

bool parse_id(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out > 0;
}

// How long a key is remembered (Stripe keeps keys 24 hours too). Keys older than this are
// pruned by the next submission that carries a key, and never replayed even before that.
constexpr util::Duration kIdempotencyKeyLifetime = util::seconds(24 * 3600);
constexpr size_t kMaxIdempotencyKeyLength = 255;

// The key a client meant. The IETF draft sends an RFC 8941 string (in quotes, where a backslash
// escapes a quote or a backslash), Stripe's clients the bare text; both name the same key.
// Printable ASCII only.
util::Result<std::string> parse_idempotency_key(std::string_view raw) {
  while (!raw.empty() && (raw.front() == ' ' || raw.front() == '\t')) raw.remove_prefix(1);
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t')) raw.remove_suffix(1);
  std::string key;
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') {
    raw = raw.substr(1, raw.size() - 2);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '"') {
        return util::invalid_argument(
            "Idempotency-Key: a quoted key must escape '\"' as '\\\"' (RFC 8941 string)");
      }
      if (raw[i] == '\\') {
        if (i + 1 == raw.size() || (raw[i + 1] != '"' && raw[i + 1] != '\\'))
          return util::invalid_argument(
              "Idempotency-Key: in a quoted key a backslash may only escape '\"' or '\\' "
              "(RFC 8941 string)");
        ++i;
      }
      key += raw[i];
    }
  } else {
    key = std::string(raw);
  }
  if (key.empty() || key.size() > kMaxIdempotencyKeyLength)
    return util::invalid_argument(
        fmt::format("Idempotency-Key: a key must have 1 to {} characters, got {}; send a random "
                    "value such as a UUID or 32 hex digits",
                    kMaxIdempotencyKeyLength, key.size()));
  for (char c : key) {
    if (c < 0x20 || c > 0x7e)
      return util::invalid_argument(
          "Idempotency-Key: a key may hold printable ASCII characters only; send a random value "
          "such as a UUID or 32 hex digits");
  }
  return key;
}

// Keys of one team never meet another team's; admin tokens share a scope of their own.
std::string idempotency_scope(const Principal& who) {
  return who.admin ? std::string("admin") : "team:" + who.team;
}

// Puts a non-admin token's team on `m` (a spec without one) and refuses another team's.
util::Status check_team(model::JobManifest& m, const Principal& who) {
  if (who.admin) return util::Status::ok();
  if (m.spec.team == "default") m.spec.team = who.team;
  if (m.spec.team != who.team)
    return util::Status(util::StatusCode::PermissionDenied,
                        fmt::format("spec.team: a token of team '{}' cannot submit jobs for "
                                    "team '{}'",
                                    who.team, m.spec.team));
  // A token stored by an older version may carry a team the spec parser refuses; the stored
  // spec must read back, so such a token cannot submit.
  if (auto st = model::check_team_name(m.spec.team); !st.is_ok())
    return util::Status(util::StatusCode::PermissionDenied,
                        fmt::format("spec.team: this token's team is not valid ({}); ask an "
                                    "admin for a new token",
                                    st.message()));
  return util::Status::ok();
}

// The record of the key a client sent (the Idempotency-Key header), in the principal's scope
// and with the hash of the body it came with.
util::Result<store::IdempotencyKeyRecord> idempotency_key_record(std::string_view raw,
                                                                 std::string_view body,
                                                                 const Principal& who) {
  TY_ASSIGN_OR_RETURN(std::string k, parse_idempotency_key(raw));
  return store::IdempotencyKeyRecord{
      .scope = idempotency_scope(who), .key = std::move(k), .body_sha256 = hash_token(body)};
}

// A repeat must carry the same body as the key's first submission: one key must never stand
// for two different specs.
util::Status check_same_spec(const store::IdempotencyKeyRecord& first,
                             const store::IdempotencyKeyRecord& key) {
  if (first.body_sha256 == key.body_sha256) return util::Status::ok();
  return util::Status(
      util::StatusCode::AlreadyExists,
      fmt::format("Idempotency-Key '{}' was used for another job spec (it created job {}) "
                  "within the last 24 hours; send a new key with a new spec, or the first "
                  "spec unchanged to get job {} back",
                  first.key, first.job.value(), first.job.value()));
}

// A job as the API shows it now, with its record.
struct JobAsShown {
  store::JobRecord rec;
  model::JobView view;
};

// Job `id` from `active` (the control plane's jobs in memory, read under its mutex), which
// knows more of a job than the store (why it waits, its start estimate); nullopt when it is not
// there.
template <typename JobViewOf>
std::optional<JobAsShown> job_in_memory(const std::map<util::JobId, ActiveJob>& active,
                                        util::JobId id, const JobViewOf& job_view) {
  auto it = active.find(id);
  if (it == active.end()) return std::nullopt;
  const store::JobRecord& rec = it->second.rec;
  return JobAsShown{.rec = rec, .view = job_view(&it->second, rec)};
}

// The reply to a repeat: the job the key's first submission created, provided the principal
// may see it.
util::Result<nlohmann::json> replay_reply(const store::IdempotencyKeyRecord& first, JobAsShown job,
                                          const Principal& who) {
  if (!who.may_access_team(job.rec.team))
    return util::Status(util::StatusCode::PermissionDenied,
                        fmt::format("Idempotency-Key '{}' belongs to a job of team '{}'; your "
                                    "token is for team '{}'",
                                    first.key, job.rec.team, who.team));
  return model::to_json(
      model::SubmitReplyView{.job = std::move(job.view), .idempotent_replay = true});
}

// dependsOn as the stored manifest names it: by job id.
std::vector<std::string> id_strings(const std::vector<util::JobId>& ids) {
  std::vector<std::string> out;
  for (auto id : ids) out.push_back(std::to_string(id.value()));
  return out;
}

// The body of the submission's write transaction: the jobs and the key that names them. When a
// concurrent submission with the same key committed first, `winner` is its key and nothing is
// written.
util::Status insert_jobs_and_key(store::Store& s, std::vector<NewJob>& jobs,
                                 std::optional<store::IdempotencyKeyRecord>& key,
                                 std::optional<store::IdempotencyKeyRecord>& winner,
                                 const std::string& who, util::Time now) {
  winner.reset();  // the committer may run this body again after a failed batch
  if (key) {
    TY_RETURN_IF_ERROR(s.prune_idempotency_keys(now - kIdempotencyKeyLifetime).status());
    // Under the write transaction nobody can insert the key between this look-up and the
    // insert below; the store's primary key would refuse a second row all the same.
    TY_ASSIGN_OR_RETURN(winner, s.find_idempotency_key(key->scope, key->key));
    if (winner) return util::Status::ok();
  }
  TY_RETURN_IF_ERROR(insert_new_jobs(s, jobs, who, now));
  if (key) {
    key->job = jobs.front().rec.id;
    key->created = now;
    TY_RETURN_IF_ERROR(s.insert_idempotency_key(*key));
  }
  return util::Status::ok();
}

// The committed jobs join memory, where the next cycle finds them, except those a cancel
// reached first (committed as cancelled: see ControlPlane::cancel). The reply shows the first
// job and, for an array, its number of tasks and the last one's id. Under the plane's mutex.
template <typename JobViewOf>
model::SubmitReplyView add_to_memory(std::vector<NewJob>& jobs, bool array,
                                     const std::vector<util::JobId>& deps, JobBook& book,
                                     const JobViewOf& job_view) {
  std::optional<model::SubmitReplyView> out;
  for (NewJob& nj : jobs) {
    const store::JobRecord& rec = nj.rec;
    ActiveJob job{.rec = rec, .manifest = std::move(nj.manifest), .depends_on = deps};
    job.wait_reason = "not yet examined by the scheduler";
    const ActiveJob* in = book.admit(std::move(job));
    model::JobView j = in ? job_view(in, in->rec) : job_view(nullptr, rec);
    if (!out) out = model::SubmitReplyView{.job = std::move(j)};
  }
  if (array) {
    out->array_tasks = static_cast<int64_t>(jobs.size());
    out->last_id = jobs.back().rec.id.value();
  }
  return *out;
}

}  // namespace

util::Result<std::vector<util::JobId>> ControlPlane::resolve_dependencies(
    const model::JobManifest& m, const std::string& team) {
  std::vector<util::JobId> out;
  for (size_t dep_idx = 0; dep_idx < m.depends_on.size(); ++dep_idx) {
    const std::string& dep = m.depends_on[dep_idx];
    int64_t id = 0;
    if (parse_id(dep, id)) {
      auto rec = load_record(util::JobId(id));
      if (!rec.is_ok() || rec->team != team)
        return util::invalid_argument(
            fmt::format("spec.dependsOn[{}]: no job with id {} in team '{}'", dep_idx, id, team));
      out.emplace_back(id);
      continue;
    }
    std::optional<util::JobId> found;
    {
      util::MutexLock lock(mu_);
      for (auto it = jobs_.active().rbegin(); it != jobs_.active().rend() && !found; ++it) {
        if (it->second.rec.name == dep && it->second.rec.team == team) found = it->first;
      }
    }
    if (!found) {
      util::MutexLock lock(reader_mu_);
      TY_ASSIGN_OR_RETURN(auto rec, reader_->find_job_by_name(team, dep));
      if (rec) found = rec->id;
    }
    if (!found)
      return util::invalid_argument(fmt::format(
          "spec.dependsOn[{}]: no job named '{}' in team '{}'; submit it first or give its id",
          dep_idx, dep, team));
    out.push_back(*found);
  }
  return out;
}

util::Result<nlohmann::json> ControlPlane::submit(std::string_view body, std::string_view file,
                                                  const Principal& who,
                                                  std::string_view idempotency_key) {
  // The key this submission stores with its job; nullopt without one.
  std::optional<store::IdempotencyKeyRecord> key;
  // A repeat answers with the job the key's first submission created, as it is now.
  auto replay = [&](const store::IdempotencyKeyRecord& first) -> util::Result<nlohmann::json> {
    TY_RETURN_IF_ERROR(check_same_spec(first, *key));
    std::optional<JobAsShown> job;
    {
      util::MutexLock lock(mu_);
      job =
          job_in_memory(jobs_.active(), first.job, std::bind_front(&ControlPlane::job_view, this));
    }
    if (!job) {
      TY_ASSIGN_OR_RETURN(store::JobRecord rec, load_record(first.job));
      job = JobAsShown{.rec = rec, .view = job_view(nullptr, rec)};
    }
    return replay_reply(first, *job, who);
  };
  if (!idempotency_key.empty()) {
    TY_ASSIGN_OR_RETURN(key, idempotency_key_record(idempotency_key, body, who));
    // Answered before the spec is checked again: what the check depends on (this machine's
    // nodes, the jobs dependsOn names) may have changed since the first submission.
    std::optional<store::IdempotencyKeyRecord> first;
    {
      util::MutexLock lock(reader_mu_);
      TY_ASSIGN_OR_RETURN(first, reader_->find_idempotency_key(key->scope, key->key));
    }
    if (first && first->created >= clock_.now() - kIdempotencyKeyLifetime) return replay(*first);
  }

  TY_ASSIGN_OR_RETURN(model::JobManifest m, model::parse_job_manifest(body, file));
  // The checks below name a field; their errors then point at its line, as the parser's do.
  auto located = [&](util::Status st) {
    return model::locate_spec_error(std::move(st), body, file);
  };
  if (auto st = check_team(m, who); !st.is_ok()) return located(std::move(st));
  if (auto st = check_fits_somewhere(m.spec); !st.is_ok()) return located(std::move(st));
  auto deps = resolve_dependencies(m, m.spec.team);
  if (!deps.is_ok()) return located(deps.status());
  m.depends_on = id_strings(*deps);

  const util::Time now = clock_.now();
  std::vector<NewJob> jobs = expand_submission(m, now);  // one, or one per index of an array
  std::optional<store::IdempotencyKeyRecord> winner;     // set when a concurrent one won
  TY_RETURN_IF_ERROR(committer_->commit(
      [&](store::Store& s) { return insert_jobs_and_key(s, jobs, key, winner, who.name, now); }));
  if (winner) return replay(*winner);
  util::UniqueLock lock(mu_);
  const model::SubmitReplyView out = add_to_memory(jobs, !m.array.empty(), *deps, jobs_,
                                                   std::bind_front(&ControlPlane::job_view, this));
  wake_ = true;
  loop_cv_.notify_all();
  lock.unlock();
  return model::to_json(out);
}

util::Status ControlPlane::check_fits_somewhere(const model::JobSpec& spec) const {
  int most = 0;
  int total = 0;
  model::CpuMilli cpu{0};
  model::Bytes memory{0};
  // This machine's nodes and every cloud pool's node shape (max_nodes of them): a job that
  // fits a pool waits for the autoscaler to buy the nodes.
  std::vector<model::Node> shapes;
  {
    util::MutexLock lock(mu_);
    for (const auto& n : nodes_)
      if (!n.cloud) shapes.push_back(n.node);
  }
  for (const auto& p : cloud_pools_) {
    model::Node n{
        .gpu_model = p.gpu_model, .gpu_count = p.gpus_per_node, .cpu = p.cpu, .memory = p.memory};
    for (int i = 0; i < p.max_nodes; ++i) shapes.push_back(n);
  }
  for (const auto& node : shapes) {
    cpu = std::max(cpu, node.cpu);
    memory = std::max(memory, node.memory);
    if (!spec.allowed_gpu_models.empty() &&
        std::find(spec.allowed_gpu_models.begin(), spec.allowed_gpu_models.end(), node.gpu_model) ==
            spec.allowed_gpu_models.end())
      continue;
    most = std::max(most, node.gpu_count);
    total += node.gpu_count;
  }
  const bool wants_gpu =
      spec.worker.gpus > 0 || spec.worker.gpu_milli.value() > 0 || !spec.worker.mig_profile.empty();
  const std::string models =
      spec.allowed_gpu_models.empty() ? "GPUs" : fmt::format("{} GPUs", spec.allowed_gpu_models[0]);
  if (wants_gpu && most == 0)
    return util::invalid_argument(fmt::format(
        "spec.template.resources.limits: this machine has no {} (see `trainyard nodes`)", models));
  if (spec.worker.gpus > most)
    return util::invalid_argument(fmt::format(
        "spec.template.resources.limits.nvidia.com/gpu: a worker needs {} GPUs but the largest "
        "node has {} {}; lower the request or use more workers",
        spec.worker.gpus, most, models));
  if (spec.worker.cpu > cpu)
    return util::invalid_argument(fmt::format(
        "spec.template.resources.limits.cpu: a worker asks for {} CPUs but the largest node has "
        "{}; lower the request",
        static_cast<double>(spec.worker.cpu.value()) / 1000, cpu.value() / 1000));
  if (spec.worker.memory > memory)
    return util::invalid_argument(fmt::format(
        "spec.template.resources.limits.memory: a worker asks for {} MiB but the largest node "
        "has {} MiB; lower the request",
        spec.worker.memory.value() >> 20, memory.value() >> 20));
  if (spec.total_gpus() > total)
    return util::invalid_argument(
        fmt::format("spec.workers: the job needs {} GPUs in all but this machine has {} {}",
                    spec.total_gpus(), total, models));
  return util::Status::ok();
}

util::Result<nlohmann::json> ControlPlane::cancel(util::JobId id, const Principal& who) {
  TY_ASSIGN_OR_RETURN(store::JobRecord rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, id, rec.team));
  Tx tx;
  nlohmann::json out;
  {
    util::MutexLock lock(mu_);
    auto it = jobs_.active().find(id);
    if (it == jobs_.active().end()) {
      if (model::is_terminal(rec.state))
        return util::failed_precondition(fmt::format("job {} has already ended ({})", id.value(),
                                                     model::job_state_name(rec.state)));
      // Committed by a submission that has not reached memory yet.
      jobs_.cancel_before_admit(id);
      ActiveJob tmp{.rec = rec};
      transition(tmp, model::JobState::Cancelled, fmt::format("cancelled by {}", who.name), tx);
      out = job_json(nullptr, tmp.rec);
    } else {
      ActiveJob& job = it->second;
      const std::string reason = fmt::format("cancelled by {}", who.name);
      if (job.rec.state == model::JobState::Pending) {
        transition(job, model::JobState::Cancelled, reason, tx);
        out = job_json(&job, job.rec);
        jobs_.retire(it);
      } else if (job.stop != StopCause::Cancel) {
        begin_stop(job, StopCause::Cancel, reason, tx);
        out = job_json(&job, job.rec);
      } else {
        out = job_json(&job, job.rec);
      }
    }
    TY_RETURN_IF_ERROR(commit(tx));
    wake_ = true;
    loop_cv_.notify_all();
  }
  return out;
}

}  // namespace trainyard::server
