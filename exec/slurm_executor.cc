#include "exec/slurm_executor.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <condition_variable>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "exec/internal/run_files.h"
#include "exec/internal/worker_command.h"
#include "exec/subprocess.h"
#include "model/slurm_gres.h"
#include "model/slurm_hostlist.h"
#include "util/log.h"
#include "util/thread_annotations.h"

extern char** environ;

namespace trainyard::exec {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommentPrefix = "trainyard:";
constexpr const char* kBatchScript = "slurm-batch.sh";
constexpr const char* kWorkerEnvFile = "worker.env";
// A terminal Slurm job whose rank left no exit_status yet: wait this long for the file (a
// shared filesystem may show it late) before calling the rank lost.
constexpr util::Duration kExitFileGrace = std::chrono::seconds(10);
// Our job that no attempt has polled for this many cycles is an orphan and is cancelled.
constexpr uint64_t kOrphanCycles = 5;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

bool is_pending(const std::string& s) {
  return s == "PENDING" || s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED" ||
         s == "RESV_DEL_HOLD";
}

bool is_active(const std::string& s) {
  return is_pending(s) || s == "RUNNING" || s == "CONFIGURING" || s == "COMPLETING" ||
         s == "SUSPENDED" || s == "STAGE_OUT" || s == "RESIZING" || s == "SIGNALING" ||
         s == "STOPPED";
}

// Pending reasons that mean Slurm will not start the job where trainyard pinned it.
bool is_refusal(const std::string& reason) {
  static constexpr std::string_view kHard[] = {
      "ReqNodeNotAvail", "PartitionDown",  "PartitionInactive", "PartitionNodeLimit",
      "BadConstraints",  "InvalidAccount", "InvalidQOS",        "JobHeldAdmin",
      "NodeDown",        "PartitionConfig"};
  return std::any_of(std::begin(kHard), std::end(kHard),
                     [&](std::string_view h) { return reason.starts_with(h); });
}

bool node_usable(const SlurmNodeInfo& n, std::string& problem) {
  static constexpr std::string_view kBadStates[] = {"DOWN",  "DRAIN",   "DRAINED",       "DRAINING",
                                                    "FAIL",  "FAILING", "FUTURE",        "UNKNOWN",
                                                    "ERROR", "INVAL",   "NOT_RESPONDING"};
  static constexpr std::string_view kBadFlags[] = {
      "DRAIN",          "DRAINED",          "DRAINING",     "FAIL",          "FAILING",
      "NOT_RESPONDING", "MAINTENANCE",      "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN",
      "REBOOT_ISSUED",  "REBOOT_REQUESTED", "RESERVED",     "INVALID",       "INVALID_REG"};
  for (auto b : kBadStates)
    if (n.state == b) {
      problem = fmt::format("Slurm reports it {}{}", n.state,
                            n.reason.empty() ? "" : fmt::format(" ({})", n.reason));
      return false;
    }
  for (const auto& f : n.flags)
    for (auto b : kBadFlags)
      if (f == b) {
        problem = fmt::format("Slurm reports it {}+{}{}", n.state, f,
                              n.reason.empty() ? "" : fmt::format(" ({})", n.reason));
        return false;
      }
  return true;
}

std::string state_words(const SlurmNodeInfo& n) {
  std::string s = n.state;
  for (const auto& f : n.flags) s += "+" + f;
  return s;
}

const char* signal_word(int sig) {
  switch (sig) {
    case SIGTERM:
      return "TERM";
    case SIGINT:
      return "INT";
    case SIGHUP:
      return "HUP";
    case SIGQUIT:
      return "QUIT";
    case SIGUSR1:
      return "USR1";
    case SIGUSR2:
      return "USR2";
    case SIGKILL:
      return "KILL";
    default:
      return nullptr;
  }
}

}  // namespace

std::string slurm_job_comment(const std::string& instance, util::JobId job, int attempt) {
  return fmt::format("{}{}:{}:{}", kCommentPrefix, instance, job.value(), attempt);
}

std::optional<SlurmJobTag> parse_slurm_job_comment(std::string_view comment) {
  if (!comment.starts_with(kCommentPrefix)) return std::nullopt;
  comment.remove_prefix(std::string_view(kCommentPrefix).size());
  const size_t a = comment.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = comment.find(':', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  SlurmJobTag tag;
  tag.instance = std::string(comment.substr(0, a));
  try {
    tag.job = std::stoll(std::string(comment.substr(a + 1, b - a - 1)));
    tag.attempt = std::stoi(std::string(comment.substr(b + 1)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (tag.instance.empty() || tag.job <= 0 || tag.attempt <= 0) return std::nullopt;
  return tag;
}

std::vector<SlurmComponent> slurm_components(const GangLaunch& gang) {
  std::vector<SlurmComponent> out;
  for (size_t r = 0; r < gang.workers.size(); ++r) {
    const GangWorker& w = gang.workers[r];
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const SlurmComponent& c) { return c.node == w.node; });
    if (it == out.end()) {
      out.push_back({.node = w.node});
      it = out.end() - 1;
    }
    it->ranks.push_back(static_cast<int>(r));
  }
  return out;
}

std::vector<std::string> sbatch_arguments(const SlurmOptions& options, const GangLaunch& gang,
                                          const std::string& comment, const fs::path& attempt_dir) {
  std::vector<std::string> args = {"--parsable"};
  const std::vector<SlurmComponent> components = slurm_components(gang);
  for (size_t i = 0; i < components.size(); ++i) {
    const SlurmComponent& c = components[i];
    const GangWorker& w = gang.workers[c.ranks.front()];  // a gang's workers are alike
    const auto k = static_cast<int64_t>(c.ranks.size());
    if (i > 0) args.push_back(":");
    // Job-wide facts on every component: each is its own job record in Slurm's listings.
    args.push_back("--job-name=" + (gang.name.empty() ? std::string("trainyard") : gang.name));
    args.push_back("--comment=" + comment);
    args.push_back("--no-requeue");  // a lost attempt is trainyard's to retry, never Slurm's
    if (!options.partition.empty()) args.push_back("--partition=" + options.partition);
    if (i == 0) {
      args.push_back("--output=" + (attempt_dir / "slurm-%j.out").string());
      args.push_back("--chdir=" + attempt_dir.string());
    }
    args.push_back("--nodelist=" + c.node);
    args.push_back("--nodes=1");
    args.push_back(fmt::format("--ntasks={}", k));
    if (w.gpus > 0) args.push_back(fmt::format("--gres=gpu:{}", w.gpus * k));
    const int64_t cpus = std::max<int64_t>(1, (w.cpu_milli + 999) / 1000);
    args.push_back(fmt::format("--cpus-per-task={}", cpus));
    int64_t mem_mb = (w.memory_bytes + (1 << 20) - 1) >> 20;
    if (mem_mb == 0) mem_mb = options.default_memory_mb;
    if (mem_mb > 0) args.push_back(fmt::format("--mem={}M", mem_mb * k));
  }
  return args;
}

struct SlurmExecutor::State {
  util::Mutex mu;
  std::condition_variable cv;  // with mu: stopping or wake changed
  bool stopping TY_GUARDED_BY(mu) = false;
  bool wake TY_GUARDED_BY(mu) = false;
  std::thread refresher;  // started by open(), joined by the destructor

  // The latest picture from Slurm (written by refresh()).
  std::vector<SlurmJob> jobs TY_GUARDED_BY(mu);
  std::vector<SlurmNodeInfo> nodes TY_GUARDED_BY(mu);
  SlurmClusterView view TY_GUARDED_BY(mu);
  // When the picture was taken: just before squeue ran (wall clock).
  util::Time picture_wall TY_GUARDED_BY(mu){};
  // The same moment on the steady clock, to order pictures.
  util::Duration picture_steady TY_GUARDED_BY(mu){};
  bool have_picture TY_GUARDED_BY(mu) = false;

  // Derived from the picture: our attempts' Slurm jobs by leader id.
  struct OurJob {
    SlurmJobTag tag;
    std::string state;  // worst component state
    std::string reason;
    std::string nodes;
    int64_t submit_time = 0;
    std::vector<int64_t> component_ids;
  };
  std::map<int64_t, OurJob> ours TY_GUARDED_BY(mu);
  // (job, attempt) -> leader
  std::map<std::pair<int64_t, int>, int64_t> by_attempt TY_GUARDED_BY(mu);

  // This process's own actions, by leader: the steady time of its sbatch, whether this executor
  // cancelled it, the steady time of its last notice, the cycle of its last poll, the steady
  // time it was first seen ended.
  std::map<int64_t, util::Duration> submitted TY_GUARDED_BY(mu);
  std::set<int64_t> killed TY_GUARDED_BY(mu);
  std::map<int64_t, util::Duration> signaled TY_GUARDED_BY(mu);
  std::map<int64_t, uint64_t> polled_cycle TY_GUARDED_BY(mu);
  std::map<int64_t, util::Duration> ended_seen TY_GUARDED_BY(mu);
  uint64_t cycle TY_GUARDED_BY(mu) = 0;
  uint64_t first_cycle_with_picture TY_GUARDED_BY(mu) = 0;
  // The cycle in which poll() last asked Slurm out of turn.
  uint64_t forced_cycle TY_GUARDED_BY(mu) = 0;
  // Steady time of the last refresh that failed.
  util::Duration last_failure TY_GUARDED_BY(mu){};
  // Workers adopted while Slurm did not answer: run dir -> (job, attempt).
  std::map<std::string, std::pair<int64_t, int>> unresolved TY_GUARDED_BY(mu);

  void forget_ended() TY_REQUIRES(mu);
};

SlurmExecutor::SlurmExecutor(SlurmOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

SlurmExecutor::~SlurmExecutor() {
  {
    util::MutexLock lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  if (state_->refresher.joinable()) state_->refresher.join();
}

util::Result<std::unique_ptr<SlurmExecutor>> SlurmExecutor::open(const SlurmOptions& options) {
  if (options.shared_dir.empty())
    return util::invalid_argument(
        "executor.sharedDir is required with the Slurm executor: a directory every node mounts "
        "at the same path (run dirs, logs and checkpoints live there)");
  std::error_code ec;
  if (!fs::is_directory(options.shared_dir, ec))
    return util::failed_precondition(
        fmt::format("executor.sharedDir {} is not a directory; create it on the shared "
                    "filesystem (mounted at the same path on every node)",
                    options.shared_dir.string()));
  if (options.wrapper_path.empty())
    return util::invalid_argument("the Slurm executor needs the trainyard binary's path");
  if (options.instance.empty())
    return util::invalid_argument("the Slurm executor needs an instance");
  for (const char* tool : {"sbatch", "squeue", "scancel", "sinfo"}) {
    const std::string path =
        options.bin_dir.empty() ? std::string(tool) : (fs::path(options.bin_dir) / tool).string();
    auto r = run_command({path, "--version"}, {.env = {}, .timeout = std::chrono::seconds(10)});
    if (!r.is_ok())
      return util::failed_precondition(fmt::format(
          "{}: Slurm's client commands are needed on this machine (Debian: apt-get install "
          "slurm-client; or set executor.binDir)",
          r.status().message()));
  }
  for (const auto& [type, acc] : options.gres_types) {
    if (!model::accelerator_for_gres_type(type, options.gres_types))
      return util::invalid_argument(
          fmt::format("executor.gresTypes: '{}' maps to '{}', which is not a known accelerator; {}",
                      type, acc, model::known_gres_types_hint()));
  }
  std::unique_ptr<SlurmExecutor> ex(new SlurmExecutor(options));
  State* st = ex->state_.get();
  SlurmExecutor* self = ex.get();
  st->refresher = std::thread([self, st] {
    util::UniqueLock lock(st->mu);
    while (!st->stopping) {
      lock.unlock();
      (void)self->refresh_now();
      lock.lock();
      // Until the poll interval has passed, or stop or wake.
      const util::Duration until = util::WallClock::steady_now() + self->options_.poll_interval;
      while (!st->stopping && !st->wake &&
             lock.wait_for(st->cv, until - util::WallClock::steady_now()) !=
                 std::cv_status::timeout) {
      }
      st->wake = false;
    }
  });
  return ex;
}

namespace {

// The environment of Slurm's commands: a fixed PATH, SLURM_CONF, the sanitizer options.
std::vector<std::string> command_env(const SlurmOptions& o) {
  std::vector<std::string> env = internal::wrapper_environment(environ);
  if (!o.slurm_conf.empty()) env.push_back("SLURM_CONF=" + o.slurm_conf);
  return env;
}

std::string tool(const SlurmOptions& o, const char* name) {
  return o.bin_dir.empty() ? std::string(name) : (fs::path(o.bin_dir) / name).string();
}

util::Result<CommandResult> slurm_command(const SlurmOptions& o, const char* name,
                                          std::vector<std::string> args) {
  args.insert(args.begin(), tool(o, name));
  TY_ASSIGN_OR_RETURN(CommandResult r,
                      run_command(args, {.env = command_env(o), .timeout = o.command_timeout}));
  if (r.timed_out)
    return util::unavailable(fmt::format("{} did not answer within {:.0f} s (is slurmctld up?)",
                                         name, util::to_seconds(o.command_timeout)));
  return r;
}

std::string first_line(const std::string& text) {
  std::string s = text.substr(0, text.find('\n'));
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

// What this executor remembers of a Slurm job (its sbatch, cancel, notice, last poll) is
// dropped once Slurm no longer lists the job and it was not submitted lately: a server that
// runs for months keeps no record per job it ever ran.
void SlurmExecutor::State::forget_ended() {
  const util::Duration now = util::WallClock::steady_now();
  std::set<int64_t> remembered;
  for (const auto& kv : submitted) remembered.insert(kv.first);
  remembered.insert(killed.begin(), killed.end());
  for (const auto& kv : signaled) remembered.insert(kv.first);
  for (const auto& kv : polled_cycle) remembered.insert(kv.first);
  for (const auto& kv : ended_seen) remembered.insert(kv.first);
  for (int64_t leader : remembered) {
    if (ours.contains(leader)) continue;
    auto s = submitted.find(leader);
    if (s != submitted.end() && now - s->second <= std::chrono::minutes(10)) continue;
    submitted.erase(leader);
    killed.erase(leader);
    signaled.erase(leader);
    polled_cycle.erase(leader);
    ended_seen.erase(leader);
  }
}

namespace {

// What a Slurm command printed on success; Unavailable with its first error line otherwise.
util::Result<std::string> command_output(const SlurmOptions& o, const char* name,
                                         std::vector<std::string> args) {
  TY_ASSIGN_OR_RETURN(CommandResult r, slurm_command(o, name, std::move(args)));
  if (r.exit_code != 0)
    return util::unavailable(
        fmt::format("{} failed: {}", name, first_line(r.err.empty() ? r.out : r.err)));
  return std::move(r.out);
}

}  // namespace

util::Status SlurmExecutor::refresh_now() {
  // Taken before Slurm is asked: a slow answer (a loaded machine) must not date the picture
  // later than what it shows, and an answer older than the one kept never replaces it (the
  // refresher thread and a poll that asks at once can overlap).
  const util::Time taken_wall = util::WallClock().now();
  const util::Duration taken = util::WallClock::steady_now();
  util::Status failure = util::Status::ok();
  std::vector<SlurmJob> jobs;
  std::vector<SlurmNodeInfo> nodes;
  auto q = command_output(options_, "squeue", {"--json", "--all"});
  auto parsed_jobs =
      q.is_ok() ? parse_squeue_json(*q) : util::Result<std::vector<SlurmJob>>(q.status());
  if (parsed_jobs.is_ok()) {
    jobs = std::move(*parsed_jobs);
    auto n = command_output(options_, "sinfo", {"--json"});
    auto parsed_nodes = n.is_ok() ? parse_slurm_nodes_json(*n)
                                  : util::Result<std::vector<SlurmNodeInfo>>(n.status());
    if (parsed_nodes.is_ok())
      nodes = std::move(*parsed_nodes);
    else
      failure = parsed_nodes.status();
  } else {
    failure = parsed_jobs.status();
  }
  State& st = *state_;
  util::MutexLock lock(st.mu);
  if (st.have_picture && taken < st.picture_steady) return failure;
  if (!failure.is_ok()) {
    if (st.view.reachable || st.view.error != failure.message())
      TY_LOG_WARN("Slurm is not answering: {} (retrying every {:.0f} s)", failure.message(),
                  util::to_seconds(options_.poll_interval));
    st.view.reachable = false;
    st.view.error = failure.message();
    st.last_failure = util::WallClock::steady_now();
    return failure;
  }
  if (!st.view.reachable && st.have_picture) TY_LOG_INFO("Slurm answers again");
  st.jobs = std::move(jobs);
  st.nodes = std::move(nodes);
  st.picture_wall = taken_wall;
  st.picture_steady = taken;
  st.have_picture = true;
  // Our attempts' jobs, by leader.
  st.ours.clear();
  st.by_attempt.clear();
  std::map<std::string, int> our_gpus_on, our_cpus_on;
  std::map<std::string, int> others_gpus_on;
  for (const SlurmJob& j : st.jobs) {
    auto tag = parse_slurm_job_comment(j.comment);
    const bool mine = tag && tag->instance == options_.instance;
    const bool holds = j.state == "RUNNING" || j.state == "CONFIGURING" ||
                       j.state == "COMPLETING" || j.state == "SUSPENDED" ||
                       j.state == "SIGNALING" || j.state == "STOPPED";
    if (holds && !j.nodes.empty()) {
      auto names = model::expand_hostlist(j.nodes, 100000);
      if (names.is_ok()) {
        for (size_t k = 0; k < names->size(); ++k) {
          const int g = k < j.gpus_per_node.size() ? j.gpus_per_node[k] : 0;
          (mine ? our_gpus_on : others_gpus_on)[(*names)[k]] += g;
          if (mine && names->size() == 1) our_cpus_on[(*names)[k]] += static_cast<int>(j.cpus);
        }
      }
    }
    if (!mine) continue;
    const int64_t leader = j.het_job_id > 0 ? j.het_job_id : j.id;
    State::OurJob& o = st.ours[leader];
    o.tag = *tag;
    o.component_ids.push_back(j.id);
    // The leader (component 0) speaks for the job, unless a component's node failed.
    const bool node_failed = j.state == "NODE_FAIL" || j.state == "BOOT_FAIL";
    const bool decided = o.state == "NODE_FAIL" || o.state == "BOOT_FAIL";
    if (!decided && (o.state.empty() || j.id == leader || node_failed)) {
      o.state = j.state;
      o.reason = j.reason;
      if (!j.nodes.empty() || node_failed) o.nodes = j.nodes;
    }
    if (o.submit_time == 0 || (j.submit_time > 0 && j.submit_time < o.submit_time))
      o.submit_time = j.submit_time;
    // Two Slurm jobs for one attempt (never submitted so; a crash mid-sbatch at most): the
    // newer one is the extra; the sweep cancels it.
    auto key = std::make_pair(tag->job, tag->attempt);
    auto it = st.by_attempt.find(key);
    if (it == st.by_attempt.end() || leader < it->second) st.by_attempt[key] = leader;
  }
  // Nodes.
  SlurmClusterView view;
  view.reachable = true;
  view.refreshed = util::WallClock::steady_now();
  for (const SlurmNodeInfo& n : st.nodes) {
    if (!options_.partition.empty() && std::find(n.partitions.begin(), n.partitions.end(),
                                                 options_.partition) == n.partitions.end())
      continue;
    SlurmNodeView v;
    v.name = n.name;
    v.address = n.address.empty() ? (n.hostname.empty() ? n.name : n.hostname) : n.address;
    v.cpus = n.cpus;
    v.memory_mb = n.real_memory_mb;
    v.features = n.features;
    v.partitions = n.partitions;
    v.state = state_words(n);
    v.usable = node_usable(n, v.problem);
    const auto gres = parse_gres_gpus(n.gres);
    for (const auto& g : gres) v.gpus += g.count;
    if (!gres.empty()) v.gres_type = gres.front().type;
    std::set<std::string> types;
    for (const auto& g : gres) types.insert(g.type);
    if (v.gpus > 0) {
      if (types.size() > 1) {
        v.usable = false;
        v.problem = fmt::format(
            "it has GPUs of several GRES types ({}); trainyard nodes have one GPU model: split "
            "it with one type per node, or give every type the same executor.gresTypes mapping",
            n.gres);
      }
      auto acc = model::accelerator_for_gres_type(v.gres_type, options_.gres_types);
      if (acc) {
        v.accelerator = *acc;
      } else if (v.problem.empty()) {
        v.usable = false;
        v.problem = v.gres_type.empty()
                        ? fmt::format(
                              "its GRES '{}' names no GPU type; map it with "
                              "executor.gresTypes: {{\"\": H100-80GB}} (for example)",
                              n.gres)
                        : fmt::format(
                              "GRES type '{}' has no accelerator mapping; add "
                              "executor.gresTypes: {{{}: <model>}}. {}",
                              v.gres_type, v.gres_type, model::known_gres_types_hint());
      }
    }
    int used = 0;
    bool used_known = false;
    for (const auto& g : parse_gres_gpus(n.gres_used)) {
      used += g.count;
      used_known = true;
    }
    // Two sources: the node's GRES in use less ours, and the GPUs of others' jobs that squeue
    // lists there; the larger wins, so neither one's lag frees a GPU someone holds.
    const int ours_here = our_gpus_on[n.name];
    v.gpus_used_by_others = std::max(used_known ? used - ours_here : 0, others_gpus_on[n.name]);
    v.gpus_used_by_others = std::clamp(v.gpus_used_by_others, 0, v.gpus);
    v.cpus_used_by_others = std::max<int64_t>(0, n.alloc_cpus - our_cpus_on[n.name]);
    view.nodes.push_back(std::move(v));
  }
  st.view = std::move(view);
  st.forget_ended();
  return util::Status::ok();
}

SlurmClusterView SlurmExecutor::cluster() const {
  util::MutexLock lock(state_->mu);
  return state_->view;
}

void SlurmExecutor::begin_cycle() {
  std::vector<int64_t> orphans;
  {
    State& st = *state_;
    util::MutexLock lock(st.mu);
    ++st.cycle;
    if (!st.have_picture) return;
    if (st.first_cycle_with_picture == 0) st.first_cycle_with_picture = st.cycle;
    if (st.cycle < st.first_cycle_with_picture + kOrphanCycles) return;
    const util::Duration now = util::WallClock::steady_now();
    for (const auto& [leader, o] : st.ours) {
      if (!is_active(o.state) || st.killed.contains(leader)) continue;
      auto p = st.polled_cycle.find(leader);
      if (p != st.polled_cycle.end() && st.cycle - p->second < kOrphanCycles) continue;
      auto s = st.submitted.find(leader);
      if (s != st.submitted.end() && now - s->second < std::chrono::seconds(30)) continue;
      // A duplicate for an attempt counts too: by_attempt names only the older one.
      orphans.push_back(leader);
      st.killed.insert(leader);
    }
  }
  for (int64_t leader : orphans) {
    TY_LOG_WARN("cancelling Slurm job {}: it is tagged as this server's but no attempt owns it",
                leader);
    (void)slurm_command(options_, "scancel", {std::to_string(leader)});
  }
}

util::Result<std::vector<ProcessRef>> SlurmExecutor::launch_gang(const GangLaunch& gang) {
  if (gang.workers.empty()) return util::invalid_argument("launch_gang: no workers");
  std::vector<WorkerLaunch> prepared;
  for (const GangWorker& gw : gang.workers) {
    TY_RETURN_IF_ERROR(internal::validate_launch(gw.launch));
    TY_ASSIGN_OR_RETURN(WorkerLaunch w, internal::prepare_worker(gw.launch));
    // The worker's environment on the shared dir, readable by its team only (mode 0640, the run
    // dir's group); the wrapper reads it as it would read the local executor's memfd.
    TY_RETURN_IF_ERROR(internal::write_file_atomically(
        w.run_dir / kWorkerEnvFile, internal::env_block(internal::worker_environment(w, environ)),
        false));
    prepared.push_back(std::move(w));
  }
  const WorkerLaunch& first = prepared.front();
  const fs::path attempt_dir = first.run_dir.parent_path();
  const std::string comment = slurm_job_comment(options_.instance, first.job, first.attempt);
  {
    // An attempt already submitted (a retried launch after a crash) is never submitted twice.
    util::MutexLock lock(state_->mu);
    auto it = state_->by_attempt.find({first.job.value(), first.attempt});
    if (it != state_->by_attempt.end() && !state_->killed.contains(it->second))
      return util::failed_precondition(
          fmt::format("attempt {} of job {} already runs as Slurm job {}", first.attempt,
                      first.job.value(), it->second));
  }
  // The batch script runs one srun per component (node); each task of it runs the launcher of
  // its node, which picks its rank by SLURM_LOCALID and its share of the node's GPUs.
  const std::vector<SlurmComponent> components = slurm_components(gang);
  std::string script = fmt::format(
      "#!/bin/sh\n# trainyard job {} attempt {}: one srun per node; see launch-<node>.sh\n",
      first.job.value(), first.attempt);
  for (size_t c = 0; c < components.size(); ++c) {
    const SlurmComponent& comp = components[c];
    std::string launcher = fmt::format(
        "#!/bin/sh\n# trainyard job {} attempt {} on {}: the task with SLURM_LOCALID=i runs "
        "rank {{{}}}[i]\n"
        "devs=$(printf %s \"$CUDA_VISIBLE_DEVICES\" | tr , ' ')\n"
        "pick() {{ i=0; out=; for d in $devs; do\n"
        "  if [ $i -ge $1 ] && [ $i -lt $(($1 + $2)) ]; then out=${{out:+$out,}}$d; fi\n"
        "  i=$((i + 1)); done; printf %s \"$out\"; }}\n"
        "case \"$SLURM_LOCALID\" in\n",
        first.job.value(), first.attempt, comp.node, fmt::join(comp.ranks, ","));
    for (size_t l = 0; l < comp.ranks.size(); ++l) {
      const int rank = comp.ranks[l];
      const int g = gang.workers[rank].gpus;
      std::vector<std::string> argv = internal::wrapper_argv(options_.wrapper_path, prepared[rank]);
      // Slurm passes the environment file's place, not an fd: swap --env-fd N for --env-file.
      for (size_t k = 0; k + 1 < argv.size(); ++k) {
        if (argv[k] == "--env-fd") {
          argv[k] = "--env-file";
          argv[k + 1] = (prepared[rank].run_dir / kWorkerEnvFile).string();
          argv.insert(argv.begin() + static_cast<long>(k) + 2,
                      {"--pass-env", "CUDA_VISIBLE_DEVICES,SLURM_JOB_ID,SLURMD_NODENAME"});
          if (!options_.gpu_sampler.empty() && options_.gpu_sampler != "none" && g > 0) {
            const auto ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(options_.sample_interval)
                    .count();
            argv.insert(argv.begin() + static_cast<long>(k) + 4,
                        {"--gpu-sampler", options_.gpu_sampler, "--sample-ms",
                         std::to_string(std::max<int64_t>(10, ms))});
          }
          break;
        }
      }
      launcher += fmt::format("  {})\n", l);
      if (g > 0)
        launcher += fmt::format(
            "    CUDA_VISIBLE_DEVICES=$(pick {} {}); export CUDA_VISIBLE_DEVICES\n", l * g, g);
      else
        launcher += "    unset CUDA_VISIBLE_DEVICES\n";
      launcher += "    exec";
      for (const auto& a : argv) launcher += " " + shell_quote(a);
      launcher += " ;;\n";
    }
    launcher +=
        "esac\necho \"trainyard: no rank for SLURM_LOCALID=$SLURM_LOCALID\" >&2\nexit 127\n";
    const fs::path launcher_path = attempt_dir / fmt::format("launch-{}.sh", comp.node);
    TY_RETURN_IF_ERROR(internal::write_file_atomically(launcher_path, launcher, true));
    ::chmod(launcher_path.c_str(), 0750);
    script += "srun";
    if (components.size() > 1) script += fmt::format(" --het-group={}", c);
    script += fmt::format(" --ntasks={} --nodes=1 --kill-on-bad-exit=0 /bin/sh {} &\n",
                          comp.ranks.size(), shell_quote(launcher_path.string()));
  }
  script += "wait\n";
  TY_RETURN_IF_ERROR(internal::write_file_atomically(attempt_dir / kBatchScript, script, true));
  ::chmod((attempt_dir / kBatchScript).c_str(), 0750);
  std::vector<GangWorker> workers = gang.workers;
  GangLaunch g{.name = gang.name, .workers = workers};
  std::vector<std::string> args = sbatch_arguments(options_, g, comment, attempt_dir);
  args.push_back((attempt_dir / kBatchScript).string());
  TY_ASSIGN_OR_RETURN(CommandResult r, slurm_command(options_, "sbatch", args));
  if (r.exit_code != 0) {
    std::string why = first_line(r.err.empty() ? r.out : r.err);
    if (why.starts_with("sbatch: error: ")) why = why.substr(15);
    return util::unavailable(fmt::format("Slurm refused the job: {}", why));
  }
  // --parsable prints "<id>" or "<id>;<cluster>".
  const std::string out = first_line(r.out);
  int64_t leader = 0;
  try {
    leader = std::stoll(out.substr(0, out.find(';')));
  } catch (const std::exception&) {
    return util::internal_error(fmt::format("sbatch printed '{}', not a job id", out));
  }
  {
    util::MutexLock lock(state_->mu);
    // Slurm reuses ids after losing its state: what was known of an earlier job of this id is
    // not this one's.
    state_->killed.erase(leader);
    state_->signaled.erase(leader);
    state_->ended_seen.erase(leader);
    state_->submitted[leader] = util::WallClock::steady_now();
    state_->by_attempt[{first.job.value(), first.attempt}] = leader;
    state_->polled_cycle[leader] = state_->cycle;
  }
  std::vector<ProcessRef> refs(prepared.size(), ProcessRef{.batch_job = leader});
  return refs;
}

util::Result<ProcessRef> SlurmExecutor::launch(const WorkerLaunch& w) {
  (void)w;
  return util::failed_precondition(
      "the Slurm executor starts whole attempts (launch_gang), not single workers");
}

ProcessStatus SlurmExecutor::poll(const ProcessRef& p, const fs::path& run_dir) {
  std::optional<ProcessStatus> exited = internal::read_exit_status(run_dir);
  // Ended by a signal, or by a shell that died of one (exit 128+N): perhaps Slurm's own hand.
  const bool by_signal =
      exited && (exited->kind == ExitKind::Signaled ||
                 (exited->kind == ExitKind::Exited && exited->code > 128 && exited->code < 192));
  const int64_t leader = resolve(p, run_dir);
  if (leader == 0) {
    // Adopted while Slurm did not answer, and Slurm still has not named its job.
    if (exited) return *exited;
    util::MutexLock lock(state_->mu);
    if (!state_->view.reachable || !state_->have_picture) return {ExitKind::Running, 0, "running"};
    return {ExitKind::Interrupted, 0,
            "interrupted: Slurm has no job for this attempt after the server restarted and the "
            "worker left no exit status"};
  }
  if (by_signal) {
    // A rank killed by a signal: was it Slurm ending the job (a node set down, a cancel by
    // hand)? Ask once per cycle when the picture is older than the worker's end.
    bool ask = false;
    {
      util::MutexLock lock(state_->mu);
      std::error_code ec;
      const auto mtime = fs::last_write_time(run_dir / kExitStatusFile, ec);
      const auto ended =
          ec ? util::Time{}
             : std::chrono::time_point_cast<util::Duration>(std::chrono::file_clock::to_sys(mtime));
      ask = state_->forced_cycle != state_->cycle && ended >= state_->picture_wall;
      if (ask) state_->forced_cycle = state_->cycle;
    }
    if (ask) (void)refresh_now();
  }
  State& st = *state_;
  util::UniqueLock lock(st.mu);
  st.polled_cycle[leader] = st.cycle;
  auto running = [] { return ProcessStatus{ExitKind::Running, 0, "running"}; };
  auto it = st.ours.find(leader);
  const auto submit = st.submitted.find(leader);
  const bool submitted_recently =
      submit != st.submitted.end() && util::WallClock::steady_now() - submit->second <
                                          options_.poll_interval * 3 + std::chrono::seconds(10);
  if (exited) {
    // Killed by Slurm's own hand: the worker died of the SIGTERM before Slurm's answer came;
    // the job's state in Slurm says why.
    if (it != st.ours.end() && by_signal && !st.killed.contains(leader)) {
      const State::OurJob& o = it->second;
      // Slurm may signal the ranks a moment before its own answer changes (a node set down):
      // while it still calls the job active, the death is not judged yet, for a few seconds.
      // A notice of trainyard's own (signaled) explains it already.
      std::error_code ec;
      const auto mtime = fs::last_write_time(run_dir / kExitStatusFile, ec);
      const auto ended =
          ec ? util::Time{}
             : std::chrono::time_point_cast<util::Duration>(std::chrono::file_clock::to_sys(mtime));
      if (is_active(o.state) && !is_pending(o.state) && !st.signaled.contains(leader) &&
          util::WallClock().now() - ended < kExitFileGrace)
        return running();
      if (o.state == "CANCELLED")
        return {ExitKind::Cancelled, 0,
                fmt::format("Slurm job {} was cancelled outside trainyard (scancel)", leader)};
      if (is_pending(o.state)) {
        // Slurm requeued it (its node went down): it must never run this attempt again. The
        // reason is read before the lock is released: a refresh replaces `o`.
        std::string why = fmt::format(
            "interrupted: Slurm requeued job {} ({}); cancelled it, trainyard places the attempt "
            "again",
            leader, o.reason);
        st.killed.insert(leader);
        lock.unlock();
        (void)slurm_command(options_, "scancel", {std::to_string(leader)});
        return {ExitKind::Interrupted, 0, std::move(why)};
      }
      if (o.state == "NODE_FAIL" || o.state == "BOOT_FAIL" || o.state == "PREEMPTED")
        return {ExitKind::Interrupted, 0,
                fmt::format("interrupted: Slurm ended job {} on {} ({}{})", leader,
                            o.nodes.empty() ? "its node" : o.nodes, o.state,
                            o.reason.empty() || o.reason == "None" ? "" : ", " + o.reason)};
    }
    return *exited;
  }
  if (!st.view.reachable || !st.have_picture) return running();
  if (it == st.ours.end()) {
    if (submitted_recently) return running();
    // Not the job's doing (slurmctld lost its state, or purged the record): run it again.
    return {ExitKind::Interrupted, 0,
            fmt::format("interrupted: Slurm no longer knows job {} and the worker left no exit "
                        "status",
                        leader)};
  }
  const State::OurJob& o = it->second;
  // Pending although its wrapper started before Slurm's answer was taken (with a margin for
  // clocks): Slurm put it back in its queue. A picture older than the start says nothing.
  bool started_once = false;
  const util::Time picture_wall = st.picture_wall;
  const bool requeued = [&] {
    if (!is_pending(o.state)) return false;
    std::error_code ec;
    const auto mtime = fs::last_write_time(run_dir / kPidFile, ec);
    if (ec) return false;
    started_once = true;
    const auto started =
        std::chrono::time_point_cast<util::Duration>(std::chrono::file_clock::to_sys(mtime));
    return started + std::chrono::seconds(2) < picture_wall;
  }();
  if (requeued) {
    // It ran, and Slurm put it back in its queue (its node went down): this attempt must never
    // run twice, so it is cancelled and trainyard places the job again.
    const std::string why = fmt::format(
        "interrupted: Slurm requeued job {} ({} {}); cancelled it, trainyard places the job again",
        leader, o.state, o.reason);
    if (!st.killed.contains(leader)) {
      st.killed.insert(leader);
      lock.unlock();
      (void)slurm_command(options_, "scancel", {std::to_string(leader)});
    }
    return {ExitKind::Interrupted, 0, why};
  }
  if (is_pending(o.state) && started_once) return running();  // the next picture decides
  if (is_pending(o.state)) {
    const auto now_s =
        static_cast<int64_t>(util::to_seconds(util::WallClock().now().time_since_epoch()));
    const auto waited = static_cast<double>(now_s - o.submit_time);
    const bool timed_out = o.submit_time > 0 && waited >= util::to_seconds(options_.start_timeout);
    if (is_refusal(o.reason) || timed_out) {
      const std::string why = fmt::format(
          "Slurm did not start job {} ({} {}{}); requeued, not counted as a failure", leader,
          o.state, o.reason,
          timed_out ? fmt::format(" for {:.0f} s", util::to_seconds(options_.start_timeout)) : "");
      if (!st.killed.contains(leader)) {
        st.killed.insert(leader);
        lock.unlock();
        (void)slurm_command(options_, "scancel", {std::to_string(leader)});
      }
      return {ExitKind::NotStarted, 0, why};
    }
    return running();
  }
  if (is_active(o.state)) {
    st.ended_seen.erase(leader);
    return running();
  }
  // Ended in Slurm, and this rank left no exit status.
  if (o.state == "NODE_FAIL" || o.state == "BOOT_FAIL")
    return {ExitKind::Interrupted, 0,
            fmt::format("interrupted: node {} failed (Slurm job {} ended {})",
                        o.nodes.empty() ? "?" : o.nodes, leader, o.state)};
  if (o.state == "PREEMPTED")
    return {ExitKind::Interrupted, 0,
            fmt::format("interrupted: Slurm preempted job {} on {}", leader, o.nodes)};
  if (st.killed.contains(leader))
    return {ExitKind::Signaled, SIGKILL, "killed by SIGKILL (scancel)"};
  if (o.state == "CANCELLED")
    return {ExitKind::Cancelled, 0,
            fmt::format("Slurm job {} was cancelled outside trainyard (scancel)", leader)};
  const util::Duration now = util::WallClock::steady_now();
  auto [seen, inserted] = st.ended_seen.try_emplace(leader, now);
  if (now - seen->second < kExitFileGrace) return running();
  return {
      ExitKind::Lost, 0,
      fmt::format("lost: Slurm job {} ended {}{} and this worker left no exit status", leader,
                  o.state, o.reason.empty() || o.reason == "None" ? "" : " (" + o.reason + ")")};
}

util::Status SlurmExecutor::notify(const ProcessRef& p, const fs::path& run_dir, int signal,
                                   std::string_view reason) {
  const int64_t leader = resolve(p, run_dir);
  if (leader == 0)
    return util::unavailable("the worker's Slurm job is not known yet (Slurm does not answer)");
  if (internal::read_exit_status(run_dir))
    return util::not_found(fmt::format("worker of Slurm job {} is no longer running", leader));
  std::string text(reason);
  if (text.empty() || text.back() != '\n') text += '\n';
  TY_RETURN_IF_ERROR(internal::write_file_atomically(run_dir / kNoticeFile, text, false));
  // One scancel reaches every rank of the attempt at once, so every rank's notice file must be
  // there before it: they all say the same (the attempt's reason and deadline).
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("rank-") || entry.path() == run_dir || !entry.is_directory(ec)) continue;
    if (!internal::read_exit_status(entry.path()))
      (void)internal::write_file_atomically(entry.path() / kNoticeFile, text, false);
  }
  const char* word = signal_word(signal);
  if (word == nullptr)
    return util::invalid_argument(fmt::format("signal {} not supported", signal));
  {
    util::MutexLock lock(state_->mu);
    const util::Duration now = util::WallClock::steady_now();
    auto it = state_->signaled.find(leader);
    // One scancel reaches every rank: the other workers' notify() calls only write their files.
    if (it != state_->signaled.end() && now - it->second < std::chrono::seconds(2))
      return util::Status::ok();
    state_->signaled[leader] = now;
  }
  TY_ASSIGN_OR_RETURN(CommandResult r,
                      slurm_command(options_, "scancel",
                                    {fmt::format("--signal={}", word), std::to_string(leader)}));
  if (r.exit_code != 0)
    return util::unavailable(
        fmt::format("scancel --signal={} {}: {}", word, leader, first_line(r.err)));
  return util::Status::ok();
}

util::Status SlurmExecutor::kill(const ProcessRef& p) {
  const int64_t leader = p.batch_job;
  if (leader <= 0) return util::Status::ok();
  {
    util::MutexLock lock(state_->mu);
    if (state_->killed.contains(leader)) return util::Status::ok();
    state_->killed.insert(leader);
  }
  // Slurm's cancel: SIGTERM to every process of the job, SIGKILL after its KillWait.
  TY_ASSIGN_OR_RETURN(CommandResult r,
                      slurm_command(options_, "scancel", {std::to_string(leader)}));
  if (r.exit_code != 0 && r.err.find("already completed") == std::string::npos &&
      r.err.find("Invalid job id") == std::string::npos)
    return util::unavailable(fmt::format("scancel {}: {}", leader, first_line(r.err)));
  return util::Status::ok();
}

std::optional<ProcessRef> SlurmExecutor::resolved(const ProcessRef& p, const fs::path& run_dir) {
  if (p.batch_job != kUnresolvedBatchJob) return std::nullopt;
  const int64_t leader = resolve(p, run_dir);
  if (leader <= 0) return std::nullopt;
  ProcessRef r = p;
  r.batch_job = leader;
  return r;
}

util::Result<ProcessRef> SlurmExecutor::find(const fs::path& run_dir) {
  return internal::read_pid_file(run_dir);
}

util::Result<ProcessRef> SlurmExecutor::find_attempt(util::JobId job, int attempt, int rank,
                                                     const fs::path& run_dir) {
  (void)rank;
  bool have = false;
  bool asked_lately = false;
  {
    util::MutexLock lock(state_->mu);
    have = state_->have_picture && state_->view.reachable;
    asked_lately = util::WallClock::steady_now() - state_->last_failure < options_.poll_interval;
  }
  // One question per poll interval, not one per job, while Slurm does not answer.
  if (!have && !asked_lately) have = refresh_now().is_ok();
  ProcessRef ref;
  if (auto pid = internal::read_pid_file(run_dir); pid.is_ok()) ref = *pid;
  util::MutexLock lock(state_->mu);
  if (!have) {
    // Slurm does not answer (the server restarted while slurmctld is down): the attempt may
    // well run. It is followed by its tag until Slurm answers; never taken for lost now.
    state_->unresolved[run_dir.string()] = {job.value(), attempt};
    ref.batch_job = kUnresolvedBatchJob;
    return ref;
  }
  auto it = state_->by_attempt.find({job.value(), attempt});
  if (it == state_->by_attempt.end())
    return util::not_found(
        fmt::format("Slurm has no job for attempt {} of job {}", attempt, job.value()));
  ref.batch_job = it->second;
  state_->polled_cycle[it->second] = state_->cycle;
  return ref;
}

int64_t SlurmExecutor::resolve(const ProcessRef& p, const fs::path& run_dir) {
  if (p.batch_job != kUnresolvedBatchJob) return p.batch_job;
  util::MutexLock lock(state_->mu);
  auto u = state_->unresolved.find(run_dir.string());
  if (u == state_->unresolved.end()) {
    // After another restart: the run dir names the attempt (jobs/<id>/attempt-<n>/rank-<r>).
    const std::string a = run_dir.parent_path().filename().string();
    const std::string j = run_dir.parent_path().parent_path().filename().string();
    try {
      if (!a.starts_with("attempt-")) return 0;
      u = state_->unresolved
              .emplace(run_dir.string(), std::make_pair(std::stoll(j), std::stoi(a.substr(8))))
              .first;
    } catch (const std::exception&) {
      return 0;
    }
  }
  auto it = state_->by_attempt.find(u->second);
  return it == state_->by_attempt.end() ? 0 : it->second;
}

}  // namespace trainyard::exec
