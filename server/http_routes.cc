// The routes of the /api/v1 HTTP API. Every handler authenticates, validates its parameters
// and turns a util::Status into a JSON error; none lets an exception reach cpp-httplib.
#include <charconv>

#include <fmt/format.h>
#include <httplib.h>

#include "model/job_state.h"
#include "server/http_api.h"

namespace trainyard::server {
namespace {

using nlohmann::json;

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void reply_error(httplib::Response& res, const util::Status& st, std::string field = "") {
  json err = {{"code", util::status_code_name(st.code())}, {"message", st.message()}};
  if (field.empty()) field = error_field(st.message());
  err["field"] = field.empty() ? json(nullptr) : json(field);
  reply(res, http_status(st.code()), json{{"error", err}});
}

template <typename T>
void send(httplib::Response& res, const util::Result<T>& r, int ok_status = 200) {
  if (r.is_ok()) {
    reply(res, ok_status, *r);
  } else {
    reply_error(res, r.status());
  }
}

bool int_param(const httplib::Request& req, const char* name, int64_t lo, int64_t hi, int64_t& out,
               httplib::Response& res) {
  if (!req.has_param(name)) return true;
  const std::string v = req.get_param_value(name);
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

bool job_id(const httplib::Request& req, util::JobId& out, httplib::Response& res) {
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

}  // namespace

void HttpApi::routes() {
  auto& h = *http_;
  // Authenticates a request; on failure the error reply is written and nullopt returned.
  auto auth = [this](const httplib::Request& req,
                     httplib::Response& res) -> std::optional<Principal> {
    auto p = plane_.authenticate(bearer_token(req.get_header_value("Authorization")),
                                 !options_.require_auth);
    if (!p.is_ok()) {
      reply_error(res, p.status());
      return std::nullopt;
    }
    return *p;
  };

  h.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, json{{"status", "ok"}});
  });
  // No authentication, like /healthz: Prometheus scrapes without a token (see docs/metrics.md).
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(plane_.metrics_text(), "text/plain; version=0.0.4");
  });
  h.Get("/api/v1/gpus", [this, auth](const httplib::Request& req, httplib::Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane_.gpus(*who));
  });
  h.Get(R"(/api/v1/jobs/([^/]+)/telemetry)",
        [this, auth](const httplib::Request& req, httplib::Response& res) {
          util::JobId id;
          int64_t samples = 300;
          auto who = auth(req, res);
          if (who && job_id(req, id, res) && int_param(req, "samples", 0, 100000, samples, res))
            send(res, plane_.job_telemetry(id, static_cast<int>(samples), *who));
        });

  h.Get(R"(/api/v1/jobs/([^/]+)/doctor)",
        [this, auth](const httplib::Request& req, httplib::Response& res) {
          util::JobId id;
          auto who = auth(req, res);
          if (who && job_id(req, id, res)) send(res, plane_.job_doctor(id, *who));
        });

  h.Post("/api/v1/jobs", [this, auth](const httplib::Request& req, httplib::Response& res) {
    auto who = auth(req, res);
    if (!who) return;
    const std::string file = req.has_param("file") ? req.get_param_value("file") : "request";
    send(res, plane_.submit(req.body, file, *who), 201);
  });

  h.Get("/api/v1/jobs", [this, auth](const httplib::Request& req, httplib::Response& res) {
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
      std::string name = req.get_param_value("state");
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto st = model::parse_job_state(name);
      if (!st.is_ok()) return reply_error(res, st.status(), "state");
      f.state = *st;
    }
    f.team = req.get_param_value("team");
    f.name = req.get_param_value("name");
    send(res, plane_.list_jobs(f, *who));
  });

  h.Get(R"(/api/v1/jobs/([^/]+))",
        [this, auth](const httplib::Request& req, httplib::Response& res) {
          util::JobId id;
          auto who = auth(req, res);
          if (who && job_id(req, id, res)) send(res, plane_.get_job(id, *who));
        });

  auto cancel = [this, auth](const httplib::Request& req, httplib::Response& res) {
    util::JobId id;
    auto who = auth(req, res);
    if (who && job_id(req, id, res)) send(res, plane_.cancel(id, *who));
  };
  h.Delete(R"(/api/v1/jobs/([^/]+))", cancel);
  h.Post(R"(/api/v1/jobs/([^/]+)/cancel)", cancel);

  h.Get(R"(/api/v1/jobs/([^/]+)/events)",
        [this, auth](const httplib::Request& req, httplib::Response& res) {
          util::JobId id;
          int64_t after = 0;
          auto who = auth(req, res);
          if (who && job_id(req, id, res) && int_param(req, "after", 0, INT64_MAX, after, res))
            send(res, plane_.job_events(id, after, *who));
        });

  h.Get(R"(/api/v1/jobs/([^/]+)/checkpoints)",
        [this, auth](const httplib::Request& req, httplib::Response& res) {
          util::JobId id;
          auto who = auth(req, res);
          if (who && job_id(req, id, res)) send(res, plane_.job_checkpoints(id, *who));
        });

  h.Get(R"(/api/v1/jobs/([^/]+)/logs)", [this, auth](const httplib::Request& req,
                                                     httplib::Response& res) {
    util::JobId id;
    int64_t attempt = 0, rank = 0, offset = 0, limit = 1 << 20;
    auto who = auth(req, res);
    if (!who || !job_id(req, id, res) || !int_param(req, "attempt", 0, 1000000, attempt, res) ||
        !int_param(req, "rank", 0, 1023, rank, res) ||
        !int_param(req, "offset", 0, INT64_MAX, offset, res) ||
        !int_param(req, "limit", 1, 16 << 20, limit, res))
      return;
    auto chunk =
        plane_.job_log(id, static_cast<int>(attempt), static_cast<int>(rank), offset, limit, *who);
    if (!chunk.is_ok()) return reply_error(res, chunk.status());
    res.set_header("X-Trainyard-Next-Offset", std::to_string(chunk->next_offset));
    res.set_header("X-Trainyard-Complete", chunk->complete ? "true" : "false");
    res.set_content(chunk->data, "text/plain; charset=utf-8");
  });

  h.Get("/api/v1/nodes", [this, auth](const httplib::Request& req, httplib::Response& res) {
    if (auth(req, res)) reply(res, 200, plane_.nodes());
  });
  h.Post(R"(/api/v1/nodes/([^/]+)/interrupt)",
         [this, auth](const httplib::Request& req, httplib::Response& res) {
           if (auto who = auth(req, res)) send(res, plane_.interrupt_node(req.matches[1], *who));
         });
  h.Get("/api/v1/cost", [this, auth](const httplib::Request& req, httplib::Response& res) {
    if (auto who = auth(req, res))
      send(res, plane_.cost(req.get_param_value("team"), req.get_param_value("since"),
                            req.get_param_value("until"), *who));
  });
  h.Get("/api/v1/queues", [this, auth](const httplib::Request& req, httplib::Response& res) {
    if (auto who = auth(req, res)) reply(res, 200, plane_.queues(*who));
  });
  h.Get("/api/v1/alerts", [this, auth](const httplib::Request& req, httplib::Response& res) {
    int64_t all = 0;
    auto who = auth(req, res);
    if (who && int_param(req, "all", 0, 1, all, res))
      reply(res, 200, plane_.alerts(all == 1, *who));
  });

  h.Post("/api/v1/tokens", [this, auth](const httplib::Request& req, httplib::Response& res) {
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

  h.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413) {
      reply_error(res, util::Status(util::StatusCode::ResourceExhausted,
                                    "the request body is too large (see maxRequestBytes)"));
      res.status = 413;
      return;
    }
    if (res.status == 404)
      return reply_error(res, util::not_found(fmt::format("no route {} {}; see docs/api.md",
                                                          req.method, req.path)));
    reply_error(
        res, util::Status(util::StatusCode::InvalidArgument, fmt::format("HTTP {}", res.status)));
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    reply_error(res, util::internal_error("the server failed on this request; see its log"));
  });
}

}  // namespace trainyard::server
