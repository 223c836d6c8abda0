#include "cli/simulate_html.h"

#include <fstream>

#include <fmt/format.h>

#include "sim/report.h"
#include "web/assets.h"

namespace trainyard::cli {
namespace {

std::string asset_text(const char* name) {
  const web::Asset* a = web::find_asset(name);
  if (a == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(a->raw.data()), a->raw.size());
}

// Text that may not close the element it sits in: "</script" and "</style" are split.
std::string guard(std::string text, const std::string& tag) {
  const std::string bad = "</" + tag;
  for (size_t at = text.find(bad); at != std::string::npos; at = text.find(bad, at + 2))
    text.replace(at, 2, "<\\/");
  return text;
}

}  // namespace

util::Result<std::string> html_report(const nlohmann::json& data) {
  const std::string js = asset_text("report.js");
  if (js.empty())
    return util::internal_error("this trainyard binary has no embedded report script");
  // JSON inside <script>: '<' escaped, so no text in it can end the element.
  std::string json = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      safe += "\\u003c";
    else
      safe += c;
  }
  return fmt::format(
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // Nothing leaves the file: no request of any kind is allowed.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
      "<title>trainyard simulate report</title>\n<style>{}</style>\n</head>\n<body>\n"
      "<main id=\"report\"><p>This report needs JavaScript.</p></main>\n"
      "<script type=\"application/json\" id=\"report-data\">{}</script>\n"
      "<script type=\"module\">{}</script>\n</body>\n</html>\n",
      guard(asset_text("report.css"), "style"), safe, guard(js, "script"));
}

util::Status write_html_report(const std::string& path, const nlohmann::json& data) {
  TY_ASSIGN_OR_RETURN(std::string page, html_report(data));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return util::invalid_argument(fmt::format("--html {}: cannot write the file", path));
  out << page;
  out.close();
  if (!out) return util::invalid_argument(fmt::format("--html {}: write failed", path));
  return util::Status::ok();
}

nlohmann::json cost_html_data(const std::vector<sim::SimResult>& results,
                              const std::vector<sim::CostSummary>& rows, size_t max_points) {
  nlohmann::json table = nlohmann::json::array();
  table.push_back({"scenario", "jobs", "unfinished", "cost $", "$/job", "ratio", "avg JCT",
                   "p99 JCT", "lost GPU-h", "lost $", "idle %", "interruptions", "peak nodes"});
  const double base = rows.empty() ? 0 : rows.front().cost_per_job;
  for (const auto& r : rows) {
    const double idle = r.billed_gpu_hours > 0 ? 100.0 * r.idle_gpu_hours / r.billed_gpu_hours : 0;
    table.push_back({r.scenario, std::to_string(r.jobs), std::to_string(r.unfinished),
                     fmt::format("{:.2f}", r.cost_usd), fmt::format("{:.2f}", r.cost_per_job),
                     fmt::format("{:.3f}x", base > 0 ? r.cost_per_job / base : 0.0),
                     sim::format_duration_s(r.avg_jct_s), sim::format_duration_s(r.p99_jct_s),
                     fmt::format("{:.1f}", r.lost_gpu_hours), fmt::format("{:.2f}", r.lost_usd),
                     fmt::format("{:.2f}%", idle), std::to_string(r.interruptions),
                     std::to_string(r.peak_nodes)});
  }
  const std::vector<double> times = sim::timeline_grid(results, max_points);
  nlohmann::json hours = nlohmann::json::array();
  for (double t : times) hours.push_back(t / 3600.0);
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json line = sim::resample_timeline(r, times);
    line.erase("pending");
    line["scenario"] = r.policy;
    lines.push_back(std::move(line));
  }
  return {{"table", std::move(table)},
          {"timeline", {{"hours", std::move(hours)}, {"scenarios", std::move(lines)}}}};
}

}  // namespace trainyard::cli
