// top's frame: a process's command line is shown on one line, without the control characters a
// process may put in its own argv (newlines of a `sh -c` script, terminal escape sequences).
#include "cli/top_frame.h"

#include <gtest/gtest.h>

#include <string>

namespace trainyard::cli {
namespace {

std::string frame_for(const std::string& command) {
  nlohmann::json device = nlohmann::json::parse(R"({"index": 0, "uuid": "GPU-0",
      "model": "H100-80GB", "time": "2026-11-26T06:00:00.000Z", "jobs": []})");
  device["processes"] = nlohmann::json::array({{{"pid", 42}, {"command", command}}});
  const nlohmann::json gpus = {{"items", nlohmann::json::array({device})}};
  return render_top_frame(gpus, "http://127.0.0.1:8765", TopView{});
}

TEST(TopFrame, ACommandLineIsOneLineWithoutControlCharacters) {
  const std::string frame = frame_for("sh -c echo a\n  trap x TERM\n\x1b[2Jwait");
  EXPECT_NE(frame.find("sh -c echo a trap x TERM [2Jwait"), std::string::npos) << frame;
  EXPECT_EQ(frame.find('\x1b'), std::string::npos);
  EXPECT_EQ(frame.find("\n  trap"), std::string::npos);
}

TEST(TopFrame, APlainCommandIsShownAsItIs) {
  EXPECT_NE(frame_for("python train.py --lr 3e-4").find("python train.py --lr 3e-4"),
            std::string::npos);
}

}  // namespace
}  // namespace trainyard::cli
