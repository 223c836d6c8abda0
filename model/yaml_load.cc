// load_yaml(): the text's limits are checked from the parser's events before yaml-cpp builds a
// tree, and documents are counted without YAML::LoadAll: yaml-cpp 0.7's LoadAll loops forever,
// allocating, on a stray "," at block level (jbeder/yaml-cpp#1040, fixed upstream in 0.9).
#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "model/yaml_reader.h"

namespace trainyard::model {
namespace {

// A limit the scan found exceeded; caught in load_yaml() and reported at `mark`.
struct LimitExceeded {
  YAML::Mark mark;
  std::string message;
};

// Notes where each document starts and whether its root is an explicit node or null, and holds
// the document to the depth and collection-size limits.
class DocumentScan final : public YAML::EventHandler {
 public:
  explicit DocumentScan(const YamlLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    start = mark;
    root_seen = false;
    root_null = true;
    open_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, false); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, true); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(mark, true);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    open(mark, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    open(mark, true);
  }
  void OnMapEnd() override { close(); }

  YAML::Mark start;
  bool root_seen = false;
  bool root_null = true;

 private:
  struct Open {
    bool map;
    size_t children;  // keys and values of a map, items of a list
  };

  void node(const YAML::Mark& mark, bool explicit_node) {
    if (!root_seen) {
      root_seen = true;
      root_null = !explicit_node;
    }
    if (open_.empty()) return;
    Open& parent = open_.back();
    const size_t size = parent.map ? parent.children / 2 + 1 : parent.children + 1;
    if (size > limits_.max_collection_size) {
      throw LimitExceeded{mark,
                          fmt::format("a {} with more than {} {}; split it up or shorten it",
                                      parent.map ? "mapping" : "list", limits_.max_collection_size,
                                      parent.map ? "entries" : "items")};
    }
    ++parent.children;
  }
  void open(const YAML::Mark& mark, bool map) {
    node(mark, true);
    if (open_.size() >= static_cast<size_t>(limits_.max_depth)) {
      throw LimitExceeded{mark, fmt::format("mappings and lists nest deeper than {} levels here; "
                                            "no trainyard file needs more than a few",
                                            limits_.max_depth)};
    }
    open_.push_back({map, 0});
  }
  void close() {
    if (!open_.empty()) open_.pop_back();
  }

  const YamlLimits& limits_;
  std::vector<Open> open_;
};

bool same_place(const YAML::Mark& a, const YAML::Mark& b) {
  return a.pos == b.pos && a.line == b.line && a.column == b.column;
}

// Scans every document of the stream; returns where a second non-empty one starts, if any.
std::optional<YAML::Mark> scan(const std::string& text, const YamlLimits& limits) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentScan scan(limits);
  std::optional<YAML::Mark> previous;
  // Each document consumes input, so a stream has fewer documents than bytes; more means the
  // parser is stuck in a way the check below does not recognise.
  size_t budget = text.size() + 2;
  while (parser.HandleNextDocument(scan)) {
    if (--budget == 0) throw YAML::ParserException(scan.start, "too many documents");
    // The looping bug yields empty documents without consuming input: the same start twice.
    if (scan.root_null && previous && same_place(*previous, scan.start))
      throw YAML::ParserException(scan.start, "unexpected ','");
    // Any non-empty document but the stream's first is one too many (trailing "---" is fine).
    if (previous && !scan.root_null) return scan.start;
    previous = scan.start;
  }
  return std::nullopt;
}

// A mark for the byte at `offset`, for problems found before parsing.
YAML::Mark mark_of(std::string_view text, size_t offset) {
  YAML::Mark m;
  m.pos = static_cast<int>(offset);
  const std::string_view before = text.substr(0, offset);
  m.line = static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const size_t line_start = before.rfind('\n');
  m.column =
      static_cast<int>(line_start == std::string_view::npos ? offset : offset - line_start - 1);
  return m;
}

}  // namespace

util::Result<YamlDocument> load_yaml(std::string_view text, std::string_view file,
                                     const YamlLimits& limits) {
  const YamlReader r{std::string(file), limits};
  if (text.size() > limits.max_document_bytes) {
    return util::invalid_argument(
        fmt::format("{}: the document has {} bytes; at most {} are "
                    "accepted",
                    file, text.size(), limits.max_document_bytes));
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    return r.error_at(mark_of(text, nul), "the text contains a NUL byte");
  if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    return r.error_at(mark_of(text, bad), "the text is not valid UTF-8");
  const std::string owned(text);
  try {
    YamlDocument doc;
    doc.second = scan(owned, limits);
    const YAML::Node root = YAML::Load(owned);
    doc.root = YamlField{"", root, root};
    return doc;
  } catch (const LimitExceeded& e) {
    return r.error_at(e.mark, e.message);
  } catch (const YAML::Exception& e) {
    return r.error_at(e.mark, fmt::format("not valid YAML: {}", e.msg));
  }
}

util::Result<YamlField> YamlReader::load_mapping(std::string_view text,
                                                 std::string_view expected) const {
  TY_ASSIGN_OR_RETURN(YamlDocument doc, load_yaml(text, file_, limits_));
  if (doc.second) {
    return error_at(*doc.second,
                    "a second document starts here; the file holds one (remove this \"---\" and "
                    "what follows, or move it to a file of its own)");
  }
  if (!doc.root.value.IsMap()) {
    YAML::Mark at = doc.root.value.Mark();
    if (at.is_null()) at = YAML::Mark{};  // an empty text: line 1, column 1
    if (doc.root.value.IsNull())
      return error_at(at, fmt::format("the file is empty; write {}", expected));
    return error_at(
        at, fmt::format("the file must be {}, got {}", expected, describe_yaml(doc.root.value)));
  }
  return doc.root;
}

}  // namespace trainyard::model
