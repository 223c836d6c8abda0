#include "sched/decayed_usage.h"

#include <algorithm>
#include <cmath>

namespace trainyard::sched {

void DecayedUsage::advance(util::Time now, std::span<const double> gpus, double capacity) {
  if (used_.size() < gpus.size()) used_.resize(gpus.size(), 0.0);
  if (!started_ || now <= last_) {
    started_ = true;
    last_ = std::max(last_, now);
    return;
  }
  // Over dt with constant use u, the decayed integral U becomes U k + u tau (1 - k), where
  // k = 2^(-dt / half-life) and tau = half-life / ln 2 (the integral of the decay).
  const double h = util::to_seconds(half_life_);
  const double dt = util::to_seconds(now - last_);
  const double k = std::exp2(-dt / h);
  const double gain = h / std::log(2.0) * (1.0 - k);
  for (size_t t = 0; t < used_.size(); ++t) {
    used_[t] = used_[t] * k + (t < gpus.size() ? gpus[t] : 0.0) * gain;
  }
  capacity_ = capacity_ * k + capacity * gain;
  last_ = now;
}

double DecayedUsage::share(int team) const {
  if (team < 0 || static_cast<size_t>(team) >= used_.size() || capacity_ <= 0) return 0.0;
  return std::clamp(used_[team] / capacity_, 0.0, 1.0);
}

}  // namespace trainyard::sched
