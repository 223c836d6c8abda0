// Plan-equivalence check for scheduler optimizations: hashes (FNV-1a, every field of every
// start, preemption and wait reason, in order) the plans of N seeded random snapshots per
// policy, and checks each plan's invariants. Run before and after a change to sched/; the
// digests must match exactly.
//   build-bench/bench/plan_digest [snapshots=200] [first_seed=1]
//   build-bench/bench/plan_digest bench      (the two plan_bench snapshots)
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>

#include <fmt/format.h>

#include "bench/bench_snapshot.h"
#include "sched/invariants.h"
#include "sched/plan.h"
#include "sched/policy.h"

namespace trainyard::bench {
namespace {

class Fnv {
 public:
  void add(int64_t v) {
    for (int b = 0; b < 8; ++b) {
      h_ ^= static_cast<uint64_t>(v >> (8 * b)) & 0xff;
      h_ *= 0x100000001b3ULL;
    }
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

void hash_plan(const sched::Plan& p, Fnv& h) {
  h.add(static_cast<int64_t>(p.starts.size()));
  for (const auto& s : p.starts) {
    h.add(s.job.value());
    for (const sched::Assignment& a : s.placement) {
      h.add(a.worker);
      h.add(a.node_idx);
      h.add(a.gpu_idx);
      h.add(a.milli);
      h.add(a.mig_profile);
      h.add(a.mig_start);
    }
  }
  h.add(static_cast<int64_t>(p.preemptions.size()));
  for (const auto& x : p.preemptions) {
    h.add(x.job.value());
    h.add(x.for_job.value());
    h.add(static_cast<int64_t>(x.cause));
  }
  h.add(static_cast<int64_t>(p.waiting.size()));
  for (const auto& w : p.waiting) {
    h.add(w.job.value());
    h.add(static_cast<int64_t>(w.stage));
    h.add(static_cast<int64_t>(w.code));
    h.add(w.arg);
    h.add(w.filter);
  }
}

// Small and varied: sizes, fill, racks, quotas, placement strategy and policy knobs.
ClusterShape shape_for(uint64_t seed) {
  std::mt19937_64 rng(seed);
  return {.nodes = 8 + static_cast<int>(rng() % 200),
          .pending = 10 + static_cast<int>(rng() % 2000),
          .teams = 10 + static_cast<int>(rng() % 41),
          .busy = 0.5 + 0.45 * static_cast<double>(rng() % 1000) / 1000.0,
          .nodes_per_rack = seed % 3 == 0 ? 0 : 4 + static_cast<int>(rng() % 29),
          .team_quotas = seed % 4 != 0,
          .rare_requests = true,
          .seed = seed};
}

sched::PolicyConfig config_for(std::string_view policy, uint64_t seed) {
  sched::PolicyConfig cfg{.name = std::string(policy)};
  cfg.placement = seed % 2 ? sched::PlacementStrategy::Spread : sched::PlacementStrategy::Pack;
  if (seed % 3 == 0) cfg.tiresias.gittins_prior = {60, 600, 3600, 7200, 36000, 86400, 400000};
  cfg.fair.reclaim = seed % 5 != 0;
  return cfg;
}

}  // namespace
}  // namespace trainyard::bench

int main(int argc, char** argv) {
  using namespace trainyard;
  // "bench": the two plan_bench snapshots instead (large; default knobs).
  const bool bench_scales = argc > 1 && std::string_view(argv[1]) == "bench";
  const int count = bench_scales ? 2 : argc > 1 ? std::atoi(argv[1]) : 200;
  const uint64_t first = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  std::vector<bench::Fnv> per_policy(sched::policies().size());
  bench::Fnv all;
  for (uint64_t seed = first; seed < first + static_cast<uint64_t>(count); ++seed) {
    const int scale = static_cast<int>(seed - first);
    const bench::ClusterShape shape =
        bench_scales ? bench::ClusterShape{.nodes = scale == 0 ? 1000 : 10000,
                                           .pending = scale == 0 ? 10000 : 100000,
                                           .seed = 42}
                     : bench::shape_for(seed);
    const sched::Snapshot snap = bench::make_bench_snapshot(shape);
    for (size_t p = 0; p < sched::policies().size(); ++p) {
      const auto cfg = bench_scales
                           ? sched::PolicyConfig{.name = std::string(sched::policies()[p].name)}
                           : bench::config_for(sched::policies()[p].name, seed);
      const sched::Plan plan = sched::plan(snap, cfg, seed);
      if (auto s = sched::check_plan(snap, plan, true); !s.is_ok()) {
        fmt::print(stderr, "seed {} policy {}: {}\n", seed, cfg.name, s.message());
        return 1;
      }
      bench::hash_plan(plan, per_policy[p]);
      bench::hash_plan(plan, all);
    }
  }
  for (size_t p = 0; p < per_policy.size(); ++p) {
    fmt::print("{:<9} {:016x}\n", sched::policies()[p].name, per_policy[p].value());
  }
  fmt::print("{:<9} {:016x}  ({} snapshots from seed {})\n", "all", all.value(), count, first);
  return 0;
}
