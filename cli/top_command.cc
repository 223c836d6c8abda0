// `trainyard top`: a live view of the server's GPUs in the style of nvitop (cli/top_frame.h):
// devices with bars and a utilization history, the processes on them, and their jobs. Refreshes
// in place on a terminal, where `s` cycles the sort key and `q` quits; --once prints one frame
// without escapes and -o json the raw data, for scripts.
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/top_frame.h"

namespace trainyard::cli {
namespace {

constexpr const char* kGpusPath = "/api/v1/gpus";

// The terminal's settings before raw mode; restored at exit and on SIGINT/SIGTERM.
struct termios g_saved_termios {};
volatile sig_atomic_t g_raw = 0;

void restore_terminal() {
  if (g_raw != 0) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_termios);
  g_raw = 0;
}

void on_signal(int sig) {
  restore_terminal();  // tcsetattr is async-signal-safe
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Keys without Enter and without echo; Ctrl-C still interrupts. Restored by the destructor.
class RawKeys {
 public:
  RawKeys() {
    if (::tcgetattr(STDIN_FILENO, &g_saved_termios) != 0) return;
    struct termios raw = g_saved_termios;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (::tcsetattr(STDIN_FILENO, TCSANOW, &raw) != 0) return;
    g_raw = 1;
    ::signal(SIGINT, on_signal);
    ::signal(SIGTERM, on_signal);
  }
  ~RawKeys() { restore_terminal(); }
  RawKeys(const RawKeys&) = delete;
  RawKeys& operator=(const RawKeys&) = delete;
};

// Waits up to `seconds` for a key; 0 when none came.
char wait_key(double seconds) {
  struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
  if (::poll(&p, 1, static_cast<int>(seconds * 1000)) <= 0) return 0;
  char c = 0;
  return ::read(STDIN_FILENO, &c, 1) == 1 ? c : 0;
}

struct Opts {
  ClientOptions client;
  double interval = 2;
  bool once = false, ascii = false;
  std::string output, sort = "index";
  int history = 30;
};

// Refreshes until `q` (interactive) or forever; each frame replaces the last on a terminal.
int live(ApiClient& api, const Opts& o, TopView& view, util::Result<model::GpuListView> data) {
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  view.interactive = tty && ::isatty(STDIN_FILENO) == 1;
  std::optional<RawKeys> keys;
  if (view.interactive) keys.emplace();
  for (;;) {
    const std::string frame = data.is_ok() ? render_top_frame(*data, api.server(), view)
                                           : fmt::format("trainyard top: {}\nretrying every {}s\n",
                                                         data.status().message(), o.interval);
    std::cout << (tty ? "\x1b[H\x1b[2J" : "") << frame << (tty ? "" : "\n") << std::flush;
    if (!view.interactive) {
      std::this_thread::sleep_for(std::chrono::duration<double>(o.interval));
    } else {
      const char key = wait_key(o.interval);
      if (key == 'q' || key == 'Q') return kExitOk;
      if (key == 's' || key == 'S') {
        view.sort = next_top_sort(view.sort);
        continue;  // redraw now with the same data
      }
    }
    data = get_view<model::GpuListView>(api, kGpusPath);
    if (data.is_ok()) record_history(view, *data);
  }
}

}  // namespace

Runner add_top_command(CLI::App& app) {
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "top",
      "Live view of the GPUs: utilization (with its recent history), memory, temperature, power, "
      "the processes on them and their jobs");
  cmd->add_option("--interval", o->interval, "Seconds between refreshes")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_flag("--once", o->once, "Print one frame and exit (no terminal escapes, no keys)");
  cmd->add_option("-o,--output", o->output, "json: print the raw data once");
  cmd->add_option("--sort", o->sort,
                  "Order of the devices: index, util, memory, power, temp or job (the s key "
                  "cycles through them)")
      ->capture_default_str();
  cmd->add_option("--history", o->history, "Refreshes of utilization history drawn per device")
      ->check(CLI::Range(1, 200))
      ->capture_default_str();
  cmd->add_flag("--ascii", o->ascii,
                "Draw the history in plain ASCII (the default where the locale is not UTF-8)");
  add_client_options(*cmd, o->client);
  return [o] {
    if (!o->output.empty() && o->output != "json")
      return report("top", util::invalid_argument("-o must be json"));
    const auto sort = parse_top_sort(o->sort);
    if (!sort)
      return report("top",
                    util::invalid_argument(fmt::format(
                        "--sort '{}': use index, util, memory, power, temp or job", o->sort)));
    ApiClient api(o->client);
    auto first = get_reply<model::GpuListView>(api, kGpusPath);
    if (!first.is_ok()) return report("top", first.status());
    if (o->output == "json") {
      std::cout << first->raw.dump(2) << "\n";
      return kExitOk;
    }
    TopView view{.sort = *sort,
                 .history = static_cast<size_t>(o->history),
                 .ascii = o->ascii || !utf8_terminal()};
    record_history(view, first->view);
    if (o->once) {
      std::cout << render_top_frame(first->view, api.server(), view) << std::flush;
      return kExitOk;
    }
    return live(api, *o, view, std::move(first->view));
  };
}

}  // namespace trainyard::cli
