// GET /api/v1/jobs's order and paging: the sort and order parameters, and the opaque cursors
// (`nextCursor`, `prevCursor`) that page through any sort with the store's keyset paging.
#pragma once

#include <string>
#include <string_view>

#include "model/api_views.h"
#include "store/store.h"
#include "util/status.h"

namespace trainyard::server {

// Sets filter.sort and filter.ascending from `sort` (id, name, state, team; empty: id) and
// `order` (asc, desc; empty: desc for id, asc otherwise), then the position from `cursor` (empty:
// the first page), which must come from a listing in the same sort. InvalidArgument otherwise.
util::Status apply_job_list_params(std::string_view sort, std::string_view order,
                                   std::string_view cursor, store::JobFilter& filter);

// The value of `job` (the API's job object) that `sort` orders by, as the store holds it.
std::string job_sort_key(const model::JobView& job, store::JobSort sort);

// The cursor of the page after (`next`) or before `job` in `filter`'s sort:
// "n:name:12:train-a" (direction, sort, id, key).
std::string job_cursor(bool next, const store::JobFilter& filter, const model::JobView& job);

}  // namespace trainyard::server
