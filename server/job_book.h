// The jobs the server holds in memory: every job that has not ended (ActiveJob, by id), the
// final state of ended ones that pending jobs may depend on, cancels that reached a job before
// its submission did, and the teams seen. A job's state changes only through transition(),
// which queues its record and a Transition event in the caller's Tx; an ended job leaves
// through retire(). Guarded by the control plane's mutex (it has no lock of its own).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "model/job_state.h"
#include "server/active_job.h"
#include "server/tx.h"
#include "util/clock.h"

namespace trainyard::server {

using ActiveJobs = std::map<util::JobId, ActiveJob>;

class JobBook {
 public:
  explicit JobBook(const util::Clock& clock) : clock_(clock) {}

  ActiveJobs& active() { return active_; }
  const ActiveJobs& active() const { return active_; }
  ActiveJob* find(util::JobId id);
  const ActiveJob* find(util::JobId id) const;

  // A job joins memory (recovered at open, or committed by a submission), with its team.
  // nullptr, and nothing added, when a cancel reached it first (cancel_before_admit()).
  ActiveJob* admit(ActiveJob job);
  // A cancel committed for a job whose submission has not reached memory yet: admit() drops it.
  void cancel_before_admit(util::JobId id) { cancel_before_admit_.insert(id); }
  // A job that ended leaves memory; its final state stays known for the jobs that depend on it.
  ActiveJobs::iterator retire(ActiveJobs::iterator it);
  void retire(util::JobId id);
  // The final state of an ended job that is not in memory (read from the store, or ended
  // before it joined).
  void remember_ended(util::JobId id, model::JobState state) { ended_[id] = state; }
  // A job's state as memory knows it (not ended, or ended and remembered); nullopt otherwise.
  std::optional<model::JobState> known_state(util::JobId id) const;

  // Every team a job was seen from since open (queues() lists them even when idle).
  const std::set<std::string>& teams() const { return teams_; }
  void see_team(const std::string& team) { teams_.insert(team); }

  // Moves `job` to `to` (an allowed transition; checked): reason and time set, a new attempt
  // when it goes back to Pending, its placement dropped then, its end time when terminal. The
  // record and a Transition event go into `tx`.
  void transition(ActiveJob& job, model::JobState to, const std::string& reason, Tx& tx) const;

 private:
  const util::Clock& clock_;
  ActiveJobs active_;
  std::map<util::JobId, model::JobState> ended_;  // cache for dependencies
  std::set<util::JobId> cancel_before_admit_;
  std::set<std::string> teams_;
};

}  // namespace trainyard::server
