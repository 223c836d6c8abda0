// `trainyard cancel -l SELECTOR` and `cancel --all` (cancel_selection.h). The jobs are listed
// with the selector on the server, page by page, and cancelled one by one.
#include <unistd.h>

#include <iostream>
#include <string>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/cancel_selection.h"
#include "cli/job_lookup.h"
#include "cli/output.h"
#include "cli/selectors.h"
#include "model/job_state.h"

namespace trainyard::cli {
namespace {

int cancel_one(ApiClient& api, int64_t id, const std::string& name) {
  auto r = delete_view<model::JobView>(api, fmt::format("/api/v1/jobs/{}", id));
  if (!r.is_ok()) return report("cancel", r.status());
  const bool stopping = r->stopping.has_value();
  std::cout << fmt::format(
      "job {}{} {}\n", id, name.empty() ? "" : " (" + name + ")",
      stopping ? "cancelling (notice sent; stops within its grace period)" : "cancelled");
  return kExitOk;
}

// --all: "yes" typed on a terminal, or --yes; never a silent yes from a pipe.
bool confirmed(const std::vector<model::JobView>& targets, bool yes) {
  if (yes) return true;
  if (::isatty(STDIN_FILENO) == 0) {
    std::fprintf(stderr,
                 "trainyard cancel: --all would cancel %zu job(s); stdin is not a terminal, so "
                 "nothing was cancelled (add --yes to cancel them without asking)\n",
                 targets.size());
    return false;
  }
  for (const auto& j : targets)
    std::cerr << fmt::format("  job {} ({}, team {}, {})\n", j.id, j.name, j.team,
                             model::job_state_name(j.state));
  std::cerr << fmt::format("Cancel these {} job(s)? [y/N] ", targets.size()) << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  if (answer == "y" || answer == "Y" || answer == "yes") return true;
  std::cerr << "nothing cancelled\n";
  return false;
}

int cancel_matching(ApiClient& api, const CancelSelection& o) {
  auto query = selector_query(o.selector);
  if (!query.is_ok()) return report("cancel", query.status());
  auto jobs = list_all_jobs(api, *query);
  if (!jobs.is_ok()) return report("cancel", jobs.status());
  std::vector<model::JobView> targets;
  for (const auto& j : *jobs) {
    if (!model::is_terminal(j.state)) targets.push_back(j);
  }
  if (targets.empty()) {
    std::cerr << (o.all ? "no unfinished jobs to cancel\n"
                        : fmt::format("no unfinished jobs match -l {}\n", o.selector));
    return kExitOk;
  }
  if (o.all && !confirmed(targets, o.yes)) return kExitBadInput;
  int rc = kExitOk;
  for (const auto& j : targets) {
    const int one = cancel_one(api, j.id, j.name);
    if (one != kExitOk) rc = one;
    if (one == kExitUnreachable) break;
  }
  return rc;
}

}  // namespace

void add_cancel_selection_options(CLI::App& cmd, CancelSelection& s) {
  cmd.add_option("-l,--selector", s.selector,
                 "Cancel every unfinished job whose labels match, e.g. -l sweep=lr-3");
  cmd.add_flag("--all", s.all,
               "Cancel every unfinished job your token may see (asks first; needs --yes when "
               "stdin is not a terminal)");
  cmd.add_flag("-y,--yes", s.yes, "Do not ask before cancelling with --all");
}

int cancel_selected(const ClientOptions& client, const CancelSelection& s, bool jobs_named) {
  if (s.selector.empty() && !s.all) {
    if (jobs_named) return -1;
    return report("cancel", util::invalid_argument(
                                "name the jobs to cancel (ids or names), or give -l SELECTOR or "
                                "--all"));
  }
  if (jobs_named || (s.all && !s.selector.empty()))
    return report("cancel", util::invalid_argument(
                                "give job names, -l SELECTOR or --all: one of them, not several"));
  ApiClient api(client);
  return cancel_matching(api, s);
}

}  // namespace trainyard::cli
