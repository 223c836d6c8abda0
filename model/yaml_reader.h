// The one way trainyard reads YAML it is given (cluster files, the server config and its sections,
// job specs): load_yaml() checks the text against YamlLimits before yaml-cpp builds a tree, and a
// YamlReader turns the tree into typed values, every problem a located error:
//   "<file>:<line>:<column>: <path> must be <what>, got <value> (<fix>)"
// with 1-based lines and columns and a dotted key path ("capacity.pools[2].maxNodes"). Unknown and
// duplicate keys are errors (with a "did you mean" hint); nothing here throws or recurses on its
// own, so alias cycles and hostile input end as errors. Thread-compatible: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "util/status.h"

namespace trainyard::model {

// What any YAML document a person writes may hold; the same for every file trainyard reads.
struct YamlLimits {
  // A spec or a config is a page of text; anything far larger is a mistake or an attack.
  size_t max_document_bytes = size_t{1} << 20;
  // Mappings and lists inside each other; the deepest schema (a job's env items) nests 5.
  int max_depth = 16;
  // Entries of one mapping or items of one list. Above what any file needs (execve's 1 MiB for
  // args and env holds at most 116,508 entries of 9 bytes; a cluster has at most 100,000 nodes).
  size_t max_collection_size = size_t{1} << 17;
  // Bytes of one string value: Linux's MAX_ARG_STRLEN less the NUL, the longest string any field
  // can use (an execve argument); paths and names have stricter rules of their own.
  size_t max_string_bytes = 131071;
};

// The limits for every file and request. A job's stored form (model/job_manifest.h) is the one
// exception: it is held to the size of what was accepted, so it uses kStoredYamlLimits.
inline constexpr YamlLimits kYamlLimits{};
// JSON escaping makes the stored form of a 1 MiB spec longer than 1 MiB (see job_manifest.cc),
// and a job accepted before a rule existed must stay readable.
inline constexpr YamlLimits kStoredYamlLimits{.max_document_bytes = size_t{16} << 20,
                                              .max_depth = 16,
                                              .max_collection_size = size_t{1} << 20,
                                              .max_string_bytes = size_t{16} << 20};

// One value in the document and the path that names it ("pools[0].gpu"). `key` is where the name
// is written (the item itself for list items and the root); errors about a missing child point
// there.
struct YamlField {
  std::string path;
  YAML::Node key;
  YAML::Node value;
};

// The fields of one mapping by name.
class YamlFields : public std::map<std::string, YamlField, std::less<>> {
 public:
  const YamlField* get(std::string_view name) const {
    auto it = find(name);
    return it == end() ? nullptr : &it->second;
  }
};

// A loaded document: its root (Null when the text holds none) and where a second non-empty
// document starts, if one does (a trailing "---" is not one).
struct YamlDocument {
  YamlField root;
  std::optional<YAML::Mark> second;
};

// Checks size, NUL bytes, UTF-8, depth, collection sizes and syntax, then builds the tree.
// Errors: "<file>: the file has N bytes; at most M are accepted", "<file>:<line>:<col>: not
// valid YAML: ...", "<file>:<line>:<col>: nesting deeper than 16 levels ...".
util::Result<YamlDocument> load_yaml(std::string_view text, std::string_view file,
                                     const YamlLimits& limits = kYamlLimits);

class YamlReader {
 public:
  explicit YamlReader(std::string file, const YamlLimits& limits = kYamlLimits)
      : file_(std::move(file)), limits_(limits) {}

  const std::string& file() const { return file_; }

  // load_yaml(), then the root as a mapping; a second document or an empty file is an error
  // saying what the file holds (`expected`, e.g. "a mapping with pools:, nodes: and teams:").
  util::Result<YamlField> load_mapping(std::string_view text, std::string_view expected) const;

  // "<file>:<line>:<col>: <msg>" at the node (just "<file>: <msg>" when it has no position).
  util::Status error_at(const YAML::Node& at, std::string_view msg) const;
  util::Status error_at(const YAML::Mark& at, std::string_view msg) const;
  // At the value, or at its key when the value has no position (an absent value).
  util::Status error(const YamlField& at, std::string_view msg) const;
  // "<path> must be <want>, got <value>" plus " (<fix>)" when a fix is given.
  util::Status invalid(const YamlField& f, std::string_view want, std::string_view fix = "") const;
  // "<path>.<name> is required (<fix>)", at the line where the parent's name is written.
  util::Status missing(const YamlField& parent, std::string_view name, std::string_view fix) const;
  // "unknown field "<path>" (did you mean "x"?; allowed: ...)" at the field's name.
  util::Status unknown_field(const YamlField& f, std::span<const std::string_view> allowed) const;
  util::Status unknown_field(const YamlField& f,
                             std::initializer_list<std::string_view> allowed) const {
    return unknown_field(f, std::span(allowed.begin(), allowed.size()));
  }

  // The mapping's fields; unknown, duplicate and non-string names are errors.
  util::Result<YamlFields> fields(const YamlField& map,
                                  std::span<const std::string_view> allowed) const;
  util::Result<YamlFields> fields(const YamlField& map,
                                  std::initializer_list<std::string_view> allowed) const {
    return fields(map, std::span(allowed.begin(), allowed.size()));
  }
  // The mapping's entries in document order without a name check (labels, env, quotas);
  // duplicate and non-string names are errors. `want` describes the mapping for a wrong type.
  util::Result<std::vector<YamlField>> entries(
      const YamlField& map, std::string_view want = "a mapping of name: value") const;
  // The list's items ("<path>[0]", ...); `fix` is added when the value is not a list.
  util::Result<std::vector<YamlField>> items(const YamlField& list, std::string_view fix) const;

  // Any scalar, as written, without NUL and at most max_string_bytes.
  util::Result<std::string> string(const YamlField& f) const;
  // A string that is not empty ("must be a non-empty string").
  util::Result<std::string> non_empty_string(const YamlField& f) const;
  // Plain decimal digits with an optional sign, lo..hi; "0x10", "010", "1e3", "1.0" are refused.
  util::Result<int64_t> integer(const YamlField& f, int64_t lo, int64_t hi,
                                std::string_view fix = "") const;
  // A finite decimal number lo..hi ("1.5", "2", "1e3"); `noun` names it ("a number of seconds").
  util::Result<double> number(const YamlField& f, double lo, double hi,
                              std::string_view noun = "a number", std::string_view fix = "") const;
  // true or false (also True, TRUE, False, FALSE); YAML 1.1's yes/no/on/off are refused.
  util::Result<bool> boolean(const YamlField& f) const;
  // A list of strings; a plain string gets the fix "write it as a list: [...]".
  util::Result<std::vector<std::string>> string_list(const YamlField& f) const;

 private:
  std::string file_;
  YamlLimits limits_;
};

// Quoted, escaped, shortened rendering of a value for "got ..." ("a list" for non-scalars).
std::string describe_yaml(const YAML::Node& n);
// Edit-distance suggestion: the allowed word closest to `word`, or "" when none is close.
std::string closest_match(std::string_view word, std::span<const std::string_view> allowed);
// Index of the first byte that is not valid UTF-8, or npos.
size_t invalid_utf8_at(std::string_view text);
// "a.b" from "a" and "b"; "b" when the parent is the root ("").
std::string yaml_child_path(std::string_view parent, std::string_view name);

}  // namespace trainyard::model
