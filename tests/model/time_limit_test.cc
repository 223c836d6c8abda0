#include "model/time_limit.h"

#include <gtest/gtest.h>

namespace trainyard::model {
namespace {

int64_t seconds_of(std::string_view text) {
  auto r = parse_time_limit(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().to_string();
  return r.is_ok() ? std::chrono::duration_cast<std::chrono::seconds>(*r).count() : -1;
}

TEST(TimeLimit, ReadsTheFormsSbatchTakes) {
  EXPECT_EQ(seconds_of("90"), 90 * 60);  // minutes, as sbatch reads a bare number
  EXPECT_EQ(seconds_of("30:15"), 30 * 60 + 15);
  EXPECT_EQ(seconds_of("02:00:00"), 7200);
  EXPECT_EQ(seconds_of("1-12"), 86400 + 12 * 3600);
  EXPECT_EQ(seconds_of("1-12:30"), 86400 + 12 * 3600 + 30 * 60);
  EXPECT_EQ(seconds_of("2-00:00:05"), 2 * 86400 + 5);
}

TEST(TimeLimit, ReadsAmountsWithUnits) {
  EXPECT_EQ(seconds_of("2h"), 7200);
  EXPECT_EQ(seconds_of("90m"), 5400);
  EXPECT_EQ(seconds_of("3600s"), 3600);
  EXPECT_EQ(seconds_of("1h30m"), 5400);
  EXPECT_EQ(seconds_of("2d"), 2 * 86400);
  EXPECT_EQ(seconds_of("1d2h3m4s"), 86400 + 7200 + 180 + 4);
}

TEST(TimeLimit, RefusesOtherTextWithTheFormsInTheMessage) {
  for (const char* bad : {"", "2x", "h", "1m2h", "1:2:3:4", "-5", "1-", "5h-", ":30", "2 h", "1.5h",
                          "0", "0s", "00:00:00", "4000d"}) {
    auto r = parse_time_limit(bad);
    EXPECT_FALSE(r.is_ok()) << "'" << bad << "' was accepted";
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().code(), util::StatusCode::InvalidArgument);
      EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos)
          << r.status().message();
    }
  }
}

}  // namespace
}  // namespace trainyard::model
