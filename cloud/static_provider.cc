// The static provider: nodes listed in a cluster config, bought once, never scaled.
#include "cloud/provider.h"

namespace trainyard::cloud {
namespace {

class StaticProvider final : public Provider {
 public:
  explicit StaticProvider(std::vector<Offering> nodes) : nodes_(std::move(nodes)) {}

  std::span<const Offering> offerings() const override { return nodes_; }

  util::Result<RequestId> request_node(const NodeRequest& request) override {
    return util::failed_precondition(
        "static provider cannot add nodes (pool '" + request.pool +
        "'): its nodes are fixed; add them to the cluster config, or use a scaling provider "
        "such as simcloud for pool '" +
        request.pool + "'");
  }

  util::Status release_node(RequestId id) override {
    return util::not_found("static provider has no request " + std::to_string(id) +
                           " (its nodes are fixed and cannot be released)");
  }

  // Nothing ever happens to a static node that the provider could observe.
  std::vector<ProviderEvent> poll(util::Time) override { return {}; }
  std::optional<util::Time> next_event_time() const override { return std::nullopt; }

 private:
  std::vector<Offering> nodes_;
};

}  // namespace

std::string_view purchase_option_name(PurchaseOption p) {
  return p == PurchaseOption::Spot ? "spot" : "on-demand";
}

std::string_view provider_event_kind_name(ProviderEventKind k) {
  switch (k) {
    case ProviderEventKind::NodeReady:
      return "node-ready";
    case ProviderEventKind::InterruptionNotice:
      return "interruption-notice";
    case ProviderEventKind::NodeGone:
      return "node-gone";
    case ProviderEventKind::RequestFailed:
      return "request-failed";
  }
  return "unknown";
}

ProviderPtr make_static_provider(std::vector<Offering> nodes) {
  return std::make_unique<StaticProvider>(std::move(nodes));
}

}  // namespace trainyard::cloud
