// Clang's thread-safety analysis (-Wthread-safety, run by scripts/check-thread-safety): the
// attribute macros, and a mutex and scoped locks that carry them, so that state marked
// TY_GUARDED_BY(mu_) is touched only with mu_ held, checked at compile time. libstdc++'s
// std::mutex has no annotations, hence the wrappers. On compilers without the attributes (GCC,
// the default build) the macros expand to nothing and the types cost what std::mutex costs.
//
// Contract: Mutex is not recursive. A condition-variable wait keeps the lock held as far as the
// analysis can tell (it is released while blocked and held again on return), so callers loop on
// their condition with the guarded state in plain view: `while (!stopping_) lock.wait(cv_);`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__has_attribute)
#if __has_attribute(capability) && __has_attribute(guarded_by)
#define TY_THREAD_ANNOTATION_(x) __attribute__((x))
#endif
#endif
#ifndef TY_THREAD_ANNOTATION_
#define TY_THREAD_ANNOTATION_(x)
#endif

// A type that is a lock ("mutex") or an object holding one for a scope.
#define TY_CAPABILITY(name) TY_THREAD_ANNOTATION_(capability(name))
#define TY_SCOPED_CAPABILITY TY_THREAD_ANNOTATION_(scoped_lockable)

// Data: read or written only with the mutex held (reads need it at least shared). PT_ applies
// to what a pointer points to rather than the pointer itself.
#define TY_GUARDED_BY(mu) TY_THREAD_ANNOTATION_(guarded_by(mu))
#define TY_PT_GUARDED_BY(mu) TY_THREAD_ANNOTATION_(pt_guarded_by(mu))

// Lock order between mutexes (checked only with -Wthread-safety-beta).
#define TY_ACQUIRED_BEFORE(...) TY_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define TY_ACQUIRED_AFTER(...) TY_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))

// Functions: the caller must hold the mutex (exclusively, or at least shared) ...
#define TY_REQUIRES(...) TY_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define TY_REQUIRES_SHARED(...) TY_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
// ... must not hold it (the function takes it itself) ...
#define TY_EXCLUDES(...) TY_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
// ... or the function takes or releases it and returns with it held or not.
#define TY_ACQUIRE(...) TY_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define TY_ACQUIRE_SHARED(...) TY_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define TY_RELEASE(...) TY_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define TY_RELEASE_SHARED(...) TY_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define TY_RELEASE_GENERIC(...) TY_THREAD_ANNOTATION_(release_generic_capability(__VA_ARGS__))
// Takes the mutex only when it returns `result` (try_lock).
#define TY_TRY_ACQUIRE(...) TY_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define TY_TRY_ACQUIRE_SHARED(...) TY_THREAD_ANNOTATION_(try_acquire_shared_capability(__VA_ARGS__))
// Returns only when the calling thread holds the mutex (a run-time check the analysis trusts).
#define TY_ASSERT_CAPABILITY(mu) TY_THREAD_ANNOTATION_(assert_capability(mu))
#define TY_ASSERT_SHARED_CAPABILITY(mu) TY_THREAD_ANNOTATION_(assert_shared_capability(mu))
// The function returns a reference to this mutex (an accessor).
#define TY_RETURN_CAPABILITY(mu) TY_THREAD_ANNOTATION_(lock_returned(mu))

// Turns the analysis off for one function. Every use carries a comment saying why.
#define TY_NO_THREAD_SAFETY_ANALYSIS TY_THREAD_ANNOTATION_(no_thread_safety_analysis)

namespace trainyard::util {

// std::mutex with the annotations. Take it through MutexLock or UniqueLock.
class TY_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() TY_ACQUIRE() { mu_.lock(); }
  void unlock() TY_RELEASE() { mu_.unlock(); }
  bool try_lock() TY_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class UniqueLock;
  std::mutex mu_;
};

// std::lock_guard for Mutex: holds it from construction to the end of the scope.
class TY_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TY_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() TY_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// std::unique_lock for Mutex: may be released and taken again within the scope, and waits on a
// std::condition_variable. Held at construction; released at the end of the scope if held.
class TY_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) TY_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~UniqueLock() TY_RELEASE() {}  // lock_ unlocks if it holds the mutex
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void lock() TY_ACQUIRE() { lock_.lock(); }
  void unlock() TY_RELEASE() { lock_.unlock(); }

  // Blocks until `cv` is notified or wakes spuriously; the mutex is released meanwhile and held
  // again on return. Callers re-check their condition in a loop.
  void wait(std::condition_variable& cv) { cv.wait(lock_); }
  // Same, returning at `deadline` at the latest (std::cv_status::timeout then).
  template <class Clock, class Duration>
  std::cv_status wait_until(std::condition_variable& cv,
                            const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline);
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::condition_variable& cv,
                          const std::chrono::duration<Rep, Period>& timeout) {
    return cv.wait_for(lock_, timeout);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace trainyard::util
