// ScopedFileIdentity (credentials.h). setfsuid/setfsgid change only the calling thread, and so
// does the raw setgroups system call (glibc's setgroups() would change every thread of the
// server). Moving the fsuid away from 0 also clears root's file capabilities
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, ...), so permission checks apply.
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "exec/credentials.h"
#include "util/log.h"

namespace trainyard::exec {
namespace {

constexpr uid_t kQueryId = static_cast<uid_t>(-1);  // not a valid id: the call only reports

bool set_thread_groups(const std::vector<gid_t>& groups) {
  return ::syscall(SYS_setgroups, groups.size(), groups.data()) == 0;
}

}  // namespace

bool can_switch_users() {
  return ::geteuid() == 0;
}

ScopedFileIdentity::ScopedFileIdentity(const Credentials* creds) {
  if (creds == nullptr || !can_switch_users()) return;
  active_ = true;
  const int n = ::getgroups(0, nullptr);
  saved_groups_.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (n > 0 && ::getgroups(n, saved_groups_.data()) != n) saved_groups_.clear();
  saved_fsgid_ = static_cast<uint32_t>(::setfsgid(kQueryId));
  std::vector<gid_t> groups = {creds->gid};
  groups.insert(groups.end(), creds->groups.begin(), creds->groups.end());
  ok_ = set_thread_groups(groups);
  if (ok_) {
    ::setfsgid(creds->gid);
    ::setfsuid(creds->uid);
    ok_ = static_cast<uint32_t>(::setfsgid(kQueryId)) == creds->gid &&
          static_cast<uint32_t>(::setfsuid(kQueryId)) == creds->uid;
  }
  if (!ok_)
    TY_LOG_ERROR("cannot read files as uid {} gid {} (setfsuid/setfsgid failed); not reading them",
                 creds->uid, creds->gid);
}

ScopedFileIdentity::~ScopedFileIdentity() {
  if (!active_) return;
  ::setfsuid(0);
  ::setfsgid(saved_fsgid_);
  if (!set_thread_groups(saved_groups_))
    TY_LOG_ERROR("cannot restore this thread's groups after reading a job's files");
}

}  // namespace trainyard::exec
