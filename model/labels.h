// Node labels and label selectors, Kubernetes style: exact key=value matching.
#pragma once

#include <map>
#include <string>

namespace trainyard::model {

using Labels = std::map<std::string, std::string>;

// Well-known label keys set by trainyard on every node.
inline constexpr const char* kLabelGpuProduct = "trainyard.dev/gpu.product";
inline constexpr const char* kLabelPool = "trainyard.dev/pool";

// True when every key=value of `selector` is present in `labels`.
inline bool selector_matches(const Labels& selector, const Labels& labels) {
  for (const auto& [key, value] : selector) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return true;
}

}  // namespace trainyard::model
