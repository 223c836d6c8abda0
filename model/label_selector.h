// Label selectors as kubectl writes them (`-l team=nlp,tier!=batch,gpu,!spot`): parsed once
// into requirements, then matched against a job's metadata.labels. Used by the CLI to check a
// selector before sending it and by the server to filter GET /api/v1/jobs?labelSelector=.
// Pure and thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/labels.h"
#include "util/status.h"

namespace trainyard::model {

struct LabelRequirement {
  enum class Op { Equals, NotEquals, Exists, NotExists };
  std::string key;
  Op op = Op::Exists;
  std::string value;  // for Equals and NotEquals; may be empty (an empty label value)
};

// Requirements joined by AND; an empty selector matches every job.
struct LabelSelector {
  std::vector<LabelRequirement> requirements;
  bool matches(const Labels& labels) const;
  // Back to text, in the form parse_label_selector() reads: "a=b,c!=d,e,!f".
  std::string to_string() const;
};

// Parses "key=value", "key==value", "key!=value", "key" (has the label) and "!key" (lacks it),
// comma-separated; spaces around terms are ignored. Keys and values follow the rules of
// metadata.labels. InvalidArgument names the term, its position and what a valid one is.
util::Result<LabelSelector> parse_label_selector(std::string_view text);

// Label keys: an optional DNS-subdomain prefix and "/", then a name of up to 63 letters,
// digits, "-", "_" or "." that starts and ends with a letter or digit. Values: such a name,
// or empty.
bool is_valid_label_key(std::string_view key);
bool is_valid_label_value(std::string_view value);

// Parses "key=value" as given to `trainyard run --label`; InvalidArgument otherwise.
util::Result<std::pair<std::string, std::string>> parse_label_assignment(std::string_view text);

}  // namespace trainyard::model
