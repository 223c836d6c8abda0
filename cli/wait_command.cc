// `trainyard wait JOB... --for state=succeeded --timeout 10m`, as `kubectl wait`: polls each job
// until it is in the state asked for. Exit 0 when all are, 1 when one ends in another terminal
// state (it never will be), kExitTimedOut when the time runs out first (commands.h).
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/job_lookup.h"
#include "cli/output.h"
#include "model/job_state.h"
#include "util/clock.h"
#include "util/time_text.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

constexpr auto kPollEvery = std::chrono::seconds(1);

struct WaitOptions {
  ClientOptions client;
  std::vector<std::string> jobs;
  std::string condition = "state=succeeded", timeout = "30s";
};

// "state=running" -> the state; InvalidArgument naming the forms that work.
util::Result<model::JobState> wanted_state(const std::string& condition) {
  if (!condition.starts_with("state="))
    return util::invalid_argument(fmt::format(
        "--for must be state=STATE (e.g. state=succeeded, state=running), got '{}'", condition));
  auto st = model::parse_job_state(condition.substr(6));
  if (!st.is_ok()) return st.status().with_context("--for");
  return *st;
}

// True when `job` is in `want`, or ended after having been in it (state=running for a job that
// ran and already succeeded): the events say which states it went through.
util::Result<bool> reached(ApiClient& api, const model::JobView& job, model::JobState want) {
  if (job.state == want) return true;
  if (!model::is_terminal(job.state) || model::is_terminal(want)) return false;
  TY_ASSIGN_OR_RETURN(auto events, get_view<model::JobEventListView>(
                                       api, fmt::format("/api/v1/jobs/{}/events", job.id)));
  for (const auto& e : events.items)
    if (e.to == model::job_state_name(want)) return true;
  return false;
}

struct Pending {
  int64_t id;
  std::string ref;
};

// One round over the jobs still waited for; removes the ones done. Returns a final exit code,
// or -1 to go on.
int poll_once(ApiClient& api, std::vector<Pending>& pending, model::JobState want) {
  for (auto it = pending.begin(); it != pending.end();) {
    auto job = get_view<model::JobView>(api, fmt::format("/api/v1/jobs/{}", it->id));
    if (!job.is_ok()) return report("wait", job.status());
    auto ok = reached(api, *job, want);
    if (!ok.is_ok()) return report("wait", ok.status());
    const std::string state(model::job_state_name(job->state));
    const std::string who = fmt::format("job {} ({})", it->id, job->name);
    if (*ok) {
      std::cout << fmt::format("{} {}: condition met\n", who, model::job_state_name(want))
                << std::flush;
      it = pending.erase(it);
      continue;
    }
    if (model::is_terminal(job->state)) {
      std::fprintf(stderr, "trainyard wait: %s ended %s (%s), so it will never be %s\n",
                   who.c_str(), state.c_str(), job->reason.c_str(),
                   std::string(model::job_state_name(want)).c_str());
      return kExitFailure;
    }
    ++it;
  }
  return pending.empty() ? kExitOk : -1;
}

int run_wait(const WaitOptions& o) {
  auto want = wanted_state(o.condition);
  if (!want.is_ok()) return report("wait", want.status());
  std::optional<util::Duration> limit;
  if (o.timeout != "0") {
    auto d = util::parse_duration(o.timeout);
    if (!d.is_ok()) return report("wait", d.status().with_context("--timeout"));
    limit = *d;
  }
  ApiClient api(o.client);
  std::vector<Pending> pending;
  for (const auto& ref : o.jobs) {
    auto id = resolve_job(api, ref);
    if (!id.is_ok()) return report("wait", id.status());
    pending.push_back({*id, ref});
  }
  const util::Duration start = util::WallClock::steady_now();
  for (;;) {
    if (const int rc = poll_once(api, pending, *want); rc >= 0) return rc;
    if (limit && util::WallClock::steady_now() - start >= *limit) break;
    std::this_thread::sleep_for(kPollEvery);
  }
  std::string left;
  for (const auto& p : pending) left += (left.empty() ? "" : ", ") + std::to_string(p.id);
  std::fprintf(stderr, "trainyard wait: timed out after %s waiting for %s: job(s) %s\n",
               o.timeout.c_str(), o.condition.c_str(), left.c_str());
  return kExitTimedOut;
}

}  // namespace

Runner add_wait_command(CLI::App& app) {
  auto o = std::make_shared<WaitOptions>();
  CLI::App* cmd = app.add_subcommand(
      "wait", "Wait until jobs reach a state: wait JOB... --for state=succeeded --timeout 10m");
  cmd->add_option("jobs", o->jobs, "Job ids or names (or job/ID as ls -o name prints)")->required();
  cmd->add_option("--for", o->condition,
                  "state=STATE: pending, admitted, placed, running, preempting, succeeded, "
                  "failed or cancelled")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout,
                  "Give up after this long, e.g. 90s, 10m, 1h30m (0: never); exit 6 then")
      ->capture_default_str();
  add_client_options(*cmd, o->client);
  return [o] { return run_wait(*o); };
}

}  // namespace trainyard::cli
