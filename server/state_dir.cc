#include "server/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "exec/executor.h"

namespace trainyard::server {
namespace {

namespace fs = std::filesystem;

std::string errno_text() {
  return std::strerror(errno);
}

// Files of the server's own that nobody else may read.
constexpr const char* kPrivateFiles[] = {"admin.token", "server.lock", "worker-uids.json"};

constexpr uid_t kKeepOwner = static_cast<uid_t>(-1);

// `dir` made if missing, then given to uid:gid (unless uid is kKeepOwner) with `mode`; refused
// when something else (a link, a file) is in its place.
util::Status own_dir(const fs::path& dir, uid_t uid, gid_t gid, mode_t mode) {
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST)
    return util::unavailable(fmt::format("cannot create {}: {}", dir.string(), errno_text()));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return util::unavailable(fmt::format("{} is not a directory; move it away", dir.string()));
  if (uid != kKeepOwner && (st.st_uid != uid || st.st_gid != gid) &&
      ::lchown(dir.c_str(), uid, gid) != 0)
    return util::unavailable(
        fmt::format("cannot give {} to uid {} gid {}: {}", dir.string(), uid, gid, errno_text()));
  if ((st.st_mode & 07777) != mode && ::chmod(dir.c_str(), mode) != 0)
    return util::unavailable(fmt::format("cannot chmod {}: {}", dir.string(), errno_text()));
  return util::Status::ok();
}

// Takes the permissions of "others" away from what this process owns at `path` (not a link):
// the fix for run dirs and logs of older versions, which were world-readable.
void close_to_others(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) return;
  if (st.st_uid != ::geteuid() || (st.st_mode & 07) == 0) return;
  ::chmod(path.c_str(), st.st_mode & 07770);
}

std::vector<fs::path> children(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(it->path());
  return out;
}

// jobs/<id>/attempt-<n>/rank-<r>/ and the files of each run dir, but not the worker's own
// work/ and tmp/ (this process does not own them, and never walks what a worker owns).
void tighten_old_job_dirs(const fs::path& jobs) {
  for (const auto& job : children(jobs)) {
    close_to_others(job);
    for (const auto& attempt : children(job)) {
      close_to_others(attempt);
      for (const auto& run : children(attempt)) {
        close_to_others(run);
        for (const auto& file : children(run)) {
          const auto name = file.filename();
          if (name != exec::kWorkDir && name != exec::kTmpDir) close_to_others(file);
        }
      }
    }
  }
}

// Gives everything below the open directory `dir` to uid:gid, through file descriptors only,
// so a link planted anywhere is changed itself and never followed. A file with more than one
// name may be a hard link to a file elsewhere; devices would open hardware to the team: both are
// left alone.
void chown_below(int dir, uid_t uid, gid_t gid, int depth) {
  if (depth > 64) return;
  DIR* d = ::fdopendir(::dup(dir));
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      const int child = ::openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) continue;
      chown_below(child, uid, gid, depth + 1);
      int ignored = ::fchown(child, uid, gid);
      (void)ignored;
      ::close(child);
    } else if (S_ISREG(st.st_mode)) {
      const int f =
          ::openat(dir, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
      if (f < 0) continue;
      struct stat fst {};
      if (::fstat(f, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_nlink == 1) {
        int ignored = ::fchown(f, uid, gid);
        (void)ignored;
      }
      ::close(f);
    } else if (S_ISLNK(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
      int ignored = ::fchownat(dir, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW);
      (void)ignored;
    }
  }
  ::closedir(d);
}

}  // namespace

util::Status prepare_state_dir(const fs::path& dir, bool isolate) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return util::unavailable(
        fmt::format("cannot create the state directory {}: {}", dir.string(), ec.message()));
  // Workers pass through the state dir to their run dirs, but may not list it.
  const mode_t pass = isolate ? 0711 : 0700;
  TY_RETURN_IF_ERROR(own_dir(dir, kKeepOwner, 0, pass));
  TY_RETURN_IF_ERROR(own_dir(dir / kJobsDir, kKeepOwner, 0, pass));
  TY_RETURN_IF_ERROR(own_dir(dir / kCheckpointsDir, kKeepOwner, 0, pass));
  for (const char* name : kPrivateFiles) make_private(dir / name);
  make_private(dir / "state.db");
  tighten_old_job_dirs(dir / kJobsDir);
  for (const auto& ckpt : children(dir / kCheckpointsDir)) close_to_others(ckpt);
  return util::Status::ok();
}

void make_private(const fs::path& file) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    fs::path p = file;
    p += suffix;
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) != 0)
      ::chmod(p.c_str(), 0600);
  }
}

fs::path first_closed_dir(const fs::path& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) return {};
  for (p = p.lexically_normal(); !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) return p;
    if (p == p.root_path()) break;
  }
  return {};
}

util::Status prepare_attempt_dir(const fs::path& state_dir, util::JobId id, int attempt,
                                 const exec::Credentials* creds) {
  const fs::path job = state_dir / kJobsDir / std::to_string(id.value());
  const gid_t gid = creds != nullptr ? creds->gid : ::getegid();
  const mode_t mode = creds != nullptr ? 0750 : 0700;
  TY_RETURN_IF_ERROR(own_dir(job, ::geteuid(), gid, mode));
  return own_dir(job / fmt::format("attempt-{}", attempt), ::geteuid(), gid, mode);
}

util::Status prepare_checkpoint_dir(const fs::path& dir, const exec::Credentials* creds) {
  if (creds == nullptr) return own_dir(dir, ::geteuid(), ::getegid(), 0700);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return util::unavailable(
        fmt::format("cannot create checkpoint dir {}: {}", dir.string(), errno_text()));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return util::unavailable(
        fmt::format("checkpoint dir {} is not a directory: {}", dir.string(), errno_text()));
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0;
  if (ok && (st.st_uid != creds->uid || st.st_gid != creds->gid)) {
    chown_below(fd, creds->uid, creds->gid, 0);
    ok = ::fchown(fd, creds->uid, creds->gid) == 0;
  }
  ok = ok && ::fchmod(fd, 0700) == 0;
  const std::string why = errno_text();
  ::close(fd);
  if (!ok)
    return util::unavailable(
        fmt::format("cannot give checkpoint dir {} to uid {}: {}", dir.string(), creds->uid, why));
  return util::Status::ok();
}

util::Status write_private_file(const fs::path& path, std::string_view content) {
  fs::path tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return util::unavailable(fmt::format("cannot create {}: {}", tmp.string(), errno_text()));
  bool ok = ::fchmod(fd, 0600) == 0;
  for (size_t done = 0; ok && done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  const std::string why = errno_text();
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return util::unavailable(
        fmt::format("cannot write {}: {}", path.string(), ok ? errno_text() : why));
  }
  const int dir = ::open(path.parent_path().empty() ? "." : path.parent_path().c_str(),
                         O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return util::Status::ok();
}

}  // namespace trainyard::server
