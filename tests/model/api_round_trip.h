// The round trip every API view test makes: a view's JSON reads back into the view, which
// writes the same JSON again (the same bytes on the wire).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/api_views.h"

namespace trainyard::model {

template <typename View>
View round_trip(const View& v) {
  const nlohmann::json j = to_json(v);
  auto back = view_from_json<View>(j);
  EXPECT_TRUE(back.is_ok()) << back.status().message() << "\n" << j.dump(2);
  if (!back.is_ok()) return View{};
  EXPECT_EQ(to_json(*back), j);
  return *back;
}

}  // namespace trainyard::model
