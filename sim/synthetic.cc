#include "sim/synthetic.h"

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "sim/traces/common.h"

namespace trainyard::sim {
namespace {

// Uniform in [0, 1) from the top 53 bits: the same on every standard library, unlike
// std::uniform_real_distribution.
double unit_draw(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Index into `weights` drawn with probability proportional to its weight (u in [0, 1)).
size_t weighted_pick(const std::vector<double>& weights, double u) {
  double total = 0;
  for (double w : weights) total += w;
  double acc = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    acc += weights[i];
    if (u * total < acc) return i;
  }
  return weights.size() - 1;
}

util::Status check_options(const SyntheticOptions& o) {
  auto bad = [](std::string msg) { return util::invalid_argument("synthetic workload: " + msg); };
  if (o.jobs < 0) return bad(fmt::format("jobs must be >= 0, got {}", o.jobs));
  if (!(o.jobs_per_hour > 0) || o.jobs_per_hour > 1e9)
    return bad(fmt::format("jobs_per_hour must be in (0, 1e9], got {}", o.jobs_per_hour));
  const DurationMix& d = o.durations;
  if (!(d.unit_s > 0) || !(d.short_share >= 0 && d.short_share <= 1) ||
      !(d.short_exp_lo <= d.short_exp_hi) || !(d.long_exp_lo <= d.long_exp_hi))
    return bad("durations need unit_s > 0, short_share in [0, 1] and exponent ranges lo <= hi");
  const double longest = d.unit_s * std::pow(10.0, std::max(d.short_exp_hi, d.long_exp_hi));
  if (!(longest <= kMaxTraceDurationSeconds))
    return bad(fmt::format("durations may reach {:g} s; the most is {:g} s", longest,
                           kMaxTraceDurationSeconds));
  if (static_cast<double>(o.jobs) * 3600.0 / o.jobs_per_hour > kMaxTraceTimeSeconds / 10)
    return bad(fmt::format("{} jobs at {}/h span more than {:g} s; raise the rate", o.jobs,
                           o.jobs_per_hour, kMaxTraceTimeSeconds / 10));
  if (o.gpus_per_node < 1) return bad("gpus_per_node must be >= 1");
  if (o.gpu_mix.empty()) return bad("gpu_mix is empty; give e.g. {{1, 0.7}, {8, 0.3}}");
  double total = 0;
  for (const auto& m : o.gpu_mix) {
    if (m.gpus < 1 || m.gpus > 4096 || !(m.share >= 0))
      return bad(fmt::format("gpu_mix entry {{{}, {}}} needs 1..4096 GPUs and a share >= 0", m.gpus,
                             m.share));
    total += m.share;
  }
  if (!(total > 0)) return bad("gpu_mix shares sum to 0");
  if (o.teams < 1) return bad(fmt::format("teams must be >= 1, got {}", o.teams));
  if (!(o.team_skew >= 0)) return bad("team_skew must be >= 0");
  return util::Status::ok();
}

}  // namespace

util::Result<Workload> generate_synthetic(const SyntheticOptions& opts) {
  TY_RETURN_IF_ERROR(check_options(opts));
  std::vector<double> gpu_weights;
  for (const auto& m : opts.gpu_mix) gpu_weights.push_back(m.share);
  std::vector<double> team_weights;
  for (int k = 1; k <= opts.teams; ++k) team_weights.push_back(std::pow(k, -opts.team_skew));

  std::mt19937_64 rng(opts.seed);
  const double mean_gap_s = 3600.0 / opts.jobs_per_hour;
  const DurationMix& d = opts.durations;
  Workload w;
  w.source = fmt::format("synthetic(seed={}, jobs={}, rate={}/h)", opts.seed, opts.jobs,
                         opts.jobs_per_hour);
  double now_s = 0;
  for (int64_t i = 0; i < opts.jobs; ++i) {
    // Five draws per job, always in this order, so changing one mix does not shift the others.
    const double gap_u = unit_draw(rng);
    const double class_u = unit_draw(rng);
    const double exp_u = unit_draw(rng);
    const double gpu_u = unit_draw(rng);
    const double team_u = unit_draw(rng);
    if (i > 0) now_s += -std::log1p(-gap_u) * mean_gap_s;  // exponential gap; first job at 0
    if (now_s > kMaxTraceTimeSeconds) return util::out_of_range("synthetic workload: too long");
    const bool is_short = class_u < d.short_share;
    const double lo = is_short ? d.short_exp_lo : d.long_exp_lo;
    const double hi = is_short ? d.short_exp_hi : d.long_exp_hi;
    TraceJob j;
    j.submit = util::from_seconds(now_s);
    j.duration = util::seconds_f(d.unit_s * std::pow(10.0, lo + exp_u * (hi - lo)));
    split_into_workers(opts.gpu_mix[weighted_pick(gpu_weights, gpu_u)].gpus, opts.gpus_per_node,
                       j.spec);
    j.spec.team = fmt::format("team-{}", weighted_pick(team_weights, team_u) + 1);
    w.jobs.push_back(std::move(j));
  }
  TraceOptions fin = opts.finalize_options;
  fin.seed = opts.seed;
  finalize(w, fin);
  return w;
}

}  // namespace trainyard::sim
