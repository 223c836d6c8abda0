// Entry points of the Kineto trace analyser: text or file (plain or gzip) in, TraceAnalysis out.
#include "telemetry/kineto_trace.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "telemetry/kineto_trace_internal.h"

namespace trainyard::telemetry {
namespace {

// One parse takes at most 4 GiB (simdjson's limit); a gzip that inflates beyond it is refused
// before it fills memory.
constexpr uint64_t kMaxTraceBytes = 0xFFFFFFFFULL;

// The trace text with the padding simdjson reads past its end. Not zero-filled: a trace of
// hundreds of MB is read straight into it.
struct PaddedText {
  std::unique_ptr<char[]> bytes;
  size_t len = 0;

  explicit PaddedText(size_t n)
      : bytes(std::make_unique_for_overwrite<char[]>(n + kineto_internal::kJsonPadding)), len(n) {
    std::memset(bytes.get() + n, ' ', kineto_internal::kJsonPadding);
  }
};

util::Result<TraceAnalysis> analyze_padded(PaddedText text, const TraceOptions& o) {
  auto raw = kineto_internal::parse_kineto(text.bytes.get(), text.len);
  if (!raw.is_ok()) return raw.status();
  text.bytes.reset();  // the analyses no longer need the text
  return kineto_internal::analyze(std::move(*raw), o);
}

// A file mapped read-only, followed by the padding simdjson reads past the end: an anonymous
// reservation of len + padding with the file mapped over its start. Page-cache pages are mapped
// in bulk (MAP_POPULATE) instead of copied, which matters for traces of hundreds of MB.
class MappedFile {
 public:
  static util::Result<MappedFile> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return util::not_found(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    }
    MappedFile f;
    const util::Status st = f.map(fd, path);
    ::close(fd);
    if (!st.is_ok()) return st;
    return f;
  }
  MappedFile(MappedFile&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)), size_(o.size_), len_(o.len_) {}
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  const char* data() const { return static_cast<const char*>(base_); }
  size_t len() const { return len_; }

 private:
  MappedFile() = default;
  util::Status map(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      return util::invalid_argument(fmt::format("{}: not a regular file", path));
    }
    if (static_cast<uint64_t>(st.st_size) > kMaxTraceBytes) {
      return util::invalid_argument(
          fmt::format("{}: {} bytes is more than the 4 GiB one parse can take", path, st.st_size));
    }
    len_ = static_cast<size_t>(st.st_size);
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    size_ = (len_ + kineto_internal::kJsonPadding + page - 1) / page * page;
    void* base = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      return util::internal_error(fmt::format("{}: cannot reserve {} bytes", path, size_));
    }
    base_ = base;
    if (len_ > 0 && ::mmap(base_, len_, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) ==
                        MAP_FAILED) {
      return util::invalid_argument(fmt::format("{}: cannot map: {}", path, std::strerror(errno)));
    }
    return util::Status::ok();
  }

  void* base_ = nullptr;
  size_t size_ = 0;
  size_t len_ = 0;
};

util::Status read_gzip(const std::string& path, std::string& out) {
  struct Closer {
    void operator()(gzFile_s* f) const { gzclose(f); }
  };
  std::unique_ptr<gzFile_s, Closer> gz(gzopen(path.c_str(), "rb"));
  if (!gz) return util::not_found(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  gzbuffer(gz.get(), 1 << 20);
  std::string chunk(1 << 20, '\0');
  for (;;) {
    const int n = gzread(gz.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(gz.get(), &code);
      return util::invalid_argument(fmt::format("{}: not a valid gzip file: {}", path, msg));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > kMaxTraceBytes) {
      return util::invalid_argument(
          fmt::format("{}: the trace inflates beyond 4 GiB, more than one parse can take", path));
    }
    out.append(chunk.data(), static_cast<size_t>(n));
  }
  return util::Status::ok();
}

}  // namespace

util::Result<TraceAnalysis> analyze_kineto_trace(std::string_view json, const TraceOptions& o) {
  PaddedText text(json.size());
  std::memcpy(text.bytes.get(), json.data(), json.size());
  return analyze_padded(std::move(text), o);
}

util::Result<TraceAnalysis> analyze_kineto_trace_file(const std::string& path,
                                                      const TraceOptions& o) {
  auto file = MappedFile::open(path);
  if (!file.is_ok()) return file.status();
  const bool gzip = file->len() >= 2 && static_cast<unsigned char>(file->data()[0]) == 0x1f &&
                    static_cast<unsigned char>(file->data()[1]) == 0x8b;
  if (!gzip) {
    auto raw = kineto_internal::parse_kineto(file->data(), file->len());
    if (!raw.is_ok()) return raw.status().with_context(path);
    return kineto_internal::analyze(std::move(*raw), o);
  }
  std::string inflated;
  TY_RETURN_IF_ERROR(read_gzip(path, inflated));
  PaddedText padded(inflated.size());
  std::memcpy(padded.bytes.get(), inflated.data(), inflated.size());
  inflated = std::string();
  auto result = analyze_padded(std::move(padded), o);
  if (!result.is_ok()) return result.status().with_context(path);
  return result;
}

}  // namespace trainyard::telemetry
