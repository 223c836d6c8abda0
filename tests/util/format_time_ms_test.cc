#include <gtest/gtest.h>

#include "util/clock.h"

namespace trainyard::util {
namespace {

Time at_micros(int64_t us) {
  return kEpoch + Duration(us);
}

TEST(FormatTimeMs, AddsMillisecondsToTheSecondsForm) {
  EXPECT_EQ(format_time_ms(from_millis(1795732808123)), "2026-11-26T22:40:08.123Z");
  EXPECT_EQ(format_time_ms(from_millis(1795732808000)), "2026-11-26T22:40:08.000Z");
  EXPECT_EQ(format_time_ms(from_millis(1795732808007)), "2026-11-26T22:40:08.007Z");
  EXPECT_EQ(format_time_ms(kEpoch), "1970-01-01T00:00:00.000Z");
}

TEST(FormatTimeMs, CutsMicrosecondsOff) {
  EXPECT_EQ(format_time_ms(at_micros(1'999'999)), "1970-01-01T00:00:01.999Z");
  EXPECT_EQ(format_time_ms(at_micros(999)), "1970-01-01T00:00:00.000Z");
}

TEST(FormatTimeMs, KeepsTheSecondsPartOfFormatTime) {
  for (const int64_t ms : {int64_t{0}, int64_t{59'999}, int64_t{1795732808999}}) {
    const std::string whole = format_time(from_millis(ms));
    EXPECT_EQ(format_time_ms(from_millis(ms)).substr(0, whole.size() - 1),
              whole.substr(0, whole.size() - 1));
  }
}

// Before 1970 both parts are cut toward the epoch, and the milliseconds are shown as the
// distance up from a whole second: the form the API has always given such times.
TEST(FormatTimeMs, PreEpochTimesKeepTheirLongstandingForm) {
  EXPECT_EQ(format_time_ms(from_millis(-1)), "1970-01-01T00:00:00.999Z");
  EXPECT_EQ(format_time_ms(from_millis(-250)), "1970-01-01T00:00:00.750Z");
  EXPECT_EQ(format_time_ms(from_millis(-1000)), "1969-12-31T23:59:59.000Z");
  EXPECT_EQ(format_time_ms(from_millis(-1500)), "1969-12-31T23:59:59.500Z");
  EXPECT_EQ(format_time_ms(at_micros(-1)), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_time_ms(at_micros(-1'500)), "1970-01-01T00:00:00.999Z");
}

TEST(FromMillis, IsMillisecondsSinceTheEpoch) {
  EXPECT_EQ(from_millis(1500) - kEpoch, Duration(1'500'000));
  EXPECT_EQ(from_millis(-2) - kEpoch, Duration(-2'000));
}

}  // namespace
}  // namespace trainyard::util

namespace trainyard::util {
namespace {

// The millisecond wire form of sample times and the minute a sample's row belongs to: both cut
// toward minus infinity, so that a time just before the epoch is not counted in the minute after.
TEST(SampleTimes, MillisAndMinutesRoundDown) {
  EXPECT_EQ(to_millis(from_millis(1795732808123)), 1795732808123);
  EXPECT_EQ(to_millis(from_millis(1795732808123) + Duration(999)), 1795732808123);
  EXPECT_EQ(to_millis(kEpoch - Duration(1)), -1);
  EXPECT_EQ(minute_of(from_millis(1795732808123)), from_millis(1795732800000));
  EXPECT_EQ(minute_of(from_millis(1795732800000)), from_millis(1795732800000));
  EXPECT_EQ(minute_of(kEpoch - Duration(1)), kEpoch - seconds(60));
}

}  // namespace
}  // namespace trainyard::util
