#include "cloud/simcloud.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>

namespace trainyard::cloud {
namespace {

constexpr util::Time kNever = util::Time::max();

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct SimRequest {
  NodeRequest request;
  bool failed = false;
  util::Time end = kNever;  // when the node is gone (reclaimed or released)
};

class SimCloud final : public Provider {
 public:
  SimCloud(std::vector<Offering> offerings, SpotAdvisor advisor, SimCloudOptions options,
           const util::Clock& clock)
      : offerings_(std::move(offerings)),
        advisor_(std::move(advisor)),
        options_(std::move(options)),
        clock_(clock) {}

  std::span<const Offering> offerings() const override { return offerings_; }

  util::Result<RequestId> request_node(const NodeRequest& request) override {
    TY_RETURN_IF_ERROR(check_request(request));
    const util::Time now = clock_.now();
    // Counted before this request joins the list, so it does not count against itself.
    const bool no_capacity =
        request.purchase == PurchaseOption::Spot &&
        spot_nodes_up(request.offering, now) >= spot_capacity(request.offering);
    const RequestId id = static_cast<RequestId>(requests_.size()) + 1;
    requests_.push_back({.request = request});
    SimRequest& req = requests_.back();
    if (no_capacity) {
      req.failed = true;
      req.end = now;
      emit({.time = now,
            .kind = ProviderEventKind::RequestFailed,
            .request = id,
            .pool = request.pool,
            .reason = "capacity exhausted: no spot " + offering_name(request.offering) +
                      " available; retry later, another zone, or on-demand"});
      return id;
    }
    const util::Time ready = now + provisioning_delay(request.offering);
    emit(
        {.time = ready, .kind = ProviderEventKind::NodeReady, .request = id, .pool = request.pool});
    if (request.purchase == PurchaseOption::Spot) schedule_interruption(id, req, ready);
    return id;
  }

  util::Status release_node(RequestId id) override {
    if (id < 1 || id > static_cast<RequestId>(requests_.size())) {
      return util::not_found("simcloud has no request " + std::to_string(id));
    }
    SimRequest& req = requests_[static_cast<size_t>(id - 1)];
    const util::Time now = clock_.now();
    if (req.failed || req.end <= now) return util::Status::ok();  // already gone
    // Drop what has not happened yet (ready, notice, reclaim) and end the node now.
    std::erase_if(events_, [&](const ProviderEvent& e) { return e.request == id && e.time > now; });
    req.end = now;
    emit({.time = now,
          .kind = ProviderEventKind::NodeGone,
          .request = id,
          .pool = req.request.pool,
          .reason = "released"});
    return util::Status::ok();
  }

  std::vector<ProviderEvent> poll(util::Time since) override {
    const util::Time now = clock_.now();
    std::vector<ProviderEvent> out;
    for (const auto& e : events_) {
      if (e.time > since && e.time <= now) out.push_back(e);
    }
    std::stable_sort(out.begin(), out.end(), [](const ProviderEvent& a, const ProviderEvent& b) {
      return std::tie(a.time, a.request) < std::tie(b.time, b.request);
    });
    return out;
  }

 private:
  util::Status check_request(const NodeRequest& request) const {
    if (request.offering >= offerings_.size()) {
      return util::invalid_argument("offering " + std::to_string(request.offering) +
                                    " does not exist (simcloud has " +
                                    std::to_string(offerings_.size()) + " offerings)");
    }
    const Offering& o = offerings_[request.offering];
    const bool spot = request.purchase == PurchaseOption::Spot;
    if (spot ? !o.spot_per_hour : !o.on_demand_per_hour) {
      return util::invalid_argument(offering_name(request.offering) + " has no " +
                                    std::string(purchase_option_name(request.purchase)) +
                                    " price in the catalog; choose the other option");
    }
    return util::Status::ok();
  }

  // Each spot node is reclaimed at the first arrival of a Poisson process at the offering's
  // rate (an exponential lifetime from ready). The generator is keyed by seed and request id,
  // so one request's draw does not depend on how many others were made before it.
  void schedule_interruption(RequestId id, SimRequest& req, util::Time ready) {
    const Offering& o = offerings_[req.request.offering];
    const double rate = simcloud_interruption_rate(o, advisor_, options_);
    if (rate <= 0) return;
    std::mt19937_64 rng(splitmix64(options_.seed ^ splitmix64(static_cast<uint64_t>(id))));
    const double hours = std::exponential_distribution<double>(rate)(rng);
    if (!std::isfinite(hours) || hours > 1e6) return;  // effectively never
    const util::Time gone = ready + util::seconds_f(hours * 3600.0);
    const util::Time notice = std::max(ready, gone - notice_lead(o.provider));
    req.end = gone;
    emit({.time = notice,
          .kind = ProviderEventKind::InterruptionNotice,
          .request = id,
          .pool = req.request.pool,
          .deadline = gone});
    emit({.time = gone,
          .kind = ProviderEventKind::NodeGone,
          .request = id,
          .pool = req.request.pool,
          .reason = "spot capacity reclaimed"});
  }

  int spot_nodes_up(size_t offering, util::Time now) const {
    int n = 0;
    for (const auto& r : requests_) {
      if (r.request.offering == offering && r.request.purchase == PurchaseOption::Spot &&
          !r.failed && r.end > now) {
        ++n;
      }
    }
    return n;
  }
  int spot_capacity(size_t offering) const {
    auto it = options_.spot_capacity.find(offering);
    return it == options_.spot_capacity.end() ? options_.default_spot_capacity : it->second;
  }
  util::Duration provisioning_delay(size_t offering) const {
    auto it = options_.provisioning_delay.find(offerings_[offering].provider);
    return it == options_.provisioning_delay.end() ? options_.default_provisioning_delay
                                                   : it->second;
  }
  util::Duration notice_lead(const std::string& provider) const {
    auto it = options_.notice_lead.find(provider);
    return it == options_.notice_lead.end() ? util::Duration(0) : it->second;
  }
  std::string offering_name(size_t offering) const {
    const Offering& o = offerings_[offering];
    return o.provider + " " + o.instance_type + " in " + (o.zone.empty() ? o.region : o.zone);
  }
  void emit(ProviderEvent e) { events_.push_back(std::move(e)); }

  std::vector<Offering> offerings_;
  SpotAdvisor advisor_;
  SimCloudOptions options_;
  const util::Clock& clock_;
  std::vector<SimRequest> requests_;  // request id i is requests_[i - 1]
  std::vector<ProviderEvent> events_;
};

}  // namespace

double simcloud_interruption_rate(const Offering& offering, const SpotAdvisor& advisor,
                                  const SimCloudOptions& options) {
  int bucket = -1;
  if (offering.provider == "aws") bucket = advisor.find(offering.region, offering.instance_type);
  if (bucket < 0) bucket = options.default_interruption_bucket;
  return interruption_rate_per_hour(bucket) * options.interruption_rate_scale;
}

ProviderPtr make_simcloud(std::vector<Offering> offerings, SpotAdvisor advisor,
                          SimCloudOptions options, const util::Clock& clock) {
  return std::make_unique<SimCloud>(std::move(offerings), std::move(advisor), std::move(options),
                                    clock);
}

}  // namespace trainyard::cloud
