// `trainyard server`: wires the GPU sampler, the local executor, the control plane and the HTTP
// API together and runs until SIGINT/SIGTERM. Stopping the server leaves job workers running;
// the next start re-adopts them.
#pragma once

#include <string>

namespace trainyard::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:8765";
  std::string state;  // state.db path; empty = default_state_path()
  std::string gpus = "auto";
  std::string config;    // YAML; empty = defaults
  std::string provider;  // "static" or "simcloud": overrides the config's capacity.provider
  bool require_auth = false;
  bool check = false;        // --check: print the security findings and exit (server_check.h)
  std::string wrapper_path;  // the trainyard binary
};

// Returns the process exit code: 0 after a clean stop, 1 when it could not start, 2 on bad
// options or config. With options.check, run_server_check()'s.
int run_server(const ServerOptions& options);

// As root /var/lib/trainyard/state.db; otherwise $XDG_DATA_HOME/trainyard/state.db, else
// ~/.local/share/trainyard/state.db.
std::string default_state_path();

}  // namespace trainyard::server
