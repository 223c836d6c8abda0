// The control plane end to end, in-process, with an executor that starts nothing:
//   1. durable submissions acknowledged per second (HTTP, 8 clients vs 1; direct calls);
//   2. list/show/events latency over HTTP with 100,000 jobs in the store;
//   3. reconcile_once() with 10,000 pending jobs on 1,000 simulated 8-GPU nodes, next to
//      sched::plan() alone on the same jobs and nodes.
// Targets (docs/performance.md): >= 2,000 submissions/s; p99 < 50 ms for a page of 100 jobs.
// The state lives under $TMPDIR: point it at the server's disk, since every commit is fsynced.
//   build/bench/server_bench [--quick] [--only=submit|query|reconcile]
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "bench/server_bench_util.h"
#include "model/job_manifest.h"
#include "sched/scheduler.h"
#include "sched/snapshot_builder.h"

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
  int cycles = 4;
};

const server::Principal kAdmin{.admin = true, .team = "", .name = "bench"};

std::string manifest(const std::string& name, const std::string& team, int gpus) {
  return fmt::format(
      R"({{"apiVersion":"trainyard.dev/v1","kind":"Job","metadata":{{"name":"{}"}},)"
      R"("spec":{{"team":"{}","template":{{"command":["python","train.py","--epochs","10"],)"
      R"("resources":{{"limits":{{"nvidia.com/gpu":{}}}}}}}}}}})",
      name, team, gpus);
}

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
  std::vector<telemetry::GpuDevice> devices(8);
  for (int gpu_idx = 0; gpu_idx < 8; ++gpu_idx) {
    devices[gpu_idx] = {.index = gpu_idx, .uuid = fmt::format("GPU-sim-{}", gpu_idx),
                        .name = "NVIDIA H100 80GB HBM3", .model = "H100-80GB",
                        .memory = model::gib(80), .simulated = true};
  }
  auto plane = open_plane(dir.path(), server::ControlPlane::nodes_from_devices(devices), executor,
                          clock);
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
  fmt::print("\n## 1. Durable submissions ({} per run, median of {} runs)\n\n", z.submissions,
             z.repetitions);
  fmt::print("| case | submissions/s (min-max) | vs baseline | ack p50 ms | ack p99 ms |\n");
  fmt::print("|---|---|---|---|---|\n");
  double baseline = 0;
  for (const SubmitCase& c : cases) {
    std::vector<double> rates, latency;
    for (int rep = 0; rep < z.repetitions; ++rep) {
      SubmitRun run = run_submissions(c, z.submissions);
      rates.push_back(z.submissions / run.seconds);
      latency.insert(latency.end(), run.latency_ms.begin(), run.latency_ms.end());
    }
    const double rate = median(rates);
    if (baseline == 0) baseline = rate;
    fmt::print("| {} | {:.0f} ({:.0f}-{:.0f}) | {:.2f}x | {:.2f} | {:.2f} |\n", c.label, rate,
               percentile(rates, 1e-9), percentile(rates, 1.0), rate / baseline,
               median(latency), percentile(latency, 0.99));
    std::fflush(stdout);
  }
}

// ---- 2. queries over a large store -------------------------------------------------------------

constexpr int kTeams = 20;

// `n` jobs in batches of 1,000 per transaction; every 100th stays Pending, the rest Succeeded
// with the five events and the attempt a real run leaves.
void fill_store(const std::filesystem::path& db, int n) {
  auto store = must(store::Store::open(db), "opening the store");
  std::vector<std::string> manifests;
  for (int team = 0; team < kTeams; ++team) {
    auto m = must(model::parse_job_manifest(
                      manifest("train", fmt::format("team-{:02d}", team), 1 << (team % 4)), "b"),
                  "parsing a manifest");
    manifests.push_back(model::job_manifest_to_json(m));
  }
  using model::JobState;
  auto event = [](store::Store& s, util::JobId id, util::Time at, std::string from, JobState to,
                  const char* type) {
    return s.append_event({.job = id, .at = at, .type = type, .from_state = std::move(from),
                           .to_state = std::string(job_state_name(to)), .reason = "bench"});
  };
  for (int first = 0; first < n; first += 1000) {
    must(store->transaction([&]() -> util::Status {
      for (int i = first; i < std::min(n, first + 1000); ++i) {
        const bool pending = i % 100 == 99;
        const util::Time t = util::from_seconds(1.7e9 + i);
        store::JobRecord rec{.name = "train", .team = fmt::format("team-{:02d}", i % kTeams),
                             .state = pending ? JobState::Pending : JobState::Succeeded,
                             .manifest_json = manifests[i % kTeams], .submitted = t,
                             .updated = t, .queued_since = t, .reason = "bench"};
        if (!pending) {
          rec.started = t + util::seconds(10);
          rec.finished = rec.updated = t + util::seconds(3600);
        }
        TY_ASSIGN_OR_RETURN(rec.id, store->insert_job(rec));
        TY_RETURN_IF_ERROR(event(*store, rec.id, t, "", JobState::Pending, "Submitted").status());
        if (pending) continue;
        const JobState path[] = {JobState::Pending, JobState::Admitted, JobState::Placed,
                                 JobState::Running, JobState::Succeeded};
        for (int step = 1; step < 5; ++step) {
          TY_RETURN_IF_ERROR(event(*store, rec.id, rec.started,
                                   std::string(job_state_name(path[step - 1])), path[step],
                                   "Transition").status());
        }
        TY_RETURN_IF_ERROR(store->put_attempt(
            {.job = rec.id, .started = rec.started, .ended = rec.finished,
             .placement_json = R"([{"worker":0,"node":"node-0001","gpu":0,"milli":1000}])",
             .processes_json = R"([{"rank":0,"pid":4242,"start_ticks":1,"run_dir":"/x"}])",
             .outcome = "succeeded"}));
      }
      return util::Status::ok();
    }), "filling the store");
  }
}

struct QueryKind {
  std::string label;
  std::function<std::string(std::mt19937_64&)> path;
  int expect_items;  // -1 = not a list
};

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

  auto any_id = [n](std::mt19937_64& rng) {
    return std::uniform_int_distribution<int>(1, n)(rng);
  };
  const std::vector<QueryKind> kinds = {
      {"GET /healthz (HTTP floor, baseline)", [](auto&) { return std::string("/healthz"); }, -1},
      {"ls: first page", [](auto&) { return std::string("/api/v1/jobs?limit=100"); }, 100},
      {"ls: team filter", [](auto&) { return std::string("/api/v1/jobs?limit=100&team=team-07"); },
       100},
      {"ls: page from the middle",
       [n](auto&) { return fmt::format("/api/v1/jobs?limit=100&before={}", n / 2); }, 100},
      {"show: random job", [&](auto& rng) { return fmt::format("/api/v1/jobs/{}", any_id(rng)); },
       -1},
      {"events: random job",
       [&](auto& rng) { return fmt::format("/api/v1/jobs/{}/events", any_id(rng)); }, -1},
  };
  fmt::print("\n## 2. Queries with {} jobs in the store ({} pending, in memory)\n\n", n, n / 100);
  fmt::print("Store filled in {:.1f} s; ControlPlane::open (recovers the pending jobs) {:.0f} ms.\n",
             fill_s, open_ms);
  fmt::print("{} requests per row from one keep-alive client, after 10 warm-up requests.\n\n",
             z.requests);
  fmt::print("| request | median ms | p99 ms | max ms | reply bytes |\n|---|---|---|---|---|\n");
  httplib::Client cli("127.0.0.1", api.port());
  cli.set_keep_alive(true);
  for (const QueryKind& k : kinds) {
    std::mt19937_64 rng(7);
    std::vector<double> ms;
    size_t bytes = 0;
    for (int i = -10; i < z.requests; ++i) {
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
      ms.push_back(took);
      bytes += res->body.size();
    }
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {} |\n", k.label, median(ms),
               percentile(ms, 0.99), percentile(ms, 1.0), bytes / ms.size());
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

// plan() alone on the snapshot the server builds for cycle 1 (every job pending), then on the
// one it builds for cycle 2 (cycle 1's starts running). Returns {ms, ms, starts of the first}.
struct PlanOnly {
  double first_ms, steady_ms;
  size_t starts;
};
PlanOnly plan_only(const std::vector<server::LocalNode>& nodes, const std::vector<int>& gpus_of_id,
                   const std::string& policy) {
  WallClock clock;
  sched::Snapshot snap;
  snap.now = clock.now();
  for (const auto& n : nodes) sched::add_node(snap, n.node);
  sched::add_team(snap, model::Team{.name = "default"});
  std::vector<model::JobSpec> specs(9);
  for (int g : {1, 2, 4, 8}) {
    specs[g] = must(model::parse_job_manifest(manifest(fmt::format("r{}", g), "default", g), "b"),
                    "parsing").spec;
  }
  for (size_t id = 1; id < gpus_of_id.size(); ++id) {
    auto sj = sched::make_pending_job(snap, util::JobId(static_cast<int64_t>(id)),
                                      specs[gpus_of_id[id]], snap.now);
    sj.queued_since = snap.now;
    snap.jobs.push_back(std::move(sj));
  }
  const sched::PolicyConfig cfg{.name = policy};
  util::Duration t0 = WallClock::steady_now();
  const sched::Plan first = sched::plan(snap, cfg, 1);
  PlanOnly out{.first_ms = elapsed_ms(t0), .steady_ms = 0, .starts = first.starts.size()};
  for (const auto& s : first.starts) {
    auto& sj = snap.jobs[s.job.value() - 1];
    sj.phase = sched::JobPhase::Running;
    sj.started = snap.now;
    sj.placement = s.placement;
  }
  t0 = WallClock::steady_now();
  const sched::Plan second = sched::plan(snap, cfg, 2);
  out.steady_ms = elapsed_ms(t0);
  return out;
}

void bench_reconcile(const Sizes& z) {
  fmt::print("\n## 3. reconcile_once() with {} pending jobs on {} nodes x 8 H100-80GB\n\n",
             z.pending, z.nodes);
  fmt::print("| policy | cycle | wall ms | jobs started | GPUs in use | plan() alone ms |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  for (const std::string policy : {"fifo", "backfill"}) {
    TempDir dir;
    FakeExecutor executor;
    WallClock clock;
    const auto nodes = sim_nodes(z.nodes, 8, "H100-80GB");
    auto plane = open_plane(dir.path(), nodes, executor, clock, policy);
    util::Duration t0 = WallClock::steady_now();
    const std::vector<int> gpus_of_id = submit_pending(*plane, z.pending);
    const double submit_s = elapsed_ms(t0) / 1e3;
    const PlanOnly alone = plan_only(nodes, gpus_of_id, policy);
    std::vector<double> steady;
    for (int cycle = 1; cycle <= z.cycles; ++cycle) {
      const int64_t before = executor.launched();
      t0 = WallClock::steady_now();
      must(plane->reconcile_once(), "reconcile_once");
      const double ms = elapsed_ms(t0);
      if (cycle > 1) steady.push_back(ms);
      fmt::print("| {} | {} | {:.0f} | {} | {} | {:.1f} |\n", policy, cycle, ms,
                 executor.launched() - before, executor.gpus(),
                 cycle == 1 ? alone.first_ms : alone.steady_ms);
      std::fflush(stdout);
    }
    fmt::print("| {} | median of 2-{} | {:.0f} | | | {:.1f} |\n", policy, z.cycles,
               median(steady), alone.steady_ms);
    fmt::print("<!-- {}: {} jobs submitted in {:.1f} s (8 threads); plan() alone starts {} -->\n",
               policy, z.pending, submit_s, alone.starts);
    std::fflush(stdout);
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
      sizes = Sizes{.submissions = 400, .repetitions = 1, .stored_jobs = 5000, .requests = 50,
                    .nodes = 100, .pending = 1000, .cycles = 2};
    } else if (arg.rfind("--only=", 0) == 0) {
      only = arg.substr(7);
    } else {
      fmt::print(stderr, "usage: server_bench [--quick] [--only=submit|query|reconcile]\n");
      return 2;
    }
  }
  if (only.empty() || only == "submit") trainyard::bench::bench_submissions(sizes);
  if (only.empty() || only == "query") trainyard::bench::bench_queries(sizes);
  if (only.empty() || only == "reconcile") trainyard::bench::bench_reconcile(sizes);
  return 0;
}
