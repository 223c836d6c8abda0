// GET /api/v1/jobs?labelSelector=: the job list filtered by metadata.labels on the server, so
// that `limit` and `nextBefore` page through matching jobs as they do through all jobs. Labels
// live in the stored spec, so the filter walks the list newest first, one store page at a time.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "server/control_plane.h"
#include "server/job_list_query.h"

namespace trainyard::server {
namespace {

// Store rows read per step, and in all for one request: a selector that matches little on a
// long history answers with what it found so far and a `nextBefore` to go on from.
constexpr int kScanPage = 500;
constexpr int kMaxScanned = 20000;

model::Labels labels_of(const nlohmann::json& job) {
  model::Labels out;
  const auto it = job.find("labels");
  if (it == job.end() || !it->is_object()) return out;
  for (const auto& [k, v] : it->items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace

util::Result<nlohmann::json> ControlPlane::list_jobs_matching(store::JobFilter filter,
                                                              const model::LabelSelector& selector,
                                                              const Principal& who) {
  if (selector.requirements.empty()) return list_jobs(filter, who);
  const size_t want = static_cast<size_t>(filter.limit);
  store::JobFilter page = filter;
  page.limit = kScanPage;
  // Found in the order walked: the listing's order, or backward from the cursor.
  std::vector<nlohmann::json> found;
  int scanned = 0;
  nlohmann::json last_scanned;
  bool more = true;
  while (more && found.size() < want && scanned < kMaxScanned) {
    TY_ASSIGN_OR_RETURN(nlohmann::json out, list_jobs(page, who, /*with_total=*/false));
    auto& got = out["items"];
    const size_t n = got.size();
    for (size_t i = 0; i < n && found.size() < want; ++i) {
      auto& job = got[filter.backward ? n - 1 - i : i];
      ++scanned;
      last_scanned = job;
      if (selector.matches(labels_of(job))) found.push_back(std::move(job));
    }
    more = filter.backward ? out.contains("prevCursor") : out["hasMore"].get<bool>();
    if (more && !last_scanned.is_null()) {
      page.before = last_scanned["id"].get<int64_t>();
      page.before_key = job_sort_key(last_scanned, page.sort);
    }
  }
  const bool full = found.size() == want && want > 0;
  const bool stopped = more && scanned >= kMaxScanned && !full;
  if (filter.backward) std::reverse(found.begin(), found.end());
  nlohmann::json items = nlohmann::json::array();
  for (auto& job : found) items.push_back(std::move(job));
  nlohmann::json result = {{"items", std::move(items)}};
  const auto& got = result["items"];
  // Full page: go on past its last job. Scan limit reached: past the last job looked at.
  const nlohmann::json& edge = full || last_scanned.is_null() ? nlohmann::json() : last_scanned;
  bool after = false;
  if (filter.backward) {
    after = filter.before > 0;
    if (!got.empty()) {
      if (after) result["nextCursor"] = job_cursor(true, filter, got.back());
      if (full) result["prevCursor"] = job_cursor(false, filter, got.front());
    }
    if (stopped) result["prevCursor"] = job_cursor(false, filter, edge);
  } else {
    after = full || stopped;
    if (full) result["nextCursor"] = job_cursor(true, filter, got.back());
    if (stopped) result["nextCursor"] = job_cursor(true, filter, edge);
    if (filter.before > 0 && !got.empty())
      result["prevCursor"] = job_cursor(false, filter, got.front());
    if (after && filter.sort == store::JobSort::Id && !filter.ascending)
      result["nextBefore"] = full ? got.back()["id"] : edge["id"];
  }
  result["hasMore"] = after;
  return result;
}

}  // namespace trainyard::server
