// `trainyard top`: a live view of the server's GPUs in the style of nvitop: one row per GPU or
// MIG device with utilization and memory bars, temperature, power and the job on it, then one
// line per job. Refreshes in place on a terminal; --once prints one frame without escapes.
#include <unistd.h>

#include <iostream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/output.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

constexpr int kBarWidth = 20;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::optional<double> number(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

// "[||||||      ]" for a share in 0..1; blank inside when unknown.
std::string bar(std::optional<double> share) {
  const int filled = share ? static_cast<int>(std::clamp(*share, 0.0, 1.0) * kBarWidth + 0.5) : 0;
  return "[" + std::string(filled, '|') + std::string(kBarWidth - filled, ' ') + "]";
}

std::string device_name(const json& d) {
  std::string name = cell(d["index"]);
  if (d.value("mig", false)) name += "/" + d.value("migProfile", std::string("mig"));
  return name;
}

std::string jobs_cell(const json& d) {
  std::string out;
  for (const auto& j : d["jobs"]) {
    out += out.empty() ? "" : ", ";
    out += cell(j["id"]);
    if (j["name"].is_string()) out += " " + j["name"].get<std::string>();
    out += " (" + cell(j["team"]) + ")";
  }
  return out.empty() ? "-" : out;
}

struct JobLine {
  std::string name, team;
  int devices = 0;
  double util_sum = 0;
  int util_n = 0;
  double memory = 0;
};

std::string render_frame(const json& gpus, const std::string& server) {
  std::string out;
  const auto& items = gpus["items"];
  std::map<int64_t, JobLine> jobs;
  std::vector<std::vector<std::string>> rows;
  for (const auto& d : items) {
    const auto util = number(d, "gpuUtilPercent");
    const auto used = number(d, "memoryUsedBytes");
    const auto total = number(d, "memoryTotalBytes");
    const auto temp = number(d, "temperatureC");
    const auto power = number(d, "powerW");
    const std::optional<double> mem_share =
        used && total && *total > 0 ? std::optional<double>(*used / *total) : std::nullopt;
    rows.push_back({device_name(d), cell(d["model"]),
                    bar(util ? std::optional<double>(*util / 100) : std::nullopt) +
                        (util ? fmt::format(" {:3.0f}%", *util) : "    -"),
                    bar(mem_share) + (total ? fmt::format(" {:5.1f}/{:.1f} GiB",
                                                          used.value_or(0) / kGiB, *total / kGiB)
                                            : " -"),
                    temp ? fmt::format("{:.0f}C", *temp) : "-",
                    power ? fmt::format("{:.0f}W", *power) : "-", jobs_cell(d)});
    for (const auto& j : d["jobs"]) {
      JobLine& line = jobs[j["id"].get<int64_t>()];
      line.name = j["name"].is_string() ? j["name"].get<std::string>() : "-";
      line.team = cell(j["team"]);
      line.devices += 1;
      if (util) line.util_sum += *util, line.util_n += 1;
      line.memory += used.value_or(0);
    }
  }
  const std::string when = items.empty() ? "-" : cell(items[0]["time"]);
  out += fmt::format("trainyard top  {}  {} device(s), {} job(s)  sampled {}\n\n", server,
                     items.size(), jobs.size(), when);
  if (items.empty()) {
    out += "no GPUs (the server has none, or has not sampled them yet)\n";
    return out;
  }
  out += render_table({"GPU", "MODEL", "UTIL", "MEMORY", "TEMP", "POWER", "JOB (TEAM)"}, rows);
  out += "\n";
  std::vector<std::vector<std::string>> job_rows;
  for (const auto& [id, j] : jobs) {
    job_rows.push_back({std::to_string(id), j.name, j.team, std::to_string(j.devices),
                        j.util_n > 0 ? fmt::format("{:.0f}%", j.util_sum / j.util_n) : "-",
                        fmt::format("{:.1f} GiB", j.memory / kGiB)});
  }
  if (job_rows.empty()) {
    out += "no jobs on GPUs\n";
  } else {
    out += render_table({"JOB", "NAME", "TEAM", "GPUS", "AVG UTIL", "MEMORY"}, job_rows);
  }
  return out;
}

}  // namespace

Runner add_top_command(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    double interval = 2;
    bool once = false;
    std::string output;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "top", "Live view of the GPUs: utilization, memory, temperature, power and their jobs");
  cmd->add_option("--interval", o->interval, "Seconds between refreshes")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--once", o->once, "Print one frame and exit (no terminal escapes)");
  cmd->add_option("-o,--output", o->output, "json: print the raw data once");
  add_client_options(*cmd, o->client);
  return [o] {
    if (!o->output.empty() && o->output != "json")
      return report("top", util::invalid_argument("-o must be json"));
    ApiClient api(o->client);
    auto first = api.get("/api/v1/gpus");
    if (!first.is_ok()) return report("top", first.status());
    if (o->output == "json") {
      std::cout << first->dump(2) << "\n";
      return kExitOk;
    }
    if (o->once) {
      std::cout << render_frame(*first, api.server()) << std::flush;
      return kExitOk;
    }
    // On a terminal each frame replaces the last (clear screen, cursor home); into a pipe or a
    // file frames follow each other.
    const bool tty = ::isatty(STDOUT_FILENO) == 1;
    util::Result<json> data = std::move(first);
    for (;;) {
      const std::string frame = data.is_ok()
                                    ? render_frame(*data, api.server())
                                    : fmt::format("trainyard top: {}\nretrying every {}s\n",
                                                  data.status().message(), o->interval);
      std::cout << (tty ? "\x1b[H\x1b[2J" : "") << frame << (tty ? "" : "\n") << std::flush;
      std::this_thread::sleep_for(std::chrono::duration<double>(o->interval));
      data = api.get("/api/v1/gpus");
    }
  };
}

}  // namespace trainyard::cli
