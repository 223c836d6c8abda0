// Puts "<file>:<line>: " in front of errors that the server finds after a spec has parsed (no
// node fits it, a dependency is unknown, the token's team differs): the field named in the
// message is looked up again in the submitted text, so these errors point at a line as the
// parser's own do.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "model/job_manifest.h"

namespace trainyard::model {
namespace {

// The child of map `node` whose key is the longest prefix of `rest` ending at '.', '[' or the
// end of `rest`; its key's length in `used` (0 when none).
YAML::Node child_for(const YAML::Node& node, std::string_view rest, size_t& used, int& line) {
  YAML::Node found;
  used = 0;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) continue;
    const std::string& key = kv.first.Scalar();
    if (key.size() <= used || !rest.starts_with(key)) continue;
    if (rest.size() != key.size() && rest[key.size()] != '.' && rest[key.size()] != '[') continue;
    used = key.size();
    line = kv.first.Mark().line + 1;
    found.reset(kv.second);
  }
  return found;
}

// The 1-based line of the deepest node along the dotted `path` in `root`, 0 if none.
int line_of(const YAML::Node& root, std::string_view path) {
  YAML::Node node;
  node.reset(root);
  int line = 0;
  while (!path.empty() && node.IsMap()) {
    size_t used = 0;
    YAML::Node next = child_for(node, path, used, line);
    if (used == 0) break;
    path.remove_prefix(used);
    node.reset(next);
    while (path.starts_with('[')) {
      const size_t close = path.find(']');
      size_t index = 0;
      if (close == std::string_view::npos ||
          std::from_chars(path.data() + 1, path.data() + close, index).ec != std::errc() ||
          !node.IsSequence() || index >= node.size())
        return line;
      node.reset(node[index]);
      line = node.Mark().line + 1;
      path.remove_prefix(close + 1);
    }
    if (path.starts_with('.')) path.remove_prefix(1);
  }
  return line;
}

}  // namespace

util::Status locate_spec_error(util::Status st, std::string_view text, std::string_view file) {
  if (st.is_ok()) return st;
  const std::string& message = st.message();
  const std::string field = job_spec_error_field(message);
  if (field.empty() || !message.starts_with(field)) return st;  // no field, or located already
  int line = 0;
  try {
    line = line_of(YAML::Load(std::string(text)), field);
  } catch (const YAML::Exception&) {
    return st;
  }
  if (line == 0) return st;
  return util::Status(st.code(), fmt::format("{}:{}: {}", file, line, message));
}

}  // namespace trainyard::model
