// The job state machine. Every transition carries a reason; transitions not in the table
// are refused with FailedPrecondition, so drivers cannot move a job into an impossible state.
//
//   pending -> admitted -> placed -> running -> succeeded | failed | cancelled
//   running -> preempting -> pending (attempt + 1)
//   running -> pending (retry after a failure or a lost process, attempt + 1)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::model {

enum class JobState {
  Pending,
  Admitted,
  Placed,
  Running,
  Preempting,
  Succeeded,
  Failed,
  Cancelled
};

std::string_view job_state_name(JobState s);
util::Result<JobState> parse_job_state(std::string_view text);
bool is_terminal(JobState s);
bool is_transition_allowed(JobState from, JobState to);

struct JobTransition {
  util::Time at;
  JobState from;
  JobState to;
  std::string reason;
};

// A job's current state, attempt number and the history of transitions that led there.
class JobLifecycle {
 public:
  JobState state() const { return state_; }
  int attempt() const { return attempt_; }
  const std::vector<JobTransition>& history() const { return history_; }

  // Moves to `to`, recording `reason`; refused when the table does not allow it or the reason
  // is empty. Re-entering Pending from Running or Preempting starts the next attempt.
  util::Status transition(JobState to, util::Time at, std::string reason);

 private:
  JobState state_ = JobState::Pending;
  int attempt_ = 1;
  std::vector<JobTransition> history_;
};

}  // namespace trainyard::model
