// The state directory's permissions: what a job's worker may reach there and what it may not
// (docs/server.md, "Security model"). The server's own files (state.db, admin.token, the uid
// map) are root's alone; jobs/ and checkpoints/ can be passed through but not listed; each job's
// run dirs belong to root with the team's group (readable, not writable, by the team), and its
// default checkpoint dir to the team's user. Without `isolate` (the server is not root, so every
// worker is the server's own user) everything is simply private to that user.
#pragma once

#include <filesystem>
#include <string_view>

#include "exec/credentials.h"
#include "util/ids.h"
#include "util/status.h"

namespace trainyard::server {

inline constexpr const char* kJobsDir = "jobs";
inline constexpr const char* kCheckpointsDir = "checkpoints";

// Creates the state dir, jobs/ and checkpoints/ with their modes, and tightens what older
// versions left behind (state files readable by others, run dirs open to everyone).
util::Status prepare_state_dir(const std::filesystem::path& dir, bool isolate);
// Makes `file` (and its SQLite -wal, -shm, -journal siblings when present) mode 0600.
void make_private(const std::filesystem::path& file);
// `dir` or the first directory above it that others cannot pass through (no o+x), so a worker
// running as another user could not reach what lies below; empty when there is none.
std::filesystem::path first_closed_dir(const std::filesystem::path& dir);

// jobs/<id>/ and jobs/<id>/attempt-<n>/: root's, group `creds->gid`, 0750 (0700 without creds).
util::Status prepare_attempt_dir(const std::filesystem::path& state_dir, util::JobId id,
                                 int attempt, const exec::Credentials* creds);
// The job's default checkpoint dir (inside checkpoints/), owned by `creds` with mode 0700. A dir
// left by an older version, or by the team's former user, is given to `creds` with all it holds
// (walked through file descriptors, never following links, skipping hard-linked files).
util::Status prepare_checkpoint_dir(const std::filesystem::path& dir,
                                    const exec::Credentials* creds);

// Writes `content` to `path` with mode 0600 through a temporary file, fsync and rename, and
// fsyncs the directory: it is there, whole, after a crash.
util::Status write_private_file(const std::filesystem::path& path, std::string_view content);

}  // namespace trainyard::server
