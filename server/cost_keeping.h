// The control plane's cost part: the shared cost book (drive/cost_book.h: the ledger, who holds
// each billed node, idle clocks) on the server's clock, which it never lets go back; the
// records not yet in the store; the team budgets checked against the spend of their period
// (they feed the scheduler and the budget alerts). ControlPlane says who holds what (from its
// placements) and what a stopped attempt lost; GET /api/v1/cost reads the reports.
// Not thread-safe: a field of ControlPlane, guarded by its mutex.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "drive/cost_book.h"
#include "model/team.h"
#include "store/store.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::server {

class AlertService;

class CostKeeping {
 public:
  // At open: the stored records back. Times before the newest of them are booked at it.
  void restore(const std::vector<store::CostRecordRow>& rows);
  // Records not yet stored, as store rows (each returned once).
  std::vector<store::CostRecordRow> take_unstored();

  util::Status node_up(const std::string& node, const std::string& pool, int gpus,
                       double usd_per_hour, util::Time t);
  util::Status node_down(const std::string& node, util::Time t);
  // Who holds each node from `t` (a billed node absent from `held` holds nothing).
  void set_holders(const std::map<std::string, std::vector<cloud::CostShare>>& held, util::Time t);
  util::Status record_lost_work(const std::string& node, const std::string& job,
                                const std::string& team, int64_t milli, util::Duration lost,
                                util::Time t, bool interruption);
  bool billed(const std::string& node) const { return book_.billed(node); }
  std::optional<util::Time> idle_since(const std::string& node) const {
    return book_.idle_since(node);
  }

  // Open intervals closed at `now` (now and then, so a crash loses little billing), and every
  // few seconds the budgets of `teams` against their period's spend, told to `alerts` if any.
  void tick(util::Time now, const std::vector<model::Team>& teams, AlertService* alerts);
  // What is left of the team's budget at the last check; nullopt for a team without one.
  std::optional<double> budget_left(const std::string& team) const;

  // The ledger with every open interval closed at `now`, for reports.
  const cloud::CostLedger& ledger_at(util::Time now);

 private:
  util::Time time(util::Time t);  // never before a time the ledger was given

  drive::CostBook book_;
  util::Time time_{};
  size_t stored_ = 0;                          // records before this index are in the store
  std::map<std::string, double> budget_left_;  // by team with a budget
  util::Time budget_checked_{};
  util::Time advanced_{};
};

}  // namespace trainyard::server
