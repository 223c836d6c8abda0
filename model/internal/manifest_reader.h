// Typed reads from a yaml-cpp tree for the job-manifest parser. Every problem becomes
// "<file>:<line>: <path> must be <what>, got <value>" with 1-based lines from yaml-cpp marks.
// Never descends into nodes on its own, so cyclic alias graphs cannot make it recurse.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "model/job_manifest.h"
#include "model/labels.h"
#include "util/status.h"

namespace trainyard::model::internal {

// One value in the document and the dotted path that names it ("spec.workers",
// "spec.template.command[0]"). `key` is where the name is written (the item itself for list
// items and the root); errors about a missing child point there.
struct Field {
  std::string path;
  YAML::Node key;
  YAML::Node value;
};

// The fields of one mapping, looked up by name.
using Fields = std::map<std::string, Field, std::less<>>;

// Edit-distance suggestion: the allowed word closest to `word`, or "" when none is close.
std::string closest_match(std::string_view word, std::initializer_list<std::string_view> allowed);

class ManifestReader {
 public:
  explicit ManifestReader(std::string file) : file_(std::move(file)) {}

  // "<file>:<line>: <msg>" at the value's line (the key's when the value has none).
  util::Status error(const Field& at, std::string_view msg) const;
  util::Status error_at(const YAML::Node& at, std::string_view msg) const;
  // "<path> must be <want>, got <value>" plus " (<fix>)" when a fix is given.
  util::Status invalid(const Field& f, std::string_view want, std::string_view fix = "") const;
  // "<path>.<name> is required (<fix>)", at the line where the parent's name is written.
  util::Status missing(const Field& parent, std::string_view name, std::string_view fix) const;

  // "unknown field "<path>" (did you mean "x"?; allowed: ...)" at the field's name.
  util::Status unknown_field(const Field& f, std::initializer_list<std::string_view> allowed) const;
  // The mapping's fields; unknown, duplicate and non-string names are errors.
  util::Result<Fields> fields(const Field& map,
                              std::initializer_list<std::string_view> allowed) const;
  // The mapping's entries without a name check (labels, env maps, resource limits).
  util::Result<std::vector<Field>> entries(const Field& map) const;
  util::Result<std::vector<Field>> items(const Field& list, std::string_view example) const;

  util::Result<std::string> string(const Field& f) const;  // any scalar, as written
  util::Result<int64_t> integer(const Field& f, int64_t lo, int64_t hi,
                                std::string_view fix = "") const;
  util::Result<bool> boolean(const Field& f) const;
  // A list of scalars; a plain string gets the fix "write it as a list: [...]".
  util::Result<std::vector<std::string>> string_list(const Field& f) const;
  // Kubernetes label syntax for keys and values; label() checks and adds one entry of `parent`.
  util::Result<Labels> labels(const Field& f) const;
  util::Status label(const Field& parent, const Field& entry, Labels& out) const;

 private:
  std::string file_;
};

// Quoted, escaped, shortened rendering of a value for "got ..." ("a list" for non-scalars).
std::string describe(const YAML::Node& n);
// Index of the first byte that is not valid UTF-8, or npos.
size_t invalid_utf8_at(std::string_view text);

// Linux's PATH_MAX, with the NUL: a longer working or checkpoint directory cannot be used.
inline constexpr size_t kMaxPathBytes = 4096;

// Which rules a document must meet. A submission meets every current rule. A stored spec (the
// store's canonical JSON of a job accepted earlier) is held to the rules it was accepted under:
// checks added since then (team-name characters, the simulated-GPU profile, execve sizes) are
// skipped, so that a server upgrade never makes a stored job unreadable.
enum class ManifestSource { Submission, Store };

// The template part of the manifest (command, args, env, workingDir, resources).
util::Status read_template(const ManifestReader& r, ManifestSource source, const Field& tmpl,
                           JobManifest& m);

}  // namespace trainyard::model::internal
