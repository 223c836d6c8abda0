// Helpers for store tests: a temporary directory removed after the test, and small record
// builders so that each test states only the fields it is about.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "store/store.h"
#include "util/clock.h"

namespace trainyard::store {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ty_store_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path db() const { return path_ / "state.db"; }

 private:
  std::filesystem::path path_;
};

inline JobRecord make_job(std::string name, std::string team = "ml",
                          model::JobState state = model::JobState::Pending) {
  JobRecord job;
  job.name = std::move(name);
  job.team = std::move(team);
  job.state = state;
  job.manifest_json = R"({"kind":"Job"})";
  job.submitted = util::from_seconds(1000);
  job.updated = job.submitted;
  job.queued_since = job.submitted;
  job.reason = "submitted";
  return job;
}

inline EventRecord make_event(util::JobId job, std::string type = "Submitted") {
  return {.job = job,
          .at = util::from_seconds(1000),
          .type = std::move(type),
          .to_state = "pending",
          .reason = "submitted"};
}

// Opens `path` or fails the test; returns null on failure.
inline StorePtr open_or_fail(const std::filesystem::path& path, OpenOptions options = {}) {
  auto store = Store::open(path, options);
  if (!store.is_ok()) {
    ADD_FAILURE() << store.status().to_string();
    return nullptr;
  }
  return std::move(store).value();
}

}  // namespace trainyard::store
