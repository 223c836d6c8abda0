#include "drive/cost_book.h"

#include "util/log.h"

namespace trainyard::drive {

util::Status CostBook::node_up(const std::string& node, const std::string& pool, int gpus,
                               double usd_per_hour, util::Time t) {
  TY_RETURN_IF_ERROR(ledger_.node_up(node, pool, gpus, usd_per_hour, t));
  nodes_[node] = Node{.idle_since = t};
  return util::Status::ok();
}

util::Status CostBook::node_down(const std::string& node, util::Time t) {
  nodes_.erase(node);
  return ledger_.node_down(node, t);
}

util::Status CostBook::set_holders(const std::string& node, std::vector<cloud::CostShare> holders,
                                   util::Time t) {
  const auto it = nodes_.find(node);
  if (it == nodes_.end()) return util::not_found("node " + node + " is not billed");
  Node& n = it->second;
  if (holders == n.holders) return util::Status::ok();
  TY_RETURN_IF_ERROR(ledger_.set_shares(node, holders, t));
  if (!holders.empty()) {
    n.idle_since = util::Time::max();
  } else if (!n.holders.empty()) {
    n.idle_since = t;
  }
  n.holders = std::move(holders);
  return util::Status::ok();
}

void CostBook::set_all_holders(const std::map<std::string, std::vector<cloud::CostShare>>& held,
                               util::Time t) {
  static const std::vector<cloud::CostShare> kNone;
  for (const auto& [name, n] : nodes_) {
    const auto it = held.find(name);
    if (auto st = set_holders(name, it == held.end() ? kNone : it->second, t); !st.is_ok())
      TY_LOG_WARN("cost: node {}: {}", name, st.message());
  }
}

std::optional<util::Time> CostBook::idle_since(const std::string& node) const {
  const auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.idle_since == util::Time::max()) return std::nullopt;
  return it->second.idle_since;
}

util::Status CostBook::record_lost_work(const std::string& node, const std::string& job,
                                        const std::string& team, int64_t milli, util::Duration lost,
                                        util::Time t, bool interruption) {
  return ledger_.record_lost_work(node, job, team, milli, lost, t, interruption);
}

}  // namespace trainyard::drive
