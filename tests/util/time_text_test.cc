#include "util/time_text.h"

#include <gtest/gtest.h>

namespace trainyard::util {
namespace {

TEST(TimeText, ParsesRfc3339WithZoneAndFraction) {
  auto z = parse_rfc3339("2026-11-26T10:00:00Z");
  ASSERT_TRUE(z.is_ok()) << z.status().message();
  EXPECT_EQ(format_time(*z), "2026-11-26T10:00:00Z");
  auto plus = parse_rfc3339("2026-11-26T11:30:00+01:30");
  ASSERT_TRUE(plus.is_ok());
  EXPECT_EQ(*plus, *z);
  auto frac = parse_rfc3339("2026-11-26T10:00:00.25Z");
  ASSERT_TRUE(frac.is_ok());
  EXPECT_EQ((*frac - *z).count(), 250000);
  auto minus = parse_rfc3339("2026-11-26T05:00:00-05:00");
  ASSERT_TRUE(minus.is_ok());
  EXPECT_EQ(*minus, *z);
}

TEST(TimeText, RejectsTimesWithoutZoneOrOutOfRange) {
  for (const char* bad :
       {"2026-11-26T10:00:00", "2026-11-26", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-11-26T24:00:00Z", "10m", "2026-11-26T10:00:00Zjunk", "2026-11-26T10:00:00.Z"}) {
    auto t = parse_rfc3339(bad);
    EXPECT_FALSE(t.is_ok()) << bad;
    if (!t.is_ok()) {
      EXPECT_NE(t.status().message().find("RFC 3339"), std::string::npos);
    }
  }
}

TEST(TimeText, ParsesKubectlDurations) {
  EXPECT_EQ(*parse_duration("90s"), seconds(90));
  EXPECT_EQ(*parse_duration("10m"), seconds(600));
  EXPECT_EQ(*parse_duration("1h30m"), seconds(5400));
  EXPECT_EQ(parse_duration("500ms")->count(), 500000);
  for (const char* bad : {"", "10", "m", "-5m", "10x", "0s", "1h-5m"}) {
    auto d = parse_duration(bad);
    EXPECT_FALSE(d.is_ok()) << bad;
    if (!d.is_ok()) {
      EXPECT_NE(d.status().message().find("10m"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace trainyard::util
