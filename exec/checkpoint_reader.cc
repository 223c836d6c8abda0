#include "exec/checkpoint_reader.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <memory>

#include <fmt/format.h>

namespace trainyard::exec {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifestFile = "MANIFEST.json";

std::optional<int64_t> step_of(const std::string& name) {
  constexpr std::string_view kPrefix = "step-";
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return std::nullopt;
  int64_t step = 0;
  const char* begin = name.data() + kPrefix.size();
  auto [p, ec] = std::from_chars(begin, name.data() + name.size(), step);
  if (ec != std::errc() || p != name.data() + name.size() || step < 0) return std::nullopt;
  return step;
}

// An open regular file: a job controls these paths, so a link in the last place, a FIFO that
// would block the reader forever, or a device is refused. Closes on destruction.
class RegularFile {
 public:
  explicit RegularFile(const fs::path& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd_ >= 0 && (::fstat(fd_, &st_) != 0 || !S_ISREG(st_.st_mode))) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  int64_t size() const { return static_cast<int64_t>(st_.st_size); }
  // Calls `chunk(data, n)` for each piece, up to `limit` bytes; false on a read error.
  template <typename Fn>
  bool read_all(int64_t limit, Fn&& chunk) const {
    std::vector<char> buf(1 << 20);
    int64_t total = 0;
    while (total < limit) {
      const size_t want = static_cast<size_t>(std::min<int64_t>(limit - total, buf.size()));
      const ssize_t n = ::read(fd_, buf.data(), want);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      if (n == 0) return true;
      chunk(buf.data(), static_cast<size_t>(n));
      total += n;
    }
    return true;
  }

 private:
  int fd_ = -1;
  struct stat st_ {};
};

// A manifest is a few KB; one far larger is not the SDK's and is not parsed.
constexpr int64_t kMaxManifestBytes = 16 << 20;

std::optional<std::string> read_text(const fs::path& path, int64_t limit) {
  RegularFile f(path);
  if (!f.ok() || f.size() > limit) return std::nullopt;
  std::string text;
  if (!f.read_all(limit, [&](const char* p, size_t n) { text.append(p, n); })) return std::nullopt;
  return text;
}

// Lower-case hex SHA-256 of an open file.
std::string sha256_file(const RegularFile& f) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  const bool ok =
      f.read_all(f.size(), [&](const char* p, size_t n) { EVP_DigestUpdate(ctx.get(), p, n); });
  if (!ok) return "";
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md.data(), &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

// Checks one checkpoint directory against its manifest; fills bytes/created/problem.
void verify(CheckpointInfo& info, const CheckpointListOptions& options) {
  const fs::path dir = info.path;
  const auto text = read_text(dir / kManifestFile, kMaxManifestBytes);
  if (!text) {
    info.problem = "no MANIFEST.json (or not a regular file)";
    // A sharded save (docs/job-contract.md) writes the step's manifest once every rank's shard
    // is in: until then the step is in progress, not damaged.
    std::error_code ec;
    int shards = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.starts_with("rank-") && !name.ends_with(".tmp") &&
          fs::is_regular_file(it->path() / kManifestFile, ec))
        ++shards;
    }
    if (shards > 0)
      info.problem = fmt::format(
          "a sharded save in progress: {} rank shard(s) committed, the step's MANIFEST.json is "
          "written once every rank's shard is in",
          shards);
    return;
  }
  const auto m = nlohmann::json::parse(*text, nullptr, false);
  if (m.is_discarded() || !m.is_object() || m.value("format", "") != "trainyard-checkpoint" ||
      !m.contains("files") || !m["files"].is_array()) {
    info.problem = "MANIFEST.json is not a trainyard-checkpoint manifest";
    return;
  }
  if (!m.contains("step") || !m["step"].is_number_integer() ||
      m["step"].get<int64_t>() != info.step) {
    info.problem = "the manifest's step does not match the directory name";
    return;
  }
  info.created =
      m.contains("created") && m["created"].is_string() ? m["created"].get<std::string>() : "";
  for (const auto& f : m["files"]) {
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !f.contains("size") ||
        !f["size"].is_number_integer()) {
      info.problem = "a manifest entry lacks name or size";
      return;
    }
    const std::string name = f["name"].get<std::string>();
    if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos) {
      info.problem = "a manifest entry names a path outside the checkpoint: " + name;
      return;
    }
    const RegularFile file(dir / name);
    if (!file.ok() || file.size() != f["size"].get<int64_t>()) {
      info.problem =
          !file.ok() ? name + " is missing (or not a regular file)" : name + " has the wrong size";
      return;
    }
    info.bytes += file.size();
    const std::string want =
        f.contains("sha256") && f["sha256"].is_string() ? f["sha256"].get<std::string>() : "";
    if (options.check_hashes && sha256_file(file) != want) {
      info.problem = name + " does not match its SHA-256";
      return;
    }
  }
  info.verified = true;
}

// True for a real directory (not a link to one: a job could point it anywhere).
bool is_real_dir(const fs::directory_entry& e) {
  std::error_code ec;
  return e.is_directory(ec) && !e.is_symlink(ec);
}

}  // namespace

std::vector<CheckpointInfo> list_checkpoints(const fs::path& dir,
                                             const CheckpointListOptions& options) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_real_dir(*it)) continue;
    const auto step = step_of(it->path().filename().string());
    if (!step) continue;  // *.tmp, .trash-*, anything else
    out.push_back({.step = *step, .path = it->path().string()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.step > b.step; });
  for (auto& info : out) verify(info, options);
  return out;
}

std::optional<util::Time> newest_checkpoint_time(const fs::path& dir) {
  std::optional<int64_t> newest;
  timespec newest_mtime{};
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto step = step_of(it->path().filename().string());
    if (!step || (newest && *step <= *newest) || !is_real_dir(*it)) continue;
    struct stat st {};
    const fs::path manifest = it->path() / kManifestFile;
    if (::lstat(manifest.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // not committed
    newest = step;
    newest_mtime = st.st_mtim;
  }
  if (!newest) return std::nullopt;
  return util::Time(std::chrono::duration_cast<util::Duration>(
      std::chrono::seconds(newest_mtime.tv_sec) + std::chrono::nanoseconds(newest_mtime.tv_nsec)));
}

std::optional<MetricsTail> read_metrics_tail(const fs::path& file) {
  RegularFile f(file);
  if (!f.ok()) return std::nullopt;
  MetricsTail tail;
  std::string partial;  // the current line so far
  std::string last_complete;
  std::string last_tuned;
  // Lines are short and files are appended every few seconds; one pass is cheap enough for
  // `show`, and counting needs it anyway. A line without its newline is still being written.
  const bool ok = f.read_all(f.size(), [&](const char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (p[i] != '\n') {
        partial.push_back(p[i]);
        continue;
      }
      ++tail.lines;
      if (partial.find("\"tune_micro_batch\"") != std::string::npos) last_tuned = partial;
      last_complete.swap(partial);
      partial.clear();
    }
  });
  if (!ok || last_complete.empty()) return std::nullopt;
  tail.last = nlohmann::json::parse(last_complete, nullptr, false);
  if (tail.last.is_discarded() || !tail.last.is_object()) return std::nullopt;
  const auto tuned = nlohmann::json::parse(last_tuned, nullptr, false);
  if (tuned.is_object()) {
    tail.tuned = nlohmann::json::object();
    for (const auto& [key, value] : tuned.items()) {
      if (key.starts_with("tune_") || key == "dtype") tail.tuned[key] = value;
    }
  }
  return tail;
}

}  // namespace trainyard::exec
