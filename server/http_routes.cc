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

// reply_error() for the parsers of request parameters, which return false once they replied.
bool refuse(Response& res, const util::Status& st, std::string field = "") {
  reply_error(res, st, std::move(field));
  return false;
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

// Authenticates requests for the handlers, each of which holds a copy.
struct Authenticator {
  ControlPlane& plane;
  const HttpOptions& options;

  // On failure the error reply is written and nullopt returned. Only a request without any
  // Authorization header may act as the anonymous principal.
  std::optional<Principal> operator()(const Request& req, Response& res) const {
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
        token->empty() && !options.require_auth &&
        plane.anonymous_allowed_from(req.connection_fd >= 0 ? loopback_peer_uid(req.connection_fd)
                                                            : std::nullopt);
    auto p = plane.authenticate(*token, anonymous);
    if (!p.is_ok()) {
      reply_error(res, p.status());
      return std::nullopt;
    }
    return *p;
  }
};

// What each group of routes registers with.
struct RouteTable {
  http::Router& router;
  ControlPlane& plane;
  Authenticator auth;

  void get(const char* path, http::Handler f) const { router.add("GET", path, std::move(f)); }
  void post(const char* path, http::Handler f) const { router.add("POST", path, std::move(f)); }
};

// GET /api/v1/jobs's filter from the query parameters; false once the error reply is written.
bool job_list_filter(const Request& req, store::JobFilter& f, Response& res) {
  int64_t limit = 100, before = 0;
  if (!int_param(req, "limit", 1, 1000, limit, res) ||
      !int_param(req, "before", 0, INT64_MAX, before, res))
    return false;
  f.limit = static_cast<int>(limit);
  f.before = before;
  if (req.has_param("state")) {
    std::string name = req.param("state");
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto st = model::parse_job_state(name);
    if (!st.is_ok()) return refuse(res, st.status(), "state");
    f.state = *st;
  }
  if (!int_param(req, "array", 1, INT64_MAX, f.array_job_id, res)) return false;
  f.team = req.param("team");
  f.name = req.param("name");
  f.node = req.param("node");
  if (auto st =
          apply_job_list_params(req.param("sort"), req.param("order"), req.param("cursor"), f);
      !st.is_ok())
    return refuse(res, st);
  if (before > 0 && req.has_param("cursor"))
    return refuse(res, util::invalid_argument("pass either before or cursor, not both"), "before");
  if (before > 0 && (f.sort != store::JobSort::Id || f.ascending))
    return refuse(res,
                  util::invalid_argument("before pages the newest-first order only; use cursor"),
                  "before");
  return true;
}

// The routes without authentication: they carry no data, or (/metrics) Prometheus scrapes them
// without a token (see docs/metrics.md).
void add_public_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  t.get("/healthz", [](const Request&, Response& res) { reply(res, 200, json{{"status", "ok"}}); });
  // The web UI's files (GET /, GET /ui/...).
  add_ui_routes(t.router);
  t.get("/metrics", [&plane](const Request&, Response& res) {
    res.body = plane.metrics_text();
    res.content_type = "text/plain; version=0.0.4";
  });
}

// GPU telemetry: every device's newest sample; a job's samples, diagnosis and step metrics.
void add_telemetry_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  t.get("/api/v1/gpus", [&plane, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane.gpus(*who));
  });
  t.get(R"(/api/v1/jobs/([^/]+)/telemetry)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t samples = 300;
    auto who = auth(req, res);
    if (who && job_id(req, id, res) && int_param(req, "samples", 0, 100000, samples, res))
      send(res, plane.job_telemetry(id, static_cast<int>(samples), *who));
  });
  t.get(R"(/api/v1/jobs/([^/]+)/doctor)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.job_doctor(id, *who));
  });
  t.get(R"(/api/v1/jobs/([^/]+)/metrics)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t points = 500;
    auto who = auth(req, res);
    if (who && job_id(req, id, res) && int_param(req, "points", 1, 5000, points, res))
      send(res, plane.job_metrics(id, static_cast<int>(points), *who));
  });
}

// Submitting jobs, listing them and reading one.
void add_job_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  t.post("/api/v1/jobs", [&plane, auth](const Request& req, Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    const std::string file = req.has_param("file") ? req.param("file") : "request";
    std::string key;
    if (const std::string* header = req.header("Idempotency-Key")) {
      if (auto st = check_idempotency_key(*header); !st.is_ok()) return reply_error(res, st);
      key = *header;
    }
    send(res, with_curl_hint(plane.submit(req.body, file, *who, key), req), 201);
  });
  t.get("/api/v1/jobs", [&plane, auth](const Request& req, Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    store::JobFilter f;
    if (!job_list_filter(req, f, res)) return;
    auto selector = model::parse_label_selector(req.param("labelSelector"));
    if (!selector.is_ok()) return reply_error(res, selector.status(), "labelSelector");
    send(res, plane.list_jobs_matching(f, *selector, *who));
  });
  t.get(R"(/api/v1/jobs/([^/]+))", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.get_job(id, *who));
  });
}

// Job controls (docs/api.md): cancel a job, hold and release a pending job, change its priority
// class (POST .../update or PATCH on the job), and cancel every task of a job array.
void add_job_control_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  auto cancel = [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.cancel(id, *who));
  };
  t.router.add("DELETE", R"(/api/v1/jobs/([^/]+))", cancel);
  t.post(R"(/api/v1/jobs/([^/]+)/cancel)", cancel);
  t.post(R"(/api/v1/jobs/([^/]+)/hold)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.hold(id, *who));
  });
  t.post(R"(/api/v1/jobs/([^/]+)/release)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.release(id, *who));
  });
  auto update = [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.update(id, req.body, *who));
  };
  t.post(R"(/api/v1/jobs/([^/]+)/update)", update);
  t.router.add("PATCH", R"(/api/v1/jobs/([^/]+))", update);
  t.post(R"(/api/v1/arrays/([^/]+)/cancel)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.cancel_array(id, *who));
  });
}

// What a job left behind: its events, checkpoints and logs.
void add_job_history_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  t.get(R"(/api/v1/jobs/([^/]+)/events)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t after = 0;
    auto who = auth(req, res);
    if (who && job_id(req, id, res) && int_param(req, "after", 0, INT64_MAX, after, res))
      send(res, plane.job_events(id, after, *who));
  });
  t.get(R"(/api/v1/jobs/([^/]+)/checkpoints)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane.job_checkpoints(id, *who));
  });
  t.get(R"(/api/v1/jobs/([^/]+)/logs)", [&plane, auth](const Request& req, Response& res) {
    util::JobId id;
    int64_t attempt = 0, rank = 0, offset = 0, limit = 1 << 20;
    auto who = auth(req, res);
    if (!who || !job_id(req, id, res) || !int_param(req, "attempt", 0, 1000000, attempt, res) ||
        !int_param(req, "rank", 0, 1023, rank, res) ||
        !int_param(req, "offset", 0, INT64_MAX, offset, res) ||
        !int_param(req, "limit", 1, 16 << 20, limit, res))
      return;
    if (!log_window_offset(plane, req, res, id, static_cast<int>(attempt), static_cast<int>(rank),
                           *who, offset))
      return;
    auto chunk =
        plane.job_log(id, static_cast<int>(attempt), static_cast<int>(rank), offset, limit, *who);
    if (!chunk.is_ok()) return reply_error(res, chunk.status());
    res.set_header("X-Trainyard-Next-Offset", std::to_string(chunk->next_offset));
    res.set_header("X-Trainyard-Complete", chunk->complete ? "true" : "false");
    res.body = std::move(chunk->data);
    res.content_type = "text/plain; charset=utf-8";
  });
}

// The nodes, and a spot interruption on demand (a test and demo aid).
void add_node_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  t.get("/api/v1/nodes", [&plane, auth](const Request& req, Response& res) {
    if (auth(req, res)) reply(res, 200, plane.nodes());
  });
  t.post(R"(/api/v1/nodes/([^/]+)/interrupt)", [&plane, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) send(res, plane.interrupt_node(req.matches[1], *who));
  });
}

// The bill: the ledger's report (JSON or a CSV download) and its series over time.
void add_cost_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  t.get("/api/v1/cost", [&plane, auth](const Request& req, Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    auto report = plane.cost(req.param("team"), req.param("since"), req.param("until"), *who);
    if (req.param("format") != "csv" || !report.is_ok()) return send(res, report);
    res.body = cost_csv(*report);  // cost_series_views.cc
    res.content_type = "text/csv; charset=utf-8";
    res.set_header("Content-Disposition", "attachment; filename=\"trainyard-cost.csv\"");
  });
  t.get("/api/v1/cost/series", [&plane, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res))
      send(res, plane.cost_series(req.param("team"), req.param("since"), req.param("until"),
                                  req.param("step"), *who));
  });
}

// The overview: where each team's queue stands, the alerts, and the web UI's summary.
void add_overview_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  t.get("/api/v1/queues", [&plane, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane.queues(*who));
  });
  t.get("/api/v1/alerts", [&plane, auth](const Request& req, Response& res) {
    int64_t all = 0;
    auto who = auth(req, res);
    if (who && int_param(req, "all", 0, 1, all, res)) reply(res, 200, plane.alerts(all == 1, *who));
  });
  t.get("/api/v1/summary", [&plane, auth](const Request& req, Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane.summary(*who));
  });
}

void add_token_routes(const RouteTable& t) {
  ControlPlane& plane = t.plane;
  const Authenticator auth = t.auth;
  t.post("/api/v1/tokens", [&plane, auth](const Request& req, Response& res) {
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
    send(res, plane.create_token(team, name, admin, *who), 201);
  });
}

}  // namespace

void HttpApi::routes() {
  // Registered in order: the first route whose method and pattern match answers.
  const RouteTable table{
      .router = router_, .plane = plane_, .auth = {.plane = plane_, .options = options_}};
  add_public_routes(table);
  add_telemetry_routes(table);
  add_job_routes(table);
  add_job_control_routes(table);
  add_job_history_routes(table);
  add_node_routes(table);
  add_cost_routes(table);
  add_overview_routes(table);
  add_token_routes(table);
}

}  // namespace trainyard::server
