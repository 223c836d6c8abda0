// What `trainyard top` draws from GET /api/v1/gpus: one row per GPU or MIG device (utilization
// and memory bars, temperature, power, its jobs and a sparkline of its utilization over the last
// refreshes), one row per GPU process (pid, user, job, GPU memory, command line), then one line
// per job. Pure: the caller fetches, keeps the TopView between refreshes and prints.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "cli/sparkline.h"
#include "model/api_telemetry_views.h"

namespace trainyard::cli {

enum class TopSort { Index, Util, Memory, Power, Temp, Job };

std::optional<TopSort> parse_top_sort(std::string_view name);
std::string_view top_sort_name(TopSort sort);
TopSort next_top_sort(TopSort sort);  // the `s` key: index, util, memory, power, temp, job

struct TopView {
  TopSort sort = TopSort::Index;
  size_t history = 30;  // refreshes kept per device
  bool ascii = false;
  bool interactive = false;                   // says which keys work
  std::map<std::string, Series> utilization;  // by device uuid, oldest first
};

// Appends each device's utilization of this refresh to the view's history.
void record_history(TopView& view, const model::GpuListView& gpus);
std::string render_top_frame(const model::GpuListView& gpus, const std::string& server,
                             const TopView& view);

}  // namespace trainyard::cli
