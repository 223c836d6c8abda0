// The control plane end to end, in-process, with an executor that starts nothing:
//   1. durable submissions acknowledged per second (HTTP, 8 clients vs 1; direct calls);
//   2. list/show/events latency over HTTP with 100,000 jobs in the store;
//   3. reconcile_once() with 10,000 pending jobs on 1,000 simulated 8-GPU nodes, next to
//      sched::plan() alone on the same jobs and nodes;
//   4. decisions per second: a steady stream of submissions against 1,000 nodes whose jobs
//      finish after a second or two, with the reconcile loop running: cycle p50/p99 and starts
//      per second, per policy (peers publish the same kind of figure).
// Targets (docs/performance.md): >= 2,000 submissions/s; p99 < 50 ms for a page of 100 jobs.
// The state lives under $TMPDIR: point it at the server's disk, since every commit is fsynced.
//   build/bench/server_bench [--quick] [--only=submit|query|reconcile|stream]
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "bench/server_bench_util.h"
#include "util/thread_annotations.h"

namespace trainyard::bench {
namespace {

using util::WallClock;

struct Sizes {
  int submissions = 4000;  // per repetition
  int repetitions = 3;
  int stored_jobs = 100000;
  int requests = 300;  // per query kind
  int nodes = 1000;
  int pending = 10000;
  int cycles = 6;
};

const server::Principal kAdmin{.admin = true, .team = "", .name = "bench"};

// ---- 1. submissions ----------------------------------------------------------------------------

constexpr const char* kSmallJob =
    R"({"apiVersion":"trainyard.dev/v1","kind":"Job","metadata":{"name":"b"},)"
    R"("spec":{"template":{"command":["true"],"resources":{"limits":{"nvidia.com/gpu":1}}}}})";

struct SubmitCase {
  const char* label;
  bool http;
  int clients;
  bool loop;  // reconcile loop running (jobs queue on one 8-GPU node)
};

struct SubmitRun {
  double seconds = 0;
  std::vector<double> latency_ms;
};

// One client's share: `count` submissions, each checked (201 over HTTP, OK directly).
std::vector<double> submit_some(server::ControlPlane& plane, int port, int count,
                                std::atomic<int>& failures) {
  std::vector<double> lat;
  std::optional<httplib::Client> cli;
  if (port > 0) {
    cli.emplace("127.0.0.1", port);
    cli->set_keep_alive(true);
    cli->set_tcp_nodelay(true);  // else Nagle holds the body back until the headers are ACKed
  }
  for (int i = 0; i < count; ++i) {
    const util::Duration t0 = WallClock::steady_now();
    bool ok = false;
    if (cli) {
      auto res = cli->Post("/api/v1/jobs", kSmallJob, "application/json");
      ok = res && res->status == 201;
    } else {
      ok = plane.submit(kSmallJob, "bench", kAdmin).is_ok();
    }
    lat.push_back(elapsed_ms(t0));
    if (!ok) failures.fetch_add(1);
  }
  return lat;
}

SubmitRun run_submissions(const SubmitCase& c, int total) {
  TempDir dir;
  FakeExecutor executor;
  WallClock clock;
  auto plane = open_plane(dir.path(), server::ControlPlane::nodes_from_devices(sim_devices(8)),
                          executor, clock);
  std::optional<ServedApi> api;
  if (c.http) api.emplace(*plane);
  std::thread loop;
  if (c.loop) loop = std::thread([&] { plane->run_loop(); });

  std::atomic<int> failures{0};
  std::vector<std::vector<double>> lat(c.clients);
  std::vector<std::thread> clients;
  const util::Duration t0 = WallClock::steady_now();
  for (int client = 0; client < c.clients; ++client) {
    const int count = total / c.clients + (client < total % c.clients ? 1 : 0);
    clients.emplace_back([&, client, count] {
      lat[client] = submit_some(*plane, api ? api->port() : 0, count, failures);
    });
  }
  for (auto& t : clients) t.join();
  SubmitRun run{.seconds = elapsed_ms(t0) / 1e3};
  if (c.loop) {
    plane->stop();
    loop.join();
  }
  if (failures > 0) must(util::internal_error(fmt::format("{} failed", failures.load())), c.label);
  // Every acknowledged job is in the store: the newest id is the count.
  auto newest = must(plane->list_jobs({.limit = 1}, kAdmin), "listing");
  if (newest["items"][0]["id"].get<int>() != total)
    must(util::internal_error("the store does not hold every acknowledged job"), c.label);
  for (auto& l : lat) run.latency_ms.insert(run.latency_ms.end(), l.begin(), l.end());
  return run;
}

void bench_submissions(const Sizes& z) {
  const SubmitCase cases[] = {
      {"HTTP, 1 client (baseline)", true, 1, false},
      {"HTTP, 8 clients", true, 8, false},
      {"HTTP, 8 clients, reconcile loop running", true, 8, true},
      {"direct submit(), 1 thread", false, 1, false},
      {"direct submit(), 8 threads", false, 8, false},
  };
  fmt::print("\n## 1. Durable submissions (median of {} runs; loop off unless stated)\n\n",
             z.repetitions);
  fmt::print(
      "| case | jobs per run | submissions/s (min-max) | vs baseline | ack p50 ms | "
      "ack p99 ms |\n|---|---|---|---|---|---|\n");
  double baseline = 0;
  for (const SubmitCase& c : cases) {
    // One client is slow (a round trip and an fsync per job): a quarter of the jobs suffice.
    const int jobs = c.clients == 1 ? z.submissions / 4 : z.submissions;
    std::vector<double> rates, latency;
    for (int rep = 0; rep < z.repetitions; ++rep) {
      SubmitRun run = run_submissions(c, jobs);
      rates.push_back(jobs / run.seconds);
      latency.insert(latency.end(), run.latency_ms.begin(), run.latency_ms.end());
    }
    const double rate = median(rates);
    if (baseline == 0) baseline = rate;
    fmt::print("| {} | {} | {:.0f} ({:.0f}-{:.0f}) | {:.2f}x | {:.2f} | {:.2f} |\n", c.label, jobs,
               rate, percentile(rates, 1e-9), percentile(rates, 1.0), rate / baseline,
               median(latency), percentile(latency, 0.99));
    std::fflush(stdout);
  }
}

// ---- 2. queries over a large store -------------------------------------------------------------

// One kind of request: its URL and the same work as a direct ControlPlane call (JSON included).
struct QueryKind {
  std::string label;
  std::function<std::string(std::mt19937_64&)> path;
  std::function<std::string(std::mt19937_64&)> direct;  // the reply body; empty for none
  int expect_items;                                     // -1 = not a list
};

struct Latency {
  std::vector<double> http_ms, direct_ms;
  size_t bytes = 0;
};

Latency time_kind(const QueryKind& k, httplib::Client& cli, int requests) {
  Latency out;
  std::mt19937_64 rng(7);
  for (int i = -10; i < requests; ++i) {  // 10 warm-up requests
    const std::string path = k.path(rng);
    const util::Duration start = WallClock::steady_now();
    auto res = cli.Get(path);
    const double took = elapsed_ms(start);
    if (!res || res->status != 200)
      must(util::internal_error(fmt::format("{} -> {}", path, res ? res->status : -1)), k.label);
    if (k.expect_items >= 0 &&
        nlohmann::json::parse(res->body)["items"].size() != static_cast<size_t>(k.expect_items))
      must(util::internal_error(path + " returned a short page"), k.label);
    if (i < 0) continue;
    out.http_ms.push_back(took);
    out.bytes += res->body.size();
  }
  rng.seed(7);
  for (int i = -10; i < requests; ++i) {
    const util::Duration start = WallClock::steady_now();
    const std::string body = k.direct(rng);
    if (i >= 0) out.direct_ms.push_back(elapsed_ms(start));
  }
  return out;
}

void bench_queries(const Sizes& z) {
  TempDir dir;
  const int n = z.stored_jobs;
  util::Duration t0 = WallClock::steady_now();
  fill_store(dir.path() / "state.db", n);
  const double fill_s = elapsed_ms(t0) / 1e3;
  FakeExecutor executor;
  WallClock clock;
  t0 = WallClock::steady_now();
  auto plane = open_plane(dir.path(), sim_nodes(1, 8, "H100-80GB"), executor, clock);
  const double open_ms = elapsed_ms(t0);
  ServedApi api(*plane);

  auto any_id = [n](std::mt19937_64& rng) { return std::uniform_int_distribution<int>(1, n)(rng); };
  auto list = [&](store::JobFilter f) {
    return [&plane, f](auto&) { return must(plane->list_jobs(f, kAdmin), "ls").dump(); };
  };
  const std::vector<QueryKind> kinds = {
      {"GET /healthz (HTTP floor, baseline)", [](auto&) { return std::string("/healthz"); },
       [](auto&) { return std::string(); }, -1},
      {"ls: first page", [](auto&) { return std::string("/api/v1/jobs?limit=100"); },
       list({.limit = 100}), 100},
      {"ls: team filter", [](auto&) { return std::string("/api/v1/jobs?limit=100&team=team-07"); },
       list({.team = "team-07", .limit = 100}), 100},
      {"ls: page from the middle",
       [n](auto&) { return fmt::format("/api/v1/jobs?limit=100&before={}", n / 2); },
       list({.before = n / 2, .limit = 100}), 100},
      {"show: random job", [&](auto& rng) { return fmt::format("/api/v1/jobs/{}", any_id(rng)); },
       [&](auto& rng) {
         return must(plane->get_job(util::JobId(any_id(rng)), kAdmin), "show").dump();
       },
       -1},
      {"events: random job",
       [&](auto& rng) { return fmt::format("/api/v1/jobs/{}/events", any_id(rng)); },
       [&](auto& rng) {
         return must(plane->job_events(util::JobId(any_id(rng)), 0, kAdmin), "events").dump();
       },
       -1},
  };
  fmt::print("\n## 2. Queries with {} jobs in the store ({} pending, in memory)\n\n", n, n / 100);
  fmt::print(
      "Store filled in {:.1f} s; ControlPlane::open (recovers the pending jobs) {:.0f} ms.\n",
      fill_s, open_ms);
  fmt::print(
      "{} requests per row from one keep-alive client (TCP_NODELAY), after 10 warm-up "
      "requests; then the same calls on ControlPlane directly (with dump()).\n\n",
      z.requests);
  fmt::print(
      "| request | HTTP median ms | HTTP p99 ms | HTTP max ms | direct median ms | "
      "direct p99 ms | reply bytes |\n|---|---|---|---|---|---|---|\n");
  httplib::Client cli("127.0.0.1", api.port());
  cli.set_keep_alive(true);
  cli.set_tcp_nodelay(true);
  for (const QueryKind& k : kinds) {
    const Latency l = time_kind(k, cli, z.requests);
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.3f} | {:.3f} | {} |\n", k.label,
               median(l.http_ms), percentile(l.http_ms, 0.99), percentile(l.http_ms, 1.0),
               median(l.direct_ms), percentile(l.direct_ms, 0.99), l.bytes / l.http_ms.size());
    std::fflush(stdout);
  }
}

// ---- 3. reconcile cycles -----------------------------------------------------------------------

// GPUs per job: 60% 1, 15% 2, 15% 4, 10% 8 (a Philly-like mix; ~23,000 GPUs for 10,000 jobs).
int job_gpus(std::mt19937_64& rng) {
  const int r = std::uniform_int_distribution<int>(0, 99)(rng);
  return r < 60 ? 1 : r < 75 ? 2 : r < 90 ? 4 : 8;
}

// Submits `n` jobs from 8 threads; returns the GPUs of each job by id (ids are 1..n).
std::vector<int> submit_pending(server::ControlPlane& plane, int n) {
  std::mt19937_64 rng(42);
  std::vector<int> gpus_of_request(n);
  for (int& g : gpus_of_request) g = job_gpus(rng);
  std::vector<int> gpus_of_id(n + 1, 0);
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        const int g = gpus_of_request[i];
        auto out = must(plane.submit(manifest(fmt::format("r{}", g), "default", g), "b", kAdmin),
                        "submitting");
        gpus_of_id[out["id"].get<int>()] = g;  // distinct ids: no two threads write one slot
      }
    });
  }
  for (auto& t : threads) t.join();
  return gpus_of_id;
}

// One fresh control plane with `z.pending` jobs submitted, then `z.cycles` reconcile cycles.
struct CycleRun {
  double first_ms = 0;
  std::vector<double> later_ms;
  int64_t started = 0, later_started = 0, gpus = 0;
  PlanOnly alone{};
};

CycleRun run_cycles(const Sizes& z, const std::string& policy) {
  TempDir dir;
  FakeExecutor executor;
  WallClock clock;
  const auto nodes = sim_nodes(z.nodes, 8, "H100-80GB");
  auto plane = open_plane(dir.path(), nodes, executor, clock, policy);
  CycleRun run{.alone = plan_only(nodes, submit_pending(*plane, z.pending), policy)};
  for (int cycle = 1; cycle <= z.cycles; ++cycle) {
    const int64_t before = executor.launched();
    const util::Duration t0 = WallClock::steady_now();
    must(plane->reconcile_once(), "reconcile_once");
    const double ms = elapsed_ms(t0);
    if (cycle == 1) {
      run.first_ms = ms;
      run.started = executor.launched() - before;
      run.gpus = executor.gpus();
    } else {
      run.later_ms.push_back(ms);
      run.later_started += executor.launched() - before;
    }
  }
  return run;
}

void bench_reconcile(const Sizes& z) {
  fmt::print("\n## 3. reconcile_once() with {} pending jobs on {} nodes x 8 H100-80GB\n\n",
             z.pending, z.nodes);
  fmt::print("Medians of {} fresh setups; cycle 1 starts jobs, cycles 2-{} change nothing.\n\n",
             z.repetitions, z.cycles);
  fmt::print(
      "| policy | cycle 1 ms (min-max) | started | GPUs in use | plan() alone ms | "
      "later cycles ms (min-max) | started | plan() alone ms |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const std::string policy : {"fifo", "backfill"}) {
    std::vector<double> first, later, plan_first, plan_later;
    CycleRun run;
    for (int rep = 0; rep < z.repetitions; ++rep) {
      run = run_cycles(z, policy);
      first.push_back(run.first_ms);
      later.insert(later.end(), run.later_ms.begin(), run.later_ms.end());
      plan_first.push_back(run.alone.first_ms);
      plan_later.push_back(run.alone.later_ms);
    }
    fmt::print(
        "| {} | {:.0f} ({:.0f}-{:.0f}) | {} | {} | {:.1f} | {:.1f} ({:.1f}-{:.1f}) | {} | "
        "{:.1f} |\n",
        policy, median(first), percentile(first, 1e-9), percentile(first, 1.0), run.started,
        run.gpus, median(plan_first), median(later), percentile(later, 1e-9),
        percentile(later, 1.0), run.later_started, median(plan_later));
    std::fflush(stdout);
  }
}

// ---- 4. decisions per second --------------------------------------------------------------------

// Like FakeExecutor, but each worker exits 0 once its job's (wall-clock) run time is over, so
// capacity turns over and the scheduler keeps deciding.
class FinishingExecutor final : public exec::Executor {
 public:
  explicit FinishingExecutor(uint64_t seed) : rng_(seed) {}
  util::Result<exec::ProcessRef> launch(const exec::WorkerLaunch&) override {
    util::MutexLock lock(mu_);
    const int pid = next_pid_++;
    const double run_s = std::uniform_real_distribution<double>(0.5, 2.0)(rng_);
    end_[pid] = WallClock::steady_now() + util::seconds_f(run_s);
    ++launched_;
    return exec::ProcessRef{.pid = pid, .start_ticks = 1};
  }
  exec::ProcessStatus poll(const exec::ProcessRef& p, const std::filesystem::path&) override {
    util::MutexLock lock(mu_);
    auto it = end_.find(p.pid);
    if (it == end_.end() || WallClock::steady_now() < it->second) return {};
    return {.kind = exec::ExitKind::Exited, .code = 0, .detail = "exited with code 0"};
  }
  util::Status notify(const exec::ProcessRef&, const std::filesystem::path&, int,
                      std::string_view) override {
    return util::Status::ok();
  }
  util::Status kill(const exec::ProcessRef& p) override {
    util::MutexLock lock(mu_);
    end_[p.pid] = util::Duration(0);
    return util::Status::ok();
  }
  util::Result<exec::ProcessRef> find(const std::filesystem::path&) override {
    return util::not_found("the benchmark executor keeps no pid files");
  }
  int64_t launched() {
    util::MutexLock lock(mu_);
    return launched_;
  }

 private:
  util::Mutex mu_;
  std::mt19937_64 rng_ TY_GUARDED_BY(mu_);
  int next_pid_ TY_GUARDED_BY(mu_) = 100000;
  int64_t launched_ TY_GUARDED_BY(mu_) = 0;
  std::map<int, util::Duration> end_ TY_GUARDED_BY(mu_);
};

struct StreamRun {
  double submitted_per_s = 0, started_per_s = 0;
  std::vector<double> cycle_ms;
  int64_t pending_at_end = 0;
};

// Submits `rate` jobs/s from one thread for `seconds` while this thread runs a reconcile cycle
// every 100 ms, on `nodes` x 8 GPUs.
StreamRun run_stream(const std::string& policy, int nodes, double rate, double seconds) {
  TempDir dir;
  FinishingExecutor executor(7);
  WallClock clock;
  auto plane = open_plane(dir.path(), sim_nodes(nodes, 8, "H100-80GB"), executor, clock, policy);
  std::atomic<bool> done{false};
  std::atomic<int64_t> submitted{0};
  std::thread submitter([&] {
    std::mt19937_64 rng(42);
    const util::Duration t0 = WallClock::steady_now();
    for (int64_t i = 0; !done; ++i) {
      const util::Duration due = t0 + util::seconds_f(static_cast<double>(i) / rate);
      while (!done && WallClock::steady_now() < due) std::this_thread::yield();
      if (done) break;
      const int g = job_gpus(rng);
      const std::string team = fmt::format("team{}", i % kTeams);
      must(plane->submit(manifest(fmt::format("s{}", g), team, g), "b", kAdmin), "submitting");
      ++submitted;
    }
  });
  StreamRun run;
  const util::Duration t0 = WallClock::steady_now();
  const int64_t launched0 = executor.launched();
  // Cycles every 100 ms, as a server with reconcileIntervalSeconds: 0.1 (a cycle that takes
  // longer is followed at once by the next).
  const util::Duration interval = util::seconds_f(0.1);
  for (util::Duration tick = t0; WallClock::steady_now() - t0 < util::seconds_f(seconds);) {
    const util::Duration c0 = WallClock::steady_now();
    must(plane->reconcile_once(), "reconcile_once");
    run.cycle_ms.push_back(elapsed_ms(c0));
    tick += interval;
    if (tick > WallClock::steady_now()) std::this_thread::sleep_for(tick - WallClock::steady_now());
  }
  done = true;
  submitter.join();
  const double s = elapsed_ms(t0) / 1000.0;
  run.submitted_per_s = static_cast<double>(submitted) / s;
  run.started_per_s = static_cast<double>(executor.launched() - launched0) / s;
  // Every job is one worker, so workers launched are jobs started.
  run.pending_at_end = submitted - (executor.launched() - launched0);
  return run;
}

void bench_stream(const Sizes& z) {
  const double seconds = z.repetitions > 1 ? 20 : 5;
  fmt::print("\n## 4. Decisions per second: a stream of submissions on {} nodes x 8 GPUs\n\n",
             z.nodes);
  fmt::print(
      "One thread submits at the offered rate ({} teams, Philly-like 1-8 GPU jobs that run "
      "0.5-2 s); this thread runs a reconcile cycle every 100 ms for {:.0f} s (the server's loop "
      "with reconcileIntervalSeconds: 0.1). Each cycle polls workers, commits finishes, plans "
      "and launches.\n\n",
      kTeams, seconds);
  fmt::print(
      "| policy | offered/s | submitted/s | started/s | cycles | cycle p50 ms | cycle p99 ms | "
      "pending at end |\n|---|---|---|---|---|---|---|---|\n");
  for (const std::string policy : {"fifo", "backfill", "priority", "fair"}) {
    for (const double rate : {200.0, 1000.0}) {
      const StreamRun r = run_stream(policy, z.nodes, rate, seconds);
      fmt::print("| {} | {:.0f} | {:.0f} | {:.0f} | {} | {:.1f} | {:.1f} | {} |\n", policy, rate,
                 r.submitted_per_s, r.started_per_s, r.cycle_ms.size(), median(r.cycle_ms),
                 percentile(r.cycle_ms, 0.99), r.pending_at_end);
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace trainyard::bench

int main(int argc, char** argv) {
  using trainyard::bench::Sizes;
  Sizes sizes;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      sizes = Sizes{.submissions = 400,
                    .repetitions = 1,
                    .stored_jobs = 5000,
                    .requests = 50,
                    .nodes = 100,
                    .pending = 1000,
                    .cycles = 2};
    } else if (arg.rfind("--only=", 0) == 0) {
      only = arg.substr(7);
    } else {
      fmt::print(stderr, "usage: server_bench [--quick] [--only=submit|query|reconcile|stream]\n");
      return 2;
    }
  }
  if (only.empty() || only == "submit") trainyard::bench::bench_submissions(sizes);
  if (only.empty() || only == "query") trainyard::bench::bench_queries(sizes);
  if (only.empty() || only == "reconcile") trainyard::bench::bench_reconcile(sizes);
  if (only.empty() || only == "stream") trainyard::bench::bench_stream(sizes);
  return 0;
}
