// Reads a whole file into memory, with one error form for every reader: the path, what failed and
// what the system said ("jobs.csv: cannot open: No such file or directory").
// Follows symlinks and blocks like a plain open(2): files a job controls need O_NOFOLLOW and
// O_NONBLOCK and are read by their own code (exec/checkpoint_reader.cc, server/progress_views.cc).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/status.h"

namespace trainyard::util {

struct ReadFileOptions {
  // More bytes than this is an error (OutOfRange) rather than a partial text; < 0: no limit.
  int64_t max_bytes = -1;
  // Names the file in errors: "cannot open the cluster file: ..."; empty: "cannot open: ...".
  std::string_view what;
};

// NotFound when the file cannot be opened (whatever the reason; the message says which),
// InvalidArgument when it opens but cannot be read (a directory, an I/O error), OutOfRange past
// max_bytes.
Result<std::string> read_file(const std::filesystem::path& path,
                              const ReadFileOptions& options = {});

}  // namespace trainyard::util
