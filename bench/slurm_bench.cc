// The Slurm executor's own costs (docs/performance.md, "Slurm executor"):
//   1. parse_squeue_json on synthetic `squeue --json` documents of 1,000 and 10,000 running jobs,
//      each job in the exact 22.05 shape of a real one (tests/exec/data/slurm/squeue-mixed.json,
//      job 13), and parse_slurm_nodes_json on 1,000 nodes (shape of sinfo-gres-used.json);
//   2. one reconcile_once() with 1,000 Slurm jobs running, on a ControlPlane whose SlurmExecutor
//      calls fake sbatch/squeue/sinfo/scancel scripts (a temp dir as executor.binDir): sbatch
//      appends "<id> <comment> <node> <gpus>" to a ledger and prints the id; squeue and sinfo
//      print JSON the benchmark writes from that ledger (all RUNNING, 125 nodes x 8 GPUs). The
//      refresher's poll interval is an hour, so no command runs inside a timed cycle: the cycle
//      is trainyard's own time (begin_cycle, 1,000 polls with their exit_status reads, node
//      sync, plan, commit). Next to it the same plane with an executor that starts nothing on
//      125 simulated local nodes, and one SlurmExecutor::refresh_now() (squeue + sinfo through
//      the scripts and both parses: what the refresher thread spends per poll interval).
// Cycles report median and p99 over fixed iterations as counters (median_ms, p99_ms).
//   build/ci/bench/slurm_bench [--benchmark_filter=Parse|Reconcile|Refresh]
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "bench/server_bench_util.h"
#include "exec/slurm_executor.h"
#include "exec/slurm_json.h"
#include "util/log.h"

namespace trainyard::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMeta =
    R"({"plugin":{"type":"openapi/v0.0.38","name":"Slurm OpenAPI v0.0.38"},)"
    R"("Slurm":{"version":{"major":22,"micro":8,"minor":5},"release":"22.05.8"}})";

// Job 13 of squeue-mixed.json (Slurm 22.05.8), every field kept; the varying ones are arguments.
constexpr const char* kJob =
    R"({{"account":"","accrue_time":{submit},"admin_comment":"","array_job_id":0,)"
    R"("array_task_id":null,"array_max_tasks":0,"array_task_string":"","association_id":0,)"
    R"("batch_features":"","batch_flag":true,"batch_host":"{node}","flags":["JOB_WAS_RUNNING",)"
    R"("JOB_MEM_SET"],"burst_buffer":"","burst_buffer_state":"","cluster":"ty",)"
    R"("cluster_features":"","command":"","comment":"{comment}","container":"",)"
    R"("contiguous":false,"core_spec":null,"thread_spec":null,"cores_per_socket":null,)"
    R"("billable_tres":1.0,"cpus_per_task":null,"cpu_frequency_minimum":null,)"
    R"("cpu_frequency_maximum":null,"cpu_frequency_governor":null,"cpus_per_tres":"",)"
    R"("deadline":0,"delay_boot":0,"dependency":"","derived_exit_code":0,)"
    R"("eligible_time":{submit},"end_time":{end},"excluded_nodes":"","exit_code":0,)"
    R"("features":"","federation_origin":"","federation_siblings_active":"",)"
    R"("federation_siblings_viable":"","gres_detail":["{gres}"],"group_id":0,)"
    R"("group_name":"root","job_id":{id},"job_resources":{{"nodes":"{node}",)"
    R"("allocated_cores":1,"allocated_hosts":1,"allocated_nodes":[{{"sockets":{{"7":{{)"
    R"("cores":{{"0":"allocated"}}}}}},"nodename":"{node}","cpus_used":1,"memory_used":1000,)"
    R"("memory_allocated":1000}}]}},"job_state":"RUNNING","last_sched_evaluation":{start},)"
    R"("licenses":"","max_cpus":0,"max_nodes":0,"mcs_label":"","memory_per_tres":"",)"
    R"("name":"{name}","nodes":"{node}","nice":null,"tasks_per_core":null,"tasks_per_node":0,)"
    R"("tasks_per_socket":null,"tasks_per_board":0,"cpus":1,"node_count":1,"tasks":1,)"
    R"("het_job_id":0,"het_job_id_set":"","het_job_offset":0,"partition":"gpu","prefer":"",)"
    R"("memory_per_node":1000,"memory_per_cpu":null,"minimum_cpus_per_node":1,)"
    R"("minimum_tmp_disk_per_node":0,"preempt_time":0,"pre_sus_time":0,"priority":4294901747,)"
    R"("profile":null,"qos":"","reboot":false,"required_nodes":"{node}","requeue":true,)"
    R"("resize_time":0,"restart_cnt":0,"resv_name":"","shared":null,"show_flags":["SHOW_ALL",)"
    R"("SHOW_DETAIL","SHOW_LOCAL"],"sockets_per_board":0,"sockets_per_node":null,)"
    R"("start_time":{start},"state_description":"","state_reason":"None","standard_error":"",)"
    R"("standard_input":"/dev/null","standard_output":"/dev/null","submit_time":{submit},)"
    R"("suspend_time":0,"system_comment":"","time_limit":525600,"time_minimum":0,)"
    R"("threads_per_core":null,"tres_bind":"","tres_freq":"","tres_per_job":"",)"
    R"("tres_per_node":"gres:gpu:h100:1","tres_per_socket":"","tres_per_task":"",)"
    R"("tres_req_str":"cpu=1,mem=1000M,node=1,billing=1",)"
    R"("tres_alloc_str":"cpu=1,mem=1000M,node=1,billing=1","user_id":0,"user_name":"root",)"
    R"("wckey":"","current_working_directory":"{cwd}"}})";

// Node n1 of sinfo-gres-used.json (Slurm 22.05.8); the varying fields are arguments.
constexpr const char* kNode =
    R"({{"architecture":"x86_64","burstbuffer_network_address":"","boards":1,)"
    R"("boot_time":1795649750,"comment":"","cores":1,"cpu_binding":0,"cpu_load":215,"extra":"",)"
    R"("free_memory":21542,"cpus":{cpus},"last_busy":1795650420,"features":"h100",)"
    R"("active_features":"h100","gres":"{gres}","gres_drained":"N/A","gres_used":"{gres_used}",)"
    R"("mcs_label":"","name":"{name}","next_state_after_reboot":"invalid","address":"{name}",)"
    R"("hostname":"{name}","state":"{state}","state_flags":[],)"
    R"("next_state_after_reboot_flags":[],)"
    R"("operating_system":"Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0","owner":null,)"
    R"("partitions":["gpu"],"port":21311,"real_memory":{mem},"reason":"","reason_changed_at":0,)"
    R"("reason_set_by_user":null,"slurmd_start_time":1795650254,"sockets":8,"threads":1,)"
    R"("temporary_disk":0,"weight":1,"tres":"cpu={cpus},mem={mem}M,billing={cpus}",)"
    R"("slurmd_version":"22.05.8","alloc_memory":{alloc_mem},"alloc_cpus":{alloc_cpus},)"
    R"("idle_cpus":{idle_cpus},"tres_used":"cpu={alloc_cpus},mem={alloc_mem}M",)"
    R"("tres_weighted":2.0}})";

constexpr int kGpusPerNode = 8;
constexpr int64_t kNodeCpus = 64;
constexpr int64_t kNodeMemMb = 512000;

// One running 1-GPU Slurm job.
struct RunningJob {
  int64_t id = 0;
  std::string comment;
  std::string node;
  int gpu = 0;  // its device index on the node
};

std::string squeue_json(const std::vector<RunningJob>& jobs, const std::string& cwd) {
  std::string out = fmt::format(R"({{"meta":{},"errors":[],"jobs":[)", kMeta);
  out.reserve(jobs.size() * 2600 + 256);
  const int64_t t0 = 1795650432;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const RunningJob& j = jobs[i];
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), fmt::runtime(kJob), fmt::arg("id", j.id),
                   fmt::arg("name", "trainyard"), fmt::arg("comment", j.comment),
                   fmt::arg("node", j.node),
                   fmt::arg("gres", fmt::format("gpu:h100:1(IDX:{})", j.gpu)),
                   fmt::arg("submit", t0 + j.id), fmt::arg("start", t0 + j.id + 1),
                   fmt::arg("end", t0 + j.id + 31536001), fmt::arg("cwd", cwd));
  }
  out += "]}";
  return out;
}

std::string node_name(int i) {
  return fmt::format("node-{:04d}", i + 1);
}

// `nodes` nodes of 8 H100s; `used[name]` lists the GPU indices jobs hold there.
std::string sinfo_json(int nodes, const std::map<std::string, std::vector<int>>& used) {
  std::string out = fmt::format(R"({{"meta":{},"errors":[],"nodes":[)", kMeta);
  for (int i = 0; i < nodes; ++i) {
    const std::string name = node_name(i);
    auto it = used.find(name);
    const int n = it == used.end() ? 0 : static_cast<int>(it->second.size());
    const std::string gres_used =
        n == 0 ? "gpu:h100:0(IDX:N/A)"
               : fmt::format("gpu:h100:{}(IDX:{})", n, fmt::join(it->second, ","));
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), fmt::runtime(kNode), fmt::arg("name", name),
                   fmt::arg("cpus", kNodeCpus),
                   fmt::arg("gres", fmt::format("gpu:h100:{}", kGpusPerNode)),
                   fmt::arg("gres_used", gres_used),
                   fmt::arg("state", n == 0              ? "idle"
                                     : n == kGpusPerNode ? "allocated"
                                                         : "mixed"),
                   fmt::arg("mem", kNodeMemMb), fmt::arg("alloc_mem", int64_t{1000} * n),
                   fmt::arg("alloc_cpus", n), fmt::arg("idle_cpus", kNodeCpus - n));
  }
  out += "]}";
  return out;
}

// `count` running jobs packed 8 to a node, tagged as instance "bench"'s attempts.
std::vector<RunningJob> synthetic_jobs(int count) {
  std::vector<RunningJob> jobs;
  for (int i = 0; i < count; ++i)
    jobs.push_back({.id = 1001 + i,
                    .comment = fmt::format("trainyard:bench:{}:1", i + 1),
                    .node = node_name(i / kGpusPerNode),
                    .gpu = i % kGpusPerNode});
  return jobs;
}

void set_percentiles(benchmark::State& state, const std::vector<double>& ms) {
  state.counters["median_ms"] = median(ms);
  state.counters["p99_ms"] = percentile(ms, 0.99);
  state.counters["max_ms"] = percentile(ms, 1.0);
}

// ---- 1. parsers ---------------------------------------------------------------------------------

void BM_ParseSqueue(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  const std::string doc = squeue_json(synthetic_jobs(n), "/shared/jobs/1/attempt-1");
  for (auto _ : state) {
    auto jobs = exec::parse_squeue_json(doc);
    if (!jobs.is_ok() || static_cast<int>(jobs->size()) != n) {
      state.SkipWithError("parse_squeue_json did not return every job");
      return;
    }
    benchmark::DoNotOptimize(jobs->data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(doc.size()));
  state.counters["doc_MB"] = static_cast<double>(doc.size()) / 1e6;
  state.counters["jobs/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ParseSqueue)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_ParseSinfo(benchmark::State& state) {
  const auto n = static_cast<int>(state.range(0));
  std::map<std::string, std::vector<int>> used;
  for (int i = 0; i < n; i += 2) used[node_name(i)] = {0, 2, 3};
  const std::string doc = sinfo_json(n, used);
  for (auto _ : state) {
    auto nodes = exec::parse_slurm_nodes_json(doc);
    if (!nodes.is_ok() || static_cast<int>(nodes->size()) != n) {
      state.SkipWithError("parse_slurm_nodes_json did not return every node");
      return;
    }
    benchmark::DoNotOptimize(nodes->data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(doc.size()));
  state.counters["doc_MB"] = static_cast<double>(doc.size()) / 1e6;
}
BENCHMARK(BM_ParseSinfo)->Arg(1000)->Unit(benchmark::kMillisecond);

// ---- 2. reconcile cycles ------------------------------------------------------------------------

void write_file(const fs::path& p, const std::string& text, bool executable = false) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) must(util::unavailable("cannot write " + tmp.string()), "fake Slurm");
  }
  fs::rename(tmp, p);
  if (executable) ::chmod(p.c_str(), 0755);
}

// Fake Slurm client commands in a temp dir; the JSON they print is written from the ledger
// the fake sbatch appends to (publish()).
class FakeSlurm {
 public:
  explicit FakeSlurm(int nodes) : nodes_(nodes) {
    fs::create_directories(bin());
    fs::create_directories(shared());
    fs::create_directories(state_dir());
    const std::string d = dir_.path().string();
    const std::string version = "case \"$1\" in --version) echo 'slurm 22.05.8'; exit 0;; esac\n";
    write_file(bin() / "sbatch",
               "#!/bin/sh\n" + version + "D='" + d +
                   "'\ncomment=; node=; gpus=0\n"
                   "for a in \"$@\"; do case \"$a\" in\n"
                   "  --comment=*) comment=${a#--comment=};;\n"
                   "  --nodelist=*) node=${a#--nodelist=};;\n"
                   "  --gres=gpu:*) gpus=${a#--gres=gpu:};;\n"
                   "esac; done\n"
                   "exec 9>>\"$D/sbatch.ledger\"\nflock 9\n"
                   "id=$(($(wc -l < \"$D/sbatch.ledger\") + 1001))\n"
                   "echo \"$id $comment $node $gpus\" >&9\necho \"$id\"\n",
               true);
    write_file(bin() / "squeue", "#!/bin/sh\n" + version + "exec cat '" + d + "/squeue.json'\n",
               true);
    write_file(bin() / "sinfo", "#!/bin/sh\n" + version + "exec cat '" + d + "/sinfo.json'\n",
               true);
    write_file(bin() / "scancel",
               "#!/bin/sh\n" + version + "echo \"$@\" >> '" + d + "/scancel.log'\n", true);
    write_file(dir_.path() / "sbatch.ledger", "");
    publish();
  }

  // squeue.json and sinfo.json from the ledger: every submitted job RUNNING on its node.
  size_t publish() {
    std::ifstream ledger(dir_.path() / "sbatch.ledger");
    std::vector<RunningJob> jobs;
    std::map<std::string, std::vector<int>> used;
    std::string line;
    while (std::getline(ledger, line)) {
      std::istringstream in(line);
      RunningJob j;
      int gpus = 0;
      if (!(in >> j.id >> j.comment >> j.node >> gpus)) continue;
      auto& u = used[j.node];
      j.gpu = static_cast<int>(u.size());
      for (int g = 0; g < gpus; ++g) u.push_back(static_cast<int>(u.size()));
      jobs.push_back(std::move(j));
    }
    write_file(dir_.path() / "squeue.json", squeue_json(jobs, shared().string()));
    write_file(dir_.path() / "sinfo.json", sinfo_json(nodes_, used));
    return jobs.size();
  }
  fs::path bin() const { return dir_.path() / "bin"; }
  fs::path shared() const { return dir_.path() / "shared"; }
  fs::path state_dir() const { return dir_.path() / "state"; }

 private:
  TempDir dir_;
  int nodes_;
};

const server::Principal kAdmin{.admin = true, .team = "", .name = "bench"};

int64_t count_running(server::ControlPlane& plane) {
  auto page = must(plane.list_jobs({.state = model::JobState::Running, .limit = 100000}, kAdmin),
                   "listing");
  return static_cast<int64_t>(page["items"].size());
}

void submit_jobs(server::ControlPlane& plane, int n) {
  for (int i = 0; i < n; ++i)
    must(plane.submit(manifest("r1", "default", 1), "b", kAdmin).status(), "submitting");
}

// Times `iterations` reconcile_once() calls (the benchmark's loop) and reports percentiles.
void time_cycles(benchmark::State& state, server::ControlPlane& plane) {
  std::vector<double> ms;
  for (auto _ : state) {
    const util::Duration t0 = util::WallClock::steady_now();
    must(plane.reconcile_once(), "reconcile_once");
    ms.push_back(elapsed_ms(t0));
  }
  set_percentiles(state, ms);
}

constexpr int kJobs = 1000;
constexpr int kNodes = kJobs / kGpusPerNode;

exec::SlurmOptions slurm_options(const FakeSlurm& fake) {
  exec::SlurmOptions so;
  so.partition = "gpu";
  so.shared_dir = fake.shared();
  so.bin_dir = fake.bin().string();
  so.wrapper_path = "/usr/local/bin/trainyard";  // written into batch scripts, never run
  so.instance = "bench";
  so.poll_interval = std::chrono::hours(1);  // no refresh inside a timed cycle
  return so;
}

void BM_ReconcileSlurm(benchmark::State& state) {
  FakeSlurm fake(kNodes);
  auto ex = must(exec::SlurmExecutor::open(slurm_options(fake)), "opening the Slurm executor");
  must(ex->refresh_now(), "first refresh");
  util::WallClock clock;
  server::ControlPlaneOptions options{.state_dir = fake.state_dir()};
  options.config.policy.name = "fifo";
  options.isolate_workers = false;
  options.work_dir = fake.shared();
  options.slurm = ex.get();
  auto plane = must(server::ControlPlane::open(options, {}, *ex, clock), "opening the plane");
  submit_jobs(*plane, kJobs);
  // Start every job: each cycle launches what fits (one sbatch each); then Slurm's picture.
  size_t submitted = 0;
  for (int cycle = 0; cycle < 20 && count_running(*plane) < kJobs; ++cycle) {
    must(plane->reconcile_once(), "reconcile_once (starting)");
    submitted = fake.publish();
    must(ex->refresh_now(), "refresh");
  }
  const int64_t running = count_running(*plane);
  if (running != kJobs || submitted != static_cast<size_t>(kJobs)) {
    state.SkipWithError(
        fmt::format("{} of {} jobs running, {} sbatch calls", running, kJobs, submitted).c_str());
    return;
  }
  // Past the executor's first cycles with a picture (its orphan sweep starts after them).
  for (int i = 0; i < 6; ++i) must(plane->reconcile_once(), "reconcile_once (warm-up)");
  time_cycles(state, *plane);
  state.counters["running"] = static_cast<double>(count_running(*plane));
  state.counters["slurm_jobs"] = static_cast<double>(fake.publish());
}
BENCHMARK(BM_ReconcileSlurm)->Iterations(300)->Unit(benchmark::kMillisecond);

// The same plane and jobs with an executor that starts nothing, on 125 simulated local nodes.
void BM_ReconcileFakeLocal(benchmark::State& state) {
  TempDir dir;
  FakeExecutor executor;
  util::WallClock clock;
  auto plane =
      open_plane(dir.path(), sim_nodes(kNodes, kGpusPerNode, "H100-80GB"), executor, clock, "fifo");
  submit_jobs(*plane, kJobs);
  for (int cycle = 0; cycle < 20 && count_running(*plane) < kJobs; ++cycle)
    must(plane->reconcile_once(), "reconcile_once (starting)");
  if (count_running(*plane) != kJobs) {
    state.SkipWithError("not every job started");
    return;
  }
  for (int i = 0; i < 6; ++i) must(plane->reconcile_once(), "reconcile_once (warm-up)");
  time_cycles(state, *plane);
  state.counters["running"] = static_cast<double>(count_running(*plane));
}
BENCHMARK(BM_ReconcileFakeLocal)->Iterations(300)->Unit(benchmark::kMillisecond);

// What the refresher thread spends per poll interval with 1,000 jobs: squeue and sinfo through
// the fake scripts (fork, exec, ~2.7 MB through pipes), both parses and the derived view.
void BM_RefreshSlurm(benchmark::State& state) {
  FakeSlurm fake(kNodes);
  auto ex = must(exec::SlurmExecutor::open(slurm_options(fake)), "opening the Slurm executor");
  std::vector<RunningJob> jobs = synthetic_jobs(kJobs);
  std::map<std::string, std::vector<int>> used;
  for (const auto& j : jobs) used[j.node].push_back(j.gpu);
  // The same picture as BM_ReconcileSlurm's, written directly.
  write_file(fake.shared().parent_path() / "squeue.json",
             squeue_json(jobs, fake.shared().string()));
  write_file(fake.shared().parent_path() / "sinfo.json", sinfo_json(kNodes, used));
  std::vector<double> ms;
  for (auto _ : state) {
    const util::Duration t0 = util::WallClock::steady_now();
    must(ex->refresh_now(), "refresh_now");
    ms.push_back(elapsed_ms(t0));
  }
  set_percentiles(state, ms);
  state.counters["nodes"] = static_cast<double>(ex->cluster().nodes.size());
}
BENCHMARK(BM_RefreshSlurm)->Iterations(50)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trainyard::bench

int main(int argc, char** argv) {
  trainyard::util::set_log_level("warn");  // one line per Slurm node otherwise
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
