#include "exec/internal/run_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "util/read_file.h"

namespace trainyard::exec::internal {
namespace {

util::Status errno_status(std::string_view what, const std::filesystem::path& path) {
  return util::internal_error(fmt::format("{} {}: {}", what, path.string(), std::strerror(errno)));
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void fsync_dir(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

template <typename Int>
bool parse_int(std::string_view text, Int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\n') ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

}  // namespace

void set_run_file_access(int fd, const std::filesystem::path& dir) {
  ::fchmod(fd, kRunFileMode);
  struct stat st {};
  if (::geteuid() == 0 && ::stat(dir.c_str(), &st) == 0) {
    int ignored = ::fchown(fd, static_cast<uid_t>(-1), st.st_gid);
    (void)ignored;  // the mode alone still keeps others out
  }
}

util::Status write_file_atomically(const std::filesystem::path& path, std::string_view content,
                                   bool durable) {
  static std::atomic<int> sequence{0};
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}.{}", ::getpid(), sequence.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno_status("cannot create", tmp);
  set_run_file_access(fd, path.parent_path());
  bool ok = write_all(fd, content) && (!durable || ::fsync(fd) == 0);
  int saved_errno = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    errno = saved_errno;
    return errno_status("cannot write", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    saved_errno = errno;
    ::unlink(tmp.c_str());
    errno = saved_errno;
    return errno_status("cannot rename into", path);
  }
  if (durable) fsync_dir(path.parent_path());
  return util::Status::ok();
}

std::optional<ProcStat> read_proc_stat(int pid) {
  auto text = util::read_file(fmt::format("/proc/{}/stat", pid));
  if (!text.is_ok()) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted
  // from the last ')'. State is field 3 and start time field 22.
  size_t paren = text->rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::vector<std::string_view> fields = split_words(std::string_view(*text).substr(paren + 1));
  constexpr size_t kStartTimeField = 22 - 3;
  ProcStat stat;
  if (fields.size() <= kStartTimeField || fields[0].size() != 1) return std::nullopt;
  if (!parse_int(fields[kStartTimeField], stat.start_ticks)) return std::nullopt;
  stat.state = fields[0][0];
  return stat;
}

std::string format_pid_file(const ProcessRef& ref) {
  return fmt::format("{} {}\n", ref.pid, ref.start_ticks);
}

util::Result<ProcessRef> read_pid_file(const std::filesystem::path& run_dir) {
  std::filesystem::path path = run_dir / kPidFile;
  auto text = util::read_file(path);
  if (!text.is_ok()) {
    return util::not_found(
        fmt::format("{}: no pid file (the worker never started here)", path.string()));
  }
  std::vector<std::string_view> words = split_words(*text);
  ProcessRef ref;
  if (words.size() != 2 || !parse_int(words[0], ref.pid) || !parse_int(words[1], ref.start_ticks) ||
      ref.pid <= 0) {
    return util::invalid_argument(
        fmt::format("{}: expected '<pid> <start_ticks>', got '{}'", path.string(), *text));
  }
  return ref;
}

std::string format_exit_status(ExitKind kind, int code) {
  return fmt::format("{} {}\n", kind == ExitKind::Signaled ? "signaled" : "exited", code);
}

std::optional<ProcessStatus> read_exit_status(const std::filesystem::path& run_dir) {
  auto text = util::read_file(run_dir / kExitStatusFile);
  if (!text.is_ok()) return std::nullopt;
  std::vector<std::string_view> words = split_words(*text);
  ProcessStatus status;
  if (words.size() != 2 || !parse_int(words[1], status.code)) return std::nullopt;
  if (words[0] == "exited") {
    status.kind = ExitKind::Exited;
  } else if (words[0] == "signaled") {
    status.kind = ExitKind::Signaled;
  } else {
    return std::nullopt;
  }
  status.detail = describe_exit(status.kind, status.code);
  return status;
}

std::string describe_exit(ExitKind kind, int code) {
  switch (kind) {
    case ExitKind::Running:
      return "running";
    case ExitKind::Exited:
      return fmt::format("exited with code {}", code);
    case ExitKind::Signaled: {
      const char* abbrev = sigabbrev_np(code);
      return abbrev ? fmt::format("killed by SIG{}", abbrev)
                    : fmt::format("killed by signal {}", code);
    }
    case ExitKind::Lost:
      return "lost: the worker is gone and recorded no exit status";
    case ExitKind::NotStarted:
      return "not started";
    case ExitKind::Interrupted:
      return "interrupted: its node failed";
    case ExitKind::Cancelled:
      return "cancelled outside trainyard";
  }
  return "unknown";
}

}  // namespace trainyard::exec::internal
