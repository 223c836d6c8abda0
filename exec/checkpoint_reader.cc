#include "exec/checkpoint_reader.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
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

// Lower-case hex SHA-256 of a file, or "" when it cannot be read.
std::string sha256_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
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
  std::ifstream in(dir / kManifestFile);
  if (!in) {
    info.problem = "no MANIFEST.json";
    return;
  }
  const auto m = nlohmann::json::parse(in, nullptr, false);
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
  info.created = m.value("created", "");
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
    std::error_code ec;
    const auto size = fs::file_size(dir / name, ec);
    if (ec || static_cast<int64_t>(size) != f["size"].get<int64_t>()) {
      info.problem = ec ? name + " is missing" : name + " has the wrong size";
      return;
    }
    info.bytes += static_cast<int64_t>(size);
    if (options.check_hashes && sha256_file(dir / name) != f.value("sha256", "")) {
      info.problem = name + " does not match its SHA-256";
      return;
    }
  }
  info.verified = true;
}

}  // namespace

std::vector<CheckpointInfo> list_checkpoints(const fs::path& dir,
                                             const CheckpointListOptions& options) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
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
  fs::path newest_path;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto step = step_of(it->path().filename().string());
    if (!step || (newest && *step <= *newest)) continue;
    std::error_code mec;
    if (!fs::exists(it->path() / kManifestFile, mec)) continue;  // not a committed checkpoint
    newest = step;
    newest_path = it->path();
  }
  if (!newest) return std::nullopt;
  const auto mtime = fs::last_write_time(newest_path / kManifestFile, ec);
  if (ec) return std::nullopt;
  return std::chrono::time_point_cast<util::Duration>(std::chrono::file_clock::to_sys(mtime));
}

std::optional<MetricsTail> read_metrics_tail(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  MetricsTail tail;
  std::string line;
  std::string last_complete;
  // Lines are short and files are appended every few seconds; one pass is cheap enough for
  // `show`, and counting needs it anyway.
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no trailing newline: a line still being written
    ++tail.lines;
    last_complete = line;
  }
  if (last_complete.empty()) return std::nullopt;
  tail.last = nlohmann::json::parse(last_complete, nullptr, false);
  if (tail.last.is_discarded() || !tail.last.is_object()) return std::nullopt;
  return tail;
}

}  // namespace trainyard::exec
