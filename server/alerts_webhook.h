// Delivers alert notifications to a webhook: POSTs each JSON body to the configured URL from a
// thread of its own, so a slow or dead receiver never holds up sampling or reconciling. The queue
// is bounded (the oldest body is dropped when full) and every request has a timeout; failures are
// logged, once per distinct reason until a delivery succeeds again. Nothing is retried.
//
// Thread-safe: enqueue() may be called from any thread; the destructor stops the thread and
// drops what is still queued.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>

#include "server/alerts_config.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

class WebhookSender {
 public:
  static constexpr size_t kMaxQueue = 256;

  explicit WebhookSender(WebhookConfig config);
  ~WebhookSender();
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

  void enqueue(std::string json_body) TY_EXCLUDES(mu_);
  // Bodies delivered with a 2xx answer, and dropped (queue full or failed), since the start.
  int64_t delivered() const TY_EXCLUDES(mu_);
  int64_t dropped() const TY_EXCLUDES(mu_);

 private:
  void run() TY_EXCLUDES(mu_);
  bool post(const std::string& body, std::string& error) const;

  const WebhookConfig config_;
  std::string base_;  // scheme://host[:port]
  std::string path_;  // "/..." (with the query)

  mutable util::Mutex mu_;
  std::condition_variable cv_;  // with mu_: queue_ or stopping_ changed
  std::deque<std::string> queue_ TY_GUARDED_BY(mu_);
  bool stopping_ TY_GUARDED_BY(mu_) = false;
  int64_t delivered_ TY_GUARDED_BY(mu_) = 0;
  int64_t dropped_ TY_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace trainyard::server
