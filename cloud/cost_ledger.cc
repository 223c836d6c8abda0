// Cost ledger: prices node intervals in exact integer units, splits them over GPU shares and
// sums the records into showback reports. See cost_ledger.h for the unit and the contract.
#include "cloud/cost_ledger.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace trainyard::cloud {
namespace {

// 720720 = lcm(1..16): a node of g GPUs (g dividing 720720) splits into g × 1000 milli-GPU
// parts of 720720 / g units each per (micro-USD/h × µs), so every share is an integer.
constexpr int64_t kGpuLcm = 720720;
constexpr CostUnits kNodeFactor = CostUnits{kGpuLcm} * 1000;
// Bound on prices: $10,000 per node-hour is 1e10 micro-USD. A node-year at that price is
// 1e10 × 3.16e13 µs × 7.2e8 ≈ 2.3e32 units, so __int128 (max 1.7e38) holds the bill of about
// 7e5 node-years at the highest price, far beyond any ledger's life.
constexpr int64_t kMaxPriceMicroUsd = 10'000'000'000;
constexpr double kMicrosPerHour = 3.6e9;

__extension__ typedef unsigned __int128 UnsignedUnits;

std::string to_string(CostUnits v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  UnsignedUnits u = negative ? -static_cast<UnsignedUnits>(v) : static_cast<UnsignedUnits>(v);
  std::string s;
  while (u > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (negative) s.push_back('-');
  std::reverse(s.begin(), s.end());
  return s;
}

// Units for `gpu_milli` of a `gpus`-GPU node over `dt` at `price_micro` per node-hour.
CostUnits share_units(int64_t price_micro, util::Duration dt, int gpus, int64_t gpu_milli) {
  return CostUnits{price_micro} * dt.count() * (kGpuLcm / gpus) * gpu_milli;
}

void add_lost(CostTotals& t, const CostRecord& r) {
  t.lost_gpu_hours += static_cast<double>(r.lost_gpu_time.count()) / kMicrosPerHour;
  t.lost_cost_usd += cost_units_to_usd(r.lost_cost);
  if (r.interruption) ++t.interruptions;
}

// Adds the part of an interval record that falls inside the report's bounds.
void add_held(CostTotals& t, double usd, double gpu_hours, bool idle) {
  t.cost_usd += usd;
  t.gpu_hours += gpu_hours;
  if (idle) {
    t.idle_gpu_hours += gpu_hours;
    t.idle_cost_usd += usd;
  }
}

}  // namespace

double cost_units_to_usd(CostUnits u) {
  // Split before converting so the integer part of the dollars keeps full precision.
  CostUnits whole = u / kCostUnitsPerUsd;
  CostUnits rest = u % kCostUnitsPerUsd;
  return static_cast<double>(whole) +
         static_cast<double>(rest) / static_cast<double>(kCostUnitsPerUsd);
}

util::Status CostLedger::node_up(const std::string& node, const std::string& pool, int gpus,
                                 double usd_per_hour, util::Time t) {
  if (node.empty()) return util::invalid_argument("cost ledger: node_up needs a node name");
  if (open_.contains(node)) {
    return util::Status(util::StatusCode::AlreadyExists,
                        "cost ledger: node '" + node + "' is already up; call node_down first");
  }
  if (gpus < 0 || (gpus > 0 && kGpuLcm % gpus != 0)) {
    return util::invalid_argument("cost ledger: node '" + node + "' has " + std::to_string(gpus) +
                                  " GPUs; the ledger supports 0 to 16 (a divisor of 720720)");
  }
  if (!std::isfinite(usd_per_hour) || usd_per_hour < 0 ||
      usd_per_hour * 1e6 > static_cast<double>(kMaxPriceMicroUsd)) {
    return util::invalid_argument("cost ledger: node '" + node + "' price " +
                                  std::to_string(usd_per_hour) +
                                  " USD/h is out of range; give 0 to 10000 USD per node-hour");
  }
  OpenNode n;
  n.pool = pool;
  n.gpus = gpus;
  n.price_micro_usd = std::llround(usd_per_hour * 1e6);
  n.since = t;
  gone_.erase(node);
  open_.emplace(node, std::move(n));
  return util::Status::ok();
}

void CostLedger::close(const std::string& name, OpenNode& n, util::Time t) {
  util::Duration dt = t - n.since;
  if (dt <= util::Duration::zero()) return;
  CostUnits total = CostUnits{n.price_micro_usd} * dt.count() * kNodeFactor;
  billed_ += total;
  CostUnits held = 0;
  int64_t held_milli = 0;
  for (const CostShare& s : n.shares) {
    CostRecord r{.start = n.since,
                 .end = t,
                 .node = name,
                 .pool = n.pool,
                 .job = s.job,
                 .team = s.team,
                 .gpu_milli = s.gpu_milli,
                 .cost = share_units(n.price_micro_usd, dt, n.gpus, s.gpu_milli)};
    held += r.cost;
    held_milli += s.gpu_milli;
    records_.push_back(std::move(r));
  }
  int64_t idle_milli = int64_t{n.gpus} * 1000 - held_milli;
  // The idle record takes the remainder, so a node's records always add up to its bill (a
  // 0-GPU node is all idle).
  CostUnits idle = total - held;
  if (idle_milli > 0 || idle != 0) {
    records_.push_back(CostRecord{.start = n.since,
                                  .end = t,
                                  .node = name,
                                  .pool = n.pool,
                                  .gpu_milli = idle_milli,
                                  .cost = idle});
  }
  n.since = t;
}

util::Status CostLedger::node_down(const std::string& node, util::Time t) {
  auto it = open_.find(node);
  if (it == open_.end()) {
    return util::not_found("cost ledger: node '" + node + "' is not up; node_down needs node_up");
  }
  if (t < it->second.since) {
    return util::invalid_argument("cost ledger: node '" + node +
                                  "' goes down before its last change; times must not go back");
  }
  close(node, it->second, t);
  it->second.shares.clear();
  gone_[node] = std::move(it->second);
  open_.erase(it);
  return util::Status::ok();
}

util::Status CostLedger::set_shares(const std::string& node, std::vector<CostShare> shares,
                                    util::Time t) {
  auto it = open_.find(node);
  if (it == open_.end()) {
    return util::not_found("cost ledger: node '" + node + "' is not up; call node_up first");
  }
  OpenNode& n = it->second;
  if (t < n.since) {
    return util::invalid_argument("cost ledger: shares of node '" + node +
                                  "' change before its last change; times must not go back");
  }
  int64_t sum = 0;
  for (const CostShare& s : shares) {
    if (s.job.empty() || s.gpu_milli <= 0) {
      return util::invalid_argument("cost ledger: a share on node '" + node +
                                    "' needs a job name and a positive gpu_milli");
    }
    sum += s.gpu_milli;
  }
  if (sum > int64_t{n.gpus} * 1000) {
    return util::invalid_argument("cost ledger: shares on node '" + node + "' sum to " +
                                  std::to_string(sum) + " milli-GPUs, more than its " +
                                  std::to_string(n.gpus) + " GPUs; release a job first");
  }
  close(node, n, t);
  n.since = t;
  n.shares = std::move(shares);
  return util::Status::ok();
}

util::Status CostLedger::record_lost_work(const std::string& node, const std::string& job,
                                          const std::string& team, int64_t gpu_milli,
                                          util::Duration lost, util::Time t, bool interruption) {
  const OpenNode* n = nullptr;
  if (auto it = open_.find(node); it != open_.end()) n = &it->second;
  if (auto it = gone_.find(node); n == nullptr && it != gone_.end()) n = &it->second;
  if (n == nullptr) {
    return util::not_found("cost ledger: lost work on unknown node '" + node +
                           "'; the node must have been up");
  }
  if (gpu_milli < 0 || gpu_milli > int64_t{n->gpus} * 1000 || lost < util::Duration::zero()) {
    return util::invalid_argument("cost ledger: lost work of job '" + job + "' on node '" + node +
                                  "' needs 0 to " + std::to_string(n->gpus * 1000) +
                                  " milli-GPUs and a non-negative duration");
  }
  CostRecord r{.start = t, .end = t, .node = node, .pool = n->pool, .job = job, .team = team};
  r.gpu_milli = gpu_milli;
  r.lost_gpu_time = util::Duration(lost.count() * gpu_milli / 1000);
  r.lost_cost = n->gpus == 0 ? 0 : share_units(n->price_micro_usd, lost, n->gpus, gpu_milli);
  r.interruption = interruption;
  records_.push_back(std::move(r));
  return util::Status::ok();
}

void CostLedger::advance(util::Time t) {
  for (auto& [name, n] : open_) {
    if (t > n.since) close(name, n, t);
  }
}

CostReport CostLedger::report(util::Time since, util::Time until) const {
  CostReport rep;
  rep.since = since;
  rep.until = until;
  for (const CostRecord& r : records_) {
    if (r.start == r.end) {  // lost work: a point in time
      if (r.start < since || r.start >= until) continue;
      add_lost(rep.total, r);
      add_lost(rep.jobs[r.job], r);
      if (!r.team.empty()) add_lost(rep.teams[r.team], r);
      add_lost(rep.pools[r.pool], r);
      continue;
    }
    util::Time from = std::max(r.start, since);
    util::Time to = std::min(r.end, until);
    if (to <= from) continue;
    double fraction =
        static_cast<double>((to - from).count()) / static_cast<double>((r.end - r.start).count());
    double usd = cost_units_to_usd(r.cost) * fraction;
    double gpu_hours = static_cast<double>(r.gpu_milli) / 1000.0 *
                       static_cast<double>((to - from).count()) / kMicrosPerHour;
    bool idle = r.job.empty();
    add_held(rep.total, usd, gpu_hours, idle);
    add_held(rep.pools[r.pool], usd, gpu_hours, idle);
    if (!idle) {
      add_held(rep.jobs[r.job], usd, gpu_hours, false);
      add_held(rep.teams[r.team], usd, gpu_hours, false);
    }
  }
  return rep;
}

util::Status CostLedger::check_balanced() const {
  CostUnits sum = 0;
  for (const CostRecord& r : records_) sum += r.cost;
  if (sum != billed_) {
    return util::internal_error("cost ledger unbalanced: records sum to " + to_string(sum) +
                                " units, bills to " + to_string(billed_) + " (difference " +
                                to_string(sum - billed_) + ")");
  }
  return util::Status::ok();
}

std::vector<CostRecord> CostLedger::records_since(size_t from) const {
  if (from >= records_.size()) return {};
  return {records_.begin() + static_cast<std::ptrdiff_t>(from), records_.end()};
}

void CostLedger::restore(std::vector<CostRecord> records) {
  for (CostRecord& r : records) {
    billed_ += r.cost;
    records_.push_back(std::move(r));
  }
}

}  // namespace trainyard::cloud
