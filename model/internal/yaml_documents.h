// Loads the first document of a YAML stream and finds where a second non-empty one starts,
// without YAML::LoadAll: yaml-cpp 0.7's LoadAll loops forever, allocating, on a stray ","
// at block level (jbeder/yaml-cpp#1040, fixed upstream in 0.9 by #1319).
#pragma once

#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

namespace trainyard::model::internal {

struct YamlDocuments {
  YAML::Node first;                  // Null when the stream has no document
  std::optional<YAML::Mark> second;  // start of a non-empty document after the first
};

// Throws YAML::Exception on a syntax error, like yaml-cpp; callers catch at their boundary.
YamlDocuments load_documents(const std::string& text);

}  // namespace trainyard::model::internal
