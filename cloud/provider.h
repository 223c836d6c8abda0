// cloud::Provider: where nodes come from. The scheduler's drivers request and release nodes
// and poll for what happened (ready, interruption notice, gone, request failed). Time comes
// only from the util::Clock the implementation was built with, so the simulator can drive it.
// Not thread-safe: one owner calls it (the sim loop or the server's reconcile loop).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cloud/catalog.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::cloud {

enum class PurchaseOption { OnDemand, Spot };
std::string_view purchase_option_name(PurchaseOption p);

// Names one request for a node; also names the node it yields (one node per request).
using RequestId = int64_t;

struct NodeRequest {
  size_t offering = 0;  // index into Provider::offerings()
  PurchaseOption purchase = PurchaseOption::OnDemand;
  std::string pool;  // the pool the node will join; echoed back in events
};

enum class ProviderEventKind {
  NodeReady,           // the node is up and can run work
  InterruptionNotice,  // the provider will reclaim the node at `deadline`
  NodeGone,            // the node no longer exists (reclaimed, or released by the caller)
  RequestFailed,       // no node will come for this request; `reason` says why
};
std::string_view provider_event_kind_name(ProviderEventKind k);

struct ProviderEvent {
  util::Time time;
  ProviderEventKind kind = ProviderEventKind::NodeReady;
  RequestId request = 0;
  std::string pool;
  util::Time deadline{};  // InterruptionNotice only
  std::string reason;     // RequestFailed and NodeGone
  bool operator==(const ProviderEvent&) const = default;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::span<const Offering> offerings() const = 0;
  // Starts provisioning. Returns the id at once; the outcome arrives as a NodeReady or
  // RequestFailed event. An error means the request itself is wrong (bad offering index, an
  // option the offering does not sell, a provider that cannot scale): nothing was started.
  virtual util::Result<RequestId> request_node(const NodeRequest& request) = 0;
  // Gives the node (or the pending request) back. Emits NodeGone at now. Idempotent for a
  // node already gone; NotFound for an id never handed out.
  virtual util::Status release_node(RequestId id) = 0;
  // Events with since < time <= clock.now(), in (time, request) order. Calling it again with
  // the same `since` returns the same events, so a caller can re-poll after a crash.
  virtual std::vector<ProviderEvent> poll(util::Time since) = 0;
  // The earliest time after the clock's now at which poll() would report something new, so a
  // simulator can advance its VirtualClock straight there. nullopt when none is known: a real
  // cloud (the default here) cannot tell and is polled periodically instead.
  virtual std::optional<util::Time> next_event_time() const { return std::nullopt; }
};
using ProviderPtr = std::unique_ptr<Provider>;

// A fixed set of nodes that exist from the start and never change: on-premises machines or a
// reserved cluster. Every request fails with FailedPrecondition; poll() never reports anything.
ProviderPtr make_static_provider(std::vector<Offering> nodes);

}  // namespace trainyard::cloud
