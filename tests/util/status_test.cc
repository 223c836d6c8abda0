#include "util/status.h"

#include <gtest/gtest.h>

#include "util/clock.h"

namespace trainyard::util {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("must be positive");
  return v;
}

Result<int> doubled(int v) {
  TY_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_both(int a, int b) {
  TY_RETURN_IF_ERROR(parse_positive(a).status());
  TY_RETURN_IF_ERROR(parse_positive(b).status().with_context("second"));
  return Status::ok();
}

TEST(Status, PropagatesErrorsThroughMacros) {
  EXPECT_EQ(*doubled(4), 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(bad.status().to_string(), "InvalidArgument: must be positive");
  EXPECT_TRUE(check_both(1, 2).is_ok());
  EXPECT_EQ(check_both(1, 0).message(), "second: must be positive");
}

TEST(VirtualClock, MovesOnlyForward) {
  VirtualClock clock(from_seconds(10));
  EXPECT_EQ(to_seconds(clock.now()), 10.0);
  clock.advance_to(from_seconds(25.5));
  EXPECT_EQ(to_seconds(clock.now()), 25.5);
  EXPECT_DEATH(clock.advance_to(from_seconds(1)), "backwards");
}

TEST(FormatTime, RendersUtc) {
  EXPECT_EQ(format_time(from_seconds(86400)), "1970-01-02T00:00:00Z");
}

}  // namespace
}  // namespace trainyard::util
