// Where each team stands for GET /api/v1/queues (server/queue_standing.h).
#include "server/queue_standing.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "model/accelerator.h"
#include "sched/admission.h"

namespace trainyard::server {
namespace {

double gpus_of(int64_t milli) {
  return static_cast<double>(milli) / static_cast<double>(model::kMilliPerGpu);
}

// Quota key k's name as the config writes it: a GPU model, or "*" for all models.
std::string key_name(const sched::Snapshot& snap, int k) {
  return k < static_cast<int>(snap.gpu_models.size()) ? snap.gpu_models[k] : "*";
}

// Per team and quota key (index t * keys + k), in milli-GPUs.
struct CohortLoans {
  std::vector<int64_t> borrowed, lent;
};

// Borrowed: usage above the nominal quota. Lent: what cohort members borrow, counted against
// the members with unused nominal quota in proportion to it.
CohortLoans cohort_loans(const sched::Snapshot& snap, const sched::QuotaLedger& ledger, bool fair) {
  const int teams = static_cast<int>(snap.teams.size());
  const int keys = static_cast<int>(snap.gpu_models.size()) + 1;
  // Without configured quotas the fair policy gives every team an equal weighted share, all in
  // one cohort (sched/admission.h).
  const bool derived = fair && std::none_of(snap.teams.begin(), snap.teams.end(),
                                            [](const auto& t) { return !t.quota.empty(); });
  auto cohort_of = [&](int t) { return derived ? 0 : snap.teams[t].cohort; };

  std::vector<int64_t> borrowed(teams * keys, 0), unused(teams * keys, 0), lent(teams * keys, 0);
  for (int t = 0; t < teams; ++t) {
    for (int k = 0; k < keys; ++k) {
      const int64_t nominal = ledger.nominal(t, k);
      if (nominal < 0) continue;
      const int64_t use = ledger.usage(t, k);
      borrowed[t * keys + k] = std::max<int64_t>(0, use - nominal);
      unused[t * keys + k] = std::max<int64_t>(0, nominal - use);
    }
  }
  for (int t = 0; t < teams; ++t) {
    const int c = cohort_of(t);
    if (c < 0) continue;
    for (int k = 0; k < keys; ++k) {
      if (unused[t * keys + k] == 0) continue;
      int64_t borrowed_in_cohort = 0, unused_in_cohort = 0;
      for (int o = 0; o < teams; ++o) {
        if (cohort_of(o) != c) continue;
        borrowed_in_cohort += borrowed[o * keys + k];
        unused_in_cohort += unused[o * keys + k];
      }
      if (borrowed_in_cohort == 0 || unused_in_cohort == 0) continue;
      const int64_t share = static_cast<int64_t>(
          static_cast<double>(std::min(borrowed_in_cohort, unused_in_cohort)) *
          static_cast<double>(unused[t * keys + k]) / static_cast<double>(unused_in_cohort));
      lent[t * keys + k] = std::min(share, unused[t * keys + k]);
    }
  }
  return {.borrowed = std::move(borrowed), .lent = std::move(lent)};
}

// Per team: its weighted dominant share (plus decayed past usage).
std::vector<double> weighted_shares(const sched::Snapshot& snap, const sched::QuotaLedger& ledger) {
  const int teams = static_cast<int>(snap.teams.size());
  std::vector<double> weighted(teams, 0.0);
  for (int t = 0; t < teams; ++t) {
    const sched::SnapshotTeam& team = snap.teams[t];
    weighted[t] =
        ledger.dominant_share(t) + (team.weight > 0 ? team.past_usage_share / team.weight : 0.0);
  }
  return weighted;
}

// The fair policy's order as each team's place in it (1 first): lowest weighted share first,
// ties by the snapshot's team order.
std::vector<int> fair_positions(const std::vector<double>& weighted) {
  const int teams = static_cast<int>(weighted.size());
  std::vector<int> order(teams);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return weighted[a] < weighted[b]; });
  std::vector<int> position(teams);
  for (int i = 0; i < teams; ++i) position[order[i]] = i + 1;
  return position;
}

}  // namespace

std::map<std::string, model::QueueStandingView> queue_standing(const sched::Snapshot& snap,
                                                               bool fair) {
  const sched::QuotaLedger ledger(snap, fair);
  const int teams = static_cast<int>(snap.teams.size());
  const int keys = static_cast<int>(snap.gpu_models.size()) + 1;
  const CohortLoans loans = cohort_loans(snap, ledger, fair);
  const std::vector<double> weighted = weighted_shares(snap, ledger);
  const std::vector<int> position = fair_positions(weighted);

  std::map<std::string, model::QueueStandingView> out;
  for (int t = 0; t < teams; ++t) {
    const sched::SnapshotTeam& team = snap.teams[t];
    model::QueueStandingView& s = out[team.name];
    for (int k = 0; k < keys; ++k) {
      const std::string name = key_name(snap, k);
      if (k + 1 < keys && ledger.usage(t, k) > 0) s.usage[name] = gpus_of(ledger.usage(t, k));
      if (loans.borrowed[t * keys + k] > 0)
        s.borrowed[name] = gpus_of(loans.borrowed[t * keys + k]);
      if (loans.lent[t * keys + k] > 0) s.lent[name] = gpus_of(loans.lent[t * keys + k]);
    }
    s.fair_share = {.dominant_share = team.weight > 0 ? ledger.dominant_share(t) * team.weight
                                                      : ledger.dominant_share(t),
                    .past_usage_share = team.past_usage_share,
                    .weighted_share = weighted[t],
                    .position = position[t],
                    .of = teams};
  }
  return out;
}

}  // namespace trainyard::server
