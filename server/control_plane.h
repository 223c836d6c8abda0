// The control plane: accepts jobs, keeps them durable, and runs a reconcile loop that turns
// observed state into a sched::Snapshot, asks sched::plan() what to do, and carries the plan
// out through the executor. Every state change is committed to the store before it is
// acknowledged or acted on, so a restarted server picks up where the last one stopped:
// running workers are re-adopted, lost ones are retried. Time comes only from the Clock.
//
// The state is kept in parts, each with one job: the jobs (JobBook jobs_), the nodes and who
// is placed where (NodeBook nodes_), cost (CostKeeping cost_), the cloud fleet (Fleet), start
// estimates (StartEstimator); the reconcile cycle (reconcile.cc) reads as numbered phases.
// Thread-safe: API calls come from the HTTP threads, reconcile_once() from the loop thread.
// mu_ guards those parts; tokens (TokenCache) and step progress (ProgressCache) have their own
// locks, so authenticating a request never waits for a cycle; the GroupCommitter serializes
// writes to the store; reads of finished jobs use a second, read-only store connection guarded
// by reader_mu_ (taken after mu_ when both are held). Checked by clang's -Wthread-safety: fields
// say TY_GUARDED_BY, helpers that run under mu_ say TY_REQUIRES(mu_), entry points that take it
// TY_EXCLUDES(mu_).
#pragma once

#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "exec/slurm_executor.h"
#include "model/api_views.h"
#include "model/label_selector.h"
#include "model/node.h"
#include "sched/decayed_usage.h"
#include "sched/plan.h"
#include "server/active_job.h"
#include "server/alerts_service.h"
#include "server/auth.h"
#include "server/batch_gpu_sampler.h"
#include "server/config.h"
#include "server/control_plane_options.h"
#include "server/cost_keeping.h"
#include "server/group_commit.h"
#include "server/job_book.h"
#include "server/local_node.h"
#include "server/metrics.h"
#include "server/node_book.h"
#include "server/progress_cache.h"
#include "server/start_estimates.h"
#include "server/telemetry_recorder.h"
#include "server/worker_identity.h"
#include "store/store.h"
#include "telemetry/gpu_sampler.h"
#include "util/clock.h"
#include "util/thread_annotations.h"

namespace trainyard::drive {
struct FleetEvent;
}  // namespace trainyard::drive

namespace trainyard::server {

class Fleet;

class ControlPlane {
 public:
  static util::Result<std::unique_ptr<ControlPlane>> open(const ControlPlaneOptions& options,
                                                          telemetry::GpuSampler& sampler,
                                                          exec::Executor& executor,
                                                          const util::Clock& clock);
  // Same with the nodes given (benchmarks and tests of many nodes; the server uses the sampler).
  static util::Result<std::unique_ptr<ControlPlane>> open(const ControlPlaneOptions& options,
                                                          std::vector<LocalNode> nodes,
                                                          exec::Executor& executor,
                                                          const util::Clock& clock);
  // The GPUs of this machine as nodes: one per GPU model (a node has a single model).
  static std::vector<LocalNode> nodes_from_devices(const std::vector<telemetry::GpuDevice>& d);
  ~ControlPlane();
  // Samples `sampler` every telemetry interval for /metrics, top, alerts and the doctor (open()
  // with a sampler does this itself; a plane opened with nodes calls it for its batch nodes).
  void record_telemetry_from(telemetry::GpuSampler& sampler);

  // Tokens. An empty token gives an anonymous principal (admin) only when `allow_anonymous`.
  util::Result<Principal> authenticate(const std::string& token, bool allow_anonymous) const
      TY_EXCLUDES(mu_);
  util::Result<nlohmann::json> create_token(const std::string& team, const std::string& name,
                                            bool admin, const Principal& who);
  // Creates the first admin token if none exists and writes it to `path` (mode 0600).
  util::Status ensure_admin_token(const std::filesystem::path& path);
  // Whether a request without a token from a loopback peer running as `peer_uid` may act as
  // admin (where the server allows anonymous requests at all): never for a job's worker, nor for
  // a peer of unknown uid while workers are isolated, since jobs reach loopback too.
  bool anonymous_allowed_from(std::optional<uint32_t> peer_uid) const;
  const WorkerIdentities& worker_identities() const { return *identities_; }

  // A non-empty `idempotency_key` (the Idempotency-Key header) makes a retried submission
  // return the job the first one created instead of a second job (docs/api.md).
  util::Result<nlohmann::json> submit(std::string_view body, std::string_view file,
                                      const Principal& who, std::string_view idempotency_key = {})
      TY_EXCLUDES(mu_);
  util::Result<nlohmann::json> cancel(util::JobId id, const Principal& who) TY_EXCLUDES(mu_);
  // Job controls (job_control.cc). hold: a pending job is not offered to the scheduler until
  // release; refused for a job that runs or ended. update: {"priorityClass": "high"} for a
  // pending job, used from the next cycle. cancel_array: every unfinished task of the array
  // whose first task is `array_id`. Each commits before it returns.
  util::Result<nlohmann::json> hold(util::JobId id, const Principal& who) TY_EXCLUDES(mu_);
  util::Result<nlohmann::json> release(util::JobId id, const Principal& who) TY_EXCLUDES(mu_);
  util::Result<nlohmann::json> update(util::JobId id, std::string_view body, const Principal& who)
      TY_EXCLUDES(mu_);
  util::Result<nlohmann::json> cancel_array(util::JobId array_id, const Principal& who)
      TY_EXCLUDES(mu_);
  util::Result<nlohmann::json> get_job(util::JobId id, const Principal& who) TY_EXCLUDES(mu_);
  // A page of jobs in the filter's sort: items, hasMore, nextCursor/prevCursor (and nextBefore
  // for the default order); `total` (every matching job) unless !with_total.
  util::Result<nlohmann::json> list_jobs(store::JobFilter filter, const Principal& who,
                                         bool with_total = true) TY_EXCLUDES(mu_);
  // list_jobs() of the jobs whose metadata.labels match `selector` (job_label_queries.cc).
  util::Result<nlohmann::json> list_jobs_matching(store::JobFilter filter,
                                                  const model::LabelSelector& selector,
                                                  const Principal& who) TY_EXCLUDES(mu_);
  util::Result<nlohmann::json> job_events(util::JobId id, int64_t after_seq, const Principal& who)
      TY_EXCLUDES(mu_);
  // The job's checkpoints (newest first), each verified against its manifest.
  util::Result<nlohmann::json> job_checkpoints(util::JobId id, const Principal& who)
      TY_EXCLUDES(mu_);
  util::Result<LogChunk> job_log(util::JobId id, int attempt, int rank, int64_t offset,
                                 int64_t max_bytes, const Principal& who) TY_EXCLUDES(mu_);
  // The offset job_log() reads from for `window` (job_log_window.cc).
  util::Result<int64_t> job_log_start(util::JobId id, int attempt, int rank,
                                      const LogWindow& window, const Principal& who)
      TY_EXCLUDES(mu_);
  // This machine's nodes and the fleet's (cloud pools: provisioning, ready, draining), with
  // pool, zone, state and price (cluster_views.cc).
  nlohmann::json nodes() const TY_EXCLUDES(mu_);
  nlohmann::json queues(const Principal& who) const TY_EXCLUDES(mu_);
  // GET /api/v1/cost (cost_views.cc): the ledger's report over [since, until) — ISO 8601 times
  // or "-24h"-style offsets from now; since defaults to the start of this UTC month, until to
  // now. An admin sees everything (`team` filters jobs and teams; total and pools stay the whole
  // bill); a team token sees only its team's jobs and row, with total = its team's totals.
  util::Result<nlohmann::json> cost(const std::string& team, const std::string& since,
                                    const std::string& until, const Principal& who)
      TY_EXCLUDES(mu_);
  // GET /api/v1/cost/series (cost_series_views.cc): the same ledger bucketed by UTC hour or
  // day ("hour", "day", or "" to pick by the span): cost per team and per pool, idle and lost
  // cost per bucket, scoped as cost() is.
  util::Result<nlohmann::json> cost_series(const std::string& team, const std::string& since,
                                           const std::string& until, const std::string& step,
                                           const Principal& who) TY_EXCLUDES(mu_);
  // POST /api/v1/nodes/{name}/interrupt (admin; a test and demo aid): simcloud reclaims the node
  // after its notice lead, as a spot interruption would (capacity_loop.cc).
  util::Result<nlohmann::json> interrupt_node(const std::string& name, const Principal& who)
      TY_EXCLUDES(mu_);

  // Telemetry (telemetry_views.cc). Only a plane opened with a sampler records telemetry; one
  // opened with nodes answers with no GPUs and no samples.
  // The newest sample of every GPU and MIG device with the jobs on it (GET /api/v1/gpus).
  nlohmann::json gpus(const Principal& who) const TY_EXCLUDES(mu_);
  // GET /api/v1/jobs/{id}/telemetry: per-minute rows over the job's life, its newest
  // `max_samples` raw samples, and a summary (average and p95 utilization, peak memory, ...).
  util::Result<nlohmann::json> job_telemetry(util::JobId id, int max_samples, const Principal& who)
      TY_EXCLUDES(mu_);
  // Every GPU sample of the job over its life (all attempts and devices), oldest first: one
  // sample per device and stored minute, whose fields are that minute's averages (temperature and
  // power too; throttle_reasons is the minute's OR, ecc_uncorrected_volatile its maximum), then
  // the raw samples still in memory that are newer than the last stored minute. Identity fields
  // (index, name, model) are filled from the device's latest sample when it is still present.
  // Empty for a job that never held a GPU; NotFound for an unknown job. No permission check:
  // callers inside the server (the job doctor) decide who may see the result.
  util::Result<std::vector<telemetry::GpuSample>> job_samples(util::JobId id) TY_EXCLUDES(mu_);
  // GET /api/v1/jobs/{id}/doctor (doctor_views.cc): telemetry::diagnose() over job_samples()
  // and the step metrics of every attempt, as telemetry::to_json(Diagnosis) plus name/team/state.
  util::Result<nlohmann::json> job_doctor(util::JobId id, const Principal& who) TY_EXCLUDES(mu_);
  // GET /api/v1/jobs/{id}/metrics (job_metrics_views.cc): rank 0's step metrics over every
  // attempt as chart columns of at most `max_points` points (server/job_metrics.h), read with
  // the job's permissions.
  util::Result<nlohmann::json> job_metrics(util::JobId id, int max_points, const Principal& who)
      TY_EXCLUDES(mu_);
  // The Prometheus exposition for GET /metrics (format 0.0.4; see docs/metrics.md).
  std::string metrics_text() const TY_EXCLUDES(mu_);
  ServerMetrics& metrics() { return metrics_; }
  // GET /api/v1/alerts (alerts_views.cc): firing alerts, newest first, and with
  // `include_resolved` the recently resolved ones; a team token sees its team's job and budget
  // alerts and the device alerts.
  nlohmann::json alerts(bool include_resolved, const Principal& who) const TY_EXCLUDES(mu_);
  // GET /api/v1/summary (summary_views.cc): the web UI overview's numbers (GPUs in use, free,
  // allocated but idle; jobs by state; the queue's waits; firing alerts; spend today and the
  // budgets); a team token gets its team's jobs, queue, alerts, spend and budget.
  nlohmann::json summary(const Principal& who) TY_EXCLUDES(mu_);
  TelemetryRecorder* telemetry_recorder() { return recorder_.get(); }

  // One reconcile cycle: observe workers, finish/stop jobs, plan, preempt, start.
  util::Status reconcile_once() TY_EXCLUDES(mu_);
  // Runs reconcile_once() every config.reconcile_interval (or sooner after wake()) until stop(),
  // and the telemetry recorder's thread (if any) for as long.
  void run_loop() TY_EXCLUDES(mu_);
  void wake() TY_EXCLUDES(mu_);
  void stop() TY_EXCLUDES(mu_);

  // This machine's nodes and the cloud nodes that joined, as of now.
  std::vector<LocalNode> local_nodes() const TY_EXCLUDES(mu_);

 private:
  ControlPlane(const ControlPlaneOptions& options, exec::Executor& executor,
               const util::Clock& clock);
  // hold() and release(): sets a job's hold and commits it with a Held/Released event
  // (job_control.cc).
  util::Result<nlohmann::json> set_held(util::JobId id, const Principal& who, bool held)
      TY_EXCLUDES(mu_);
  util::Status recover() TY_REQUIRES(mu_);
  // A job that was running when the server stopped (recovery.cc): its workers found again, or
  // the attempt requeued or stopped for what cannot be found.
  util::Status readopt(ActiveJob& job, Tx& tx) TY_REQUIRES(mu_);
  int find_workers(ActiveJob& job, std::map<int, WorkerProcess> by_rank) TY_REQUIRES(mu_);
  void requeue_never_launched(ActiveJob& job, Tx& tx) TY_REQUIRES(mu_);
  util::Status resume_stop(ActiveJob& job) TY_REQUIRES(mu_);
  void stop_for_lost_workers(ActiveJob& job) TY_REQUIRES(mu_);
  void kill_worker(const WorkerProcess& w);

  // Slurm's nodes into nodes_ (slurm_nodes.cc), under mu_: new ones join, known ones get their
  // state, capacity and what jobs outside trainyard hold there; a node Slurm no longer lists is
  // kept (placements refer to it) but takes no work.
  void sync_batch_nodes() TY_REQUIRES(mu_);
  void describe_batch_node(LocalNode& n, const exec::SlurmNodeView& v) TY_REQUIRES(mu_);
  // After a restart while Slurm is unreachable: a stored placement's nodes, as placeholders that
  // take no work until Slurm describes them.
  void ensure_placeholder_nodes(const std::string& placement_json) TY_REQUIRES(mu_);
  std::filesystem::path work_dir() const;

  // Reconcile phases (reconcile.cc); each runs under mu_ and queues store writes in `tx`.
  void observe_workers(Tx& tx) TY_REQUIRES(mu_);
  // Ending an attempt whose workers are all gone: its time and lost work counted, its record
  // written, and the job moved on by why it stopped (the outcome is returned).
  void finish_attempt(ActiveJob& job, Tx& tx) TY_REQUIRES(mu_);
  void account_attempt(ActiveJob& job, util::Time now, Tx& tx) TY_REQUIRES(mu_);
  std::string end_attempt(ActiveJob& job, StopCause cause, const std::string& stop_reason,
                          int exit_code, Tx& tx) TY_REQUIRES(mu_);
  std::string end_failed_attempt(ActiveJob& job, util::Time now, Tx& tx) TY_REQUIRES(mu_);
  // An attempt the executor refused or the server's restart cut short: requeued, not a failure.
  void requeue_unstarted(ActiveJob& job, util::Time now, Tx& tx) TY_REQUIRES(mu_);
  // A worker the batch system ended for a reason that is not the job's (never started, node
  // failed, cancelled by an administrator): stops the attempt accordingly; false otherwise.
  bool stop_for_outside_end(ActiveJob& job, const WorkerProcess& w, Tx& tx) TY_REQUIRES(mu_);
  void fail_broken_dependencies(Tx& tx) TY_REQUIRES(mu_);
  void apply_plan(Tx& tx) TY_REQUIRES(mu_);
  util::Status commit(Tx& tx);
  // `deadline`: when the workers are killed (an interruption's reclaim time); default: now plus
  // the job's grace period.
  void begin_stop(ActiveJob& job, StopCause cause, const std::string& reason, Tx& tx,
                  std::optional<util::Time> deadline = std::nullopt) TY_REQUIRES(mu_);
  void transition(ActiveJob& job, model::JobState to, const std::string& reason, Tx& tx)
      TY_REQUIRES(mu_) {
    jobs_.transition(job, to, reason, tx);
  }
  void start_job(ActiveJob& job, Placement placement, Tx& tx) TY_REQUIRES(mu_);

  // The scheduler's view of this cycle (plan_apply.cc): pools, nodes and teams, then every job
  // not backing off or held back; and the plan carried out.
  sched::Snapshot build_snapshot(std::vector<util::JobId>& backing_off) TY_REQUIRES(mu_);
  void add_capacity(sched::Snapshot& snap) TY_REQUIRES(mu_);
  sched::SnapshotJob snapshot_job(const sched::Snapshot& snap, ActiveJob& job) TY_REQUIRES(mu_);
  void apply_preemptions(const sched::Plan& plan, Tx& tx) TY_REQUIRES(mu_);
  void launch_started(ActiveJob& job, Tx& tx) TY_REQUIRES(mu_);

  // The capacity loop (capacity_loop.cc), under mu_. Provider events: ready nodes join nodes_,
  // interruption notices stop the jobs on the node with the provider's deadline, gone nodes
  // leave the ledger (and nodes_ once no job holds them).
  void observe_fleet(Tx& tx) TY_REQUIRES(mu_);
  void fleet_node_ready(const drive::FleetEvent& e) TY_REQUIRES(mu_);
  void fleet_node_noticed(const drive::FleetEvent& e, Tx& tx) TY_REQUIRES(mu_);
  void fleet_node_gone(const drive::FleetEvent& e, Tx& tx) TY_REQUIRES(mu_);
  void remove_gone_nodes() TY_REQUIRES(mu_);
  // The plan's scale-ups and releases (after its starts, which may use a released node's GPUs).
  void apply_capacity(const sched::Plan& plan, const sched::Snapshot& snap, Tx& tx)
      TY_REQUIRES(mu_);
  // What cost_ is told (cost_keeping.cc): the jobs on every node, from the placements; the run
  // time a stopped attempt lost (since its newest checkpoint, or its start), which is returned;
  // at open, the stored records and this machine's GPUs billed from now.
  void update_cost_shares() TY_REQUIRES(mu_);
  util::Duration record_lost_work(const ActiveJob& job, util::Time now) TY_REQUIRES(mu_);
  util::Status restore_cost() TY_REQUIRES(mu_);
  std::optional<model::JobState> dependency_state(util::JobId dep) TY_REQUIRES(mu_);
  std::string processes_json(const ActiveJob& job) const;
  // Launching an attempt's workers (launch.cc): the dirs its user must reach, each rank's
  // launch, and for a batch system one gang of all of them.
  util::Status launch_workers(ActiveJob& job) TY_REQUIRES(mu_);
  util::Status prepare_launch_dirs(const ActiveJob& job, const exec::Credentials* creds) const;
  exec::WorkerLaunch worker_launch(const ActiveJob& job, int rank, int world,
                                   const std::string& master_addr, int port,
                                   const std::string& run_dir) const TY_REQUIRES(mu_);
  util::Status launch_gang(ActiveJob& job, const exec::GangLaunch& batch, util::Status st);
  util::Result<Placement> placement_from_json(const std::string& json) const TY_REQUIRES(mu_);
  std::string placement_to_json(const Placement& placement) const TY_REQUIRES(mu_);

  // Helpers shared by the API and the loop.
  util::Result<store::JobRecord> load_record(util::JobId id) TY_EXCLUDES(mu_);
  util::Status check_fits_somewhere(const model::JobSpec& spec) const TY_EXCLUDES(mu_);
  util::Result<std::vector<util::JobId>> resolve_dependencies(const model::JobManifest& m,
                                                              const std::string& team)
      TY_EXCLUDES(mu_);
  std::filesystem::path run_dir(util::JobId id, int attempt, int rank) const;
  std::string checkpoint_dir_for(util::JobId id, const std::string& spec_dir) const;
  std::string checkpoint_dir(const ActiveJob& job) const;
  // Whose permissions apply when reading the team's files (checkpoints, metrics): the team's
  // worker user when workers are isolated, else nullopt (read as this process).
  std::optional<exec::Credentials> file_identity(const std::string& team) const;
  // When the job's newest checkpoint was committed, read with the job's permissions.
  std::optional<util::Time> newest_checkpoint_time(const ActiveJob& job) const;
  // Steps per second of the job's current attempt, from rank 0's newest step metric
  // (step_time_s), read as the job's user; nullopt when it reported none.
  std::optional<double> measured_steps_per_second(const ActiveJob& job) const;
  // Expected seconds between interruptions of a preemptible job, passed to workers as
  // TRAINYARD_MTBF_SECONDS: (prior + observed run time) / (1 + observed interruptions), i.e. the
  // configured prior counts as one interruption's worth of evidence and observations take over.
  double mtbf_estimate_seconds() const TY_REQUIRES(mu_);
  std::string checkpoint_dir_of(const store::JobRecord& rec) const;
  void add_progress(model::JobDetailView& d, const store::JobRecord& rec,
                    const std::string& checkpoint) const;
  // A running job's step, throughput and ETA as the API's `progress` object (progress_views.cc),
  // from the cache; call without mu_ held (it may read the job's metrics file).
  std::optional<model::JobProgressView> progress_view(int64_t id, int attempt,
                                                      const std::string& team) TY_EXCLUDES(mu_);
  // Sets job.progress when there is one.
  void add_step_progress(model::JobView& job) TY_EXCLUDES(mu_);
  // The job object of the API (queries.cc); `active` is the job in memory, if it is there.
  model::JobView job_view(const ActiveJob* active, const store::JobRecord& rec) const;
  nlohmann::json job_json(const ActiveJob* active, const store::JobRecord& rec) const {
    return model::to_json(job_view(active, rec));
  }
  // One page of GET /api/v1/jobs (queries.cc); list_jobs() writes it.
  util::Result<model::JobListView> list_page(store::JobFilter filter, const Principal& who,
                                             bool with_total) TY_EXCLUDES(mu_);
  // The UUID a worker sees for an assignment (GPU or MIG instance); "" when it has none.
  std::string device_uuid(const Placed& p) const TY_REQUIRES(mu_);
  // Who runs where, for the telemetry recorder; called at the end of each reconcile cycle.
  TelemetryPlacements telemetry_placements() const TY_REQUIRES(mu_);
  std::vector<BatchWorkerGpus> batch_worker_gpus() const TY_REQUIRES(mu_);
  struct JobSeries {
    std::vector<store::TelemetryMinute> minutes;
    std::vector<telemetry::GpuSample> recent;  // raw samples after the last stored minute
  };
  util::Result<JobSeries> job_series(util::JobId id);
  model::UtilizationView utilization_summary(const JobSeries& series) const;
  // Appends each alert transition to the events of the jobs it is about, in one commit
  // (alerts_views.cc). Called from the telemetry recorder's thread.
  void append_alert_events(const std::vector<telemetry::AlertTransition>& transitions);

  ControlPlaneOptions options_;
  exec::Executor& executor_;
  const util::Clock& clock_;
  // This machine's nodes (fixed), batch nodes as Slurm lists them, cloud nodes as they become
  // ready. A cloud node leaves when it is gone and no job holds it (remove_gone_nodes());
  // placements name nodes by id, so nothing else changes then.
  NodeBook nodes_ TY_GUARDED_BY(mu_);
  int lock_fd_ = -1;                              // flock on state_dir/server.lock, held while open
  std::unique_ptr<WorkerIdentities> identities_;  // fixed after open()

  store::StorePtr store_;  // writer; used only through committer_
  std::unique_ptr<GroupCommitter> committer_;
  mutable util::Mutex reader_mu_ TY_ACQUIRED_AFTER(mu_);  // taken under mu_ too, never the reverse
  store::StorePtr reader_ TY_PT_GUARDED_BY(reader_mu_);
  // Jobs' step progress, keyed by their metrics files' size and mtime (own lock).
  std::unique_ptr<ProgressCache> progress_ = std::make_unique<ProgressCache>();

  mutable util::Mutex mu_;
  JobBook jobs_ TY_GUARDED_BY(mu_){clock_};  // the jobs not ended, and what ended
  mutable TokenCache tokens_;                // own lock
  std::condition_variable loop_cv_;          // with mu_: wake_ or stopping_ became true
  bool wake_ TY_GUARDED_BY(mu_) = false;
  bool stopping_ TY_GUARDED_BY(mu_) = false;
  // Fair share with decay (policy.fair.usage_half_life > 0): past usage per team name, in
  // the order first seen. Kept in memory; a restart starts the history afresh.
  std::optional<sched::DecayedUsage> usage_ TY_GUARDED_BY(mu_);
  std::vector<std::string> usage_teams_ TY_GUARDED_BY(mu_);
  void account_usage(sched::Snapshot& snap) TY_REQUIRES(mu_);
  uint64_t cycle_ TY_GUARDED_BY(mu_) = 0;  // plan() seed
  // Wait reasons, expected starts.
  StartEstimator start_estimator_ TY_GUARDED_BY(mu_);
  // Run time of preemptible jobs' attempts and how many of them were interrupted (preempted or
  // lost), since this server started. Feeds mtbf_estimate_seconds().
  util::Duration preemptible_run_time_ TY_GUARDED_BY(mu_){0};
  int64_t interruptions_ TY_GUARDED_BY(mu_) = 0;

  // Capacity and cost. fleet_ is null without cloud pools; set by open(), its Fleet is guarded.
  std::unique_ptr<Fleet> fleet_ TY_PT_GUARDED_BY(mu_);
  std::vector<model::Pool> cloud_pools_;  // resolved shapes, fixed after open(): for submit's check
  int64_t next_node_id_ TY_GUARDED_BY(mu_) = 1;
  CostKeeping cost_ TY_GUARDED_BY(mu_);  // the ledger, holders, idle clocks, budgets

  ServerMetrics metrics_;
  std::string hostname_;
  // Fed by the recorder's rounds (null when alerts are disabled or there is no sampler).
  std::unique_ptr<AlertService> alerts_;
  // Declared after committer_, whose sink it uses, so that it is destroyed (and flushed) first.
  std::unique_ptr<TelemetryRecorder> recorder_;
};

}  // namespace trainyard::server
