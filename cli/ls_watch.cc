// `trainyard ls --watch`, as `kubectl get -w`: the list once, then one line per job whose state
// changed (or that appeared), polling the API every 1.5 s until Ctrl-C. With filters, a job that
// leaves the list (a --state running job that ends) is fetched once more so its end is shown.
#include <csignal>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/job_lookup.h"
#include "cli/list_output.h"
#include "cli/output.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

constexpr auto kPollEvery = std::chrono::milliseconds(1500);
volatile std::sig_atomic_t g_stop = 0;

void on_stop_signal(int) {
  g_stop = 1;
}

// Ctrl-C and SIGTERM end the watch between polls, not in the middle of a line.
void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// What a change line is printed for: the state, the attempt, and a stop under way.
std::string fingerprint(const json& job) {
  return fmt::format("{}/{}/{}", cell(job["state"]), cell(job["attempt"]),
                     job.contains("stopping") ? cell(job["stopping"]) : "");
}

// The jobs as ls prints them: the first list whole, then change rows laid out together with
// the first list (`first`), so that their columns line up under its header, as kubectl's do.
void print_jobs_in_watch(const json& jobs, const std::string& output, const json& first,
                         bool whole) {
  if (output == "json" || output == "yaml") {
    for (const auto& j : jobs) std::cout << (output == "json" ? j.dump(2) + "\n" : to_yaml(j));
    return;
  }
  json all = first;
  for (const auto& j : jobs) all.push_back(j);
  std::ostringstream text;
  std::streambuf* const saved = std::cout.rdbuf(text.rdbuf());
  print_job_list(all, output);
  std::cout.rdbuf(saved);
  std::string s = text.str();
  size_t skip = whole ? 0 : output == "name" ? first.size() : first.size() + 1;  // + header
  size_t pos = 0;
  while (skip-- > 0 && pos != std::string::npos) pos = s.find('\n', pos) + 1;
  std::cout << s.substr(pos) << std::flush;
}

bool sleep_unless_stopped(std::chrono::milliseconds total) {
  for (auto slept = std::chrono::milliseconds(0); slept < total && !g_stop;
       slept += std::chrono::milliseconds(100))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return !g_stop;
}

// The jobs of `now` that are new or changed since `seen`, and those that left the list, fetched
// again; `seen` is brought up to date.
util::Result<json> changes(ApiClient& api, const json& now, std::map<int64_t, std::string>& seen) {
  std::map<int64_t, json> changed;
  std::set<int64_t> listed;
  for (const auto& j : now) {
    const int64_t id = j["id"].get<int64_t>();
    listed.insert(id);
    if (std::string f = fingerprint(j); seen[id] != f) {
      seen[id] = f;
      changed[id] = j;
    }
  }
  for (auto it = seen.begin(); it != seen.end();) {
    if (listed.contains(it->first)) {
      ++it;
      continue;
    }
    auto j = api.get(fmt::format("/api/v1/jobs/{}", it->first));
    if (j.is_ok() && fingerprint(*j) != it->second) changed[it->first] = std::move(*j);
    it = seen.erase(it);
  }
  json out = json::array();
  for (auto& [id, j] : changed) out.push_back(std::move(j));
  return out;
}

}  // namespace

int watch_jobs(ApiClient& api, const std::string& query, const std::string& output) {
  auto first = api.get(query);
  if (!first.is_ok()) return report("ls", first.status());
  std::map<int64_t, std::string> seen;
  for (const auto& j : (*first)["items"]) seen[j["id"].get<int64_t>()] = fingerprint(j);
  print_jobs_in_watch((*first)["items"], output, json::array(), /*whole=*/true);
  catch_stop_signals();
  while (sleep_unless_stopped(kPollEvery)) {
    auto r = api.get(query);
    if (!r.is_ok()) return report("ls", r.status());
    auto changed = changes(api, (*r)["items"], seen);
    if (!changed.is_ok()) return report("ls", changed.status());
    if (!changed->empty())
      print_jobs_in_watch(*changed, output, (*first)["items"], /*whole=*/false);
  }
  return kExitOk;
}

}  // namespace trainyard::cli
