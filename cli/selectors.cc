#include "cli/selectors.h"

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "model/label_selector.h"

namespace trainyard::cli {

util::Result<std::string> selector_query(const std::string& selector) {
  auto parsed = model::parse_label_selector(selector);
  if (!parsed.is_ok()) return parsed.status().with_context("-l");
  if (parsed->requirements.empty()) return std::string();
  return "&labelSelector=" + url_encode(parsed->to_string());
}

util::Result<std::vector<model::JobView>> list_all_jobs(ApiClient& api, const std::string& query) {
  std::vector<model::JobView> all;
  int64_t before = 0;
  for (;;) {
    std::string path = "/api/v1/jobs?limit=1000" + query;
    if (before > 0) path += fmt::format("&before={}", before);
    TY_ASSIGN_OR_RETURN(model::JobListView page, get_view<model::JobListView>(api, path));
    for (auto& j : page.items) all.push_back(std::move(j));
    if (!page.next_before) return all;
    before = *page.next_before;
  }
}

}  // namespace trainyard::cli
