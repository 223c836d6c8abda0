// Cost keeping, once for both drivers (the simulator's cloud runs and the server's ledger): who
// holds each node goes into the cost ledger when it changes (job, team and milli-GPUs, by the
// share rule of cost_share.h); a node left without jobs starts its idle clock, from which the
// autoscaler's idle timeout counts; the work a stopped attempt lost is priced on the nodes it
// held, even after they went down. The driver gives the times (the server clamps them so its
// ledger never goes back; the simulator's are its virtual clock's).
// Not thread-safe: each driver owns one and guards it as it guards its other state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cloud/cost_ledger.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::drive {

class CostBook {
 public:
  // The node is billed from `t` at `usd_per_hour`; it is idle from `t` until a job holds it.
  util::Status node_up(const std::string& node, const std::string& pool, int gpus,
                       double usd_per_hour, util::Time t);
  // Billing stops at `t`. Lost work on the node can still be recorded afterwards.
  util::Status node_down(const std::string& node, util::Time t);

  // The jobs holding `node` from `t`. Nothing is booked when they did not change; a node whose
  // last job left starts its idle clock at `t`.
  util::Status set_holders(const std::string& node, std::vector<cloud::CostShare> holders,
                           util::Time t);
  // set_holders() for every node billed now, with `held`'s holders (none for a node absent
  // from it), in node name order. A node of `held` that is not billed is ignored.
  void set_all_holders(const std::map<std::string, std::vector<cloud::CostShare>>& held,
                       util::Time t);
  // Since when the node has held no job; nullopt while a job holds it or when it is not billed.
  std::optional<util::Time> idle_since(const std::string& node) const;
  bool billed(const std::string& node) const { return nodes_.contains(node); }

  // Work `job` lost on `node` when its attempt stopped at `t`, priced for its share.
  util::Status record_lost_work(const std::string& node, const std::string& job,
                                const std::string& team, int64_t milli, util::Duration lost,
                                util::Time t, bool interruption);

  cloud::CostLedger& ledger() { return ledger_; }
  const cloud::CostLedger& ledger() const { return ledger_; }

 private:
  struct Node {
    std::vector<cloud::CostShare> holders;
    util::Time idle_since = util::Time::max();  // max: held
  };
  cloud::CostLedger ledger_;
  std::map<std::string, Node> nodes_;  // billed now
};

}  // namespace trainyard::drive
