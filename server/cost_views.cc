// GET /api/v1/cost: the cost ledger's report (kept by cost_keeping.cc) over a time range, per
// job, team and pool, scoped to what the token may see.
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include <fmt/format.h>

#include "model/api_cost_views.h"
#include "server/control_plane.h"
#include "server/cost_series.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

// "-24h", "-30m", "-7d", "-90s" from now, or an ISO 8601 UTC time ("2026-11-23T10:00:00Z",
// "2026-11-23"). Shared with cost_series_views.cc (server/cost_series.h).
util::Result<util::Time> parse_when(const std::string& text, util::Time now, const char* what) {
  auto bad = [&] {
    return util::invalid_argument(
        fmt::format("query parameter {} must be an ISO 8601 UTC time like 2026-11-23T10:00:00Z "
                    "or an offset like -24h, -30m, -7d; got '{}'",
                    what, text));
  };
  if (!text.empty() && text[0] == '-') {
    size_t used = 0;
    double n = 0;
    try {
      n = std::stod(text.substr(1), &used);
    } catch (const std::exception&) {
      return bad();
    }
    if (used + 2 != text.size() || !(n >= 0)) return bad();
    const char unit = text.back();
    const double secs = unit == 's'   ? n
                        : unit == 'm' ? n * 60
                        : unit == 'h' ? n * 3600
                        : unit == 'd' ? n * 86400
                                      : -1;
    if (secs < 0) return bad();
    return now - util::seconds_f(secs);
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char tail = 0;
  const int got =
      std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &s, &tail);
  if (!(got == 3 && text.size() == 10) && !(got == 7 && tail == 'Z' && text.size() == 20))
    return bad();
  using namespace std::chrono;
  const year_month_day ymd{year(y), month(static_cast<unsigned>(mo)),
                           day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 60) return bad();
  return util::Time(sys_days(ymd)) + hours(h) + minutes(mi) + seconds(s);
}

namespace {

// The range of a cost query: `since` and `until` (parse_when's forms), `from` when since is "".
struct CostRange {
  util::Time from, to;
};

util::Result<CostRange> cost_range(const std::string& since, const std::string& until,
                                   util::Time now, util::Time from) {
  CostRange r{.from = from, .to = now};
  if (!since.empty()) {
    TY_ASSIGN_OR_RETURN(r.from, parse_when(since, now, "since"));
  }
  if (!until.empty()) {
    TY_ASSIGN_OR_RETURN(r.to, parse_when(until, now, "until"));
  }
  if (r.to < r.from) return util::invalid_argument("query parameter until is before since");
  return r;
}

model::CostTotalsView totals_view(const cloud::CostTotals& t) {
  return {.cost_usd = t.cost_usd,
          .gpu_hours = t.gpu_hours,
          .idle_gpu_hours = t.idle_gpu_hours,
          .idle_cost_usd = t.idle_cost_usd,
          .lost_gpu_hours = t.lost_gpu_hours,
          .lost_cost_usd = t.lost_cost_usd,
          .interruptions = t.interruptions};
}

// The report's jobs and teams in `scope_team` ("" for all); `name_of` names a job's holder key.
void add_jobs_and_teams(model::CostReportView& out, const cloud::CostReport& report,
                        std::map<std::string, std::string>& team_of, const std::string& scope_team,
                        const std::function<std::string(const std::string&)>& name_of) {
  for (const auto& [job, totals] : report.jobs) {
    const std::string& job_team = team_of[job];
    if (!scope_team.empty() && job_team != scope_team) continue;
    out.jobs.push_back(
        {.job = job, .name = name_of(job), .team = job_team, .totals = totals_view(totals)});
  }
  for (const auto& [name, totals] : report.teams) {
    if (!scope_team.empty() && name != scope_team) continue;
    out.teams.push_back({.team = name, .totals = totals_view(totals)});
  }
}

// The bill's total and pools for an admin; a team sees what it spent, not the bill (other
// teams' and idle cost).
void add_total_and_pools(model::CostReportView& out, const cloud::CostReport& report,
                         const Principal& who) {
  if (who.admin) {
    out.total = totals_view(report.total);
    for (const auto& [name, totals] : report.pools)
      out.pools.push_back({.pool = name, .totals = totals_view(totals)});
  } else {
    auto it = report.teams.find(who.team);
    out.total = totals_view(it == report.teams.end() ? cloud::CostTotals{} : it->second);
  }
}

}  // namespace

util::Result<nlohmann::json> ControlPlane::cost(const std::string& team, const std::string& since,
                                                const std::string& until, const Principal& who) {
  if (!who.admin && !team.empty() && team != who.team)
    return util::Status(util::StatusCode::PermissionDenied,
                        fmt::format("a token of team '{}' sees only its own team's cost, not "
                                    "'{}'",
                                    who.team, team));
  const util::Time now = clock_.now();
  TY_ASSIGN_OR_RETURN(
      const CostRange range,
      cost_range(since, until, now, period_start(now, model::Team::BudgetPeriod::Month)));
  cloud::CostReport report;
  std::map<std::string, std::string> team_of;  // job -> team
  {
    util::MutexLock lock(mu_);
    const cloud::CostLedger& ledger = cost_.ledger_at(now);
    report = ledger.report(range.from, range.to);
    for (const auto& r : ledger.records())
      if (!r.job.empty()) team_of[r.job] = r.team;
  }
  const auto name_of = [this](const std::string& job) {
    std::string name;
    try {
      util::MutexLock lock(reader_mu_);
      auto rec = reader_->get_job(util::JobId(std::stoll(job)));
      if (rec.is_ok() && *rec) name = (*rec)->name;
    } catch (const std::exception&) {
      // Not a job id (records written by something else): shown without a name.
    }
    return name;
  };
  model::CostReportView out{.since = util::format_time(range.from),
                            .until = util::format_time(range.to),
                            .scope = who.admin ? "all" : "team"};
  add_jobs_and_teams(out, report, team_of, who.admin ? team : who.team, name_of);
  add_total_and_pools(out, report, who);
  return model::to_json(out);
}

}  // namespace trainyard::server
