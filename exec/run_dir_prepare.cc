// Preparing a worker's run dir before its launch, shared by the local and Slurm executors.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "exec/internal/run_files.h"

namespace trainyard::exec::internal {
namespace {

namespace fs = std::filesystem;

std::string errno_text() {
  return std::strerror(errno);
}

// A directory directly inside the run dir (or the run dir itself), made if missing and given
// `uid`:`gid` and `mode`. lchown and the lstat check: never follow a link planted in its place.
util::Status make_owned_dir(const fs::path& dir, uid_t uid, gid_t gid, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
    return util::internal_error(fmt::format("cannot create {}: {}", dir.string(), errno_text()));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return util::internal_error(fmt::format("{} is not a directory; remove it", dir.string()));
  if ((st.st_uid != uid || st.st_gid != gid) && ::lchown(dir.c_str(), uid, gid) != 0)
    return util::internal_error(
        fmt::format("cannot give {} to uid {} gid {}: {}", dir.string(), uid, gid, errno_text()));
  if (::chmod(dir.c_str(), mode) != 0)
    return util::internal_error(fmt::format("cannot chmod {}: {}", dir.string(), errno_text()));
  return util::Status::ok();
}

// The run dir, root's (group: the worker's, read-only); the worker's own work and tmp dirs; and
// the metrics file, the worker's but in a dir it cannot change, so it can append to it but not
// swap it for a link to a file it may not read.
util::Status prepare_run_dir(const WorkerLaunch& w) {
  const uid_t self = ::geteuid();
  const uid_t uid = w.run_as ? w.run_as->uid : self;
  const gid_t gid = w.run_as ? w.run_as->gid : ::getegid();
  std::error_code ec;
  fs::create_directories(w.run_dir.parent_path(), ec);
  if (ec) {
    return util::internal_error(
        fmt::format("cannot create run dir {}: {}", w.run_dir.string(), ec.message()));
  }
  TY_RETURN_IF_ERROR(make_owned_dir(w.run_dir, self, gid, 0750));
  TY_RETURN_IF_ERROR(make_owned_dir(w.run_dir / kWorkDir, uid, gid, 0700));
  TY_RETURN_IF_ERROR(make_owned_dir(w.run_dir / kTmpDir, uid, gid, 0700));
  const fs::path metrics = w.run_dir / kMetricsFile;
  int fd = ::open(metrics.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return util::internal_error(
        fmt::format("cannot create {}: {}", metrics.string(), errno_text()));
  }
  bool ok = (self != 0 || ::fchown(fd, uid, gid) == 0) && ::fchmod(fd, 0640) == 0;
  ::close(fd);
  if (!ok) return util::internal_error(fmt::format("cannot set up {}", metrics.string()));
  return util::Status::ok();
}

}  // namespace

// Absolute paths (the worker changes directory), the run dir prepared, and stale files of an
// earlier launch in the same run dir removed so they cannot be mistaken for this one's. The
// checkpoint dir is not made here: the worker makes it, as its own user.
util::Result<WorkerLaunch> prepare_worker(const WorkerLaunch& in) {
  WorkerLaunch w = in;
  if (w.run_as && !can_switch_users()) {
    return util::failed_precondition(
        fmt::format("cannot run a worker as uid {}: this server is not root (uid {}); run it as "
                    "root, or without workers.user",
                    w.run_as->uid, ::geteuid()));
  }
  std::error_code ec;
  w.run_dir = fs::absolute(w.run_dir, ec);
  if (ec) {
    return util::internal_error(
        fmt::format("cannot create run dir {}: {}", in.run_dir.string(), ec.message()));
  }
  TY_RETURN_IF_ERROR(prepare_run_dir(w));
  if (!w.checkpoint_dir.empty()) {
    fs::path ckpt = fs::absolute(w.checkpoint_dir, ec);
    if (!ec) w.checkpoint_dir = ckpt.string();
  }
  for (const char* stale : {kPidFile, kExitStatusFile, kNoticeFile})
    fs::remove(w.run_dir / stale, ec);
  return w;
}
}  // namespace trainyard::exec::internal
