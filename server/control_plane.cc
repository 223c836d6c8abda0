#include "server/control_plane.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "exec/checkpoint_reader.h"
#include "model/accelerator.h"
#include "model/names.h"
#include "server/fleet.h"
#include "server/state_dir.h"
#include "server/tx.h"
#include "util/log.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

// One scheduler node per GPU model found on this machine (a node has a single model).
std::vector<LocalNode> local_nodes_from(const std::vector<telemetry::GpuDevice>& devices) {
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  std::vector<LocalNode> out;
  for (const auto& d : devices) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const LocalNode& n) { return n.node.gpu_model == d.model; });
    if (it == out.end()) {
      LocalNode n;
      n.node.gpu_model = d.model;
      n.simulated = d.simulated;
      out.push_back(std::move(n));
      it = out.end() - 1;
    }
    it->gpus.push_back(d);
    it->node.mig_enabled = it->node.mig_enabled || d.mig_enabled;
  }
  if (out.empty()) out.emplace_back();  // CPU-only machine: one node without GPUs
  int64_t id = 1;
  for (auto& n : out) {
    n.node.id = util::NodeId(id++);
    n.node.name = out.size() == 1 || n.node.gpu_model.empty()
                      ? std::string(host)
                      : fmt::format("{}-{}", host, n.node.gpu_model);
    n.node.pool = "local";
    n.node.gpu_count = static_cast<int>(n.gpus.size());
    n.node.cpu = model::CpuMilli(cpus * 1000);
    n.node.memory = model::Bytes(static_cast<int64_t>(pages) * page_size);
    n.node.labels[model::kLabelPool] = "local";
    if (!n.node.gpu_model.empty()) n.node.labels[model::kLabelGpuProduct] = n.node.gpu_model;
  }
  return out;
}

}  // namespace

ControlPlane::ControlPlane(const ControlPlaneOptions& options, exec::Executor& executor,
                           const util::Clock& clock)
    : options_(options), executor_(executor), clock_(clock) {}

ControlPlane::~ControlPlane() {
  if (committer_) {
    // The cost of intervals still open is written now, so a clean stop loses no billing.
    util::MutexLock lock(mu_);
    Tx tx;
    (void)cost_.ledger_at(clock_.now());
    tx.cost = cost_.take_unstored();
    if (!tx.empty()) {
      if (auto st = committer_->commit([&](store::Store& s) { return tx.write(s); }); !st.is_ok())
        TY_LOG_ERROR("cannot write the last cost records: {}", st.message());
    }
  }
  if (recorder_) recorder_->stop();  // writes the minute in progress while the store is open
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

util::Result<std::unique_ptr<ControlPlane>> ControlPlane::open(const ControlPlaneOptions& options,
                                                               telemetry::GpuSampler& sampler,
                                                               exec::Executor& executor,
                                                               const util::Clock& clock) {
  TY_ASSIGN_OR_RETURN(auto devices, sampler.devices());
  TY_ASSIGN_OR_RETURN(auto cp, open(options, nodes_from_devices(devices), executor, clock));
  cp->record_telemetry_from(sampler);
  return cp;
}

std::vector<LocalNode> ControlPlane::nodes_from_devices(
    const std::vector<telemetry::GpuDevice>& devices) {
  return local_nodes_from(devices);
}

util::Result<std::unique_ptr<ControlPlane>> ControlPlane::open(const ControlPlaneOptions& options,
                                                               std::vector<LocalNode> nodes,
                                                               exec::Executor& executor,
                                                               const util::Clock& clock) {
  std::unique_ptr<ControlPlane> cp(new ControlPlane(options, executor, clock));
  // Nothing else sees the plane yet; the lock is taken for the helpers that expect it.
  util::MutexLock lock(cp->mu_);
  for (auto& n : nodes) cp->nodes_.add(std::move(n));
  for (const auto& n : cp->nodes_) {
    if (n.node.gpu_count > model::kMaxGpusPerNode)
      return util::invalid_argument(fmt::format("{} GPUs of one model; at most {} are supported",
                                                n.node.gpu_count, model::kMaxGpusPerNode));
  }
  const bool isolate = options.isolate_workers.value_or(exec::can_switch_users());
  TY_RETURN_IF_ERROR(prepare_state_dir(options.state_dir, isolate));
  if (!options.work_dir.empty()) TY_RETURN_IF_ERROR(prepare_state_dir(options.work_dir, isolate));
  TY_ASSIGN_OR_RETURN(
      cp->identities_,
      WorkerIdentities::open(options.config.workers, options.state_dir / kWorkerUidsFile, isolate));
  // One server per state directory: two would both start the same jobs.
  const auto lock_path = options.state_dir / "server.lock";
  cp->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (cp->lock_fd_ < 0 || ::flock(cp->lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return util::failed_precondition(fmt::format(
        "another trainyard server is using {} (lock {}); stop it or give another --state",
        options.state_dir.string(), lock_path.string()));
  const auto db = options.db_path.empty() ? options.state_dir / "state.db" : options.db_path;
  TY_ASSIGN_OR_RETURN(cp->store_, store::Store::open(db));
  TY_ASSIGN_OR_RETURN(cp->reader_, store::Store::open(db, {.read_only = true}));
  make_private(db);  // SQLite gives -wal and -shm the mode of the database
  cp->committer_ = std::make_unique<GroupCommitter>(*cp->store_);
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  cp->hostname_ = host;
  cp->next_node_id_ = static_cast<int64_t>(cp->nodes_.size()) + 1;
  const CapacityConfig& capacity = options.config.capacity;
  if (capacity.provider == CapacityProvider::SimCloud && !capacity.pools.empty()) {
    TY_ASSIGN_OR_RETURN(cp->fleet_, Fleet::open(capacity, clock));
    for (const auto& p : cp->fleet_->pools()) cp->cloud_pools_.push_back(p.pool);
  }
  cp->sync_batch_nodes();
  TY_RETURN_IF_ERROR(cp->recover());
  TY_RETURN_IF_ERROR(cp->restore_cost());
  return cp;
}

void ControlPlane::record_telemetry_from(telemetry::GpuSampler& sampler) {
  const TelemetryConfig& t = options_.config.telemetry;
  ControlPlane* plane = this;
  if (options_.config.alerts.enabled)
    alerts_ = std::make_unique<AlertService>(
        options_.config.alerts,
        [plane](const std::vector<telemetry::AlertTransition>& transitions) {
          plane->append_alert_events(transitions);
        });
  AlertService* alerts = alerts_.get();
  recorder_ = std::make_unique<TelemetryRecorder>(
      sampler, clock_,
      TelemetryRecorderOptions{
          .interval = t.interval,
          .ring_samples = t.ring_samples,
          .retention_days = t.retention_days,
          // One transaction a minute through the group committer: it shares an fsync with the
          // loop's commits instead of competing with them for SQLite's write lock.
          .sink =
              [plane](const std::vector<store::TelemetryMinute>& rows, util::Time prune_before) {
                return plane->committer_->commit([&](store::Store& s) -> util::Status {
                  TY_RETURN_IF_ERROR(s.put_telemetry_minutes(rows));
                  return s.prune_telemetry(prune_before).status();
                });
              },
          // Alerts are judged on every round, on the recorder's thread: the loop never waits.
          .on_round =
              [alerts](util::Time now, const std::vector<AttributedSample>& round) {
                if (alerts != nullptr) alerts->on_round(now, round);
              }});
}

std::filesystem::path ControlPlane::run_dir(util::JobId id, int attempt, int rank) const {
  return work_dir() / kJobsDir / std::to_string(id.value()) / fmt::format("attempt-{}", attempt) /
         fmt::format("rank-{}", rank);
}

// The spec's checkpoint.dir, else one per job under the state dir; the same on every attempt.
std::string ControlPlane::checkpoint_dir_for(util::JobId id, const std::string& spec_dir) const {
  if (!spec_dir.empty()) return spec_dir;
  return (work_dir() / kCheckpointsDir / std::to_string(id.value())).string();
}

std::optional<exec::Credentials> ControlPlane::file_identity(const std::string& team) const {
  return identities_->for_reading(team);
}

std::optional<util::Time> ControlPlane::newest_checkpoint_time(const ActiveJob& job) const {
  const auto identity = file_identity(job.rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  if (!as_job.ok()) return std::nullopt;
  return exec::newest_checkpoint_time(checkpoint_dir(job));
}

std::optional<double> ControlPlane::measured_steps_per_second(const ActiveJob& job) const {
  const auto identity = file_identity(job.rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  if (!as_job.ok()) return std::nullopt;
  const auto tail =
      exec::read_metrics_tail(run_dir(job.rec.id, job.rec.attempt, 0) / exec::kMetricsFile);
  if (!tail || !tail->last.is_object()) return std::nullopt;
  const auto it = tail->last.find("step_time_s");
  if (it == tail->last.end() || !it->is_number()) return std::nullopt;
  const double step = it->get<double>();
  if (!(step > 0) || !std::isfinite(step)) return std::nullopt;
  return 1.0 / step;
}

bool ControlPlane::anonymous_allowed_from(std::optional<uint32_t> peer_uid) const {
  if (!identities_->isolating()) return true;
  return peer_uid.has_value() && !identities_->is_worker_uid(*peer_uid);
}

std::string ControlPlane::checkpoint_dir(const ActiveJob& job) const {
  return checkpoint_dir_for(job.rec.id, job.manifest.checkpoint.dir);
}

std::string ControlPlane::checkpoint_dir_of(const store::JobRecord& rec) const {
  const auto m = nlohmann::json::parse(rec.manifest_json, nullptr, false);
  std::string spec_dir;
  if (!m.is_discarded()) {
    const auto& c = m["spec"]["checkpoint"];
    if (c.is_object() && c.contains("dir") && c["dir"].is_string())
      spec_dir = c["dir"].get<std::string>();
  }
  return checkpoint_dir_for(rec.id, spec_dir);
}

// ---- tokens ---------------------------------------------------------------------------------

util::Result<Principal> ControlPlane::authenticate(const std::string& token,
                                                   bool allow_anonymous) const {
  if (token.empty()) {
    if (allow_anonymous) return Principal{.admin = true, .team = "", .name = "anonymous"};
    return util::Status(util::StatusCode::Unauthenticated,
                        "this server requires a token: set TRAINYARD_TOKEN (an admin creates "
                        "one with `trainyard token create --team TEAM`)");
  }
  const std::string hash = hash_token(token);
  if (auto known = tokens_.find(hash)) return *known;
  std::optional<store::TokenRecord> rec;
  {
    util::MutexLock lock(reader_mu_);
    TY_ASSIGN_OR_RETURN(rec, reader_->find_token(hash));
  }
  if (!rec || rec->revoked)
    return util::Status(util::StatusCode::Unauthenticated,
                        "the token is not valid (unknown or revoked); check TRAINYARD_TOKEN");
  Principal p{.admin = rec->admin, .team = rec->team, .name = rec->name};
  tokens_.put(hash, p);
  return p;
}

util::Result<nlohmann::json> ControlPlane::create_token(const std::string& team,
                                                        const std::string& name, bool admin,
                                                        const Principal& who) {
  if (!who.admin)
    return util::Status(util::StatusCode::PermissionDenied, "only an admin may create tokens");
  if (!admin && team.empty())
    return util::invalid_argument("a token needs a team (or admin: true)");
  // A team token's team becomes the team of every job submitted with it, so it must be a name
  // the job-spec parser accepts, or those jobs could not be read back from the store.
  if (!team.empty()) {
    if (auto st = model::check_team_name(team); !st.is_ok())
      return util::invalid_argument(fmt::format("team: {}", st.message()));
  }
  bool plain_name = true;
  for (char c : name) plain_name = plain_name && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  if (name.size() > model::kMaxNameLength || !plain_name) {
    return util::invalid_argument(fmt::format(
        "name: a token name has at most {} bytes and no control characters; this one has {} "
        "bytes{} (leave it out to name the token after its team)",
        model::kMaxNameLength, name.size(), plain_name ? "" : " and control characters"));
  }
  TY_ASSIGN_OR_RETURN(const std::string secret, generate_token());
  store::TokenRecord rec{.name = name.empty() ? (admin ? "admin" : team) : name,
                         .team = admin ? "" : team,
                         .admin = admin,
                         .hash_hex = hash_token(secret),
                         .created = clock_.now()};
  int64_t id = 0;
  TY_RETURN_IF_ERROR(committer_->commit([&](store::Store& s) -> util::Status {
    TY_ASSIGN_OR_RETURN(id, s.insert_token(rec));
    return util::Status::ok();
  }));
  return nlohmann::json{
      {"id", id}, {"name", rec.name}, {"team", rec.team}, {"admin", admin}, {"token", secret}};
}

util::Status ControlPlane::ensure_admin_token(const std::filesystem::path& path) {
  std::vector<store::TokenRecord> tokens;
  {
    util::MutexLock lock(reader_mu_);
    TY_ASSIGN_OR_RETURN(tokens, reader_->tokens());
  }
  for (const auto& t : tokens) {
    if (t.admin && !t.revoked && std::filesystem::exists(path)) return util::Status::ok();
  }
  TY_ASSIGN_OR_RETURN(auto created, create_token("", "admin", true, Principal{.admin = true}));
  const std::string tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << created["token"].get<std::string>() << "\n";
    if (!out) return util::unavailable("cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), 0600);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return util::unavailable(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  return util::Status::ok();
}

// ---- loop -----------------------------------------------------------------------------------

std::vector<LocalNode> ControlPlane::local_nodes() const {
  util::MutexLock lock(mu_);
  return nodes_.all();
}

void ControlPlane::wake() {
  util::MutexLock lock(mu_);
  wake_ = true;
  loop_cv_.notify_all();
}

void ControlPlane::stop() {
  util::MutexLock lock(mu_);
  stopping_ = true;
  loop_cv_.notify_all();
}

namespace {
constexpr auto kWakeCoalesce = std::chrono::milliseconds(20);
}  // namespace

void ControlPlane::run_loop() {
  // The recorder samples while the loop runs; the guard stops it on every way out.
  struct RecorderRun {
    TelemetryRecorder* recorder;
    ~RecorderRun() {
      if (recorder != nullptr) recorder->stop();
    }
  } recorder_run{recorder_.get()};
  if (recorder_) recorder_->start();
  for (;;) {
    util::Status st = reconcile_once();
    if (!st.is_ok()) TY_LOG_ERROR("reconcile: {}", st.to_string());
    util::UniqueLock lock(mu_);
    if (stopping_) return;
    // Waiting on a condition variable needs a steady deadline; the Clock is the source of
    // dates, not of sleeps, so the wait is expressed as a duration on the steady clock.
    util::Duration until = util::WallClock::steady_now() + options_.config.reconcile_interval;
    while (!wake_ && !stopping_ &&
           lock.wait_for(loop_cv_, until - util::WallClock::steady_now()) !=
               std::cv_status::timeout) {
    }
    if (wake_ && !stopping_) {
      // Woken by a submission: let a burst of them land before planning, so a busy API does
      // not run one whole cycle per request.
      until = util::WallClock::steady_now() + kWakeCoalesce;
      while (!stopping_ && lock.wait_for(loop_cv_, until - util::WallClock::steady_now()) !=
                               std::cv_status::timeout) {
      }
    }
    wake_ = false;
    if (stopping_) return;
  }
}

}  // namespace trainyard::server
