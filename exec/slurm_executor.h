// Runs workers on a Slurm cluster: trainyard decides where, Slurm runs the processes. Each
// attempt of a job is one Slurm job (a heterogeneous job with one component per node, each
// pinned to its node with that node's tasks and GPUs, so uneven gangs land exactly), whose
// batch script starts every rank with `srun` under the trainyard wrapper. Run dirs and
// checkpoints live on a directory every node shares, so the wrapper's pid, exit_status and
// output.log files reach the server as they do locally.
//
// The executor asks Slurm for its jobs (`squeue --json`) and nodes (`sinfo --json`) at most once
// per poll interval, in begin_cycle(); poll() answers from that picture and the run dirs.
// Its jobs carry the comment "trainyard:<instance>:<job>:<attempt>", so after a restart they
// are found again by attempt, and any of them that no attempt owns is cancelled (never two
// Slurm jobs for one attempt, no orphans). Thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "exec/slurm_json.h"
#include "util/clock.h"

namespace trainyard::exec {

// ProcessRef::batch_job of a worker adopted after a restart while Slurm did not answer: its Slurm
// job is looked up by its attempt once Slurm answers.
inline constexpr int64_t kUnresolvedBatchJob = -1;

struct SlurmOptions {
  std::string partition;             // -p; empty = Slurm's default partition
  std::filesystem::path shared_dir;  // run dirs and checkpoints; mounted on every node
  std::string slurm_conf;            // SLURM_CONF for the commands; empty = Slurm's default
  std::string bin_dir;               // where sbatch, squeue, ... are; empty = PATH
  std::string wrapper_path;          // the trainyard binary, at this path on every node
  std::string instance;              // tags this server's Slurm jobs (see above)
  util::Duration poll_interval = std::chrono::seconds(2);
  // A Slurm job still pending this long after submission is cancelled and its attempt
  // requeued (NotStarted): trainyard placed it on GPUs Slurm did not give it.
  util::Duration start_timeout = std::chrono::seconds(60);
  util::Duration command_timeout = std::chrono::seconds(20);
  // Per-worker memory when the spec asks for none (MB); 0 = leave it to Slurm's defaults.
  int64_t default_memory_mb = 0;
  std::map<std::string, std::string> gres_types;  // GRES type -> accelerator, over the table
  // How each rank's wrapper reads its node's GPUs for the server's telemetry ("auto": NVML
  // when it loads there; "none"; "sim:..." synthetic GPUs for tests), and how often.
  std::string gpu_sampler = "auto";
  util::Duration sample_interval = std::chrono::seconds(1);
};

// A node as the scheduler needs it, from Slurm's picture.
struct SlurmNodeView {
  std::string name;
  std::string address;      // where ranks on other nodes connect (MASTER_ADDR)
  std::string gres_type;    // Slurm's GPU type ("h100"); "" without GPUs or without a type
  std::string accelerator;  // trainyard's name for it; "" when the type has no mapping
  int gpus = 0;
  int gpus_used_by_others = 0;  // GPUs Slurm gave to jobs this server did not submit
  int64_t cpus = 0;
  int64_t cpus_used_by_others = 0;
  int64_t memory_mb = 0;
  int64_t memory_used_by_others_mb = 0;
  std::vector<std::string> features;
  std::vector<std::string> partitions;
  bool usable = true;   // up, not drained: new work may go there
  std::string state;    // Slurm's words, e.g. "IDLE", "MIXED+DRAIN", "DOWN+NOT_RESPONDING"
  std::string problem;  // why it is not usable, or why its GPUs are not offered
};

struct SlurmClusterView {
  bool reachable = false;
  std::string error;  // why Slurm could not be asked (while !reachable)
  std::vector<SlurmNodeView> nodes;
  util::Duration refreshed{};  // steady time of the last successful refresh
};

class SlurmExecutor final : public Executor {
 public:
  // Checks that the commands exist and the shared dir is a directory; does not need Slurm to
  // be up (the server starts and retries while it is down).
  static util::Result<std::unique_ptr<SlurmExecutor>> open(const SlurmOptions& options);
  ~SlurmExecutor() override;

  void begin_cycle() override;
  bool launches_gangs() const override { return true; }
  util::Result<std::vector<ProcessRef>> launch_gang(const GangLaunch& gang) override;
  util::Result<ProcessRef> launch(const WorkerLaunch& w) override;
  ProcessStatus poll(const ProcessRef& p, const std::filesystem::path& run_dir) override;
  util::Status notify(const ProcessRef& p, const std::filesystem::path& run_dir, int signal,
                      std::string_view reason) override;
  util::Status kill(const ProcessRef& p) override;
  util::Result<ProcessRef> find(const std::filesystem::path& run_dir) override;
  std::optional<ProcessRef> resolved(const ProcessRef& p,
                                     const std::filesystem::path& run_dir) override;
  util::Result<ProcessRef> find_attempt(util::JobId job, int attempt, int rank,
                                        const std::filesystem::path& run_dir) override;

  // The partition's nodes as of the last refresh (begin_cycle() or refresh_now()).
  SlurmClusterView cluster() const;
  // Asks Slurm now, whatever the poll interval.
  util::Status refresh_now();
  const SlurmOptions& options() const { return options_; }

 private:
  explicit SlurmExecutor(SlurmOptions options);
  // The Slurm job of `p`: its own, or for a worker adopted while Slurm did not answer
  // (kUnresolvedBatchJob), the one Slurm lists for its attempt now; 0 while unknown.
  int64_t resolve(const ProcessRef& p, const std::filesystem::path& run_dir);
  struct State;
  SlurmOptions options_;
  std::unique_ptr<State> state_;
};

// The comment that tags a Slurm job of this server's attempt, and its inverse.
std::string slurm_job_comment(const std::string& instance, util::JobId job, int attempt);
struct SlurmJobTag {
  std::string instance;
  int64_t job = 0;
  int attempt = 0;
};
std::optional<SlurmJobTag> parse_slurm_job_comment(std::string_view comment);

// The nodes of an attempt in the order of their first rank (rank 0's node first: the batch
// script runs there), each with its ranks. Slurm refuses two components on one node, so a
// node's workers share one component.
struct SlurmComponent {
  std::string node;
  std::vector<int> ranks;
};
std::vector<SlurmComponent> slurm_components(const GangLaunch& gang);

// The sbatch arguments of an attempt (without the script path): one heterogeneous component per
// node, separated by ":", with that node's tasks, GPUs, CPUs and memory. Exposed for tests.
std::vector<std::string> sbatch_arguments(const SlurmOptions& options, const GangLaunch& gang,
                                          const std::string& comment,
                                          const std::filesystem::path& attempt_dir);

}  // namespace trainyard::exec
