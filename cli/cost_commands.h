// The `trainyard cost` family: the server's cost report (cost_report_command.cc) next to the
// catalog's right-sizing advice (`cost advise`, cost_command.cc).
#pragma once

#include <string>

#include "cli/client.h"
#include "cli/commands.h"

namespace trainyard::cli {

struct CostReportOptions {
  ClientOptions client;
  std::string team, since, until;
  std::string output = "table";
};

void add_cost_report_options(CLI::App& cost, CostReportOptions& options);
int run_cost_report(const CostReportOptions& options);

}  // namespace trainyard::cli
