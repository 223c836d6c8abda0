// GET /api/v1/jobs?labelSelector=: the job list filtered by metadata.labels on the server, so
// that `limit` and `nextBefore` page through matching jobs as they do through all jobs. Labels
// live in the stored spec, so the filter walks the list newest first, one store page at a time.
#include <algorithm>
#include <optional>
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

model::Labels labels_of(const model::JobView& job) {
  return job.request ? job.request->labels : model::Labels{};
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
  std::vector<model::JobView> found;
  int scanned = 0;
  std::optional<model::JobView> last_scanned;
  bool more = true;
  while (more && found.size() < want && scanned < kMaxScanned) {
    TY_ASSIGN_OR_RETURN(model::JobListView out, list_page(page, who, /*with_total=*/false));
    auto& got = out.items;
    const size_t n = got.size();
    for (size_t i = 0; i < n && found.size() < want; ++i) {
      auto& job = got[filter.backward ? n - 1 - i : i];
      ++scanned;
      last_scanned = job;
      if (selector.matches(labels_of(job))) found.push_back(std::move(job));
    }
    more = filter.backward ? out.prev_cursor.has_value() : out.has_more;
    if (more && last_scanned) {
      page.before = last_scanned->id;
      page.before_key = job_sort_key(*last_scanned, page.sort);
    }
  }
  const bool full = found.size() == want && want > 0;
  const bool stopped = more && scanned >= kMaxScanned && !full;
  if (filter.backward) std::reverse(found.begin(), found.end());
  model::JobListView result{.items = std::move(found)};
  const auto& got = result.items;
  // Full page: go on past its last job. Scan limit reached: past the last job looked at.
  const std::optional<model::JobView> edge = full ? std::nullopt : last_scanned;
  bool after = false;
  if (filter.backward) {
    after = filter.before > 0;
    if (!got.empty()) {
      if (after) result.next_cursor = job_cursor(true, filter, got.back());
      if (full) result.prev_cursor = job_cursor(false, filter, got.front());
    }
    if (stopped) result.prev_cursor = job_cursor(false, filter, edge.value_or(model::JobView{}));
  } else {
    after = full || stopped;
    if (full) result.next_cursor = job_cursor(true, filter, got.back());
    if (stopped) result.next_cursor = job_cursor(true, filter, edge.value_or(model::JobView{}));
    if (filter.before > 0 && !got.empty())
      result.prev_cursor = job_cursor(false, filter, got.front());
    if (after && filter.sort == store::JobSort::Id && !filter.ascending)
      result.next_before = full ? got.back().id : edge.value_or(model::JobView{}).id;
  }
  result.has_more = after;
  return model::to_json(result);
}

}  // namespace trainyard::server
