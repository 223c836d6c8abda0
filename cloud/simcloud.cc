// simcloud: the simulated cloud (see simcloud.h). All of a request's future events are
// computed when it is made, so poll() and next_event_time() only read the event list.
#include "cloud/simcloud.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
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

// One reclaim of a replayed trace in one pass: (offering, pass, index into reclaims).
using ReclaimKey = std::tuple<size_t, int64_t, size_t>;

struct SimRequest {
  NodeRequest request;
  bool failed = false;
  util::Time end = kNever;          // when the node is gone (reclaimed or released)
  std::optional<ReclaimKey> claim;  // the replayed reclaim this node holds a share of
};

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

class SimCloud final : public Provider {
 public:
  SimCloud(std::vector<Offering> offerings, SpotAdvisor advisor, SimCloudOptions options,
           const util::Clock& clock)
      : offerings_(std::move(offerings)),
        advisor_(std::move(advisor)),
        options_(std::move(options)),
        clock_(clock),
        replay_start_(options_.replay && options_.replay->start ? *options_.replay->start
                                                                : clock.now()) {}

  std::span<const Offering> offerings() const override { return offerings_; }

  util::Result<RequestId> request_node(const NodeRequest& request) override {
    TY_RETURN_IF_ERROR(check_request(request));
    const util::Time now = clock_.now();
    // Counted before this request joins the list, so it does not count against itself.
    const bool spot = request.purchase == PurchaseOption::Spot;
    const SpotTrace* trace = spot ? replay_trace(request.offering) : nullptr;
    const bool no_capacity =
        spot && spot_nodes_up(request.offering, now) >= spot_capacity(request.offering);
    const RequestId id = static_cast<RequestId>(requests_.size()) + 1;
    requests_.push_back({.request = request});
    SimRequest& req = requests_.back();
    if (trace != nullptr && trace->capacity_at(now - replay_start_) == 0) {
      fail(id, req, now,
           "no spot capacity: " + offering_name(request.offering) + " shows none in " +
               trace->source + " at this time; retry later, another zone, or on-demand");
      return id;
    }
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
    if (trace != nullptr) {
      replay(id, req, *trace, now, ready);
      return id;
    }
    emit(
        {.time = ready, .kind = ProviderEventKind::NodeReady, .request = id, .pool = request.pool});
    if (spot) schedule_interruption(id, req, ready);
    return id;
  }

  util::Status release_node(RequestId id) override {
    if (id < 1 || id > static_cast<RequestId>(requests_.size())) {
      return util::not_found("simcloud has no request " + std::to_string(id));
    }
    SimRequest& req = requests_[static_cast<size_t>(id - 1)];
    const util::Time now = clock_.now();
    // Already gone or failed; a failure still to come (trace ran out) is cancelled below.
    if (req.end <= now) return util::Status::ok();
    // Drop what has not happened yet (ready, notice, reclaim) and end the node now.
    std::erase_if(events_, [&](const ProviderEvent& e) { return e.request == id && e.time > now; });
    req.end = now;
    if (req.claim) {  // the reclaim it held can go to another node
      --claims_[*req.claim];
      req.claim.reset();
    }
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

  std::optional<util::Time> next_event_time() const override {
    const util::Time now = clock_.now();
    std::optional<util::Time> next;
    for (const auto& e : events_) {
      if (e.time > now && (!next || e.time < *next)) next = e.time;
    }
    return next;
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

  const SpotTrace* replay_trace(size_t offering) const {
    if (!options_.replay) return nullptr;
    const Offering& o = offerings_[offering];
    auto it = options_.replay->by_zone.find(o.zone.empty() ? o.region : o.zone);
    if (it != options_.replay->by_zone.end()) return &it->second;
    return options_.replay->every_offering ? &*options_.replay->every_offering : nullptr;
  }

  void fail(RequestId id, SimRequest& req, util::Time at, std::string reason) {
    req.failed = true;
    req.end = at;
    emit({.time = at,
          .kind = ProviderEventKind::RequestFailed,
          .request = id,
          .pool = req.request.pool,
          .reason = std::move(reason)});
  }

  // A spot node under a replayed trace: fails if the trace falls to 0 while it provisions,
  // else is reclaimed at the first reclaim after ready that still has a node to take.
  void replay(RequestId id, SimRequest& req, const SpotTrace& trace, util::Time now,
              util::Time ready) {
    const size_t offering = req.request.offering;
    if (trace.reclaims.empty() || trace.period <= util::Duration::zero()) {
      emit({.time = ready,
            .kind = ProviderEventKind::NodeReady,
            .request = id,
            .pool = req.request.pool});
      return;
    }
    const int64_t period = trace.period.count();
    // Walks the reclaims after now (µs from replay start) in time order, looping.
    const int64_t from = (now - replay_start_).count();
    int64_t pass = floor_div(from, period);
    auto first = std::upper_bound(trace.reclaims.begin(), trace.reclaims.end(),
                                  util::Duration(from - pass * period),
                                  [](util::Duration x, const Reclaim& r) { return x < r.offset; });
    size_t index = static_cast<size_t>(first - trace.reclaims.begin());
    // Each pass has a reclaim and every claim belongs to a live node, so the walk ends within
    // the passes during provisioning plus (live nodes + 1); the bound guards the invariant.
    const size_t passes =
        static_cast<size_t>((ready - now).count() / period) + requests_.size() + 3;
    for (size_t steps = 0; steps < passes * trace.reclaims.size(); ++steps) {
      if (index == trace.reclaims.size()) {
        index = 0;
        ++pass;
      }
      const Reclaim& r = trace.reclaims[index];
      const util::Time at = replay_start_ + util::Duration(pass * period) + r.offset;
      const ReclaimKey key{offering, pass, index};
      ++index;
      if (at <= ready) {
        if (r.to_zero) {
          fail(id, req, at,
               "no spot capacity: " + offering_name(offering) + " ran out in " + trace.source +
                   " while the node was provisioning; retry later, another zone, or on-demand");
          return;
        }
        continue;  // a reclaim of nodes already running
      }
      if (!r.to_zero) {
        if (claims_[key] >= r.nodes) continue;
        ++claims_[key];
        req.claim = key;
      }
      emit({.time = ready,
            .kind = ProviderEventKind::NodeReady,
            .request = id,
            .pool = req.request.pool});
      const util::Duration lead = notice_lead(offerings_[offering].provider);
      const util::Time notice = at - lead >= ready ? at - lead : at;
      req.end = at;
      emit({.time = notice,
            .kind = ProviderEventKind::InterruptionNotice,
            .request = id,
            .pool = req.request.pool,
            .deadline = at});
      emit({.time = at,
            .kind = ProviderEventKind::NodeGone,
            .request = id,
            .pool = req.request.pool,
            .reason = "spot capacity reclaimed (replayed from " + trace.source + ")"});
      return;
    }
    emit({.time = ready,
          .kind = ProviderEventKind::NodeReady,
          .request = id,
          .pool = req.request.pool});
  }

  int spot_nodes_up(size_t offering, util::Time now) const {
    int n = 0;
    for (const auto& r : requests_) {
      // A failed request's end is its failure time: it holds capacity while provisioning.
      if (r.request.offering == offering && r.request.purchase == PurchaseOption::Spot &&
          r.end > now) {
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
  util::Time replay_start_;
  std::map<ReclaimKey, int> claims_;  // nodes given each replayed reclaim so far
};

}  // namespace

double simcloud_interruption_rate(const Offering& offering, const SpotAdvisor& advisor,
                                  const SimCloudOptions& options) {
  if (options.interruption_rate_per_hour) return *options.interruption_rate_per_hour;
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
