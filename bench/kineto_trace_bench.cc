// Parses synthetic PyTorch profiler traces the size of real ones (hundreds of MB) with the Kineto
// analyser and, as a baseline, with nlohmann::json's DOM on a smaller one. Each measurement runs in
// a child process so its peak memory (ru_maxrss) is its own. Prints a markdown table.
// Usage: kineto_trace_bench [--mb 200] [--baseline-mb 50] [--runs 3]
//        kineto_trace_bench --mb 200 --write trace.json   (only writes the trace, for other tools)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "telemetry/kineto_trace.h"

namespace {

using trainyard::telemetry::analyze_kineto_trace_file;

// One training step the way Kineto writes it: a ProfilerStep range, a DataLoader range, and per
// kernel an aten op, its cudaLaunchKernel, the kernel with its launch arguments, and the ac2g
// flow pair; every 50th kernel is an NCCL all-reduce on a second stream.
void write_step(std::FILE* f, int step, int kernels, double& t, int64_t& corr, bool& first) {
  auto sep = [&] {
    std::fputs(first ? "\n" : ",\n", f);
    first = false;
  };
  const double step_start = t;
  sep();
  std::fprintf(
      f,
      R"({"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__","pid":1234,"tid":1234,"ts":%.3f,"dur":%.3f,"args":{"External id":%lld,"Ev Idx":%lld}})",
      t, 400.0, static_cast<long long>(corr), static_cast<long long>(corr));
  t += 410;
  for (int k = 0; k < kernels; ++k, ++corr) {
    const bool nccl = k % 50 == 49;
    const char* kernel =
        nccl ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
        : k % 3 == 0
            ? "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
              "execute_segment_k_off_kernel__5x_cublas"
            : "void at::native::vectorized_elementwise_kernel<4, "
              "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, "
              "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)";
    const double dur = nccl ? 180.0 : k % 3 == 0 ? 45.25 : 8.125;
    sep();
    std::fprintf(
        f,
        R"({"ph":"X","cat":"cpu_op","name":"%s","pid":1234,"tid":1234,"ts":%.3f,"dur":%.3f,"args":{"External id":%lld,"Sequence number":%lld,"Fwd thread id":0,"Record function id":0,"Concrete Inputs":["","",""],"Input type":["c10::BFloat16","c10::BFloat16","Scalar"],"Input Strides":[[4096,1],[4096,1],[]],"Input Dims":[[8192,4096],[8192,4096],[]],"Ev Idx":%lld}})",
        k % 3 == 0 ? "aten::mm" : "aten::add", t, 14.5, static_cast<long long>(corr),
        static_cast<long long>(corr), static_cast<long long>(corr));
    sep();
    std::fprintf(
        f,
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1234,"tid":1234,"ts":%.3f,"dur":%.3f,"args":{"External id":%lld,"cbid":211,"correlation":%lld}})",
        t + 4, 6.5, static_cast<long long>(corr), static_cast<long long>(corr));
    const double gpu_ts = t + 12;
    sep();
    std::fprintf(
        f,
        R"({"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":%d,"ts":%.3f,"dur":%.3f,"args":{"External id":%lld,"queued":0,"device":0,"context":1,"stream":%d,"correlation":%lld,"registers per thread":168,"shared memory":213248,"blocks per SM":0.5,"warps per SM":2,"grid":[66,1,1],"block":[384,1,1],"est. achieved occupancy %%":0}})",
        kernel, nccl ? 20 : 7, gpu_ts, dur, static_cast<long long>(corr), nccl ? 20 : 7,
        static_cast<long long>(corr));
    sep();
    std::fprintf(
        f, R"({"ph":"s","id":%lld,"pid":1234,"tid":1234,"ts":%.3f,"cat":"ac2g","name":"ac2g"})",
        static_cast<long long>(corr), t + 4);
    sep();
    std::fprintf(
        f, R"({"ph":"f","id":%lld,"pid":0,"tid":7,"ts":%.3f,"cat":"ac2g","name":"ac2g","bp":"e"})",
        static_cast<long long>(corr), gpu_ts);
    t += nccl ? 30 : std::max(dur, 16.0);
  }
  sep();
  std::fprintf(
      f,
      R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1234,"tid":1234,"ts":%.3f,"dur":%.3f,"args":{"External id":1}})",
      step, step_start, t - step_start);
}

// Writes a trace of about `mb` MB; returns its event count.
int64_t write_trace(const std::string& path, int mb) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  std::fputs(
      R"({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3","totalGlobalMem":85029158912,"computeMajor":9,"computeMinor":0,"maxThreadsPerBlock":1024,"numSms":132}],"distributedInfo":{"backend":"nccl","rank":0,"world_size":8},"traceEvents":[)",
      f);
  double t = 1000;
  int64_t corr = 1;
  bool first = true;
  int64_t events = 0;
  constexpr int kKernelsPerStep = 1000;
  for (int step = 0; std::ftell(f) < static_cast<long>(mb) << 20; ++step) {
    write_step(f, step, kKernelsPerStep, t, corr, first);
    events += 5 * kKernelsPerStep + 2;
  }
  std::fputs("\n],\"displayTimeUnit\":\"ms\",\"baseTimeNanoseconds\":1700000000000000000}\n", f);
  std::fclose(f);
  return events;
}

struct Measurement {
  double seconds = 0;
  long max_rss_kb = 0;
  bool ok = false;
};

// Runs `work` in a child; returns its wall time (from the child, via a pipe) and peak RSS.
Measurement in_child(const std::function<bool()>& work) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const auto start = std::chrono::steady_clock::now();
    const bool ok = work();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double msg[2] = {s, ok ? 1.0 : 0.0};
    if (write(fds[1], msg, sizeof msg) != sizeof msg) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  double msg[2] = {0, 0};
  const bool got = read(fds[0], msg, sizeof msg) == sizeof msg;
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {msg[0], usage.ru_maxrss, got && msg[1] == 1.0 && WIFEXITED(status)};
}

bool analyse(const std::string& path) {
  auto r = analyze_kineto_trace_file(path);
  if (!r.is_ok()) std::fprintf(stderr, "%s\n", r.status().to_string().c_str());
  return r.is_ok() && !r->devices.empty();
}

// The baseline: the DOM every JSON library offers, then the same walk over X events.
bool nlohmann_dom(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return false;
  int64_t busy_ns = 0, kernels = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "kernel") continue;
    busy_ns += std::llround(e.at("dur").get<double>() * 1000);
    ++kernels;
  }
  return kernels > 0 && busy_ns > 0;
}

void row(const char* parser, int64_t bytes, int64_t events, const std::vector<Measurement>& runs) {
  std::vector<double> times;
  long rss = 0;
  for (const auto& m : runs) {
    if (!m.ok) {
      fmt::print("| {} | {:.0f} MB | failed |\n", parser, static_cast<double>(bytes) / 1e6);
      return;
    }
    times.push_back(m.seconds);
    rss = std::max(rss, m.max_rss_kb);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  fmt::print("| {} | {:.0f} MB | {:.2f} M | {:.3f} s | {:.0f} MB/s | {:.0f} MB |\n", parser,
             static_cast<double>(bytes) / 1e6, static_cast<double>(events) / 1e6, median,
             static_cast<double>(bytes) / 1e6 / median, static_cast<double>(rss) / 1024);
}

}  // namespace

int main(int argc, char** argv) {
  int mb = 200, baseline_mb = 50, runs = 3;
  std::string write_only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--mb") mb = value;
    if (flag == "--baseline-mb") baseline_mb = value;
    if (flag == "--runs") runs = std::max(1, value);
    if (flag == "--write") write_only = argv[i + 1];
  }
  if (!write_only.empty()) {
    fmt::print("{}: {} events\n", write_only, write_trace(write_only, mb));
    return 0;
  }
  const auto dir = std::filesystem::temp_directory_path();
  const std::string big = (dir / fmt::format("ty_kineto_bench_{}_{}.json", getpid(), mb)).string();
  const std::string small =
      (dir / fmt::format("ty_kineto_bench_{}_{}.json", getpid(), baseline_mb)).string();
  const int64_t big_events = write_trace(big, mb);
  const int64_t small_events = write_trace(small, baseline_mb);
  const auto big_bytes = static_cast<int64_t>(std::filesystem::file_size(big));
  const auto small_bytes = static_cast<int64_t>(std::filesystem::file_size(small));
  fmt::print("JSON backend: {}; median of {} runs, file already in the page cache\n\n",
             trainyard::telemetry::kineto_json_backend(), runs);
  fmt::print(
      "| parser | trace | events | time | throughput | peak RSS |\n|---|---|---|---|---|---|\n");
  for (const auto& [path, bytes, events, with_baseline] :
       {std::tuple{small, small_bytes, small_events, true},
        std::tuple{big, big_bytes, big_events, false}}) {
    std::vector<Measurement> ours, dom;
    for (int r = 0; r < runs; ++r) ours.push_back(in_child([&] { return analyse(path); }));
    row("trainyard (simdjson On-Demand, full analysis)", bytes, events, ours);
    if (!with_baseline) continue;
    for (int r = 0; r < runs; ++r) dom.push_back(in_child([&] { return nlohmann_dom(path); }));
    row("nlohmann::json DOM + walk (baseline)", bytes, events, dom);
  }
  std::filesystem::remove(big);
  std::filesystem::remove(small);
  return 0;
}
