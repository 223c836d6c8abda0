#include "telemetry/kineto_trace.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace trainyard::telemetry {
namespace {

// Writes Kineto-shaped traces: the fields and categories PyTorch's profiler emits.
class TraceBuilder {
 public:
  TraceBuilder& gpu(std::string_view name, double ts, double dur, int64_t stream,
                    int64_t correlation, int device = 0, std::string_view cat = "kernel") {
    events_.push_back(fmt::format(
        R"({{"ph":"X","cat":"{}","name":"{}","pid":{},"tid":{},"ts":{},"dur":{},)"
        R"("args":{{"device":{},"context":1,"stream":{},"correlation":{},"grid":[1,1,1]}}}})",
        cat, name, device, stream, ts, dur, device, stream, correlation));
    return *this;
  }
  TraceBuilder& launch(double ts, double dur, int64_t correlation,
                       std::string_view name = "cudaLaunchKernel") {
    events_.push_back(fmt::format(
        R"({{"ph":"X","cat":"cuda_runtime","name":"{}","pid":100,"tid":100,"ts":{},"dur":{},)"
        R"("args":{{"cbid":211,"correlation":{},"External id":7}}}})",
        name, ts, dur, correlation));
    return *this;
  }
  TraceBuilder& cpu(std::string_view name, double ts, double dur, std::string_view cat = "cpu_op") {
    events_.push_back(fmt::format(
        R"({{"ph":"X","cat":"{}","name":"{}","pid":100,"tid":100,"ts":{},"dur":{},"args":{{}}}})",
        cat, name, ts, dur));
    return *this;
  }
  TraceBuilder& raw(std::string event) {
    events_.push_back(std::move(event));
    return *this;
  }
  std::string build(
      std::string_view extra = R"("distributedInfo":{"backend":"nccl","rank":3},)") const {
    std::string out = fmt::format(R"({{"schemaVersion":1,{}"traceEvents":[)", extra);
    for (size_t i = 0; i < events_.size(); ++i) out += (i ? ",\n" : "\n") + events_[i];
    out += R"(],"displayTimeUnit":"ms","baseTimeNanoseconds":1700000000000000000})";
    return out;
  }

 private:
  std::vector<std::string> events_;
};

// Device 0 with known intervals (µs):
//   stream 7: gemm [100,150), memcpy [250,270), elementwise [280,290), elementwise [400,420)
//   stream 8: nccl all-reduce [130,200)
// busy = [100,200) + [250,270) + [280,290) + [400,420) = 150 of a 320 span.
std::string known_trace() {
  return TraceBuilder()
      .gpu("volta_sgemm_128x64_nn", 100, 50, 7, 1)
      .launch(80, 10, 1)
      .gpu("ncclKernel_AllReduce_RING_LL_Sum_float", 130, 70, 8, 2)
      .launch(90, 5, 2)
      .gpu("Memcpy HtoD (Pageable -> Device)", 250, 20, 7, 3, 0, "gpu_memcpy")
      .launch(240, 5, 3, "cudaMemcpyAsync")
      .gpu("elementwise_kernel", 280, 10, 7, 4)
      .launch(200, 5, 4)
      .gpu("elementwise_kernel", 400, 20, 7, 5)
      .launch(250, 5, 5)
      .gpu("other_device_kernel", 1000, 5, 7, 6, 1)
      .cpu("ProfilerStep#1", 0, 200)
      .cpu("ProfilerStep#1", 0, 200, "user_annotation")  // recorded twice: counted once
      .cpu("ProfilerStep#2", 200, 300)
      .cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 10, 20, "user_annotation")
      .cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 210, 30,
           "user_annotation")
      .gpu("ProfilerStep#1", 100, 320, 7, -1, 0, "gpu_user_annotation")  // not GPU work
      .raw(R"({"ph":"M","name":"process_name","pid":0,"args":{"name":"GPU 0"}})")
      .raw(
          R"({"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":100,"tid":100,"ts":5,"s":"t","args":{"Bytes":512}})")
      .raw(R"({"ph":"s","id":1,"pid":100,"tid":100,"ts":80,"cat":"ac2g","name":"ac2g"})")
      .build();
}

TraceAnalysis analyze_ok(const std::string& json, const TraceOptions& options = {}) {
  auto r = analyze_kineto_trace(json, options);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : TraceAnalysis{};
}

TEST(KinetoTrace, TemporalBreakdownOfKnownIntervals) {
  const TraceAnalysis a = analyze_ok(known_trace());
  EXPECT_EQ(a.rank, 3);
  EXPECT_EQ(a.events, 20);
  EXPECT_EQ(a.complete_events, 17);
  EXPECT_EQ(a.gpu_events, 6);
  ASSERT_EQ(a.devices.size(), 2u);
  const DeviceTimeline& d = a.devices[0];
  EXPECT_EQ(d.device, 0);
  EXPECT_EQ(d.events, 5);
  EXPECT_DOUBLE_EQ(d.span_us, 320);
  EXPECT_DOUBLE_EQ(d.busy_us, 150);
  EXPECT_DOUBLE_EQ(d.idle_us, 170);
  EXPECT_DOUBLE_EQ(d.compute_us, 80);
  EXPECT_DOUBLE_EQ(d.non_compute_us, 70);
  EXPECT_DOUBLE_EQ(d.communication_us, 70);
  EXPECT_DOUBLE_EQ(d.memory_us, 20);
  EXPECT_DOUBLE_EQ(d.overlap_us, 20);  // gemm [100,150) ∩ all-reduce [130,200)
  EXPECT_DOUBLE_EQ(d.compute_kernel_us, 80);
  EXPECT_DOUBLE_EQ(d.gemm_us, 50);
  EXPECT_DOUBLE_EQ(d.tensor_core_us, 0);
  EXPECT_EQ(a.devices[1].device, 1);
  EXPECT_DOUBLE_EQ(a.devices[1].span_us, 5);
}

TEST(KinetoTrace, IdleTimePerStreamByCause) {
  const DeviceTimeline d = analyze_ok(known_trace()).devices.at(0);
  ASSERT_EQ(d.streams.size(), 2u);
  const StreamIdle& s7 = d.streams[0];
  EXPECT_EQ(s7.stream, 7);
  EXPECT_EQ(s7.events, 4);
  EXPECT_DOUBLE_EQ(s7.host_wait_us, 100);   // memcpy launched at 240, after the gemm ended at 150
  EXPECT_DOUBLE_EQ(s7.kernel_wait_us, 10);  // queued early; 10 µs gap < 30 µs
  EXPECT_DOUBLE_EQ(s7.other_us, 110);       // queued early; 110 µs gap
  EXPECT_DOUBLE_EQ(s7.idle_us, 220);
  EXPECT_EQ(d.streams[1].stream, 8);
  EXPECT_DOUBLE_EQ(d.streams[1].idle_us, 0);
}

TEST(KinetoTrace, LaunchStatistics) {
  const LaunchStats l = analyze_ok(known_trace()).devices.at(0).launch;
  EXPECT_EQ(l.kernels, 4);        // memcpy excluded
  EXPECT_EQ(l.short_kernels, 2);  // 10 and 20 µs; 50 µs is not shorter than 50
  EXPECT_EQ(l.joined, 5);
  // delays: 100-90=10, 130-95=35, 250-245=5, 280-205=75, 400-255=145
  EXPECT_DOUBLE_EQ(l.delay_mean_us, 54);
  EXPECT_DOUBLE_EQ(l.delay_max_us, 145);
  EXPECT_DOUBLE_EQ(l.delay_p50_us, 35);
  EXPECT_EQ(l.delayed, 1);
  EXPECT_EQ(l.slow_launches, 0);
  EXPECT_EQ(l.shorter_than_launch, 0);
  EXPECT_DOUBLE_EQ(l.launch_mean_us, 6);
}

TEST(KinetoTrace, LaunchDelayIsClippedAtZero) {
  // The kernel's timestamp is before its launch call ended (clock skew): delay 0, not negative.
  auto a = analyze_ok(TraceBuilder().gpu("k", 100, 10, 7, 1).launch(95, 10, 1).build());
  EXPECT_DOUBLE_EQ(a.devices.at(0).launch.delay_max_us, 0);
  EXPECT_EQ(a.devices.at(0).launch.shorter_than_launch, 0);
}

TEST(KinetoTrace, TopKernelsByTotalTime) {
  const TraceAnalysis a = analyze_ok(known_trace());
  const auto& top = a.devices.at(0).top_kernels;
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].name, "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(top[0].kind, KernelClass::Communication);
  EXPECT_EQ(top[1].name, "volta_sgemm_128x64_nn");
  EXPECT_EQ(top[2].name, "elementwise_kernel");
  EXPECT_EQ(top[2].count, 2);
  EXPECT_DOUBLE_EQ(top[2].total_us, 30);
  EXPECT_DOUBLE_EQ(top[2].mean_us, 15);
  EXPECT_DOUBLE_EQ(top[2].min_us, 10);
  EXPECT_DOUBLE_EQ(top[2].max_us, 20);
  EXPECT_EQ(top[3].kind, KernelClass::Memory);
  TraceOptions two;
  two.top_kernels = 2;
  EXPECT_EQ(analyze_ok(known_trace(), two).devices.at(0).top_kernels.size(), 2u);
}

TEST(KinetoTrace, IterationsAndDataLoaderShare) {
  const TraceAnalysis a = analyze_ok(known_trace());
  ASSERT_EQ(a.iterations.size(), 2u);
  EXPECT_EQ(a.iterations[0].step, 1);
  EXPECT_DOUBLE_EQ(a.iterations[0].dur_us, 200);
  EXPECT_DOUBLE_EQ(a.iterations[0].data_loader_us, 20);
  EXPECT_DOUBLE_EQ(a.iterations[1].data_loader_us, 30);
  EXPECT_DOUBLE_EQ(a.step_total_us, 500);
  ASSERT_TRUE(a.data_loader_share.has_value());
  EXPECT_DOUBLE_EQ(*a.data_loader_share, 0.1);
}

TEST(KinetoTrace, KernelClassesAndTensorCoreNames) {
  EXPECT_EQ(
      classify_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"),
      KernelClass::Communication);
  EXPECT_EQ(classify_kernel("void at::native::ncclKernel_x"), KernelClass::Communication);
  EXPECT_EQ(classify_kernel("Memset (Device)"), KernelClass::Memory);
  EXPECT_EQ(classify_kernel("dma_copy"), KernelClass::Memory);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4>"),
            KernelClass::Compute);
  EXPECT_TRUE(is_tensor_core_kernel("volta_h884gemm_64x64_nn"));
  EXPECT_TRUE(is_tensor_core_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn"));
  EXPECT_TRUE(is_tensor_core_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"));
  EXPECT_TRUE(is_tensor_core_kernel("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize64x64x32"));
  EXPECT_TRUE(is_tensor_core_kernel("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"));
  EXPECT_TRUE(is_tensor_core_kernel("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>"));
  EXPECT_FALSE(is_tensor_core_kernel("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8"));
  EXPECT_FALSE(is_tensor_core_kernel("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(is_tensor_core_kernel("void at::native::vectorized_elementwise_kernel<4>"));
  EXPECT_TRUE(is_gemm_kernel("ampere_sgemm_128x64_nn"));
  EXPECT_TRUE(is_gemm_kernel("void implicit_convolve_sgemm<float, float>"));
  EXPECT_FALSE(is_gemm_kernel("void at::native::unrolled_elementwise_kernel<convert>"));
}

// `n` kernels of `dur` µs, one every `period` µs, each launched just in time.
std::string kernel_train(std::string_view name, int n, double dur, double period, int cc = 8) {
  TraceBuilder b;
  for (int i = 0; i < n; ++i) {
    b.gpu(name, 1000 + i * period, dur, 7, i + 1).launch(1000 + i * period - 8, 5, i + 1);
  }
  return b.build(fmt::format(R"("deviceProperties":[{{"id":0,"computeMajor":{}}}],)", cc));
}

const Finding* find(const TraceAnalysis& a, std::string_view rule) {
  for (const auto& f : a.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

TEST(KinetoTraceFindings, LaunchBoundWhenShortKernelsLeaveTheGpuIdle) {
  auto bound = analyze_ok(kernel_train("elementwise_kernel", 200, 10, 40));
  const Finding* f = find(bound, "launch-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.at(0).find("100.0% of 200 kernels shorter than 50 µs"), std::string::npos)
      << f->evidence.at(0);
  EXPECT_NE(f->action.find("CUDA graph"), std::string::npos);
  // Long kernels back to back: neither launch-bound nor idle.
  auto busy = analyze_ok(kernel_train("elementwise_kernel", 200, 100, 101));
  EXPECT_TRUE(busy.findings.empty());
  // Short kernels but the GPU idle only 16.7% (10 of every 12 µs busy... idle 2/12).
  EXPECT_EQ(find(analyze_ok(kernel_train("elementwise_kernel", 200, 10, 12)), "launch-bound"),
            nullptr);
  // Too few kernels to judge.
  EXPECT_TRUE(analyze_ok(kernel_train("elementwise_kernel", 50, 10, 40)).findings.empty());
}

TEST(KinetoTraceFindings, NoTensorCoresWhileGemmsRun) {
  const Finding* f = nullptr;
  auto fp32 = analyze_ok(kernel_train("ampere_sgemm_128x64_nn", 200, 100, 101));
  f = find(fp32, "no-tensor-cores");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->action.find("autocast"), std::string::npos);
  EXPECT_EQ(find(analyze_ok(kernel_train("ampere_bf16_s16816gemm_bf16_128x128", 200, 100, 101)),
                 "no-tensor-cores"),
            nullptr);
  // Pascal (compute capability 6) has no tensor cores to use.
  EXPECT_EQ(find(analyze_ok(kernel_train("maxwell_sgemm_128x64_nn", 200, 100, 101, 6)),
                 "no-tensor-cores"),
            nullptr);
}

TEST(KinetoTraceFindings, CommunicationBoundWhenNotOverlapped) {
  TraceBuilder b;
  for (int i = 0; i < 150; ++i) {
    const double t = 1000 + i * 100;
    b.gpu("void gemm_like_compute", t, 70, 7, -1).gpu("ncclKernel_AllReduce", t + 70, 30, 8, -1);
  }
  auto a = analyze_ok(b.build());
  const Finding* f = find(a, "communication-bound");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->evidence.at(0).find("0.0% of it overlapped"), std::string::npos)
      << f->evidence.at(0);
  // The same communication running under compute is hidden.
  TraceBuilder hidden;
  for (int i = 0; i < 150; ++i) {
    const double t = 1000 + i * 100;
    hidden.gpu("void gemm_like_compute", t, 100, 7, -1)
        .gpu("ncclKernel_AllReduce", t + 50, 30, 8, -1);
  }
  EXPECT_EQ(find(analyze_ok(hidden.build()), "communication-bound"), nullptr);
}

TEST(KinetoTraceFindings, DataLoaderAboveFivePercentOfStep) {
  auto with_loader = [](double loader_us) {
    TraceBuilder b;
    for (int i = 0; i < 4; ++i) {
      b.cpu(fmt::format("ProfilerStep#{}", i), i * 1000, 1000)
          .cpu("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", i * 1000 + 1,
               loader_us, "user_annotation");
    }
    return analyze_ok(b.build());
  };
  const auto above = with_loader(60);
  ASSERT_NE(find(above, "input-bound"), nullptr);
  EXPECT_DOUBLE_EQ(*above.data_loader_share, 0.06);
  EXPECT_EQ(find(with_loader(40), "input-bound"), nullptr);
}

TEST(KinetoTrace, ReportAndJsonCarryTheNumbers) {
  const TraceAnalysis a = analyze_ok(known_trace());
  const std::string report = format_trace_report(a);
  EXPECT_NE(report.find("device 0: span 0.3 ms, busy 46.9%"), std::string::npos) << report;
  EXPECT_NE(report.find("stream 7: 4 events"), std::string::npos) << report;
  EXPECT_NE(report.find("ncclKernel_AllReduce_RING_LL_Sum_float"), std::string::npos);
  const auto j = to_json(a);
  EXPECT_EQ(j["rank"], 3);
  EXPECT_DOUBLE_EQ(j["devices"][0]["busy_us"].get<double>(), 150);
  EXPECT_DOUBLE_EQ(j["devices"][0]["launch"]["delay_max_us"].get<double>(), 145);
  EXPECT_EQ(j["devices"][0]["top_kernels"][0]["class"], "communication");
  EXPECT_DOUBLE_EQ(j["data_loader_share"].get<double>(), 0.1);
}

std::string error_of(std::string_view json) {
  auto r = analyze_kineto_trace(json);
  return r.is_ok() ? "accepted" : r.status().message();
}

TEST(KinetoTrace, MalformedInputGivesPreciseErrors) {
  EXPECT_NE(error_of("").find("not JSON"), std::string::npos) << error_of("");
  EXPECT_NE(error_of("hello").find("not"), std::string::npos) << error_of("hello");
  EXPECT_NE(error_of("[]").find("top level must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"schemaVersion":1})").find("no \"traceEvents\""), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":5})").find("must be an array"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"M"},7]})")
                .find("traceEvents[1]: an event must be a JSON object"),
            std::string::npos)
      << error_of(R"({"traceEvents":[{"ph":"M"},7]})");
  const std::string bad_ts = R"({"traceEvents":[{"ph":"X","name":"k","ts":"12","dur":1}]})";
  EXPECT_NE(error_of(bad_ts).find("traceEvents[0]: `ts` must be a number"), std::string::npos)
      << error_of(bad_ts);
  EXPECT_NE(error_of(bad_ts).find("byte "), std::string::npos) << error_of(bad_ts);
  EXPECT_NE(
      error_of(R"({"traceEvents":[{"ph":"X","name":"k","ts":1}]})").find("needs `ts` and `dur`"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"X","ts":1,"dur":-4}]})").find("`dur` must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"X","ts":1e300,"dur":1}]})").find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"X","ts":1,)"), "accepted");
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"X","ts":1,"dur":2}] )"), "accepted");
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"X","ts":1,"dur":2,"name":"\x)"), "accepted");
}

TEST(KinetoTrace, EmptyTraceHasNoDevicesAndNoFindings) {
  auto a = analyze_ok(R"({"traceEvents":[]})");
  EXPECT_TRUE(a.devices.empty());
  EXPECT_TRUE(a.findings.empty());
  EXPECT_FALSE(a.rank.has_value());
}

TEST(KinetoTrace, TensorCoreShareIsOfGemmTimeOnly) {
  // A tensor-core GEMM, a plain fp32 GEMM and a tensor-core attention kernel (not a GEMM), 100 µs
  // each: half the GEMM time is on tensor cores. Counting the attention kernel too gave 100%,
  // and on a real trace over 100%.
  const TraceAnalysis a =
      analyze_ok(TraceBuilder()
                     .gpu("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", 0, 100, 7, 1)
                     .gpu("volta_sgemm_128x64_nn", 100, 100, 7, 2)
                     .gpu("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26",
                          200, 100, 7, 3)
                     .build());
  ASSERT_EQ(a.devices.size(), 1u);
  EXPECT_DOUBLE_EQ(a.devices[0].gemm_us, 200);
  EXPECT_DOUBLE_EQ(a.devices[0].tensor_core_us, 100);
}

TEST(KinetoTrace, ARealH100TraceOfABf16Transformer) {
  // tests/data/README.md says how it was recorded.
  auto a = analyze_kineto_trace_file(std::string(TY_SOURCE_DIR) +
                                     "/tests/data/kineto/h100-transformer-bf16.pt.trace.json.gz");
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_EQ(a->devices.size(), 1u);
  const DeviceTimeline& d = a->devices[0];
  EXPECT_EQ(a->iterations.size(), 3u);
  EXPECT_GT(d.busy_us, 0.75 * d.span_us);  // a GPU-bound loop: 79% busy in this recording
  EXPECT_GT(d.gemm_us, 0.2 * d.compute_kernel_us);
  // bf16 autocast: the GEMMs (cuBLAS nvjet) run on tensor cores, nearly all of them.
  EXPECT_GT(d.tensor_core_us, 0.9 * d.gemm_us);
  EXPECT_LE(d.tensor_core_us, d.gemm_us);
  for (const auto& f : a->findings) EXPECT_NE(f.rule, "no-tensor-cores") << f.summary;
}

TEST(KinetoTrace, ReadsPlainAndGzipFiles) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("ty_kineto_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const auto plain = dir / "trace.json";
  std::ofstream(plain) << known_trace();
  auto a = analyze_kineto_trace_file(plain.string());
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_DOUBLE_EQ(a->devices.at(0).busy_us, 150);
  const std::string gz = (dir / "trace.json.gz").string();
  if (std::system(("gzip -c " + plain.string() + " > " + gz).c_str()) == 0) {
    auto b = analyze_kineto_trace_file(gz);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_DOUBLE_EQ(b->devices.at(0).busy_us, 150);
  }
  std::ofstream(dir / "bad.json") << R"({"traceEvents":[{"ph":"X","ts":"x","dur":1}]})";
  auto bad = analyze_kineto_trace_file((dir / "bad.json").string());
  ASSERT_FALSE(bad.is_ok());
  EXPECT_TRUE(bad.status().message().starts_with((dir / "bad.json").string() + ": byte "))
      << bad.status().message();
  EXPECT_EQ(analyze_kineto_trace_file((dir / "missing.json").string()).status().code(),
            util::StatusCode::NotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainyard::telemetry
