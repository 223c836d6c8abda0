// Starts, signals, watches and kills job worker processes. The server decides what runs where;
// an Executor only carries it out and reports what happened. Implementations are thread-safe.
//
// Each worker runs under a small wrapper (`trainyard __exec-wrapper`, see wrapper.h) in its own
// session and process group. The wrapper writes `pid` when it starts and `exit_status` when the
// worker ends into the worker's run dir, and copies the worker's stdout+stderr into
// `output.log` up to a size cap. So a worker outlives a server crash, and a restarted server can
// re-adopt it (find()) and learn its real outcome (poll()) without being its parent.
//
// With credentials (a root server), the wrapper stays root and only the worker drops to the
// team's user: the files the server trusts (pid, exit_status, output.log) live in a run dir
// the worker can read but not write; the worker writes in its own `work` and `tmp` dirs.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exec/credentials.h"
#include "util/ids.h"
#include "util/status.h"

namespace trainyard::exec {

// Files in a worker's run dir.
inline constexpr const char* kPidFile = "pid";  // "<pid> <start_ticks>\n"
// "exited <code>\n" or "signaled <sig>\n", written by the wrapper when the worker ends.
inline constexpr const char* kExitStatusFile = "exit_status";
inline constexpr const char* kLogFile = "output.log";
// Metrics the worker appends, one JSON object per line; given to it as TRAINYARD_METRICS_FILE
// (docs/job-contract.md).
inline constexpr const char* kMetricsFile = "metrics.jsonl";
inline constexpr const char* kNoticeFile = "preempt_notice";  // written when notice is given
// The newest readings of the worker's GPUs, written by its wrapper under a batch system
// (docs/slurm.md): {"node", "time_ms", "samples": [GpuSample as JSON, in CUDA_VISIBLE_DEVICES
// order]}.
inline constexpr const char* kGpuSamplesFile = "gpu-samples.json";
// The worker's own directories in its run dir: its default working directory (and HOME when its
// user has none), and its TMPDIR. Owned by the worker's user; everything else there is root's.
inline constexpr const char* kWorkDir = "work";
inline constexpr const char* kTmpDir = "tmp";

struct WorkerLaunch {
  util::JobId job;
  int attempt = 1;
  int rank = 0;  // gang: WORLD_SIZE / RANK / LOCAL_RANK / MASTER_ADDR / MASTER_PORT are set
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::vector<std::string> argv;  // command + args; run directly, never through a shell
  std::vector<std::pair<std::string, std::string>> env;  // user env; trainyard's vars win
  std::string working_dir;  // empty = run_dir/kWorkDir; never created (it must exist)
  // CUDA_VISIBLE_DEVICES entries (UUIDs). None: CUDA_VISIBLE_DEVICES="" (CUDA shows no GPU).
  std::vector<std::string> visible_devices;
  // TRAINYARD_CHECKPOINT_DIR. Created when missing by the worker itself, after it has become
  // its user, so a spec cannot make root create (or own) a directory anywhere.
  std::string checkpoint_dir;
  double mtbf_seconds = 0;  // TRAINYARD_MTBF_SECONDS when > 0
  // Created if missing, with its work and tmp dirs and an empty metrics file. With `run_as` its
  // parent must already let the worker's group through (the control plane prepares it).
  std::filesystem::path run_dir;
  int64_t log_cap_bytes = 64 << 20;
  // The user the worker runs as; nullopt = this process's own user. Requires root.
  std::optional<Credentials> run_as;
};

// A running worker. start_ticks (field 22 of /proc/<pid>/stat) guards against pid reuse. A
// worker run by a batch system (Slurm) is named by its batch job; its pid, on another machine,
// is informational only.
struct ProcessRef {
  int pid = 0;
  int64_t start_ticks = 0;
  int64_t batch_job = 0;  // the Slurm job id that runs the worker; 0 for a local process
  bool known() const { return pid != 0 || batch_job != 0; }
  bool operator==(const ProcessRef&) const = default;
};

enum class ExitKind {
  Running,   // still alive
  Exited,    // code = exit code
  Signaled,  // code = signal number
  Lost,      // gone and no exit status was recorded (killed with its wrapper, or vanished)
  // The executor could not start it now (a batch system refused it, or kept it waiting past
  // its start timeout): the attempt never ran, so it is requeued without counting a failure.
  NotStarted,
  // Its node failed or was taken away (Slurm NODE_FAIL, a node set down): not the job's fault;
  // requeued like a preemption.
  Interrupted,
  // Cancelled outside trainyard (an administrator's scancel): the job ends cancelled.
  Cancelled,
};

struct ProcessStatus {
  ExitKind kind = ExitKind::Running;
  int code = 0;
  std::string detail;  // human-readable, e.g. "exited with code 3", "killed by SIGKILL"
};

// One worker of an attempt that an executor starts as a whole (launch_gang()): where it runs and
// what it needs there, for a batch system that allocates those itself.
struct GangWorker {
  WorkerLaunch launch;
  std::string node;  // the node the scheduler placed it on
  int gpus = 0;      // whole GPUs on that node
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
};

struct GangLaunch {
  std::string name;                 // the job's name, for the batch system's listings
  std::vector<GangWorker> workers;  // in rank order
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Called once at the start of every reconcile cycle, before poll(): an executor that asks a
  // batch system about its jobs does it here, once for all workers.
  virtual void begin_cycle() {}
  // Whether an attempt's workers are started together by launch_gang() (one batch job per
  // attempt) instead of one launch() each.
  virtual bool launches_gangs() const { return false; }
  // Starts every worker of an attempt as one unit; refs in rank order. Only where
  // launches_gangs().
  virtual util::Result<std::vector<ProcessRef>> launch_gang(const GangLaunch& gang) {
    (void)gang;
    return util::failed_precondition("this executor starts workers one by one");
  }
  // A better name for `p` once the executor knows one (a worker adopted while its batch system
  // did not answer, whose batch job is known now); nullopt when `p` stays as it is.
  virtual std::optional<ProcessRef> resolved(const ProcessRef& p,
                                             const std::filesystem::path& run_dir) {
    (void)p;
    (void)run_dir;
    return std::nullopt;
  }
  // find() for the worker `rank` of `attempt` of `job`: an executor that can ask its batch
  // system for the attempt's job does so when the run dir has no pid file yet.
  virtual util::Result<ProcessRef> find_attempt(util::JobId job, int attempt, int rank,
                                                const std::filesystem::path& run_dir) {
    (void)job;
    (void)attempt;
    (void)rank;
    return find(run_dir);
  }
  virtual util::Result<ProcessRef> launch(const WorkerLaunch& w) = 0;
  // Reaps it when it is our child; otherwise checks liveness and reads run_dir/exit_status.
  virtual ProcessStatus poll(const ProcessRef& p, const std::filesystem::path& run_dir) = 0;
  // Writes run_dir/preempt_notice (with `reason`) and sends `signal` to the worker's group.
  // NotFound (and no notice written) when the worker is no longer running.
  virtual util::Status notify(const ProcessRef& p, const std::filesystem::path& run_dir, int signal,
                              std::string_view reason) = 0;
  // SIGKILL to the whole group. Succeeds when it is already gone.
  virtual util::Status kill(const ProcessRef& p) = 0;
  // Reads run_dir/pid (for a worker launched just before a crash, whose pid never reached the
  // store). NotFound when there is no pid file.
  virtual util::Result<ProcessRef> find(const std::filesystem::path& run_dir) = 0;
};
using ExecutorPtr = std::unique_ptr<Executor>;

struct LocalExecutorOptions {
  std::string wrapper_path;  // the trainyard binary (runs `<wrapper_path> __exec-wrapper ...`)
};
ExecutorPtr make_local_executor(const LocalExecutorOptions& options);

}  // namespace trainyard::exec
