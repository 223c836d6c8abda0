#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/svg_plot.h"

namespace trainyard::sim {
namespace {

std::string ratio(double v, double base) {
  if (base <= 0) return "-";
  return fmt::format("{:.2f}x", v / base);
}

std::string pct(double v) {
  return fmt::format("{:.1f}%", v * 100.0);
}

}  // namespace

std::string format_duration_s(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.1f}m", s / 60);
  if (s < 86400 * 2) return fmt::format("{:.2f}h", s / 3600);
  return fmt::format("{:.2f}d", s / 86400);
}

std::vector<std::vector<std::string>> comparison_cells(const std::vector<Summary>& ss) {
  if (ss.empty()) return {};
  struct Col {
    std::string head;
    std::function<std::string(const Summary&)> cell;
  };
  const Summary& base = ss.front();
  const std::vector<Col> cols = {
      {"policy", [](const Summary& s) { return s.policy; }},
      {"finished",
       [](const Summary& s) { return fmt::format("{}/{}", s.jobs, s.jobs + s.unfinished); }},
      {"avg JCT", [](const Summary& s) { return format_duration_s(s.avg_jct_s); }},
      {"vs " + base.policy, [&](const Summary& s) { return ratio(s.avg_jct_s, base.avg_jct_s); }},
      {"p50 JCT", [](const Summary& s) { return format_duration_s(s.p50_jct_s); }},
      {"p95 JCT", [](const Summary& s) { return format_duration_s(s.p95_jct_s); }},
      {"p99 JCT", [](const Summary& s) { return format_duration_s(s.p99_jct_s); }},
      {"avg queue", [](const Summary& s) { return format_duration_s(s.avg_queue_s); }},
      {"makespan", [](const Summary& s) { return format_duration_s(s.makespan_s); }},
      {"GPU alloc", [](const Summary& s) { return pct(s.gpu_allocation); }},
      {"preempt/job",
       [](const Summary& s) { return fmt::format("{:.3f}", s.preemptions_per_job); }},
      {"GPU-h lost", [](const Summary& s) { return fmt::format("{:.0f}", s.gpu_hours_lost); }},
      {"worst rho", [](const Summary& s) { return fmt::format("{:.0f}", s.worst_ftf); }},
      {"rho>1", [](const Summary& s) { return pct(s.unfair_share); }},
      {"Jain", [](const Summary& s) { return fmt::format("{:.3f}", s.jain_teams); }},
      {"sim wall", [](const Summary& s) { return fmt::format("{:.1f}s", s.wall_seconds); }},
  };
  std::vector<std::vector<std::string>> rows;
  rows.emplace_back();
  for (const auto& c : cols) rows.back().push_back(c.head);
  for (const auto& s : ss) {
    rows.emplace_back();
    for (const auto& c : cols) rows.back().push_back(c.cell(s));
  }
  return rows;
}

std::string comparison_table(const std::vector<Summary>& ss) {
  const std::vector<std::vector<std::string>> rows = comparison_cells(ss);
  if (rows.empty()) return "";
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += i == 0 ? fmt::format("{:<{}}", row[i], width[i])
                    : fmt::format("  {:>{}}", row[i], width[i]);
    }
    out += '\n';
  }
  return out;
}

std::string summary_json(const RunInfo& info, const std::vector<Summary>& ss) {
  nlohmann::json j;
  j["trace"] = info.trace;
  j["cluster"] = info.cluster;
  j["cluster_gpus"] = info.cluster_gpus;
  j["jobs"] = info.jobs;
  j["skipped_rows"] = info.skipped_rows;
  j["seed"] = info.seed;
  for (const auto& s : ss) {
    nlohmann::json p;
    p["jobs_finished"] = s.jobs;
    p["jobs_unfinished"] = s.unfinished;
    p["avg_jct_s"] = s.avg_jct_s;
    p["p50_jct_s"] = s.p50_jct_s;
    p["p95_jct_s"] = s.p95_jct_s;
    p["p99_jct_s"] = s.p99_jct_s;
    p["avg_queue_s"] = s.avg_queue_s;
    p["p99_queue_s"] = s.p99_queue_s;
    p["makespan_s"] = s.makespan_s;
    p["gpu_allocation"] = s.gpu_allocation;
    p["useful_utilization"] = s.useful_utilization;
    p["preemptions_per_job"] = s.preemptions_per_job;
    p["gpu_hours_lost_to_preemption"] = s.gpu_hours_lost;
    p["worst_finish_time_fairness"] = s.worst_ftf;
    p["share_of_jobs_rho_above_1"] = s.unfair_share;
    p["jain_index_over_teams"] = s.jain_teams;
    p["avg_jct_by_priority_class_s"] = s.avg_jct_by_priority_class;
    p["avg_jct_by_team_s"] = s.avg_jct_by_team;
    p["events"] = s.events;
    p["plan_calls"] = s.plan_calls;
    p["wall_seconds"] = s.wall_seconds;
    j["policies"][s.policy] = p;
  }
  return j.dump(2) + "\n";
}

std::string jobs_csv(const SimResult& r) {
  std::string out =
      "id,team,priority,gpus,submit_s,first_start_s,finish_s,duration_s,jct_s,queue_s,preemptions,"
      "lost_work_s,restart_overhead_s,t_iso_s,rho\n";
  const std::vector<double> t_iso = isolated_completion_times(r);
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobOutcome& j = r.jobs[i];
    const double jct = util::to_seconds(j.finish - j.submit);
    out += fmt::format(
        "{},{},{},{:.3f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{},{:.0f},{:.0f},{:.0f},{:.3f},",
        j.id.value(), j.team >= 0 ? r.teams[j.team] : "", j.priority,
        static_cast<double>(j.gpu_milli) / 1000.0, util::to_seconds(j.submit),
        util::to_seconds(j.first_start), util::to_seconds(j.finish), util::to_seconds(j.duration),
        util::to_seconds(j.finish - j.submit), util::to_seconds(j.first_start - j.submit),
        j.preemptions, util::to_seconds(j.lost_work), util::to_seconds(j.restart_overhead),
        t_iso[i], t_iso[i] > 0 ? jct / t_iso[i] : 1.0);
    out.back() = '\n';
  }
  return out;
}

std::string timeline_csv(const SimResult& r) {
  std::string out = "time_s,allocated_gpus,pending,running\n";
  for (const auto& p : r.timeline) {
    out += fmt::format("{:.0f},{:.3f},{},{}\n", util::to_seconds(p.time),
                       static_cast<double>(p.allocated_milli) / 1000.0, p.pending, p.running);
  }
  return out;
}

std::vector<double> timeline_grid(const std::vector<SimResult>& results, size_t n) {
  double end = 0;
  for (const auto& r : results)
    if (!r.timeline.empty()) end = std::max(end, util::to_seconds(r.timeline.back().time));
  std::vector<double> times;
  n = std::max<size_t>(n, 2);
  for (size_t i = 0; i < n; ++i)
    times.push_back(end * static_cast<double>(i) / static_cast<double>(n - 1));
  return times;
}

nlohmann::json resample_timeline(const SimResult& r, const std::vector<double>& times) {
  nlohmann::json alloc = nlohmann::json::array(), pending = nlohmann::json::array(),
                 nodes = nlohmann::json::array(), cost = nlohmann::json::array();
  size_t k = 0;
  const TimelinePoint* at = nullptr;
  for (double t : times) {
    while (k < r.timeline.size() && util::to_seconds(r.timeline[k].time) <= t)
      at = &r.timeline[k++];
    alloc.push_back(at ? static_cast<double>(at->allocated_milli) / 1000.0 : 0.0);
    pending.push_back(at ? at->pending : 0);
    nodes.push_back(at ? at->nodes : 0);
    cost.push_back(at ? at->cost_usd : 0.0);
  }
  return {{"allocated_gpus", std::move(alloc)},
          {"pending", std::move(pending)},
          {"nodes", std::move(nodes)},
          {"cost_usd", std::move(cost)}};
}

nlohmann::json html_report_data(const RunInfo& info, const std::vector<SimResult>& results,
                                const std::vector<Summary>& summaries, size_t max_points) {
  nlohmann::json d;
  d["run"] = nlohmann::json::parse(summary_json(info, {}));
  d["summary"] = nlohmann::json::parse(summary_json(info, summaries))["policies"];
  d["table"] = comparison_cells(summaries);
  // The JCT CDF: the share of each policy's finished jobs done within each JCT of one grid,
  // log-spaced from the shortest to the longest JCT of any policy (in hours).
  std::vector<std::vector<double>> jcts;
  double lo = 0, hi = 0;
  for (const auto& r : results) {
    std::vector<double> h;
    for (const auto& j : r.jobs)
      h.push_back(std::max(1.0, util::to_seconds(j.finish - j.submit)) / 3600.0);
    std::sort(h.begin(), h.end());
    if (!h.empty()) {
      lo = lo == 0 ? h.front() : std::min(lo, h.front());
      hi = std::max(hi, h.back());
    }
    jcts.push_back(std::move(h));
  }
  std::vector<double> grid;
  const size_t n = std::max<size_t>(max_points, 2);
  if (hi > 0) {
    hi = std::max(hi, lo * 1.001);
    for (size_t i = 0; i < n; ++i)
      grid.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / static_cast<double>(n - 1)));
    grid.back() = hi;  // exactly: every job is done by the last point
  }
  nlohmann::json cdf = nlohmann::json::array();
  for (size_t p = 0; p < results.size(); ++p) {
    nlohmann::json frac = nlohmann::json::array();
    const auto& h = jcts[p];
    for (double x : grid) {
      const auto done = std::upper_bound(h.begin(), h.end(), x) - h.begin();
      frac.push_back(h.empty() ? 0.0 : static_cast<double>(done) / static_cast<double>(h.size()));
    }
    cdf.push_back({{"policy", results[p].policy}, {"fraction", std::move(frac)}});
  }
  d["cdf"] = {{"jct_hours", grid}, {"policies", std::move(cdf)}};
  const std::vector<double> times = timeline_grid(results, max_points);
  nlohmann::json hours = nlohmann::json::array();
  for (double t : times) hours.push_back(t / 3600.0);
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json line = resample_timeline(r, times);
    line.erase("nodes");
    line.erase("cost_usd");
    line["policy"] = r.policy;
    line["capacity_gpus"] = static_cast<double>(r.capacity_milli) / 1000.0;
    lines.push_back(std::move(line));
  }
  d["timeline"] = {{"hours", std::move(hours)}, {"policies", std::move(lines)}};
  return d;
}

util::Result<std::vector<std::string>> write_report(const std::string& dir, const RunInfo& info,
                                                    const std::vector<SimResult>& results,
                                                    const std::vector<Summary>& summaries,
                                                    bool plots) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return util::invalid_argument(
        fmt::format("{}: cannot create the output folder: {}", dir, ec.message()));
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& content) -> util::Status {
    const std::string path = (std::filesystem::path(dir) / name).string();
    TY_RETURN_IF_ERROR(write_file(path, content));
    written.push_back(path);
    return util::Status::ok();
  };
  TY_RETURN_IF_ERROR(put("summary.json", summary_json(info, summaries)));
  for (const auto& r : results) {
    TY_RETURN_IF_ERROR(put(fmt::format("jobs-{}.csv", r.policy), jobs_csv(r)));
    TY_RETURN_IF_ERROR(put(fmt::format("timeline-{}.csv", r.policy), timeline_csv(r)));
  }
  if (!plots) return written;
  std::vector<Series> cdf, alloc, queue;
  for (const auto& r : results) {
    std::vector<double> jct_h;
    for (const auto& j : r.jobs) jct_h.push_back(util::to_seconds(j.finish - j.submit) / 3600.0);
    cdf.push_back(cdf_series(r.policy, std::move(jct_h)));
    Series a{r.policy, {}, {}}, q{r.policy, {}, {}};
    const double cap = static_cast<double>(r.capacity_milli);
    for (const auto& p : r.timeline) {
      const double day = util::to_seconds(p.time) / 86400.0;
      a.x.push_back(day);
      a.y.push_back(cap > 0 ? 100.0 * static_cast<double>(p.allocated_milli) / cap : 0);
      q.x.push_back(day);
      q.y.push_back(p.pending);
    }
    alloc.push_back(std::move(a));
    queue.push_back(std::move(q));
  }
  TY_RETURN_IF_ERROR(put("jct-cdf.svg", render_line_chart(cdf, {.title = "Job completion time CDF",
                                                                .x_label = "JCT (hours, log scale)",
                                                                .y_label = "fraction of jobs",
                                                                .log_x = true})));
  TY_RETURN_IF_ERROR(put("gpu-allocation.svg",
                         render_line_chart(alloc, {.title = "GPU allocation over time",
                                                   .x_label = "time (days)",
                                                   .y_label = "GPUs allocated (% of cluster)",
                                                   .y_min = 0.0,
                                                   .y_max = 100.0,
                                                   .step = true})));
  TY_RETURN_IF_ERROR(
      put("queue-length.svg", render_line_chart(queue, {.title = "Pending jobs over time",
                                                        .x_label = "time (days)",
                                                        .y_label = "jobs waiting",
                                                        .y_min = 0.0,
                                                        .step = true})));
  return written;
}

}  // namespace trainyard::sim
