// Reading the server's JSON replies into the API views (model/api_views.h), so that commands use
// typed fields instead of string keys. A reply that lacks a field, or has one of another type,
// is an error naming the endpoint and the field (never a JSON exception or a silent default):
// "GET /api/v1/jobs/3: unexpected reply: field 'state' is missing (expected a string); ...".
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/api_views.h"
#include "util/status.h"

namespace trainyard::cli {

// The error for a reply from `endpoint` ("GET /api/v1/jobs") that from_json refused with `st`.
util::Status unexpected_reply(std::string_view endpoint, const util::Status& st);

template <typename View>
util::Result<View> read_reply(const nlohmann::json& reply, std::string_view endpoint) {
  View v;
  // Unqualified: the views' from_json overloads are found by argument-dependent lookup.
  if (auto st = from_json(reply, v); !st.is_ok()) return unexpected_reply(endpoint, st);
  return v;
}

// A view with the reply it was read from, for -o json and -o yaml, which print what the server
// said (keys of a newer server included).
template <typename View>
struct Reply {
  View view;
  nlohmann::json raw;
};

}  // namespace trainyard::cli
