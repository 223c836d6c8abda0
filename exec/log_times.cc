#include "exec/log_times.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace trainyard::exec {
namespace fs = std::filesystem;

void LogTimesWriter::wrote(int64_t bytes, util::Time now) {
  if (bytes <= 0) return;
  const int64_t ms = (now - util::kEpoch).count() / 1000;
  if (fd_ >= 0 && ms / 1000 != last_second_) {
    last_second_ = ms / 1000;
    const std::string entry = fmt::format("{} {}\n", offset_, ms);
    // Best effort: a full disk loses times, never output.
    [[maybe_unused]] const ssize_t n = ::write(fd_, entry.data(), entry.size());
  }
  offset_ += bytes;
}

namespace {

// The first line start at or after `offset` ("\n" just before it, or the log's start).
int64_t next_line_start(std::ifstream& log, int64_t offset, int64_t size) {
  if (offset <= 0) return 0;
  log.seekg(offset - 1);
  char c = 0;
  for (int64_t at = offset - 1; at < size; ++at) {
    if (!log.get(c)) break;
    if (c == '\n') return at + 1;
  }
  return size;
}

}  // namespace

util::Result<int64_t> log_offset_since(const fs::path& log, util::Time since) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  std::ifstream times(fs::path(log).replace_filename(kLogTimesFile));
  if (!times) {
    if (size == 0) return 0;
    return util::failed_precondition(fmt::format(
        "{} has no line times (it was written by a trainyard that did not record them); read "
        "it whole or use a line count (tailLines) instead",
        log.filename().string()));
  }
  const int64_t since_second = (since - util::kEpoch).count() / 1000000;
  int64_t offset = 0, ms = 0;
  while (times >> offset >> ms) {
    if (ms / 1000 >= since_second) return next_line_start(in, std::min(offset, size), size);
  }
  return size;
}

int64_t log_offset_of_tail(const fs::path& log, int64_t from, int64_t lines) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return from;
  in.seekg(0, std::ios::end);
  const int64_t size = in.tellg();
  if (lines <= 0) return size;
  int64_t at = size;
  int64_t newlines = 0;
  char buf[8192];
  // A final line without "\n" is a line too: count the newline that ends the one before it.
  bool skip_last_newline = true;
  while (at > from) {
    const int64_t n = std::min<int64_t>(sizeof buf, at - from);
    at -= n;
    in.seekg(at);
    in.read(buf, n);
    for (int64_t i = n - 1; i >= 0; --i) {
      if (buf[i] != '\n') {
        skip_last_newline = false;
        continue;
      }
      if (std::exchange(skip_last_newline, false)) continue;
      if (++newlines == lines) return at + i + 1;
    }
  }
  return from;
}

}  // namespace trainyard::exec
