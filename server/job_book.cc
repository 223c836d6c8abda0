#include "server/job_book.h"

#include <fmt/format.h>

#include "util/status.h"

namespace trainyard::server {

ActiveJob* JobBook::find(util::JobId id) {
  auto it = active_.find(id);
  return it == active_.end() ? nullptr : &it->second;
}

const ActiveJob* JobBook::find(util::JobId id) const {
  auto it = active_.find(id);
  return it == active_.end() ? nullptr : &it->second;
}

ActiveJob* JobBook::admit(ActiveJob job) {
  see_team(job.rec.team);
  if (cancel_before_admit_.erase(job.rec.id)) return nullptr;
  const util::JobId id = job.rec.id;
  auto [it, inserted] = active_.emplace(id, std::move(job));
  TY_CHECK_MSG(inserted, fmt::format("job {} joined memory twice", id.value()));
  return &it->second;
}

ActiveJobs::iterator JobBook::retire(ActiveJobs::iterator it) {
  ended_[it->first] = it->second.rec.state;
  return active_.erase(it);
}

void JobBook::retire(util::JobId id) {
  auto it = active_.find(id);
  if (it != active_.end()) retire(it);
}

std::optional<model::JobState> JobBook::known_state(util::JobId id) const {
  if (auto it = active_.find(id); it != active_.end()) return it->second.rec.state;
  if (auto it = ended_.find(id); it != ended_.end()) return it->second;
  return std::nullopt;
}

void JobBook::transition(ActiveJob& job, model::JobState to, const std::string& reason,
                         Tx& tx) const {
  const model::JobState from = job.rec.state;
  TY_CHECK_MSG(model::is_transition_allowed(from, to),
               fmt::format("job {}: {} -> {}", job.rec.id.value(), model::job_state_name(from),
                           model::job_state_name(to)));
  const util::Time now = clock_.now();
  const int attempt = job.rec.attempt;
  job.rec.state = to;
  job.rec.reason = reason;
  job.rec.updated = now;
  if (to == model::JobState::Pending && from != model::JobState::Admitted) {
    job.rec.attempt += 1;
    job.rec.queued_since = now;
  }
  // A requeued job holds no GPUs; an ended one keeps where its last attempt ran (show, ls).
  if (to == model::JobState::Pending) job.rec.placement_json.clear();
  if (model::is_terminal(to)) job.rec.finished = now;
  tx.jobs.push_back(job.rec);
  tx.events.push_back({.job = job.rec.id,
                       .at = now,
                       .type = "Transition",
                       .from_state = std::string(model::job_state_name(from)),
                       .to_state = std::string(model::job_state_name(to)),
                       .attempt = attempt,
                       .reason = reason});
}

}  // namespace trainyard::server
