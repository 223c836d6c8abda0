// The API calls of the commands, answered as views (cli/api_reply.h): GET, POST or DELETE a path
// and read the reply, whose errors name "METHOD path".
#pragma once

#include <string>

#include "cli/api_reply.h"
#include "cli/client.h"

namespace trainyard::cli {

template <typename View>
util::Result<Reply<View>> get_reply(ApiClient& api, const std::string& path) {
  TY_ASSIGN_OR_RETURN(nlohmann::json raw, api.get(path));
  TY_ASSIGN_OR_RETURN(View view, read_reply<View>(raw, "GET " + path));
  return Reply<View>{.view = std::move(view), .raw = std::move(raw)};
}

template <typename View>
util::Result<View> get_view(ApiClient& api, const std::string& path) {
  TY_ASSIGN_OR_RETURN(nlohmann::json raw, api.get(path));
  return read_reply<View>(raw, "GET " + path);
}

template <typename View>
util::Result<View> post_view(ApiClient& api, const std::string& path, const std::string& body) {
  TY_ASSIGN_OR_RETURN(nlohmann::json raw, api.post(path, body, "application/json"));
  return read_reply<View>(raw, "POST " + path);
}

template <typename View>
util::Result<View> delete_view(ApiClient& api, const std::string& path) {
  TY_ASSIGN_OR_RETURN(nlohmann::json raw, api.del(path));
  return read_reply<View>(raw, "DELETE " + path);
}

}  // namespace trainyard::cli
