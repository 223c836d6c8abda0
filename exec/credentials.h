// Who a job's worker runs as when the server is root: a Unix uid, its primary gid and the
// supplementary groups it gets (no others), plus the names a worker's environment carries. Also
// the per-thread file identity the server takes on to read files a job controls, so that a job
// cannot make the server read for it what it could not read itself (docs/server.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace trainyard::exec {

struct Credentials {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary groups besides gid; empty for a team's own uid
  std::string user;              // USER and LOGNAME: the passwd name, else the uid in digits
  std::string home;              // HOME: the passwd home; empty = the worker's work dir

  bool operator==(const Credentials&) const = default;
};

// While alive, file access on the calling thread is checked as `creds` (setfsuid/setfsgid and
// the thread's own group list), and root's file capabilities are suspended; the destructor
// restores root. Inactive (reads go on as this process) when `creds` is null or this process
// is not root: then a job could read nothing through the server that it cannot read itself.
class ScopedFileIdentity {
 public:
  explicit ScopedFileIdentity(const Credentials* creds);
  ~ScopedFileIdentity();
  ScopedFileIdentity(const ScopedFileIdentity&) = delete;
  ScopedFileIdentity& operator=(const ScopedFileIdentity&) = delete;
  // False when the identity could not be taken on: the caller must then not read at all.
  bool ok() const { return ok_; }

 private:
  bool active_ = false;
  bool ok_ = true;
  std::vector<gid_t> saved_groups_;
  uint32_t saved_fsgid_ = 0;
};

// Whether this process may give workers another identity (it is root).
bool can_switch_users();

}  // namespace trainyard::exec
