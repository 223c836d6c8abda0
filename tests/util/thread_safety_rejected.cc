// Not built: scripts/test runs scripts/check-thread-safety on this file and requires that it
// fails, with clang's -Wthread-safety naming the mistakes below, so that the check is known to
// catch them. Each function makes one mistake the annotations forbid.
#include "util/thread_annotations.h"

namespace trainyard::util {

class Account {
 public:
  // Reads a guarded field without the mutex.
  int balance_unlocked() const { return balance_; }

  // Writes it after the scoped lock has ended.
  void deposit_after_scope(int amount) {
    {
      MutexLock lock(mu_);
      balance_ += amount;
    }
    balance_ += amount;
  }

  // Calls a function that requires the mutex without holding it.
  void apply_unlocked(int amount) { apply(amount); }

  // Takes the mutex twice (it is not recursive).
  void take_again() TY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    MutexLock again(mu_);
  }

 private:
  void apply(int amount) TY_REQUIRES(mu_) { balance_ += amount; }

  mutable Mutex mu_;
  int balance_ TY_GUARDED_BY(mu_) = 0;
};

}  // namespace trainyard::util
