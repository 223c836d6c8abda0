#include "model/job_state.h"

#include <array>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

constexpr std::array<JobState, 8> kAll = {
    JobState::Pending,    JobState::Admitted,  JobState::Placed, JobState::Running,
    JobState::Preempting, JobState::Succeeded, JobState::Failed, JobState::Cancelled};

struct Edge {
  JobState from;
  JobState to;
};
constexpr Edge kAllowed[] = {
    {JobState::Pending, JobState::Admitted},   {JobState::Pending, JobState::Cancelled},
    {JobState::Pending, JobState::Failed},  // a dependency failed: it can never start
    {JobState::Admitted, JobState::Placed},    {JobState::Admitted, JobState::Pending},
    {JobState::Admitted, JobState::Cancelled}, {JobState::Placed, JobState::Running},
    {JobState::Placed, JobState::Pending},     {JobState::Placed, JobState::Failed},
    {JobState::Placed, JobState::Cancelled},   {JobState::Running, JobState::Succeeded},
    {JobState::Running, JobState::Failed},     {JobState::Running, JobState::Cancelled},
    {JobState::Running, JobState::Preempting}, {JobState::Running, JobState::Pending},
    {JobState::Preempting, JobState::Pending}, {JobState::Preempting, JobState::Succeeded},
    {JobState::Preempting, JobState::Failed},  {JobState::Preempting, JobState::Cancelled},
};

}  // namespace

std::string_view job_state_name(JobState s) {
  switch (s) {
    case JobState::Pending:
      return "pending";
    case JobState::Admitted:
      return "admitted";
    case JobState::Placed:
      return "placed";
    case JobState::Running:
      return "running";
    case JobState::Preempting:
      return "preempting";
    case JobState::Succeeded:
      return "succeeded";
    case JobState::Failed:
      return "failed";
    case JobState::Cancelled:
      return "cancelled";
  }
  return "unknown";
}

util::Result<JobState> parse_job_state(std::string_view text) {
  for (JobState s : kAll) {
    if (job_state_name(s) == text) return s;
  }
  return util::invalid_argument(fmt::format(
      "unknown job state '{}'; use pending, admitted, placed, running, preempting, succeeded, "
      "failed or cancelled",
      text));
}

bool is_terminal(JobState s) {
  return s == JobState::Succeeded || s == JobState::Failed || s == JobState::Cancelled;
}

bool is_transition_allowed(JobState from, JobState to) {
  for (const auto& e : kAllowed) {
    if (e.from == from && e.to == to) return true;
  }
  return false;
}

util::Status JobLifecycle::transition(JobState to, util::Time at, std::string reason) {
  if (!is_transition_allowed(state_, to)) {
    return util::failed_precondition(
        fmt::format("a job cannot go from {} to {}", job_state_name(state_), job_state_name(to)));
  }
  if (reason.empty()) {
    return util::invalid_argument("every job transition needs a reason");
  }
  if (to == JobState::Pending && (state_ == JobState::Running || state_ == JobState::Preempting)) {
    ++attempt_;
  }
  history_.push_back({at, state_, to, std::move(reason)});
  state_ = to;
  return util::Status::ok();
}

}  // namespace trainyard::model
