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
#include <mutex>
#include <string>
#include <thread>

#include "server/alerts_config.h"

namespace trainyard::server {

class WebhookSender {
 public:
  static constexpr size_t kMaxQueue = 256;

  explicit WebhookSender(WebhookConfig config);
  ~WebhookSender();
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

  void enqueue(std::string json_body);
  // Bodies delivered with a 2xx answer, and dropped (queue full or failed), since the start.
  int64_t delivered() const;
  int64_t dropped() const;

 private:
  void run();
  bool post(const std::string& body, std::string& error) const;

  const WebhookConfig config_;
  std::string base_;  // scheme://host[:port]
  std::string path_;  // "/..." (with the query)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;  // guarded by mu_
  bool stopping_ = false;          // guarded by mu_
  int64_t delivered_ = 0;          // guarded by mu_
  int64_t dropped_ = 0;            // guarded by mu_
  std::thread thread_;
};

}  // namespace trainyard::server
