#include "util/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace trainyard::util {
namespace {

std::string failure(const std::filesystem::path& path, std::string_view verb, std::string_view what,
                    int err) {
  return fmt::format("{}: cannot {}{}{}: {}", path.string(), verb, what.empty() ? "" : " ", what,
                     std::strerror(err));
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Result<std::string> read_file(const std::filesystem::path& path, const ReadFileOptions& options) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return not_found(failure(path, "open", options.what, errno));
  const auto too_large = [&] {
    return out_of_range(fmt::format("{}: {}is larger than {} bytes", path.string(),
                                    options.what.empty() ? "" : fmt::format("{} ", options.what),
                                    options.max_bytes));
  };
  std::string text;
  struct stat st {};
  // The size is a hint only: /proc files say 0, and a file may grow while it is read.
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    if (options.max_bytes >= 0 && st.st_size > options.max_bytes) return too_large();
    text.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return invalid_argument(failure(path, "read", options.what, errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (options.max_bytes >= 0 && static_cast<int64_t>(text.size()) > options.max_bytes)
      return too_large();
  }
  return text;
}

}  // namespace trainyard::util
