// The routes of the /api/v1 HTTP API. Every handler authenticates, validates its parameters
// and turns a util::Status into a JSON error; an exception that escapes one anyway becomes a
// 500 JSON error in http::Server.
#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

#include "model/job_state.h"
#include "server/cost_series.h"
#include "server/http_api.h"
#include "server/job_list_query.h"
#include "server/peer_uid.h"
#include "server/ui_routes.h"
#include "util/time_text.h"

namespace trainyard::server {
namespace {

using http::Request;
using http::Response;
using nlohmann::json;

void reply(Response& res, int status, const json& body) {
  res.status = status;
  // Strings from requests (names, paths) may not be UTF-8; replace such bytes, do not throw.
  res.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  res.content_type = "application/json";
}

void reply_error(Response& res, const util::Status& st, std::string field = "") {
  res = error_response(st, std::move(field));
}

template <typename T>
void send(Response& res, const util::Result<T>& r, int ok_status = 200) {
  if (r.is_ok()) {
    reply(res, ok_status, *r);
  } else {
    reply_error(res, r.status());
  }
}

bool int_param(const Request& req, const char* name, int64_t lo, int64_t hi, int64_t& out,
               Response& res) {
  if (!req.has_param(name)) return true;
  const std::string v = req.param(name);
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < lo || out > hi) {
    reply_error(
        res,
        util::invalid_argument(fmt::format(
            "query parameter {} must be a whole number in {}..{}, got '{}'", name, lo, hi, v)),
        name);
    return false;
  }
  return true;
}

bool job_id(const Request& req, util::JobId& out, Response& res) {
  const std::string v = req.matches[1];
  int64_t id = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), id);
  if (ec != std::errc() || p != v.data() + v.size() || id <= 0) {
    reply_error(res, util::not_found(fmt::format("job {} does not exist", v)));
    return false;
  }
  out = util::JobId(id);
  return true;
}

// The Idempotency-Key header names a submission for retries and is stored with the job, so it
// is refused early when it cannot be a key: over 255 bytes (not counting the quotes of an RFC 8941
// string) or with control characters. submit() parses what passes.
util::Status check_idempotency_key(const std::string& key) {
  constexpr size_t kMaxKeyBytes = 255;
  const bool quoted = key.size() >= 2 && key.front() == '"' && key.back() == '"';
  const size_t length = quoted ? key.size() - 2 : key.size();
  const bool control = std::any_of(key.begin(), key.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
  if (length == 0 || length > kMaxKeyBytes || control)
    return util::invalid_argument(fmt::format(
        "Idempotency-Key: the header must hold 1 to {} bytes without control characters, got "
        "{} bytes{}; send a random value such as a UUID or 32 hex digits",
        kMaxKeyBytes, length, control ? " with a control character" : ""));
  return util::Status::ok();
}

// `curl -d @job.yaml` removes the file's line breaks (only --data-binary keeps them) and sends
// the form content type: a one-line body that fails to parse most likely came that way.
util::Result<nlohmann::json> with_curl_hint(util::Result<nlohmann::json> r, const Request& req) {
  if (r.is_ok() || r.status().code() != util::StatusCode::InvalidArgument) return r;
  const std::string* type = req.header("Content-Type");
  if (type == nullptr || !type->starts_with("application/x-www-form-urlencoded") ||
      req.body.find('\n') != std::string::npos || req.body.find(": ") == std::string::npos) {
    return r;
  }
  return util::Status(util::StatusCode::InvalidArgument,
                      r.status().message() +
                          " (the body has no line breaks: curl -d removes them; send the file "
                          "with curl --data-binary @FILE)");
}

// With sinceSeconds, sinceTime or tailLines (Kubernetes' names): moves `offset` forward to
// where that window of the log starts. False when the reply has been sent (a bad parameter).
bool log_window_offset(ControlPlane& plane, const Request& req, Response& res, util::JobId id,
                       int attempt, int rank, const Principal& who, int64_t& offset) {
  LogWindow w;
  if (!int_param(req, "sinceSeconds", 0, INT64_MAX / 1000000, w.since_seconds, res) ||
      !int_param(req, "tailLines", 0, INT64_MAX, w.tail_lines, res))
    return false;
  if (req.has_param("sinceTime")) {
    auto t = util::parse_rfc3339(req.param("sinceTime"));
    if (!t.is_ok()) {
      reply_error(res, t.status(), "sinceTime");
      return false;
    }
    w.since_time = *t;
  }
  if (!w.since_time && w.since_seconds < 0 && w.tail_lines < 0) return true;
  auto start = plane.job_log_start(id, attempt, rank, w, who);
  if (!start.is_ok()) {
    reply_error(res, start.status());
    return false;
  }
  offset = std::max(offset, *start);
  return true;
}

}  // namespace

void HttpApi::routes() {
  // Registered in order: the first route whose method and pattern match answers.
  auto get = [this](const char* path, http::Handler f) { router_.add("GET", path, std::move(f)); };
  auto post = [this](const char* path, http::Handler f) {
    router_.add("POST", path, std::move(f));
  };
  // Authenticates a request; on failure the error reply is written and nullopt returned. Only a
  // request without any Authorization header may act as the anonymous principal.
  auto auth = [this](const Request& req, Response& res) -> std::optional<Principal> {
    const std::string* header = req.header("Authorization");
    auto token =
        request_token(header != nullptr ? std::optional<std::string_view>(*header) : std::nullopt);
    if (!token.is_ok()) {
      reply_error(res, token.status());
      return std::nullopt;
    }
    // Anonymous admin on loopback is for the operator, never for a job's worker: a request from
    // a socket owned by a worker uid (or whose owner cannot be found) needs a token.
    const bool anonymous =
        token->empty() && !options_.require_auth &&
        plane_.anonymous_allowed_from(req.connection_fd >= 0 ? loopback_peer_uid(req.connection_fd)
                                                             : std::nullopt);
    auto p = plane_.authenticate(*token, anonymous);
    if (!p.is_ok()) {
      reply_error(res, p.status());
      return std::nullopt;
    }
    return *p;
  };

  get("/healthz", [](const Request&, Response& res) { reply(res, 200, json{{"status", "ok"}}); });
  // The web UI's files (GET /, GET /ui/...): no authentication, they carry no data.
  add_ui_routes(router_);
  // No authentication, like /healthz: Prometheus scrapes without a token (see docs/metrics.md).
  get("/metrics", [this](const Request&, Response& res) {
    res.body = plane_.metrics_text();
    res.content_type = "text/plain; version=0.0.4";
  });
  get("/api/v1/gpus", [this, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane_.gpus(*who));
  });
  get(R"(/api/v1/jobs/([^/]+)/telemetry)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t samples = 300;
    auto who = auth(req, res);
    if (who && job_id(req, id, res) && int_param(req, "samples", 0, 100000, samples, res))
      send(res, plane_.job_telemetry(id, static_cast<int>(samples), *who));
  });

  get(R"(/api/v1/jobs/([^/]+)/doctor)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.job_doctor(id, *who));
  });
  get(R"(/api/v1/jobs/([^/]+)/metrics)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t points = 500;
    auto who = auth(req, res);
    if (who && job_id(req, id, res) && int_param(req, "points", 1, 5000, points, res))
      send(res, plane_.job_metrics(id, static_cast<int>(points), *who));
  });

  post("/api/v1/jobs", [this, auth](const Request& req, Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    const std::string file = req.has_param("file") ? req.param("file") : "request";
    std::string key;
    if (const std::string* header = req.header("Idempotency-Key")) {
      if (auto st = check_idempotency_key(*header); !st.is_ok()) return reply_error(res, st);
      key = *header;
    }
    send(res, with_curl_hint(plane_.submit(req.body, file, *who, key), req), 201);
  });

  get("/api/v1/jobs", [this, auth](const Request& req, Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    store::JobFilter f;
    int64_t limit = 100, before = 0;
    if (!int_param(req, "limit", 1, 1000, limit, res) ||
        !int_param(req, "before", 0, INT64_MAX, before, res))
      return;
    f.limit = static_cast<int>(limit);
    f.before = before;
    if (req.has_param("state")) {
      std::string name = req.param("state");
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto st = model::parse_job_state(name);
      if (!st.is_ok()) return reply_error(res, st.status(), "state");
      f.state = *st;
    }
    if (!int_param(req, "array", 1, INT64_MAX, f.array_job_id, res)) return;
    f.team = req.param("team");
    f.name = req.param("name");
    f.node = req.param("node");
    if (auto st =
            apply_job_list_params(req.param("sort"), req.param("order"), req.param("cursor"), f);
        !st.is_ok())
      return reply_error(res, st);
    if (before > 0 && req.has_param("cursor"))
      return reply_error(res, util::invalid_argument("pass either before or cursor, not both"),
                         "before");
    if (before > 0 && (f.sort != store::JobSort::Id || f.ascending))
      return reply_error(
          res, util::invalid_argument("before pages the newest-first order only; use cursor"),
          "before");
    auto selector = model::parse_label_selector(req.param("labelSelector"));
    if (!selector.is_ok()) return reply_error(res, selector.status(), "labelSelector");
    send(res, plane_.list_jobs_matching(f, *selector, *who));
  });

  get(R"(/api/v1/jobs/([^/]+))", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.get_job(id, *who));
  });

  auto cancel = [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.cancel(id, *who));
  };
  router_.add("DELETE", R"(/api/v1/jobs/([^/]+))", cancel);
  post(R"(/api/v1/jobs/([^/]+)/cancel)", cancel);

  // Job controls (docs/api.md): hold and release a pending job, change its priority class
  // (POST .../update or PATCH on the job), and cancel every task of a job array.
  post(R"(/api/v1/jobs/([^/]+)/hold)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.hold(id, *who));
  });
  post(R"(/api/v1/jobs/([^/]+)/release)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.release(id, *who));
  });
  auto update = [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.update(id, req.body, *who));
  };
  post(R"(/api/v1/jobs/([^/]+)/update)", update);
  router_.add("PATCH", R"(/api/v1/jobs/([^/]+))", update);
  post(R"(/api/v1/arrays/([^/]+)/cancel)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.cancel_array(id, *who));
  });

  get(R"(/api/v1/jobs/([^/]+)/events)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t after = 0;
    auto who = auth(req, res);
    if (who && job_id(req, id, res) && int_param(req, "after", 0, INT64_MAX, after, res))
      send(res, plane_.job_events(id, after, *who));
  });

  get(R"(/api/v1/jobs/([^/]+)/checkpoints)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.job_checkpoints(id, *who));
  });

  get(R"(/api/v1/jobs/([^/]+)/logs)", [this, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t attempt = 0, rank = 0, offset = 0, limit = 1 << 20;
    auto who = auth(req, res);
    if (!who || !job_id(req, id, res) || !int_param(req, "attempt", 0, 1000000, attempt, res) ||
        !int_param(req, "rank", 0, 1023, rank, res) ||
        !int_param(req, "offset", 0, INT64_MAX, offset, res) ||
        !int_param(req, "limit", 1, 16 << 20, limit, res))
      return;
    if (!log_window_offset(plane_, req, res, id, static_cast<int>(attempt), static_cast<int>(rank),
                           *who, offset))
      return;
    auto chunk =
        plane_.job_log(id, static_cast<int>(attempt), static_cast<int>(rank), offset, limit, *who);
    if (!chunk.is_ok()) return reply_error(res, chunk.status());
    res.set_header("X-Trainyard-Next-Offset", std::to_string(chunk->next_offset));
    res.set_header("X-Trainyard-Complete", chunk->complete ? "true" : "false");
    res.body = std::move(chunk->data);
    res.content_type = "text/plain; charset=utf-8";
  });

  get("/api/v1/nodes", [this, auth](const Request& req, Response& res) {
    if (auth(req, res)) reply(res, 200, plane_.nodes());
  });
  post(R"(/api/v1/nodes/([^/]+)/interrupt)", [this, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) send(res, plane_.interrupt_node(req.matches[1], *who));
  });
  get("/api/v1/cost", [this, auth](const Request& req, Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    auto report = plane_.cost(req.param("team"), req.param("since"), req.param("until"), *who);
    if (req.param("format") != "csv" || !report.is_ok()) return send(res, report);
    res.body = cost_csv(*report);  // cost_series_views.cc
    res.content_type = "text/csv; charset=utf-8";
    res.set_header("Content-Disposition", "attachment; filename=\"trainyard-cost.csv\"");
  });
  get("/api/v1/cost/series", [this, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res))
      send(res, plane_.cost_series(req.param("team"), req.param("since"), req.param("until"),
                                   req.param("step"), *who));
  });
  get("/api/v1/queues", [this, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane_.queues(*who));
  });
  get("/api/v1/alerts", [this, auth](const Request& req, Response& res) {
    int64_t all = 0;
    auto who = auth(req, res);
    if (who && int_param(req, "all", 0, 1, all, res))
      reply(res, 200, plane_.alerts(all == 1, *who));
  });

  get("/api/v1/summary", [this, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane_.summary(*who));
  });

  post("/api/v1/tokens", [this, auth](const Request& req, Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object())
      return reply_error(res, util::invalid_argument(
                                  "the body must be a JSON object like {\"team\": \"vision\"}"));
    const auto team = body.value("team", json("")), name = body.value("name", json(""));
    const auto admin = body.value("admin", json(false));
    if (!team.is_string() || !name.is_string() || !admin.is_boolean())
      return reply_error(
          res, util::invalid_argument("team and name must be strings, admin true or false"));
    send(res, plane_.create_token(team, name, admin, *who), 201);
  });
}

}  // namespace trainyard::server
