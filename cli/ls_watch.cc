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

#include "cli/api_calls.h"
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

// Jobs as read (typed) with the server's JSON of each, which -o json and -o yaml print.
struct Jobs {
  std::vector<model::JobView> views;
  json raw = json::array();
  void add(model::JobView view, json j) {
    views.push_back(std::move(view));
    raw.push_back(std::move(j));
  }
};

// What a change line is printed for: the state, the attempt, and a stop under way.
std::string fingerprint(const model::JobView& job) {
  return fmt::format("{}/{}/{}", model::job_state_name(job.state), job.attempt,
                     job.stopping.value_or(""));
}

// The jobs as ls prints them: the first list whole, then change rows laid out together with
// the first list (`first`), so that their columns line up under its header, as kubectl's do.
void print_jobs_in_watch(const Jobs& jobs, const std::string& output, const Jobs& first,
                         bool whole) {
  if (output == "json" || output == "yaml") {
    for (const auto& j : jobs.raw) std::cout << (output == "json" ? j.dump(2) + "\n" : to_yaml(j));
    return;
  }
  Jobs all = first;
  for (size_t i = 0; i < jobs.views.size(); ++i) all.add(jobs.views[i], jobs.raw[i]);
  std::ostringstream text;
  std::streambuf* const saved = std::cout.rdbuf(text.rdbuf());
  print_job_list(all.views, all.raw, output);
  std::cout.rdbuf(saved);
  std::string s = text.str();
  const size_t shown = first.views.size();
  size_t skip = whole ? 0 : output == "name" ? shown : shown + 1;  // + header
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

util::Result<Jobs> list(ApiClient& api, const std::string& query) {
  TY_ASSIGN_OR_RETURN(auto r, get_reply<model::JobListView>(api, query));
  Jobs out;
  for (size_t i = 0; i < r.view.items.size(); ++i)
    out.add(std::move(r.view.items[i]), std::move(r.raw["items"][i]));
  return out;
}

// The jobs of `now` that are new or changed since `seen`, and those that left the list, fetched
// again; `seen` is brought up to date.
util::Result<Jobs> changes(ApiClient& api, const Jobs& now, std::map<int64_t, std::string>& seen) {
  std::map<int64_t, std::pair<model::JobView, json>> changed;
  std::set<int64_t> listed;
  for (size_t i = 0; i < now.views.size(); ++i) {
    const model::JobView& j = now.views[i];
    listed.insert(j.id);
    if (std::string f = fingerprint(j); seen[j.id] != f) {
      seen[j.id] = f;
      changed[j.id] = {j, now.raw[i]};
    }
  }
  for (auto it = seen.begin(); it != seen.end();) {
    if (listed.contains(it->first)) {
      ++it;
      continue;
    }
    auto j = get_reply<model::JobView>(api, fmt::format("/api/v1/jobs/{}", it->first));
    if (j.is_ok() && fingerprint(j->view) != it->second)
      changed[it->first] = {std::move(j->view), std::move(j->raw)};
    it = seen.erase(it);
  }
  Jobs out;
  for (auto& [id, j] : changed) out.add(std::move(j.first), std::move(j.second));
  return out;
}

}  // namespace

int watch_jobs(ApiClient& api, const std::string& query, const std::string& output) {
  auto first = list(api, query);
  if (!first.is_ok()) return report("ls", first.status());
  std::map<int64_t, std::string> seen;
  for (const auto& j : first->views) seen[j.id] = fingerprint(j);
  print_jobs_in_watch(*first, output, Jobs{}, /*whole=*/true);
  catch_stop_signals();
  while (sleep_unless_stopped(kPollEvery)) {
    auto r = list(api, query);
    if (!r.is_ok()) return report("ls", r.status());
    auto changed = changes(api, *r, seen);
    if (!changed.is_ok()) return report("ls", changed.status());
    if (!changed->views.empty()) print_jobs_in_watch(*changed, output, *first, /*whole=*/false);
  }
  return kExitOk;
}

}  // namespace trainyard::cli
