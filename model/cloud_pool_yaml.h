// A pool bought from a cloud (`instanceType:`), read the same way from the simulator's cluster
// file (`pools:`) and from the server's config (`capacity.pools`): one set of keys, limits and
// messages, errors at file:line:column with the key path (model/yaml_reader.h).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "model/node.h"
#include "model/yaml_reader.h"

namespace trainyard::model {

// The most nodes one cloud pool may buy (maxNodes).
inline constexpr int64_t kMaxCloudPoolNodes = 1000;

// name, kind (spot or on-demand; default on-demand), provider, instanceType, region, zones,
// minNodes, maxNodes (required), idleTimeout (seconds), priority, labels. The shape and price
// come later from the catalog offering (cloud/pool_offerings.h). `taken` holds the names used
// so far (pools, nodes, and whatever the caller reserves); the pool's name must not be one of
// them and joins them. `reserved_hint` explains a reserved name in the error.
util::Result<Pool> parse_cloud_pool(const YamlReader& r, const YamlField& item,
                                    std::set<std::string>& taken,
                                    std::string_view reserved_hint = "");

}  // namespace trainyard::model
