// When each part of a worker's log arrived, for `logs --since`. The wrapper notes in
// `output.log.times` (next to output.log) one line "OFFSET UNIX_MS" for the first output of
// each new second: bytes from OFFSET on arrived at UNIX_MS or later, within that second. A
// line's time is the time its first byte reached the wrapper, exact to the second. Readers
// below turn a time or a line count into the log offset to read from.
#pragma once

#include <cstdint>
#include <filesystem>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::exec {

inline constexpr const char* kLogTimesFile = "output.log.times";

// Appends entries to an open times file. Not thread-safe (one per wrapper).
class LogTimesWriter {
 public:
  // `fd`: the times file, open for appending (-1 writes nothing); `offset`: the log's size when
  // this writer starts (a restarted wrapper appends to the same log).
  LogTimesWriter(int fd, int64_t offset) : fd_(fd), offset_(offset) {}
  // `bytes` are about to be appended to the log, at `now`.
  void wrote(int64_t bytes, util::Time now);

 private:
  int fd_;
  int64_t offset_;
  int64_t last_second_ = -1;
};

// The offset of the first line of `log` whose output arrived in the second of `since` or later
// (the log's size when none did). FailedPrecondition when the log exists without a times file
// (written by an older trainyard); 0 when neither exists yet.
util::Result<int64_t> log_offset_since(const std::filesystem::path& log, util::Time since);

// The offset where the last `lines` lines of `log` begin, looking no further back than `from`
// (a final line without "\n" counts as a line).
int64_t log_offset_of_tail(const std::filesystem::path& log, int64_t from, int64_t lines);

}  // namespace trainyard::exec
