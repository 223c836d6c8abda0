// Reads what a job leaves behind under the job contract (docs/job-contract.md): its checkpoint
// directory (step-<N>/ with a MANIFEST.json of file sizes and SHA-256s, written by the SDK) and
// its metrics file (JSON lines). The control plane uses this to say which checkpoints are
// loadable and how much work a preemption would lose. Thread-compatible; reads files only.
// A job controls these files: each is opened without following a link in its last component,
// and must be a regular file (a FIFO or device would hang or flood the reader). A root server
// reads them under ScopedFileIdentity (credentials.h), so a link anywhere in a path reaches
// nothing the job could not read itself.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::exec {

struct CheckpointInfo {
  int64_t step = 0;
  std::string path;
  int64_t bytes = 0;    // sum of the files the manifest lists
  std::string created;  // from the manifest
  bool verified = false;
  std::string problem;  // why it does not verify; empty when verified
};

struct CheckpointListOptions {
  bool check_hashes = true;  // false: sizes only (cheap; for `show`)
};

// Every step-<N> directory of `dir`, newest first, each verified against its manifest.
// A missing directory is an empty list; *.tmp and .trash-* entries are skipped.
std::vector<CheckpointInfo> list_checkpoints(const std::filesystem::path& dir,
                                             const CheckpointListOptions& options = {});

// When the newest committed checkpoint of `dir` (the highest step-<N> holding a manifest) was
// committed: its manifest's modification time, since the manifest is written last, just before
// the rename. Cheap (a directory listing and one stat, no hashing); nullopt when there is none.
std::optional<util::Time> newest_checkpoint_time(const std::filesystem::path& dir);

// The last complete line of a JSON-lines metrics file, and how many lines it has; nullopt when
// the file is missing or has no complete line that parses.
struct MetricsTail {
  nlohmann::json last;
  int64_t lines = 0;
  // The newest line trainyard.tune wrote (one with `tune_micro_batch`: its choice and measured
  // speed-up), its `tune_*` fields and `dtype`; null when there is none.
  nlohmann::json tuned;
};
std::optional<MetricsTail> read_metrics_tail(const std::filesystem::path& file);

}  // namespace trainyard::exec
