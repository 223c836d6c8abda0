// Kubernetes label syntax on top of the YAML reader.
#include "model/internal/manifest_reader.h"

#include <fmt/format.h>

#include "model/label_selector.h"

namespace trainyard::model::internal {

util::Status ManifestReader::label(const Field& parent, const Field& entry, Labels& out) const {
  const std::string& key = entry.key.Scalar();
  if (!is_valid_label_key(key)) {
    return error_at(entry.key, fmt::format("{}: \"{}\" is not a valid label key (an optional DNS "
                                           "prefix and \"/\", then a name of up to 63 letters, "
                                           "digits, \"-\", \"_\" or \".\")",
                                           parent.path, key));
  }
  std::string value;
  if (!entry.value.IsNull()) {
    TY_ASSIGN_OR_RETURN(value, string(entry));
  }
  if (!is_valid_label_value(value)) {
    return invalid(entry,
                   "a label value: up to 63 letters, digits, \"-\", \"_\" or \".\", "
                   "starting and ending with a letter or digit");
  }
  out[key] = std::move(value);
  return util::Status::ok();
}

util::Result<Labels> ManifestReader::labels(const Field& f) const {
  TY_ASSIGN_OR_RETURN(std::vector<Field> all, entries(f));
  Labels out;
  for (const Field& e : all) TY_RETURN_IF_ERROR(label(f, e, out));
  return out;
}

}  // namespace trainyard::model::internal
