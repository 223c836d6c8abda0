// GET /api/v1/jobs?labelSelector=: the job list filtered by metadata.labels on the server, so
// that `limit` and `nextBefore` page through matching jobs as they do through all jobs. Labels
// live in the stored spec, so the filter walks the list newest first, one store page at a time.
#include <fmt/format.h>

#include "server/control_plane.h"

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
  nlohmann::json items = nlohmann::json::array();
  int scanned = 0;
  int64_t last_scanned = 0;
  bool more = true;
  while (more && items.size() < want && scanned < kMaxScanned) {
    TY_ASSIGN_OR_RETURN(nlohmann::json out, list_jobs(page, who));
    for (auto& job : out["items"]) {
      ++scanned;
      last_scanned = job["id"].get<int64_t>();
      if (selector.matches(labels_of(job))) items.push_back(std::move(job));
      if (items.size() == want) break;
    }
    more = out.contains("nextBefore");
    if (more) page.before = out["nextBefore"].get<int64_t>();
  }
  nlohmann::json result = {{"items", std::move(items)}};
  // Full page: go on below its last job. Scan limit reached: below the last job looked at.
  if (result["items"].size() == want && want > 0)
    result["nextBefore"] = result["items"].back()["id"];
  else if (more && scanned >= kMaxScanned)
    result["nextBefore"] = last_scanned;
  return result;
}

}  // namespace trainyard::server
