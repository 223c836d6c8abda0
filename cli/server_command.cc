// `trainyard server`: the control plane (see server/server_main.h and docs/server.md).
#include "cli/commands.h"
#include "server/server_main.h"

namespace trainyard::cli {

Runner add_server_command(CLI::App& app, const std::string& self_path) {
  auto opts = std::make_shared<server::ServerOptions>();
  opts->wrapper_path = self_path;
  CLI::App* cmd = app.add_subcommand(
      "server", "Run the control plane: HTTP API, durable state, scheduler and local executor");
  cmd->add_option("--listen", opts->listen,
                  "HOST:PORT to serve the API on; a non-loopback host requires tokens "
                  "(port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--state", opts->state,
                  "SQLite state file (default: /var/lib/trainyard/state.db as root, else "
                  "$XDG_DATA_HOME/trainyard/state.db or ~/.local/share/trainyard/state.db); job "
                  "logs and checkpoints live beside it");
  cmd->add_option("--gpus", opts->gpus,
                  "GPUs to use: auto (NVML if a driver is present), nvml, none, or simulated "
                  "ones such as sim:4xH100-80GB")
      ->capture_default_str();
  cmd->add_option("--config", opts->config,
                  "YAML config: policy, teams and quotas, retry backoff, notice signal "
                  "(docs/server.md)");
  cmd->add_option("--provider", opts->provider,
                  "Where nodes come from: static (this machine's GPUs) or simcloud (also the "
                  "config's capacity.pools, bought from the simulated cloud); overrides "
                  "capacity.provider");
  cmd->add_flag("--require-auth", opts->require_auth,
                "Require a token even on loopback (always required on other addresses)");
  cmd->add_flag("--check", opts->check,
                "Check this machine, config and state directory for security problems (can jobs "
                "be isolated, file modes, how the API is exposed), print each finding with its "
                "fix, and exit: 1 when one is high-severity, else 0. Starts nothing");
  return [opts] { return server::run_server(*opts); };
}

}  // namespace trainyard::cli
