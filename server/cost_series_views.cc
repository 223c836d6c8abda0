// Cost over time for the web UI's cost page and for scripts: GET /api/v1/cost/series buckets the
// ledger's records by UTC hour or day (cost per team and per pool, idle and lost cost), and
// GET /api/v1/cost?format=csv writes the cost report as CSV. Both scope as GET /api/v1/cost does.
#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>

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
  const std::string scope_team = who.admin ? team : who.team;
  const util::Time now = clock_.now();
  util::Time from = now - std::chrono::hours(24);
  util::Time to = now;
  if (!since.empty()) {
    TY_ASSIGN_OR_RETURN(from, parse_when(since, now, "since"));
  }
  if (!until.empty()) {
    TY_ASSIGN_OR_RETURN(to, parse_when(until, now, "until"));
  }
  if (to < from) return util::invalid_argument("query parameter until is before since");
  const bool hourly = step == "hour" || (step.empty() && to - from <= std::chrono::hours(72));
  const util::Duration width =
      hourly ? util::Duration(std::chrono::hours(1)) : util::Duration(std::chrono::hours(24));
  // Buckets start on whole UTC hours or days.
  const util::Time first =
      util::Time(util::Duration((from.time_since_epoch().count() / width.count()) * width.count()));
  const int64_t buckets = std::max<int64_t>(1, (to - first + width - util::Duration(1)) / width);
  if (buckets > kMaxBuckets)
    return util::invalid_argument(fmt::format(
        "{} buckets of a {} is too many (at most {}): ask for step=day or a shorter span", buckets,
        hourly ? "hour" : "day", kMaxBuckets));

  std::vector<cloud::CostRecord> records;
  {
    util::MutexLock lock(mu_);
    records = cost_.ledger_at(now).records();
  }
  using Series = std::vector<double>;
  const auto n = static_cast<size_t>(buckets);
  std::map<std::string, Series> teams, pools;
  Series total(n, 0), idle(n, 0), lost(n, 0), lost_gpu_hours(n, 0);
  auto series = [&](std::map<std::string, Series>& m, const std::string& key) -> Series& {
    auto it = m.find(key);
    if (it == m.end()) it = m.emplace(key, Series(n, 0)).first;
    return it->second;
  };
  for (const auto& r : records) {
    const bool in_scope = scope_team.empty() || r.team == scope_team;
    if (r.start == r.end) {  // lost work: a point in time
      if (r.start < from || r.start >= to) continue;
      if (!who.admin && !in_scope) continue;
      const auto i = static_cast<size_t>((r.start - first) / width);
      lost[i] += cloud::cost_units_to_usd(r.lost_cost);
      lost_gpu_hours[i] += std::chrono::duration<double, std::ratio<3600>>(r.lost_gpu_time).count();
      continue;
    }
    const util::Time a = std::max(r.start, from), b = std::min(r.end, to);
    if (b <= a) continue;
    const bool is_idle = r.job.empty();
    const double usd = cloud::cost_units_to_usd(r.cost);
    const double length = static_cast<double>((r.end - r.start).count());
    for (auto i = static_cast<size_t>((a - first) / width); i < n; ++i) {
      const util::Time lo = std::max(a, first + width * static_cast<int64_t>(i));
      const util::Time hi = std::min(b, first + width * static_cast<int64_t>(i + 1));
      if (hi <= lo) break;
      const double part = usd * static_cast<double>((hi - lo).count()) / length;
      if (who.admin) {
        total[i] += part;
        series(pools, r.pool)[i] += part;
        if (is_idle) idle[i] += part;
      } else if (!is_idle && in_scope) {
        total[i] += part;  // a team's total is its own spend
      }
      if (!is_idle && in_scope) series(teams, r.team)[i] += part;
    }
  }
  nlohmann::json times = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i)
    times.push_back(std::chrono::duration_cast<std::chrono::seconds>(
                        (first + width * static_cast<int64_t>(i)).time_since_epoch())
                        .count());
  nlohmann::json team_rows = nlohmann::json::array(), pool_rows = nlohmann::json::array();
  for (auto& [name, s] : teams) team_rows.push_back({{"team", name}, {"cost_usd", std::move(s)}});
  for (auto& [name, s] : pools) pool_rows.push_back({{"pool", name}, {"cost_usd", std::move(s)}});
  return nlohmann::json{
      {"since", util::format_time(from)},
      {"until", util::format_time(to)},
      {"scope", who.admin ? "all" : "team"},
      {"step", hourly ? "hour" : "day"},
      {"step_seconds", std::chrono::duration_cast<std::chrono::seconds>(width).count()},
      {"times", std::move(times)},
      {"total_cost_usd", std::move(total)},
      {"idle_cost_usd", who.admin ? nlohmann::json(std::move(idle)) : nlohmann::json::array()},
      {"lost_cost_usd", std::move(lost)},
      {"lost_gpu_hours", std::move(lost_gpu_hours)},
      {"teams", std::move(team_rows)},
      {"pools", std::move(pool_rows)}};
}

}  // namespace trainyard::server
