// Cost over time for the web UI's cost page and for scripts: GET /api/v1/cost/series buckets the
// ledger's records by UTC hour or day (cost per team and per pool, idle and lost cost), and
// GET /api/v1/cost?format=csv writes the cost report as CSV. Both scope as GET /api/v1/cost does.
#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "model/api_cost_views.h"
#include "server/control_plane.h"
#include "server/cost_series.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

// More buckets than this is a mistake (a year by the hour): ask for days.
constexpr int64_t kMaxBuckets = 2000;

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string cost_csv(const nlohmann::json& report) {
  static const char* const kNumbers[] = {"cost_usd",      "gpu_hours",      "idle_gpu_hours",
                                         "idle_cost_usd", "lost_gpu_hours", "lost_cost_usd",
                                         "interruptions"};
  std::string out = "kind,key,name,team";
  for (const char* n : kNumbers) out += fmt::format(",{}", n);
  out += '\n';
  auto row = [&](const char* kind, const std::string& key, const std::string& name,
                 const std::string& team, const nlohmann::json& t) {
    out += fmt::format("{},{},{},{}", kind, csv_field(key), csv_field(name), csv_field(team));
    for (const char* n : kNumbers) out += "," + t.value(n, nlohmann::json(0)).dump();
    out += '\n';
  };
  row("total", "", "", "", report["total"]);
  for (const auto& t : report["teams"]) row("team", t["team"], "", t["team"], t);
  for (const auto& p : report["pools"]) row("pool", p["pool"], "", "", p);
  for (const auto& j : report["jobs"]) row("job", j["job"], j["name"], j["team"], j);
  return out;
}

namespace {

// The buckets of a series: whole UTC hours or days from `first`.
struct Buckets {
  bool hourly = true;
  util::Duration width{};
  util::Time first{};
  size_t n = 0;
};

util::Result<Buckets> buckets_of(util::Time from, util::Time to, const std::string& step) {
  Buckets b;
  b.hourly = step == "hour" || (step.empty() && to - from <= std::chrono::hours(72));
  b.width =
      b.hourly ? util::Duration(std::chrono::hours(1)) : util::Duration(std::chrono::hours(24));
  const int64_t width = b.width.count();
  b.first = util::Time(util::Duration((from.time_since_epoch().count() / width) * width));
  const int64_t count =
      std::max<int64_t>(1, (to - b.first + b.width - util::Duration(1)) / b.width);
  if (count > kMaxBuckets)
    return util::invalid_argument(fmt::format(
        "{} buckets of a {} is too many (at most {}): ask for step=day or a shorter span", count,
        b.hourly ? "hour" : "day", kMaxBuckets));
  b.n = static_cast<size_t>(count);
  return b;
}

// The sums per bucket over the ledger's records, as the reply scopes them.
struct SeriesSums {
  using Series = std::vector<double>;
  std::map<std::string, Series> teams, pools;
  Series total, idle, lost, lost_gpu_hours;

  explicit SeriesSums(size_t n) : total(n, 0), idle(n, 0), lost(n, 0), lost_gpu_hours(n, 0) {}

  static Series& series(std::map<std::string, Series>& m, const std::string& key, size_t n) {
    auto it = m.find(key);
    if (it == m.end()) it = m.emplace(key, Series(n, 0)).first;
    return it->second;
  }
};

// What the query sees of the records: its range, its team ("" for all) and whether the bill.
struct SeriesScope {
  util::Time from, to;
  std::string team;
  bool admin = false;
  bool covers(const cloud::CostRecord& r) const { return team.empty() || r.team == team; }
};

// Lost work: a point in time, in the bucket it falls in.
void add_lost(SeriesSums& sums, const cloud::CostRecord& r, const Buckets& b,
              const SeriesScope& scope) {
  if (r.start < scope.from || r.start >= scope.to) return;
  if (!scope.admin && !scope.covers(r)) return;
  const auto i = static_cast<size_t>((r.start - b.first) / b.width);
  sums.lost[i] += cloud::cost_units_to_usd(r.lost_cost);
  sums.lost_gpu_hours[i] +=
      std::chrono::duration<double, std::ratio<3600>>(r.lost_gpu_time).count();
}

// A held or idle interval, spread over the buckets it overlaps by time.
void add_spend(SeriesSums& sums, const cloud::CostRecord& r, const Buckets& b,
               const SeriesScope& scope) {
  const util::Time lo_end = std::max(r.start, scope.from), hi_end = std::min(r.end, scope.to);
  if (hi_end <= lo_end) return;
  const bool is_idle = r.job.empty(), in_scope = scope.covers(r);
  const double usd = cloud::cost_units_to_usd(r.cost);
  const double length = static_cast<double>((r.end - r.start).count());
  for (auto i = static_cast<size_t>((lo_end - b.first) / b.width); i < b.n; ++i) {
    const util::Time lo = std::max(lo_end, b.first + b.width * static_cast<int64_t>(i));
    const util::Time hi = std::min(hi_end, b.first + b.width * static_cast<int64_t>(i + 1));
    if (hi <= lo) break;
    const double part = usd * static_cast<double>((hi - lo).count()) / length;
    if (scope.admin) {
      sums.total[i] += part;
      SeriesSums::series(sums.pools, r.pool, b.n)[i] += part;
      if (is_idle) sums.idle[i] += part;
    } else if (!is_idle && in_scope) {
      sums.total[i] += part;  // a team's total is its own spend
    }
    if (!is_idle && in_scope) SeriesSums::series(sums.teams, r.team, b.n)[i] += part;
  }
}

model::CostSeriesView series_view(SeriesSums sums, const Buckets& b, const SeriesScope& scope) {
  model::CostSeriesView v{
      .since = util::format_time(scope.from),
      .until = util::format_time(scope.to),
      .scope = scope.admin ? "all" : "team",
      .step = b.hourly ? "hour" : "day",
      .step_seconds = std::chrono::duration_cast<std::chrono::seconds>(b.width).count(),
      .total_cost_usd = std::move(sums.total),
      .idle_cost_usd = scope.admin ? std::move(sums.idle) : std::vector<double>{},
      .lost_cost_usd = std::move(sums.lost),
      .lost_gpu_hours = std::move(sums.lost_gpu_hours)};
  for (size_t i = 0; i < b.n; ++i)
    v.times.push_back(std::chrono::duration_cast<std::chrono::seconds>(
                          (b.first + b.width * static_cast<int64_t>(i)).time_since_epoch())
                          .count());
  for (auto& [name, s] : sums.teams) v.teams.push_back({.team = name, .cost_usd = std::move(s)});
  for (auto& [name, s] : sums.pools) v.pools.push_back({.pool = name, .cost_usd = std::move(s)});
  return v;
}

}  // namespace

util::Result<nlohmann::json> ControlPlane::cost_series(const std::string& team,
                                                       const std::string& since,
                                                       const std::string& until,
                                                       const std::string& step,
                                                       const Principal& who) {
  if (!who.admin && !team.empty() && team != who.team)
    return util::Status(util::StatusCode::PermissionDenied,
                        fmt::format("a token of team '{}' sees only its own team's cost, not '{}'",
                                    who.team, team));
  if (!step.empty() && step != "hour" && step != "day")
    return util::invalid_argument(
        fmt::format("query parameter step must be hour or day, got '{}'", step));
  const util::Time now = clock_.now();
  SeriesScope scope{.from = now - std::chrono::hours(24),
                    .to = now,
                    .team = who.admin ? team : who.team,
                    .admin = who.admin};
  if (!since.empty()) {
    TY_ASSIGN_OR_RETURN(scope.from, parse_when(since, now, "since"));
  }
  if (!until.empty()) {
    TY_ASSIGN_OR_RETURN(scope.to, parse_when(until, now, "until"));
  }
  if (scope.to < scope.from) return util::invalid_argument("query parameter until is before since");
  TY_ASSIGN_OR_RETURN(const Buckets buckets, buckets_of(scope.from, scope.to, step));
  std::vector<cloud::CostRecord> records;
  {
    util::MutexLock lock(mu_);
    records = cost_.ledger_at(now).records();
  }
  SeriesSums sums(buckets.n);
  for (const auto& r : records) {
    if (r.start == r.end) {
      add_lost(sums, r, buckets, scope);
    } else {
      add_spend(sums, r, buckets, scope);
    }
  }
  return model::to_json(series_view(std::move(sums), buckets, scope));
}

}  // namespace trainyard::server
