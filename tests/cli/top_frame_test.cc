// top's frame: a process's command line is shown on one line, without the control characters a
// process may put in its own argv (newlines of a `sh -c` script, terminal escape sequences).
#include "cli/top_frame.h"

#include <gtest/gtest.h>

#include <string>

namespace trainyard::cli {
namespace {

std::string frame_for(const std::string& command) {
  model::GpuDeviceView device{.index = 0, .uuid = "GPU-0", .model = "H100-80GB"};
  device.measurements.time = "2026-11-26T06:00:00.000Z";
  device.processes = {{.pid = 42, .command = command}};
  return render_top_frame(model::GpuListView{.items = {device}}, "http://127.0.0.1:8765",
                          TopView{});
}

TEST(TopFrame, ACommandLineIsOneLineWithoutControlCharacters) {
  const std::string frame = frame_for("sh -c echo a\n  trap x TERM\n\x1b[2Jwait");
  EXPECT_NE(frame.find("sh -c echo a trap x TERM [2Jwait"), std::string::npos) << frame;
  EXPECT_EQ(frame.find('\x1b'), std::string::npos);
  EXPECT_EQ(frame.find("\n  trap"), std::string::npos);
}

TEST(TopFrame, RowsFromTheView) {
  model::GpuDeviceView d{.index = 1, .uuid = "GPU-1", .model = "A100-40GB"};
  d.measurements = {.time = "2026-11-26T06:00:00.000Z",
                    .gpu_util_percent = 50.0,
                    .memory_used_bytes = 10737418240,
                    .memory_total_bytes = 42949672960,
                    .temperature_c = 61.0,
                    .power_w = 250.0};
  d.jobs = {{.id = 7, .team = "vision", .name = "train"}, {.id = 8, .team = "nlp"}};
  d.processes = {{.pid = 9, .memory_bytes = 1073741824, .job = 7, .user = "alice"}};
  TopView view;
  const model::GpuListView gpus{.items = {d}, .interval_seconds = 2.0};
  record_history(view, gpus);
  const std::string frame = render_top_frame(gpus, "http://s", view);
  EXPECT_NE(frame.find("sampled 2026-11-26T06:00:00.000Z"), std::string::npos) << frame;
  EXPECT_NE(frame.find("10.0/40.0 GiB"), std::string::npos) << frame;
  EXPECT_NE(frame.find("7 train (vision), 8 (nlp)"), std::string::npos) << frame;
  EXPECT_NE(frame.find("alice"), std::string::npos) << frame;
  EXPECT_EQ(view.utilization["GPU-1"].size(), 1u);
}

TEST(TopFrame, APlainCommandIsShownAsItIs) {
  EXPECT_NE(frame_for("python train.py --lr 3e-4").find("python train.py --lr 3e-4"),
            std::string::npos);
}

}  // namespace
}  // namespace trainyard::cli
