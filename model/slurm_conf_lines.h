// slurm.conf's line syntax: '#' comments ("\#" is a literal '#'), lines continued by a trailing
// '\', and whitespace-separated key=value words whose values may be quoted. Internal to
// model/slurm_conf.cc; knows nothing of what the keys mean.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace trainyard::model {

// One logical line: continuations joined, comment removed, split into key=value words.
struct SlurmConfLine {
  int line = 0;
  std::vector<std::pair<std::string, std::string>> words;  // lower-cased key, raw value
  bool has_equals = true;  // false: the first word had no '=' ("Include /etc/x.conf")
};

// Reads `text` (borrowed; must outlive the reader) one logical line at a time.
class SlurmConfLineReader {
 public:
  SlurmConfLineReader(const std::string& text, std::string file)
      : text_(text), file_(std::move(file)) {}
  // The next line with words, or nullopt at the end. Keys come back lower-cased.
  util::Result<std::optional<SlurmConfLine>> next();

 private:
  util::Status error(int line, std::string_view msg) const;
  util::Status split_words(std::string_view s, SlurmConfLine& out) const;

  const std::string& text_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 0;
};

}  // namespace trainyard::model
