#include "server/server_main.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "exec/executor.h"
#include "server/control_plane.h"
#include "server/http_api.h"
#include "server/server_check.h"
#include "server/state_dir.h"
#include "telemetry/gpu_sampler.h"
#include "util/log.h"

namespace trainyard::server {
namespace {

bool parse_listen(const std::string& text, HttpOptions& out) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  out.host = text.substr(0, colon);
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  try {
    size_t used = 0;
    const int port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || port < 0 || port > 65535) return false;
    out.port = port;
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

std::string describe_gpus(const ControlPlane& plane) {
  std::string out;
  for (const auto& n : plane.local_nodes()) {
    if (n.node.gpu_count == 0) continue;
    out += fmt::format("{}{} x {}{}", out.empty() ? "" : ", ", n.node.gpu_count, n.node.gpu_model,
                       n.simulated ? " (simulated)" : "");
  }
  return out.empty() ? "no GPUs" : out;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::string tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
  }
  ::chmod(tmp.c_str(), 0644);  // the URL is no secret; the umask would hide it from users
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
}

// Whether workers can be given users of their own here; says so loudly when they cannot, and
// refuses to start when this root cannot do what isolation needs. False: do not start.
bool check_worker_isolation(const ServerConfig& config, const std::filesystem::path& state_dir) {
  if (!exec::can_switch_users()) {
    const uid_t uid = ::geteuid();
    std::fprintf(stderr,
                 "trainyard server: WARNING: running as uid %u, not root, so jobs run as this "
                 "same user: a job can read the state directory (admin.token, state.db), every "
                 "team's logs and checkpoints, and signal other jobs' processes. Run the server "
                 "as root to run each team's workers as a user of its own; `trainyard server "
                 "--check` lists every finding and its fix.\n",
                 uid);
    std::fflush(stderr);
    return true;
  }
  if (auto st = try_worker_identity(sample_worker_identity(config.workers), state_dir / kJobsDir);
      !st.is_ok()) {
    std::fprintf(stderr, "trainyard server: cannot isolate workers: %s\n", st.message().c_str());
    return false;
  }
  return true;
}

// The Slurm executor, with this state dir's instance name (made once, kept in slurm-instance):
// it tags this server's Slurm jobs so that a restart finds them and no other server's.
util::Result<std::unique_ptr<exec::SlurmExecutor>> open_slurm_executor(
    const ServerConfig& config, const std::filesystem::path& state_dir,
    const std::string& wrapper_path) {
  exec::SlurmOptions so = config.executor.slurm;
  so.wrapper_path = wrapper_path;
  so.sample_interval = config.telemetry.interval;
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  const auto path = state_dir / "slurm-instance";
  std::ifstream in(path);
  std::getline(in, so.instance);
  if (so.instance.empty()) {
    std::random_device rd;
    so.instance = fmt::format("{:08x}", rd());
    TY_RETURN_IF_ERROR(write_private_file(path, so.instance + "\n"));
  }
  TY_ASSIGN_OR_RETURN(auto ex, exec::SlurmExecutor::open(so));
  // The first picture before recovery, so stored placements find their nodes; a Slurm that is
  // down now is asked again every poll interval, and recovery adopts what the store names.
  if (auto st = ex->refresh_now(); !st.is_ok())
    std::fprintf(stderr,
                 "trainyard server: Slurm is not answering (%s); starting anyway, nothing new "
                 "starts until it answers\n",
                 st.message().c_str());
  return ex;
}

std::string describe_workers(const ServerConfig& config) {
  if (!exec::can_switch_users())
    return fmt::format("as this server's user, uid {} (not isolated; see the warning)",
                       ::geteuid());
  const WorkersConfig& w = config.workers;
  std::string text =
      w.user ? fmt::format("as {} (uid {}) for every team", w.user->user, w.user->uid)
             : fmt::format("each team as a user of its own (uids {}-{})", w.uid_first, w.uid_last);
  if (!w.run_as.empty())
    text += fmt::format(", {} team(s) as configured in runAs", w.run_as.size());
  return text;
}

// --listen, --config and --provider into `http` and `config`; says what is wrong and returns
// false when one of them is.
bool read_server_options(const ServerOptions& options, HttpOptions& http, ServerConfig& config) {
  if (!parse_listen(options.listen, http)) {
    std::fprintf(stderr,
                 "trainyard server: --listen must be HOST:PORT like 127.0.0.1:8765, got '%s'\n",
                 options.listen.c_str());
    return false;
  }
  http.require_auth = options.require_auth;
  if (!options.config.empty()) {
    auto loaded = load_server_config(options.config);
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "trainyard server: %s\n", loaded.status().message().c_str());
      return false;
    }
    config = std::move(*loaded);
  }
  if (!options.provider.empty()) {
    auto provider = parse_capacity_provider(options.provider);
    if (!provider.is_ok()) {
      std::fprintf(stderr, "trainyard server: --provider: %s\n",
                   provider.status().message().c_str());
      return false;
    }
    config.capacity.provider = *provider;
  }
  http.max_request_bytes = config.max_request_bytes;
  return true;
}

// The executor the control plane starts workers with: one of the two is set.
struct Executors {
  exec::ExecutorPtr local;
  std::unique_ptr<exec::SlurmExecutor> slurm;
};

// The config's executor; on Slurm, `cp_options` learns of it and of its shared directory.
// Says why and returns false when it cannot be opened.
bool open_executor(const ServerOptions& options, const ServerConfig& config,
                   ControlPlaneOptions& cp_options, Executors& out) {
  if (config.executor.kind != ExecutorKind::Slurm) {
    out.local = exec::make_local_executor({.wrapper_path = options.wrapper_path});
    return true;
  }
  auto opened = open_slurm_executor(config, cp_options.state_dir, options.wrapper_path);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "trainyard server: %s\n", opened.status().message().c_str());
    return false;
  }
  out.slurm = std::move(*opened);
  cp_options.slurm = out.slurm.get();
  cp_options.work_dir = config.executor.slurm.shared_dir;
  return true;
}

// Signals are taken by one thread with sigwait; every other thread blocks them. Returns the
// set that thread waits for (SIGINT, SIGTERM).
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return signals;
}

std::string server_url(const HttpOptions& http, int port) {
  const bool ipv6 = http.host.find(':') != std::string::npos;
  return ipv6 ? fmt::format("http://[{}]:{}", http.host, port)
              : fmt::format("http://{}:{}", http.host, port);
}

void print_slurm_executor(const exec::SlurmExecutor& slurm) {
  const auto& so = slurm.options();
  std::printf("executor: slurm, partition %s, shared dir %s, instance %s\n",
              so.partition.empty() ? "(Slurm's default)" : so.partition.c_str(),
              so.shared_dir.c_str(), so.instance.c_str());
}

void print_simcloud_pools(const ControlPlane& plane, const ServerConfig& config) {
  const auto pools = plane.nodes()["pools"];
  std::printf("capacity: simcloud (seed %llu), %zu pool(s)\n",
              static_cast<unsigned long long>(config.capacity.seed), pools.size());
  for (const auto& p : pools)
    std::printf("  %s: %s %s %s (%d x %s, $%.4f/node-hour), %d..%d nodes\n",
                p["name"].get<std::string>().c_str(), p["kind"].get<std::string>().c_str(),
                p["provider"].get<std::string>().c_str(),
                p["instanceType"].get<std::string>().c_str(), p["gpusPerNode"].get<int>(),
                p["gpuModel"].get<std::string>().c_str(), p["pricePerNodeHour"].get<double>(),
                p["minNodes"].get<int>(), p["maxNodes"].get<int>());
}

// Runs the reconcile loop and answers requests until SIGINT or SIGTERM (or a failed socket).
void serve_until_stopped(ControlPlane& cp, HttpApi& api, sigset_t& signals) {
  std::thread loop([&] { cp.run_loop(); });
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::printf("trainyard server: %s received, stopping (jobs keep running)\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM");
    std::fflush(stdout);
    cp.stop();
    api.stop();
  });
  api.serve();
  cp.stop();
  loop.join();
  // serve() also returns when the socket fails; wake the signal thread so it can end.
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
}

}  // namespace

std::string default_state_path() {
  // A root server runs workers as users of their own, who must pass through to their run
  // directories beside the state file: root's home (0700) would not let them, /var/lib does.
  if (::geteuid() == 0) return "/var/lib/trainyard/state.db";
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/trainyard/state.db";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.local/share/trainyard/state.db";
}

int run_server(const ServerOptions& options) {
  if (options.check) return run_server_check(options);
  // Everything the server creates is its own unless it says otherwise (run dirs, the URL file).
  ::umask(077);
  HttpOptions http;
  ServerConfig config;
  if (!read_server_options(options, http, config)) return 2;
  auto sampler = telemetry::make_gpu_sampler(options.gpus);
  if (!sampler.is_ok()) {
    std::fprintf(stderr, "trainyard server: --gpus: %s\n", sampler.status().message().c_str());
    return 2;
  }
  const std::filesystem::path db = options.state.empty() ? default_state_path() : options.state;
  util::WallClock clock;
  ControlPlaneOptions cp_options{.state_dir = db.parent_path().empty() ? "." : db.parent_path(),
                                 .db_path = db,
                                 .config = config};
  Executors executors;
  if (!open_executor(options, config, cp_options, executors)) return 1;
  const std::unique_ptr<exec::SlurmExecutor>& slurm = executors.slurm;
  // On Slurm the GPUs are the nodes': their wrappers' readings, through the shared directory.
  BatchGpuSampler batch_gpus(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max<util::Duration>(config.telemetry.interval * 5, std::chrono::seconds(5))));
  if (slurm) cp_options.batch_sampler = &batch_gpus;
  auto plane = slurm ? ControlPlane::open(cp_options, std::vector<LocalNode>{}, *slurm, clock)
                     : ControlPlane::open(cp_options, **sampler, *executors.local, clock);
  if (plane.is_ok() && slurm) (*plane)->record_telemetry_from(batch_gpus);
  if (!plane.is_ok()) {
    std::fprintf(stderr, "trainyard server: %s\n", plane.status().message().c_str());
    return 1;
  }
  // After open(), which gives the state dir the modes workers need to pass through it.
  if (!check_worker_isolation(config, cp_options.state_dir)) return 1;
  const auto token_path = cp_options.state_dir / "admin.token";
  if (auto st = (*plane)->ensure_admin_token(token_path); !st.is_ok()) {
    std::fprintf(stderr, "trainyard server: %s\n", st.message().c_str());
    return 1;
  }
  HttpApi api(**plane, http);
  if (auto st = api.bind(); !st.is_ok()) {
    std::fprintf(stderr, "trainyard server: %s\n", st.message().c_str());
    return 1;
  }
  sigset_t signals = block_stop_signals();
  const std::string url = server_url(http, api.bound_port());
  write_file_atomically(cp_options.state_dir / "server.addr", url + "\n");
  std::printf(
      "trainyard server listening on %s\nstate: %s\nGPUs: %s\npolicy: %s\nadmin token: "
      "%s\nworkers: %s\n",
      url.c_str(), db.c_str(), describe_gpus(**plane).c_str(), config.policy.name.c_str(),
      token_path.c_str(), describe_workers(config).c_str());
  if (slurm) print_slurm_executor(*slurm);
  if (config.capacity.provider == CapacityProvider::SimCloud) print_simcloud_pools(**plane, config);
  std::fflush(stdout);
  serve_until_stopped(**plane, api, signals);
  return 0;
}

}  // namespace trainyard::server
