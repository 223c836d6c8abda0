// Label selectors on the command line (`-l team=nlp,tier!=batch`): checked here with the
// server's own parser so a typo fails at once with exit 2, then sent as the labelSelector
// query parameter (the server filters, so paging stays right).
#pragma once

#include <string>

#include <vector>

#include "cli/client.h"
#include "model/api_views.h"

namespace trainyard::cli {

inline constexpr const char* kSelectorHelp =
    "Label selector: key=value, key!=value, key (has it) or !key, comma-separated (all must "
    "hold), e.g. -l team=nlp,stage!=test";

// "&labelSelector=..." for a non-empty selector, "" for an empty one; InvalidArgument
// ("-l: label selector: term 2 ...") for a bad one.
util::Result<std::string> selector_query(const std::string& selector);

// Every job that GET /api/v1/jobs?<query> lists, following nextBefore page by page.
util::Result<std::vector<model::JobView>> list_all_jobs(ApiClient& api, const std::string& query);

}  // namespace trainyard::cli
