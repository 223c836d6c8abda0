#include "server/alerts_webhook.h"

#include <fmt/format.h>
#include <httplib.h>

#include "util/log.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

WebhookSender::WebhookSender(WebhookConfig config) : config_(std::move(config)) {
  // The config parser checked the scheme and host; split "http://host:port/path?q".
  const size_t host = config_.url.find("://");
  const size_t slash = config_.url.find('/', host == std::string::npos ? 0 : host + 3);
  base_ = slash == std::string::npos ? config_.url : config_.url.substr(0, slash);
  path_ = slash == std::string::npos ? "/" : config_.url.substr(slash);
  thread_ = std::thread([this] { run(); });
}

WebhookSender::~WebhookSender() {
  {
    util::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void WebhookSender::enqueue(std::string json_body) {
  {
    util::MutexLock lock(mu_);
    if (queue_.size() >= kMaxQueue) {
      queue_.pop_front();  // the newest news matters most when the receiver cannot keep up
      dropped_ += 1;
    }
    queue_.push_back(std::move(json_body));
  }
  cv_.notify_one();
}

int64_t WebhookSender::delivered() const {
  util::MutexLock lock(mu_);
  return delivered_;
}

int64_t WebhookSender::dropped() const {
  util::MutexLock lock(mu_);
  return dropped_;
}

bool WebhookSender::post(const std::string& body, std::string& error) const {
  httplib::Client client(base_);
  const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(config_.timeout);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  auto res = client.Post(path_, body, "application/json");
  if (!res) {
    error = fmt::format("cannot reach {}: {}", config_.url, httplib::to_string(res.error()));
    return false;
  }
  if (res->status < 200 || res->status >= 300) {
    error = fmt::format("{} answered HTTP {}", config_.url, res->status);
    return false;
  }
  return true;
}

void WebhookSender::run() {
  std::string last_error;
  for (;;) {
    std::string body;
    {
      util::UniqueLock lock(mu_);
      while (!stopping_ && queue_.empty()) lock.wait(cv_);
      if (stopping_) return;
      body = std::move(queue_.front());
      queue_.pop_front();
    }
    std::string error;
    const bool ok = post(body, error);
    {
      util::MutexLock lock(mu_);
      (ok ? delivered_ : dropped_) += 1;
    }
    // A dead receiver fails every alert: say so once per reason, not once per alert.
    if (!ok && error != last_error) TY_LOG_WARN("alerts webhook: {}", error);
    last_error = ok ? "" : error;
  }
}

}  // namespace trainyard::server
