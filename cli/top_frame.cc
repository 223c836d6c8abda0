#include "cli/top_frame.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "cli/output.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

constexpr int kBarWidth = 20;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr size_t kMaxCommand = 60;
constexpr TopSort kSortCycle[] = {TopSort::Index, TopSort::Util, TopSort::Memory,
                                  TopSort::Power, TopSort::Temp, TopSort::Job};
constexpr std::string_view kSortNames[] = {"index", "util", "memory", "power", "temp", "job"};

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

// The sort key of a device: larger first for measurements (unknown last), job id ascending.
double sort_key(const json& d, TopSort sort) {
  constexpr double kLast = -1e300;
  switch (sort) {
    case TopSort::Index:
      return -d.value("index", 0.0);
    case TopSort::Util:
      return number(d, "gpuUtilPercent").value_or(kLast);
    case TopSort::Memory:
      return number(d, "memoryUsedBytes").value_or(kLast);
    case TopSort::Power:
      return number(d, "powerW").value_or(kLast);
    case TopSort::Temp:
      return number(d, "temperatureC").value_or(kLast);
    case TopSort::Job:
      return d["jobs"].empty() ? kLast : -d["jobs"][0].value("id", 0.0);
  }
  return 0;
}

std::vector<const json*> sorted_devices(const json& items, TopSort sort) {
  std::vector<const json*> out;
  for (const auto& d : items) out.push_back(&d);
  std::stable_sort(out.begin(), out.end(), [&](const json* a, const json* b) {
    return sort_key(*a, sort) > sort_key(*b, sort);
  });
  return out;
}

std::vector<std::string> device_row(const json& d, const TopView& view) {
  const auto util = number(d, "gpuUtilPercent");
  const auto used = number(d, "memoryUsedBytes");
  const auto total = number(d, "memoryTotalBytes");
  const auto temp = number(d, "temperatureC");
  const auto power = number(d, "powerW");
  const std::optional<double> mem_share =
      used && total && *total > 0 ? std::optional<double>(*used / *total) : std::nullopt;
  auto hist = view.utilization.find(d.value("uuid", std::string()));
  return {device_name(d),
          cell(d["model"]),
          bar(util ? std::optional<double>(*util / 100) : std::nullopt) +
              (util ? fmt::format(" {:3.0f}%", *util) : "    -"),
          bar(mem_share) +
              (total ? fmt::format(" {:5.1f}/{:.1f} GiB", used.value_or(0) / kGiB, *total / kGiB)
                     : " -"),
          temp ? fmt::format("{:.0f}C", *temp) : "-",
          power ? fmt::format("{:.0f}W", *power) : "-",
          jobs_cell(d),
          hist == view.utilization.end()
              ? ""
              : sparkline(hist->second,
                          {.ascii = view.ascii, .lo = 0.0, .hi = 100.0, .width = view.history})};
}

std::string command_cell(const json& p) {
  if (!p.contains("command") || !p["command"].is_string()) return "-";
  // One line, and no terminal control sequences from a process's own argv: every control
  // character (newlines of a `sh -c` script, ESC) becomes a space, runs of spaces one.
  std::string c;
  for (char ch : p["command"].get<std::string>()) {
    const bool control = static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
    if (control || ch == ' ') {
      if (!c.empty() && c.back() != ' ') c += ' ';
    } else {
      c += ch;
    }
  }
  while (!c.empty() && c.back() == ' ') c.pop_back();
  if (c.size() > kMaxCommand) c = c.substr(0, kMaxCommand - 3) + "...";
  return c.empty() ? "-" : c;
}

std::string process_table(const std::vector<const json*>& devices, TopSort sort) {
  auto mem_of = [](const json* p) { return number(*p, "memoryBytes").value_or(0); };
  auto job_of = [](const json* p) {
    return (*p)["job"].is_number() ? (*p)["job"].get<double>() : 1e300;  // none last
  };
  // In device order, the biggest first within a device; by job when sorting by job.
  std::vector<std::pair<const json*, const json*>> procs;  // device, process
  for (const json* d : devices) {
    std::vector<const json*> mine;
    if (d->contains("processes") && (*d)["processes"].is_array())
      for (const auto& p : (*d)["processes"]) mine.push_back(&p);
    std::stable_sort(mine.begin(), mine.end(),
                     [&](const json* a, const json* b) { return mem_of(a) > mem_of(b); });
    for (const json* p : mine) procs.emplace_back(d, p);
  }
  if (procs.empty()) return "no GPU processes (or the sampler cannot see them)\n";
  if (sort == TopSort::Job) {
    std::stable_sort(procs.begin(), procs.end(), [&](const auto& a, const auto& b) {
      return job_of(a.second) < job_of(b.second);
    });
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [d, p] : procs) {
    const auto mem = number(*p, "memoryBytes");
    const auto sm = number(*p, "smUtilPercent");
    rows.push_back({device_name(*d), cell((*p)["pid"]), cell(p->value("user", json())),
                    cell(p->value("job", json())),
                    mem ? fmt::format("{:.1f} GiB", *mem / kGiB) : "-",
                    sm ? fmt::format("{:.0f}%", *sm) : "-", command_cell(*p)});
  }
  return render_table({"GPU", "PID", "USER", "JOB", "GPU MEM", "SM", "COMMAND"}, rows);
}

struct JobLine {
  std::string name, team;
  int devices = 0;
  double util_sum = 0;
  int util_n = 0;
  double memory = 0;
};

std::string job_table(const json& items) {
  std::map<int64_t, JobLine> jobs;
  for (const auto& d : items) {
    const auto util = number(d, "gpuUtilPercent");
    for (const auto& j : d["jobs"]) {
      JobLine& line = jobs[j["id"].get<int64_t>()];
      line.name = j["name"].is_string() ? j["name"].get<std::string>() : "-";
      line.team = cell(j["team"]);
      line.devices += 1;
      if (util) line.util_sum += *util, line.util_n += 1;
      line.memory += number(d, "memoryUsedBytes").value_or(0);
    }
  }
  if (jobs.empty()) return "no jobs on GPUs\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [id, j] : jobs) {
    rows.push_back({std::to_string(id), j.name, j.team, std::to_string(j.devices),
                    j.util_n > 0 ? fmt::format("{:.0f}%", j.util_sum / j.util_n) : "-",
                    fmt::format("{:.1f} GiB", j.memory / kGiB)});
  }
  return render_table({"JOB", "NAME", "TEAM", "GPUS", "AVG UTIL", "MEMORY"}, rows);
}

}  // namespace

std::optional<TopSort> parse_top_sort(std::string_view name) {
  for (size_t i = 0; i < std::size(kSortNames); ++i)
    if (kSortNames[i] == name) return kSortCycle[i];
  return std::nullopt;
}

std::string_view top_sort_name(TopSort sort) {
  return kSortNames[static_cast<size_t>(sort)];
}

TopSort next_top_sort(TopSort sort) {
  return kSortCycle[(static_cast<size_t>(sort) + 1) % std::size(kSortCycle)];
}

void record_history(TopView& view, const json& gpus) {
  if (!gpus.contains("items") || !gpus["items"].is_array()) return;
  for (const auto& d : gpus["items"]) {
    Series& s = view.utilization[d.value("uuid", std::string())];
    s.push_back(number(d, "gpuUtilPercent"));
    while (s.size() > std::max<size_t>(1, view.history)) s.erase(s.begin());
  }
}

std::string render_top_frame(const json& gpus, const std::string& server, const TopView& view) {
  const json& items = gpus["items"];
  std::string out =
      fmt::format("trainyard top  {}  {} device(s)  sampled {}  sort: {}{}\n\n", server,
                  items.size(), items.empty() ? "-" : cell(items[0]["time"]),
                  top_sort_name(view.sort), view.interactive ? "  (s: next sort, q: quit)" : "");
  if (items.empty()) return out + "no GPUs (the server has none, or has not sampled them yet)\n";
  const auto devices = sorted_devices(items, view.sort);
  std::vector<std::vector<std::string>> rows;
  for (const json* d : devices) rows.push_back(device_row(*d, view));
  out += render_table({"GPU", "MODEL", "UTIL", "MEMORY", "TEMP", "POWER", "JOB (TEAM)",
                       fmt::format("UTIL HISTORY ({} refreshes)", view.history)},
                      rows);
  out += "\n" + process_table(devices, view.sort) + "\n" + job_table(items);
  return out;
}

}  // namespace trainyard::cli
