// Spot trace readers: SkyPilot count series (JSON) and Bamboo event logs (CSV) into one
// step-function-plus-reclaims form that simcloud replays.
#include "cloud/spot_trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace trainyard::cloud {
namespace {

// Bounds that keep offsets far inside int64 microseconds and refuse nonsense early.
constexpr int64_t kMaxGapSeconds = 7 * 24 * 3600;
constexpr int64_t kMaxCount = 1'000'000;
constexpr int64_t kMaxTimeMs = int64_t{100} * 365 * 24 * 3600 * 1000;  // a century

// Appends a step unless the capacity did not change.
void push_step(SpotTrace& t, util::Duration offset, int capacity) {
  if (!t.capacity.empty() && t.capacity.back().capacity == capacity) return;
  if (!t.capacity.empty() && t.capacity.back().offset == offset) {
    t.capacity.back().capacity = capacity;
    return;
  }
  t.capacity.push_back({.offset = offset, .capacity = capacity});
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int SpotTrace::capacity_at(util::Duration offset) const {
  if (capacity.empty() || period <= util::Duration::zero()) return 0;
  util::Duration o = offset % period;
  if (o < util::Duration::zero()) o += period;
  auto it = std::upper_bound(capacity.begin(), capacity.end(), o,
                             [](util::Duration x, const CapacityStep& s) { return x < s.offset; });
  return it == capacity.begin() ? 0 : std::prev(it)->capacity;
}

util::Result<SpotTrace> parse_skypilot_trace(std::string_view json, std::string_view source) {
  const std::string name(source);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return util::invalid_argument(name + ": not valid JSON (" + e.what() + ")");
  }
  const std::string shape =
      " (expected SkyPilot spot-traces: {\"metadata\": {\"gap_seconds\": N}, \"data\": [...]})";
  if (!doc.is_object())
    return util::invalid_argument(name + ": top level is not an object" + shape);
  auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object()) {
    return util::invalid_argument(name + ": missing object \"metadata\"" + shape);
  }
  auto gap = meta->find("gap_seconds");
  if (gap == meta->end() || !gap->is_number_integer() || gap->get<int64_t>() <= 0 ||
      gap->get<int64_t>() > kMaxGapSeconds) {
    return util::invalid_argument(name + ": metadata.gap_seconds must be an integer from 1 to " +
                                  std::to_string(kMaxGapSeconds));
  }
  auto data = doc.find("data");
  if (data == doc.end() || !data->is_array() || data->empty()) {
    return util::invalid_argument(name + ": \"data\" must be a non-empty array of counts" + shape);
  }
  const util::Duration step = util::seconds(gap->get<int64_t>());
  SpotTrace t;
  t.source = name;
  t.period = step * static_cast<int64_t>(data->size());
  int previous = 0;
  for (size_t i = 0; i < data->size(); ++i) {
    const nlohmann::json& v = (*data)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxCount) {
      return util::invalid_argument(name + ": data[" + std::to_string(i) + "] is " + v.dump() +
                                    "; counts must be integers from 0 to " +
                                    std::to_string(kMaxCount));
    }
    const int count = static_cast<int>(v.get<int64_t>());
    const util::Duration offset = step * static_cast<int64_t>(i);
    if (i > 0 && count < previous) {
      t.reclaims.push_back({.offset = offset, .nodes = previous - count, .to_zero = count == 0});
    }
    push_step(t, offset, count);
    previous = count;
  }
  return t;
}

util::Result<SpotTrace> parse_bamboo_trace(std::string_view csv, std::string_view source) {
  const std::string name(source);
  SpotTrace t;
  t.source = name;
  std::set<std::string, std::less<>> live;
  int64_t last_ms = -1;
  int64_t min_gap_ms = std::numeric_limits<int64_t>::max();
  int removed_now = 0;  // removes at last_ms
  auto flush = [&] {
    if (last_ms < 0) return;
    const util::Duration offset = std::chrono::milliseconds(last_ms);
    const int count = static_cast<int>(live.size());
    if (removed_now > 0) {
      t.reclaims.push_back({.offset = offset, .nodes = removed_now, .to_zero = count == 0});
    }
    if (t.capacity.empty() && offset > util::Duration::zero()) push_step(t, {}, 0);
    push_step(t, offset, count);
    removed_now = 0;
  };
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < csv.size()) {
    size_t end = csv.find('\n', pos);
    if (end == std::string_view::npos) end = csv.size();
    const std::string_view line = trim(csv.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    const std::string where = name + ":" + std::to_string(line_no);
    if (line.empty()) continue;
    const std::vector<std::string_view> f = split_commas(line);
    if (line_no == 1 && !f.empty() && f[0] == "time_ms") continue;  // header
    if (f.size() != 3) {
      return util::invalid_argument(where + ": expected 3 fields time_ms,event,node, got " +
                                    std::to_string(f.size()));
    }
    int64_t ms = -1;
    auto [ptr, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), ms);
    if (ec != std::errc() || ptr != f[0].data() + f[0].size() || ms < 0 || ms > kMaxTimeMs) {
      return util::invalid_argument(where + ": time_ms '" + std::string(f[0]) +
                                    "' must be a non-negative integer of milliseconds");
    }
    if (ms < last_ms) {
      return util::invalid_argument(where + ": time " + std::to_string(ms) +
                                    " ms is before the previous row's; sort the log by time");
    }
    if (f[2].empty()) return util::invalid_argument(where + ": node name is empty");
    if (ms > last_ms) {
      flush();
      if (last_ms >= 0) min_gap_ms = std::min(min_gap_ms, ms - last_ms);
      last_ms = ms;
    }
    if (f[1] == "add") {
      if (!live.emplace(f[2]).second) {
        return util::invalid_argument(where + ": node '" + std::string(f[2]) +
                                      "' is added twice without a remove");
      }
    } else if (f[1] == "remove") {
      auto it = live.find(f[2]);
      if (it == live.end()) {
        return util::invalid_argument(where + ": node '" + std::string(f[2]) +
                                      "' is removed but was never added");
      }
      live.erase(it);
      ++removed_now;
    } else {
      return util::invalid_argument(where + ": event '" + std::string(f[1]) +
                                    "' must be add or remove");
    }
  }
  if (last_ms < 0)
    return util::invalid_argument(name + ": no events (expected time_ms,event,node rows)");
  flush();
  if (min_gap_ms == std::numeric_limits<int64_t>::max()) min_gap_ms = 60'000;
  t.period = std::chrono::milliseconds(last_ms + min_gap_ms);
  return t;
}

util::Result<SpotTrace> load_spot_trace(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return util::not_found(path.string() + ": cannot open (check the path)");
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string ext = path.extension().string();
  if (ext == ".json") return parse_skypilot_trace(buf.str(), path.string());
  if (ext == ".csv") return parse_bamboo_trace(buf.str(), path.string());
  return util::invalid_argument(path.string() +
                                ": unknown spot trace format; use a SkyPilot .json or a Bamboo "
                                ".csv file");
}

util::Result<std::map<std::string, SpotTrace>> load_skypilot_zone_traces(
    const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return util::not_found(dir.string() + ": cannot list (" + ec.message() + ")");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : it) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, SpotTrace> out;
  for (const auto& file : files) {
    const std::string stem = file.stem().string();
    const std::string zone = stem.substr(0, stem.find('_'));
    TY_ASSIGN_OR_RETURN(SpotTrace trace, load_spot_trace(file));
    if (!out.emplace(zone, std::move(trace)).second) {
      return util::invalid_argument(file.string() + ": a second trace for zone '" + zone +
                                    "'; keep one file per zone in the folder");
    }
  }
  if (out.empty()) return util::not_found(dir.string() + ": no SkyPilot *.json traces");
  return out;
}

}  // namespace trainyard::cloud
