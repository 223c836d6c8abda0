// Reads the GPU sampler every telemetry.interval and makes the readings useful per job: each
// sample is attributed to the jobs placed on its device and to the jobs whose workers own its
// processes (pid -> session id -> worker wrapper -> job), the last `ring_samples` raw samples of
// each device stay in memory, and one row per device, job and minute goes to the store once a
// minute (through a sink, so the reconcile loop's commits never wait behind every sample).
// It also tells a synthetic sampler what each device runs, so simulated GPUs show believable load.
//
// Thread-safe. mu_ guards the ring, the open minute and the placements; the sampler and the sink
// are called without mu_ held. Lock order: the control plane's lock, then mu_ (the recorder never
// calls into the control plane).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/telemetry_open_minutes.h"
#include "store/store.h"
#include "telemetry/gpu_sampler.h"
#include "util/clock.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

struct JobRef {
  int64_t id = 0;
  std::string name;
  std::string team;
  bool operator==(const JobRef&) const = default;
};

// What the control plane knows about who runs where, pushed after every reconcile cycle.
struct TelemetryPlacements {
  std::map<std::string, std::vector<JobRef>> by_device;  // GPU or MIG uuid -> jobs placed on it
  std::map<int, JobRef> by_session;  // session id (= the worker wrapper's pid) -> its job
  // MIG device uuid -> its GPU's uuid. A job on a MIG device the sampler does not report (no
  // such instance, as on simulated GPUs) is attributed to the GPU instead.
  std::map<std::string, std::string> parent_of;
  // Devices running a job, for synthetic samplers (data_wait_fraction and dtype are filled in
  // here, from the job's step metrics), and where that job's worker on the device writes its
  // metrics.
  std::map<std::string, telemetry::SyntheticLoad> loads;
  std::map<std::string, std::string> metrics_files;
};

struct AttributedSample {
  telemetry::GpuSample sample;
  std::vector<JobRef> jobs;            // placed on the device, plus any found through processes
  std::map<int, int64_t> process_job;  // pid -> job, for the processes that resolved to one
};

// The session id of a process (field 6 of /proc/<pid>/stat); nullopt when it is gone.
std::optional<int> session_of_pid(int pid);

struct TelemetryRecorderOptions {
  util::Duration interval = std::chrono::seconds(1);
  int ring_samples = 3600;
  int retention_days = 30;
  // Writes the rows of closed minutes and deletes rows of minutes before `prune_before`, in one
  // durable transaction. Called from the recorder's thread (or record_once()'s caller).
  std::function<util::Status(const std::vector<store::TelemetryMinute>&, util::Time prune_before)>
      sink;
  std::function<std::optional<int>(int pid)> session_of = session_of_pid;
  // Called after every round with that round's samples (the alert engine), on the recorder's
  // thread and without mu_ held, so it may take the control plane's lock.
  std::function<void(util::Time now, const std::vector<AttributedSample>& round)> on_round;
};

class TelemetryRecorder {
 public:
  TelemetryRecorder(telemetry::GpuSampler& sampler, const util::Clock& clock,
                    TelemetryRecorderOptions options);
  ~TelemetryRecorder();  // stops the thread

  // Starts the thread that calls record_once(now) every interval; stop() ends it and writes the
  // minute in progress, so a restart loses no more than one interval. Both are idempotent.
  void start() TY_EXCLUDES(thread_mu_, mu_);
  void stop() TY_EXCLUDES(thread_mu_, mu_);

  // One round: sample, attribute, keep, and when a minute has closed, write it. Also refreshes
  // the synthetic loads' data_wait_fraction and dtype from the jobs' metrics files every 10 s.
  util::Status record_once(util::Time now) TY_EXCLUDES(mu_);
  // Writes the open minute now (stop() and tests).
  util::Status flush() TY_EXCLUDES(mu_);

  // Replaces who runs where; sets or clears synthetic loads whose device changed hands.
  void set_placements(TelemetryPlacements placements) TY_EXCLUDES(mu_);

  // The newest sample of every device, in the sampler's order.
  std::vector<AttributedSample> latest() const TY_EXCLUDES(mu_);
  // The job's samples still in the ring (any of its devices) at or after `since`, oldest first.
  std::vector<telemetry::GpuSample> recent_for_job(int64_t job, util::Time since) const
      TY_EXCLUDES(mu_);
  util::Duration interval() const { return options_.interval; }

 private:
  AttributedSample attribute(telemetry::GpuSample s, const std::set<std::string>& sampled) const
      TY_REQUIRES(mu_);
  std::vector<store::TelemetryMinute> close_minute() TY_REQUIRES(mu_);
  // Hands the rows to the sink (a store commit): never under mu_.
  util::Status write(std::vector<store::TelemetryMinute> rows, util::Time now) TY_EXCLUDES(mu_);
  void refresh_data_wait() TY_EXCLUDES(mu_);
  void apply_load(const std::string& uuid, const std::optional<telemetry::SyntheticLoad>& load);

  telemetry::GpuSampler& sampler_;
  const util::Clock& clock_;
  const TelemetryRecorderOptions options_;

  mutable util::Mutex mu_;
  TelemetryPlacements placements_ TY_GUARDED_BY(mu_);
  std::map<std::string, telemetry::SyntheticLoad> applied_loads_ TY_GUARDED_BY(mu_);
  std::map<std::string, double> data_wait_ TY_GUARDED_BY(mu_);
  std::map<std::string, std::string> dtype_ TY_GUARDED_BY(mu_);
  std::vector<std::string> order_ TY_GUARDED_BY(mu_);
  std::map<std::string, std::deque<AttributedSample>> ring_ TY_GUARDED_BY(mu_);
  std::optional<util::Time> open_minute_ TY_GUARDED_BY(mu_);
  std::map<std::pair<std::string, int64_t>, MinuteSummary> open_ TY_GUARDED_BY(mu_);
  util::Time next_data_wait_ TY_GUARDED_BY(mu_){};

  util::Mutex thread_mu_ TY_ACQUIRED_BEFORE(mu_);  // serializes start() and stop()
  std::condition_variable cv_;                     // with mu_: stopping_ changed
  bool stopping_ TY_GUARDED_BY(mu_) = false;
  std::thread thread_ TY_GUARDED_BY(thread_mu_);
};

}  // namespace trainyard::server
