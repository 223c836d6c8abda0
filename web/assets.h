// The web UI's files (index.html, the bundled app.js and app.css), embedded in the binary at
// build time by web/CMakeLists.txt, so one `trainyard` binary serves its own UI. Each asset has
// its raw and gzip-compressed bytes, a content type and a content hash for ETags.
// Immutable data; thread-safe.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace trainyard::web {

struct Asset {
  std::string_view name;          // as served under /ui/ ("app.js"), or "index.html"
  std::string_view content_type;  // with charset for text
  std::string_view etag;          // hex digits of the raw bytes' SHA-256 (no quotes)
  std::span<const unsigned char> raw;
  std::span<const unsigned char> gzip;
};

// The asset called `name`, or nullptr.
const Asset* find_asset(std::string_view name);
// Every embedded asset (tests, and sizes in docs).
std::span<const Asset> all_assets();

}  // namespace trainyard::web
