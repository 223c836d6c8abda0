// GET /api/v1/jobs's sort, order and cursors (job_list_query.h).
#include "server/job_list_query.h"

#include <array>
#include <charconv>
#include <utility>

#include <fmt/format.h>

namespace trainyard::server {
namespace {

constexpr std::array<std::pair<std::string_view, store::JobSort>, 4> kSorts = {{
    {"id", store::JobSort::Id},
    {"name", store::JobSort::Name},
    {"state", store::JobSort::State},
    {"team", store::JobSort::Team},
}};

std::string_view sort_name(store::JobSort sort) {
  for (const auto& [name, s] : kSorts) {
    if (s == sort) return name;
  }
  return "id";
}

}  // namespace

util::Status apply_job_list_params(std::string_view sort, std::string_view order,
                                   std::string_view cursor, store::JobFilter& filter) {
  filter.sort = store::JobSort::Id;
  if (!sort.empty()) {
    bool known = false;
    for (const auto& [name, s] : kSorts) {
      if (name == sort) filter.sort = s, known = true;
    }
    if (!known)
      return util::invalid_argument(
          fmt::format("sort must be id, name, state or team (got '{}')", sort));
  }
  if (order.empty()) {
    filter.ascending = filter.sort != store::JobSort::Id;
  } else if (order == "asc" || order == "desc") {
    filter.ascending = order == "asc";
  } else {
    return util::invalid_argument(fmt::format("order must be asc or desc (got '{}')", order));
  }
  if (cursor.empty()) return util::Status::ok();
  // "n:name:12:key": direction, sort, id, key (the key may hold colons: it is the rest).
  const auto bad = [&] {
    return util::invalid_argument(fmt::format(
        "cursor '{}' is not one this server wrote (pass nextCursor or prevCursor as is)", cursor));
  };
  const size_t a = cursor.find(':');
  const size_t b = a == std::string_view::npos ? a : cursor.find(':', a + 1);
  const size_t c = b == std::string_view::npos ? b : cursor.find(':', b + 1);
  if (c == std::string_view::npos) return bad();
  const std::string_view dir = cursor.substr(0, a);
  const std::string_view by = cursor.substr(a + 1, b - a - 1);
  const std::string_view id = cursor.substr(b + 1, c - b - 1);
  int64_t value = 0;
  const auto parsed = std::from_chars(id.data(), id.data() + id.size(), value);
  if ((dir != "n" && dir != "p") || parsed.ec != std::errc() ||
      parsed.ptr != id.data() + id.size() || value < 1)
    return bad();
  if (by != sort_name(filter.sort))
    return util::invalid_argument(fmt::format("cursor '{}' pages a listing sorted by {}, not by {}",
                                              cursor, by, sort_name(filter.sort)));
  filter.backward = dir == "p";
  filter.before = value;
  filter.before_key = std::string(cursor.substr(c + 1));
  return util::Status::ok();
}

std::string job_sort_key(const model::JobView& job, store::JobSort sort) {
  switch (sort) {
    case store::JobSort::Name:
      return job.name;
    case store::JobSort::State:
      return std::string(model::job_state_name(job.state));
    case store::JobSort::Team:
      return job.team;
    case store::JobSort::Id:
      break;
  }
  return "";
}

std::string job_cursor(bool next, const store::JobFilter& filter, const model::JobView& job) {
  return fmt::format("{}:{}:{}:{}", next ? "n" : "p", sort_name(filter.sort), job.id,
                     job_sort_key(job, filter.sort));
}

}  // namespace trainyard::server
