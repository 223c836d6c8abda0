// Which field a job-spec error names, for APIs that report it apart from the message. The parser
// writes "<file>:<line>: <path> must be ...", "<file>:<line>: <path> is required (...)",
// "<file>:<line>: <path>: <problem>" and "<file>:<line>: [unknown ]field \"<path>\" ..."; the
// server's checks write "<path>: <problem>". The file name is the client's and may hold
// anything, so a word counts as a path only when it starts like one of the spec's fields.
#include <string>
#include <string_view>

#include "model/job_manifest.h"

namespace trainyard::model {
namespace {

constexpr std::string_view kMetadataFields[] = {"name", "labels"};
constexpr std::string_view kSpecFields[] = {"team",
                                            "priorityClass",
                                            "priority",
                                            "workers",
                                            "preemptible",
                                            "backoffLimit",
                                            "activeDeadlineSeconds",
                                            "dependsOn",
                                            "nodeSelector",
                                            "checkpoint",
                                            "template",
                                            "elastic"};

template <size_t N>
bool is_child(std::string_view path, std::string_view prefix, const std::string_view (&fields)[N]) {
  if (!path.starts_with(prefix)) return false;
  const std::string_view rest = path.substr(prefix.size());
  const std::string_view child = rest.substr(0, rest.find_first_of(".["));
  for (std::string_view f : fields) {
    if (f == child) return true;
  }
  return false;
}

bool is_field_path(std::string_view w) {
  if (w == "apiVersion" || w == "kind" || w == "metadata" || w == "spec") return true;
  if (w.find(':') != std::string_view::npos) return false;  // "spec.yaml:3" is a location
  return is_child(w, "metadata.", kMetadataFields) || is_child(w, "spec.", kSpecFields);
}

// The field `m` (a message without its location) starts with, or "".
std::string field_at(std::string_view m) {
  for (std::string_view quoted :
       {std::string_view("unknown field \""), std::string_view("field \"")}) {
    if (!m.starts_with(quoted)) continue;
    m.remove_prefix(quoted.size());
    const size_t close = m.find('"');
    return close == std::string_view::npos ? "" : std::string(m.substr(0, close));
  }
  std::string_view word = m.substr(0, m.find(' '));
  if (word.ends_with(':')) word.remove_suffix(1);
  return is_field_path(word) ? std::string(word) : "";
}

}  // namespace

std::string job_spec_error_field(std::string_view message) {
  if (std::string f = field_at(message); !f.empty()) return f;
  // "<file>:<line>: ", the line being digits: the first such ": " ends the location.
  for (size_t c = message.find(": "); c != std::string_view::npos; c = message.find(": ", c + 1)) {
    size_t digits = c;
    while (digits > 0 && message[digits - 1] >= '0' && message[digits - 1] <= '9') --digits;
    if (digits < c && digits > 0 && message[digits - 1] == ':')
      return field_at(message.substr(c + 2));
  }
  // "<file>: " without a line: a value yaml-cpp gave no position.
  if (const size_t c = message.find(": "); c != std::string_view::npos)
    return field_at(message.substr(c + 2));
  return "";
}

}  // namespace trainyard::model
