// Teams (queues) with quotas per accelerator model, fair-share weights and the cohort in
// which unused quota may be borrowed. Quotas are in milli-GPUs.
#pragma once

#include <map>
#include <string>

#include "model/quantity.h"

namespace trainyard::model {

// Key for a quota that covers every GPU model.
inline constexpr const char* kAnyGpuModel = "*";

struct TeamQuota {
  GpuMilli nominal{0};          // guaranteed share
  GpuMilli borrowing_limit{0};  // how much more may be borrowed from the cohort; -1 = unlimited
};

struct Team {
  std::string name;
  double weight = 1.0;  // fair-share weight; orders teams, never decides a fit
  std::string cohort;   // teams of one cohort lend each other unused nominal quota
  // Per accelerator model (or kAnyGpuModel). A team with no quota entries is unlimited.
  std::map<std::string, TeamQuota> quotas;
  // Spending limit in USD per budget period (0 = none). Alerts at 80% and 100%; at 100% the
  // team's pending jobs wait and the autoscaler buys nothing for it.
  double budget_usd = 0;
  enum class BudgetPeriod { Day, Month } budget_period = BudgetPeriod::Month;
};

}  // namespace trainyard::model
