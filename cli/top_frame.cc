#include "cli/top_frame.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "cli/output.h"

namespace trainyard::cli {
namespace {

using model::GpuDeviceView;
using model::GpuProcessView;

constexpr int kBarWidth = 20;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr size_t kMaxCommand = 60;
constexpr TopSort kSortCycle[] = {TopSort::Index, TopSort::Util, TopSort::Memory,
                                  TopSort::Power, TopSort::Temp, TopSort::Job};
constexpr std::string_view kSortNames[] = {"index", "util", "memory", "power", "temp", "job"};

std::optional<double> number(const std::optional<double>& v) {
  return v;
}
std::optional<double> number(const std::optional<uint64_t>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

// "[||||||      ]" for a share in 0..1; blank inside when unknown.
std::string bar(std::optional<double> share) {
  const int filled = share ? static_cast<int>(std::clamp(*share, 0.0, 1.0) * kBarWidth + 0.5) : 0;
  return "[" + std::string(filled, '|') + std::string(kBarWidth - filled, ' ') + "]";
}

std::string device_name(const GpuDeviceView& d) {
  std::string name = std::to_string(d.index);
  if (d.mig) name += "/" + d.mig_profile;
  return name;
}

std::string jobs_cell(const GpuDeviceView& d) {
  std::string out;
  for (const auto& j : d.jobs) {
    out += out.empty() ? "" : ", ";
    out += std::to_string(j.id);
    if (j.name) out += " " + *j.name;
    out += " (" + j.team + ")";
  }
  return out.empty() ? "-" : out;
}

// The sort key of a device: larger first for measurements (unknown last), job id ascending.
double sort_key(const GpuDeviceView& d, TopSort sort) {
  constexpr double kLast = -1e300;
  const model::GpuMeasurementsView& m = d.measurements;
  switch (sort) {
    case TopSort::Index:
      return -static_cast<double>(d.index);
    case TopSort::Util:
      return number(m.gpu_util_percent).value_or(kLast);
    case TopSort::Memory:
      return number(m.memory_used_bytes).value_or(kLast);
    case TopSort::Power:
      return number(m.power_w).value_or(kLast);
    case TopSort::Temp:
      return number(m.temperature_c).value_or(kLast);
    case TopSort::Job:
      return d.jobs.empty() ? kLast : -static_cast<double>(d.jobs[0].id);
  }
  return 0;
}

std::vector<const GpuDeviceView*> sorted_devices(const std::vector<GpuDeviceView>& items,
                                                 TopSort sort) {
  std::vector<const GpuDeviceView*> out;
  for (const auto& d : items) out.push_back(&d);
  std::stable_sort(out.begin(), out.end(), [&](const GpuDeviceView* a, const GpuDeviceView* b) {
    return sort_key(*a, sort) > sort_key(*b, sort);
  });
  return out;
}

std::vector<std::string> device_row(const GpuDeviceView& d, const TopView& view) {
  const model::GpuMeasurementsView& m = d.measurements;
  const auto util = number(m.gpu_util_percent);
  const auto used = number(m.memory_used_bytes);
  const auto total = number(m.memory_total_bytes);
  const auto temp = number(m.temperature_c);
  const auto power = number(m.power_w);
  const std::optional<double> mem_share =
      used && total && *total > 0 ? std::optional<double>(*used / *total) : std::nullopt;
  auto hist = view.utilization.find(d.uuid);
  return {device_name(d),
          d.model,
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

std::string command_cell(const GpuProcessView& p) {
  if (!p.command) return "-";
  // One line, and no terminal control sequences from a process's own argv: every control
  // character (newlines of a `sh -c` script, ESC) becomes a space, runs of spaces one.
  std::string c;
  for (char ch : *p.command) {
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

std::vector<std::string> process_row(const GpuDeviceView& d, const GpuProcessView& p) {
  const auto mem = number(p.memory_bytes);
  const auto sm = number(p.sm_util_percent);
  return {device_name(d),
          std::to_string(p.pid),
          p.user.value_or("-"),
          p.job ? std::to_string(*p.job) : "-",
          mem ? fmt::format("{:.1f} GiB", *mem / kGiB) : "-",
          sm ? fmt::format("{:.0f}%", *sm) : "-",
          command_cell(p)};
}

std::string process_table(const std::vector<const GpuDeviceView*>& devices, TopSort sort) {
  auto mem_of = [](const GpuProcessView* p) { return number(p->memory_bytes).value_or(0); };
  auto job_of = [](const GpuProcessView* p) {
    return p->job ? static_cast<double>(*p->job) : 1e300;  // none last
  };
  // In device order, the biggest first within a device; by job when sorting by job.
  std::vector<std::pair<const GpuDeviceView*, const GpuProcessView*>> procs;
  for (const GpuDeviceView* d : devices) {
    std::vector<const GpuProcessView*> mine;
    for (const auto& p : d->processes) mine.push_back(&p);
    std::stable_sort(mine.begin(), mine.end(),
                     [&](const auto* a, const auto* b) { return mem_of(a) > mem_of(b); });
    for (const GpuProcessView* p : mine) procs.emplace_back(d, p);
  }
  if (procs.empty()) return "no GPU processes (or the sampler cannot see them)\n";
  if (sort == TopSort::Job) {
    std::stable_sort(procs.begin(), procs.end(), [&](const auto& a, const auto& b) {
      return job_of(a.second) < job_of(b.second);
    });
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [d, p] : procs) rows.push_back(process_row(*d, *p));
  return render_table({"GPU", "PID", "USER", "JOB", "GPU MEM", "SM", "COMMAND"}, rows);
}

struct JobLine {
  std::string name, team;
  int devices = 0;
  double util_sum = 0;
  int util_n = 0;
  double memory = 0;
};

std::string job_table(const std::vector<GpuDeviceView>& items) {
  std::map<int64_t, JobLine> jobs;
  for (const auto& d : items) {
    const auto util = number(d.measurements.gpu_util_percent);
    for (const auto& j : d.jobs) {
      JobLine& line = jobs[j.id];
      line.name = j.name.value_or("-");
      line.team = j.team;
      line.devices += 1;
      if (util) line.util_sum += *util, line.util_n += 1;
      line.memory += number(d.measurements.memory_used_bytes).value_or(0);
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

void record_history(TopView& view, const model::GpuListView& gpus) {
  for (const auto& d : gpus.items) {
    Series& s = view.utilization[d.uuid];
    s.push_back(number(d.measurements.gpu_util_percent));
    while (s.size() > std::max<size_t>(1, view.history)) s.erase(s.begin());
  }
}

std::string render_top_frame(const model::GpuListView& gpus, const std::string& server,
                             const TopView& view) {
  const std::vector<GpuDeviceView>& items = gpus.items;
  std::string out =
      fmt::format("trainyard top  {}  {} device(s)  sampled {}  sort: {}{}\n\n", server,
                  items.size(), items.empty() ? "-" : items[0].measurements.time,
                  top_sort_name(view.sort), view.interactive ? "  (s: next sort, q: quit)" : "");
  if (items.empty()) return out + "no GPUs (the server has none, or has not sampled them yet)\n";
  const auto devices = sorted_devices(items, view.sort);
  std::vector<std::vector<std::string>> rows;
  for (const GpuDeviceView* d : devices) rows.push_back(device_row(*d, view));
  out += render_table({"GPU", "MODEL", "UTIL", "MEMORY", "TEMP", "POWER", "JOB (TEAM)",
                       fmt::format("UTIL HISTORY ({} refreshes)", view.history)},
                      rows);
  out += "\n" + process_table(devices, view.sort) + "\n" + job_table(items);
  return out;
}

}  // namespace trainyard::cli
