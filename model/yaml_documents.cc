#include "model/internal/yaml_documents.h"

#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace trainyard::model::internal {
namespace {

// Notes where each document starts and whether its root is an explicit node or null.
class DocumentScan final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    start = mark;
    root_seen = false;
    root_null = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { root(false); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { root(true); }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    root(true);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    root(true);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    root(true);
  }
  void OnMapEnd() override {}

  YAML::Mark start;
  bool root_seen = false;
  bool root_null = true;

 private:
  void root(bool explicit_node) {
    if (root_seen) return;
    root_seen = true;
    root_null = !explicit_node;
  }
};

bool same_place(const YAML::Mark& a, const YAML::Mark& b) {
  return a.pos == b.pos && a.line == b.line && a.column == b.column;
}

}  // namespace

YamlDocuments load_documents(const std::string& text) {
  YamlDocuments out;
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentScan scan;
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
    if (previous && !scan.root_null) {
      out.second = scan.start;
      break;
    }
    previous = scan.start;
  }
  out.first = YAML::Load(text);
  return out;
}

}  // namespace trainyard::model::internal
