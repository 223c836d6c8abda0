#include "model/node.h"

#include <fmt/format.h>

namespace trainyard::model {

std::string_view node_state_name(NodeState s) {
  switch (s) {
    case NodeState::Provisioning:
      return "provisioning";
    case NodeState::Ready:
      return "ready";
    case NodeState::Draining:
      return "draining";
    case NodeState::Terminating:
      return "terminating";
    case NodeState::Gone:
      return "gone";
  }
  return "unknown";
}

std::string_view pool_kind_name(PoolKind k) {
  switch (k) {
    case PoolKind::OnDemand:
      return "on-demand";
    case PoolKind::Spot:
      return "spot";
    case PoolKind::Reserved:
      return "reserved";
    case PoolKind::Static:
      return "static";
  }
  return "unknown";
}

util::Result<PoolKind> parse_pool_kind(std::string_view text) {
  for (PoolKind k : {PoolKind::OnDemand, PoolKind::Spot, PoolKind::Reserved, PoolKind::Static}) {
    if (pool_kind_name(k) == text) return k;
  }
  return util::invalid_argument(
      fmt::format("unknown pool kind '{}'; use on-demand, spot, reserved or static", text));
}

}  // namespace trainyard::model
