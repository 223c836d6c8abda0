// What the driver-equivalence tests share: a scripted workload, the simulator's trace for it,
// and the loop that plays it on the server (a fake executor, a virtual clock) second by second,
// so that each test compares the two drivers on its own setting (a fixed cluster, a cloud pool).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/job.h"
#include "server/control_plane.h"
#include "sim/workload.h"
#include "tests/server/fake_executor.h"
#include "util/clock.h"

namespace trainyard::drive_test {

struct ScriptedJob {
  std::string name;
  int submit_s = 0;
  int duration_s = 0;
  int workers = 1;
  int gpus = 1;  // per worker
  std::string priority_class = "normal";
  bool preemptible = true;
  std::string team = "a";
};

// When a job first started and finished, in seconds from the start of the script, and how
// often it was stopped (preempted, requeued or interrupted) before it finished.
struct Timeline {
  int64_t first_start = -1;
  int64_t finish = -1;
  int stops = 0;
  bool operator==(const Timeline&) const = default;
};

inline int priority_of(const std::string& cls) {
  if (cls == "high") return model::kPriorityHigh;
  if (cls == "low") return model::kPriorityLow;
  return model::kPriorityNormal;
}

// The script as the simulator's workload: workers of 1 core and 1 GiB, no checkpoints; with
// `limit_slack_s`, each job's time limit is its run time plus that.
inline sim::Workload scripted_workload(const std::vector<ScriptedJob>& script,
                                       std::optional<int> limit_slack_s) {
  sim::Workload w;
  for (const ScriptedJob& s : script) {
    sim::TraceJob j;
    j.name = s.name;
    j.submit = util::from_seconds(s.submit_s);
    j.duration = util::seconds(s.duration_s);
    j.spec.team = s.team;
    j.spec.workers = s.workers;
    j.spec.worker.gpus = s.gpus;
    j.spec.worker.cpu = model::CpuMilli(1000);
    j.spec.worker.memory = model::gib(1);
    j.spec.priority_class = s.priority_class;
    j.spec.priority = priority_of(s.priority_class);
    j.spec.preemptible = s.preemptible;
    j.has_priority = true;
    if (limit_slack_s) {
      j.spec.runtime_limit = util::seconds(s.duration_s + *limit_slack_s);
      j.has_runtime_limit = true;
    }
    w.jobs.push_back(std::move(j));
  }
  sim::TraceOptions t;
  t.checkpoint_interval = util::Duration(0);
  t.runtime_limit = sim::RuntimeLimitMode::None;
  sim::finalize(w, t);
  return w;
}

// Plays `script` on `plane` second by second: each job is submitted at its second (as
// `manifest` writes it); its workers exit 0 once an attempt has run its duration (no
// checkpoints: a stopped job starts over, as simulated); a noticed worker saves for `grace_s`
// and exits 75 then, when the simulator stops the job. Every second is reconciled until a cycle
// starts and stops nothing more, as the simulator handles every event of one time before it
// moves on. Returns each job's timeline (empty after a failure, which it reports), and its job
// id in `ids`.
inline std::vector<Timeline> serve_script(
    server::ControlPlane& plane, server::FakeExecutor& exec, util::VirtualClock& clock,
    const std::vector<ScriptedJob>& script,
    const std::function<std::string(const ScriptedJob&)>& manifest, int grace_s,
    std::vector<int64_t>* ids) {
  const util::Time t0 = clock.now();
  const server::Principal admin{.admin = true, .name = "test"};
  std::vector<Timeline> out(script.size());
  ids->assign(script.size(), -1);
  std::map<int64_t, size_t> index_of;          // job id -> script index
  std::map<size_t, int64_t> attempt_start;     // script index -> start of its running attempt
  std::map<size_t, std::vector<int>> pids_of;  // script index -> its running attempt's workers
  std::map<int, size_t> job_of_pid;
  std::map<int, int64_t> stop_at;  // noticed pid -> when it exits 75
  size_t launches_seen = 0, notices_seen = 0, finished = 0;
  const int64_t horizon = 20'000;
  for (int64_t t = 0; t <= horizon && finished < script.size(); ++t) {
    clock.advance_to(t0 + util::seconds(t));
    for (size_t i = 0; i < script.size(); ++i) {
      if (script[i].submit_s != t) continue;
      auto r = plane.submit(manifest(script[i]), "job.yaml", admin);
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      if (!r.is_ok()) return {};
      (*ids)[i] = (*r)["id"].get<int64_t>();
      index_of[(*ids)[i]] = i;
    }
    std::vector<size_t> done;  // jobs whose workers exit 0 now
    for (auto& [i, start] : attempt_start) {
      if (t - start < script[i].duration_s) continue;
      for (int pid : pids_of[i]) exec.exit(pid, 0);
      done.push_back(i);
    }
    for (size_t i : done) attempt_start.erase(i);
    for (auto it = stop_at.begin(); it != stop_at.end();) {
      if (it->second > t) {
        ++it;
        continue;
      }
      const auto [pid, i] = std::pair{it->first, job_of_pid.at(it->first)};
      if (exec.status[pid].kind == exec::ExitKind::Running) exec.exit(pid, 75);
      attempt_start.erase(i);
      it = stop_at.erase(it);
    }
    for (int round = 0; round < 4; ++round) {
      EXPECT_TRUE(plane.reconcile_once().is_ok());
      const size_t before = launches_seen + notices_seen;
      for (; launches_seen < exec.launches.size(); ++launches_seen) {
        const exec::WorkerLaunch& l = exec.launches[launches_seen];
        const size_t i = index_of.at(l.job.value());
        const int pid = 1000 + static_cast<int>(launches_seen);
        if (l.rank == 0) {
          attempt_start[i] = t;
          pids_of[i].clear();
          if (out[i].first_start < 0) out[i].first_start = t;
        }
        pids_of[i].push_back(pid);
        job_of_pid[pid] = i;
      }
      for (; notices_seen < exec.notices.size(); ++notices_seen)
        stop_at.emplace(exec.notices[notices_seen].first, t + grace_s);
      if (round > 0 && launches_seen + notices_seen == before) break;
    }
    for (size_t i : done) {
      auto job = plane.get_job(util::JobId((*ids)[i]), admin);
      EXPECT_TRUE(job.is_ok()) << job.status().to_string();
      if (!job.is_ok()) return {};
      EXPECT_EQ((*job)["state"], "succeeded") << script[i].name << " at t=" << t;
      out[i].finish = t;
      ++finished;
      for (const auto& a : (*job)["attempts"]) {
        const auto& o = a["outcome"];
        out[i].stops += o == "preempted" || o == "requeued" || o == "interrupted" ? 1 : 0;
      }
    }
  }
  EXPECT_EQ(finished, script.size()) << "the server left jobs unfinished by t=" << horizon;
  return out;
}

}  // namespace trainyard::drive_test
