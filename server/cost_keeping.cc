// Cost keeping in the control plane: who holds each node goes into the cost ledger whenever it
// changes, lost work is priced when a stopped attempt ends, new records are committed with the
// cycle's other writes, and team budgets are checked against the spend of their period (feeding
// the scheduler and the budget alerts). GET /api/v1/cost reports the ledger (cost_views.cc).
#include <algorithm>
#include <chrono>
#include <map>

#include "drive/cost_share.h"
#include "exec/checkpoint_reader.h"
#include "model/accelerator.h"
#include "server/control_plane.h"
#include "server/cost_keeping.h"
#include "server/cost_series.h"
#include "server/tx.h"
#include "util/log.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

// Budgets are checked this often: a report sums every record, and spend moves slowly.
constexpr util::Duration kBudgetCheck = std::chrono::seconds(5);
constexpr util::Duration kLedgerAdvance = std::chrono::minutes(1);

std::string units_text(cloud::CostUnits u) {
  if (u == 0) return "0";
  const bool negative = u < 0;
  std::string out;
  while (u != 0) {
    const int digit = static_cast<int>(u % 10);
    out.push_back(static_cast<char>('0' + (negative ? -digit : digit)));
    u /= 10;
  }
  if (negative) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

cloud::CostUnits units_from(const std::string& text) {
  cloud::CostUnits u = 0;
  const bool negative = !text.empty() && text[0] == '-';
  for (size_t i = negative ? 1 : 0; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') break;
    u = u * 10 + (text[i] - '0');
  }
  return negative ? -u : u;
}

store::CostRecordRow to_row(const cloud::CostRecord& r) {
  return {.start = r.start,
          .end = r.end,
          .node = r.node,
          .pool = r.pool,
          .job = r.job,
          .team = r.team,
          .gpu_milli = r.gpu_milli,
          .cost_units = units_text(r.cost),
          .lost_gpu_time = r.lost_gpu_time,
          .lost_cost_units = units_text(r.lost_cost),
          .interruption = r.interruption};
}

}  // namespace

util::Time period_start(util::Time now, model::Team::BudgetPeriod period) {
  using namespace std::chrono;
  const sys_days day = floor<days>(now);
  if (period == model::Team::BudgetPeriod::Day) return util::Time(day);
  const year_month_day ymd{day};
  return util::Time(sys_days(ymd.year() / ymd.month() / 1));
}

void ControlPlane::update_cost_shares() {
  std::map<std::string, std::map<std::string, cloud::CostShare>> held;  // node -> job -> share
  for (const auto& [id, job] : jobs_.active()) {
    for (const Placed& a : job.placement) {
      const LocalNode* node = nodes_.find(a.node);
      if (node == nullptr) continue;
      const int64_t milli =
          drive::held_milli(model::find_accelerator(node->node.gpu_model), a.at(0));
      if (milli <= 0) continue;
      auto& share = held[node->node.name][std::to_string(id.value())];
      share.job = std::to_string(id.value());
      share.team = job.rec.team;
      share.gpu_milli += milli;
    }
  }
  std::map<std::string, std::vector<cloud::CostShare>> holders;
  for (auto& [name, jobs] : held)
    for (auto& [job, share] : jobs) holders[name].push_back(std::move(share));
  cost_.set_holders(holders, clock_.now());
}

util::Duration ControlPlane::record_lost_work(const ActiveJob& job, util::Time now) {
  const auto newest = newest_checkpoint_time(job);
  const util::Time from =
      newest && *newest > job.rec.started ? std::min(*newest, now) : job.rec.started;
  const util::Duration lost = std::max(util::Duration{0}, now - from);
  std::map<int, int64_t> milli_by_node;  // by position: the book's order
  for (const Placed& a : job.placement) {
    const int idx = nodes_.position(a.node);
    if (idx >= 0)
      milli_by_node[idx] +=
          drive::held_milli(model::find_accelerator(nodes_[idx].node.gpu_model), a.at(idx));
  }
  for (const auto& [idx, milli] : milli_by_node) {
    const std::string& node = nodes_[idx].node.name;
    if (milli <= 0 || (!cost_.billed(node) && !nodes_[idx].cloud)) continue;
    if (auto st = cost_.record_lost_work(node, std::to_string(job.rec.id.value()), job.rec.team,
                                         milli, lost, now, !job.interrupted_node.empty());
        !st.is_ok())
      TY_LOG_WARN("cost: lost work of job {}: {}", job.rec.id.value(), st.message());
  }
  return lost;
}

util::Status ControlPlane::restore_cost() {
  std::vector<store::CostRecordRow> rows;
  {
    util::MutexLock lock(reader_mu_);
    TY_ASSIGN_OR_RETURN(rows, reader_->cost_records());
  }
  cost_.restore(rows);
  // This machine's GPUs are billed from now at their pool's price (none for "local": 0).
  for (const auto& n : nodes_) {
    if (n.node.gpu_count == 0) continue;
    TY_RETURN_IF_ERROR(
        cost_.node_up(n.node.name, n.node.pool, n.node.gpu_count, n.price_per_hour, clock_.now()));
  }
  return util::Status::ok();
}

// ---- CostKeeping --------------------------------------------------------------------------

util::Time CostKeeping::time(util::Time t) {
  time_ = std::max(time_, t);
  return time_;
}

void CostKeeping::restore(const std::vector<store::CostRecordRow>& rows) {
  std::vector<cloud::CostRecord> records;
  records.reserve(rows.size());
  for (const auto& r : rows) {
    records.push_back({.start = r.start,
                       .end = r.end,
                       .node = r.node,
                       .pool = r.pool,
                       .job = r.job,
                       .team = r.team,
                       .gpu_milli = r.gpu_milli,
                       .cost = units_from(r.cost_units),
                       .lost_gpu_time = r.lost_gpu_time,
                       .lost_cost = units_from(r.lost_cost_units),
                       .interruption = r.interruption});
    time_ = std::max(time_, r.end);
  }
  book_.ledger().restore(std::move(records));
  stored_ = book_.ledger().records().size();
}

std::vector<store::CostRecordRow> CostKeeping::take_unstored() {
  std::vector<store::CostRecordRow> rows;
  for (const auto& r : book_.ledger().records_since(stored_)) rows.push_back(to_row(r));
  stored_ = book_.ledger().records().size();
  return rows;
}

util::Status CostKeeping::node_up(const std::string& node, const std::string& pool, int gpus,
                                  double usd_per_hour, util::Time t) {
  return book_.node_up(node, pool, gpus, usd_per_hour, time(t));
}

util::Status CostKeeping::node_down(const std::string& node, util::Time t) {
  return book_.node_down(node, time(t));
}

void CostKeeping::set_holders(const std::map<std::string, std::vector<cloud::CostShare>>& held,
                              util::Time t) {
  book_.set_all_holders(held, time(t));
}

util::Status CostKeeping::record_lost_work(const std::string& node, const std::string& job,
                                           const std::string& team, int64_t milli,
                                           util::Duration lost, util::Time t, bool interruption) {
  return book_.record_lost_work(node, job, team, milli, lost, time(t), interruption);
}

const cloud::CostLedger& CostKeeping::ledger_at(util::Time now) {
  book_.ledger().advance(time(now));
  return book_.ledger();
}

std::optional<double> CostKeeping::budget_left(const std::string& team) const {
  const auto it = budget_left_.find(team);
  if (it == budget_left_.end()) return std::nullopt;
  return it->second;
}

void CostKeeping::tick(util::Time now, const std::vector<model::Team>& teams,
                       AlertService* alerts) {
  // Open intervals are closed now and then, so a crash loses at most this much billing.
  if (now - advanced_ >= kLedgerAdvance) {
    advanced_ = now;
    book_.ledger().advance(time(now));
  }
  bool any = false;
  for (const auto& t : teams) any = any || t.budget_usd > 0;
  if (!any || now - budget_checked_ < kBudgetCheck) return;
  budget_checked_ = now;
  const cloud::CostLedger& ledger = ledger_at(now);  // open intervals count too
  std::map<model::Team::BudgetPeriod, cloud::CostReport> reports;
  for (const auto& t : teams) {
    if (t.budget_usd <= 0) continue;
    auto it = reports.find(t.budget_period);
    if (it == reports.end())
      it = reports.emplace(t.budget_period, ledger.report(period_start(now, t.budget_period), now))
               .first;
    const auto team = it->second.teams.find(t.name);
    const double spent = team == it->second.teams.end() ? 0 : team->second.cost_usd;
    budget_left_[t.name] = t.budget_usd - spent;
    if (alerts != nullptr) alerts->on_team_spend(now, t.name, spent, t.budget_usd);
  }
}

}  // namespace trainyard::server
