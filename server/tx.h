// Store writes gathered during one reconcile phase or API call and committed together
// (ControlPlane::commit() hands them to the group committer in one transaction).
#pragma once

#include <vector>

#include "store/store.h"

namespace trainyard::server {

struct Tx {
  std::vector<store::JobRecord> jobs;
  std::vector<store::EventRecord> events;
  std::vector<store::AttemptRecord> attempts;
  std::vector<store::CostRecordRow> cost;

  bool empty() const { return jobs.empty() && events.empty() && attempts.empty() && cost.empty(); }
  util::Status write(store::Store& s) const {
    for (const auto& j : jobs) TY_RETURN_IF_ERROR(s.update_job(j));
    for (const auto& a : attempts) TY_RETURN_IF_ERROR(s.put_attempt(a));
    TY_RETURN_IF_ERROR(s.put_cost_records(cost));
    for (const auto& e : events) {
      auto seq = s.append_event(e);
      if (!seq.is_ok()) return seq.status();
    }
    return util::Status::ok();
  }
};

}  // namespace trainyard::server
