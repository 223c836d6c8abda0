#include "util/thread_annotations.h"

#include <chrono>
#include <condition_variable>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace trainyard::util {
namespace {

class Counter {
 public:
  void add() TY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++value_;
  }
  int value() TY_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return value_;
  }

 private:
  Mutex mu_;
  int value_ TY_GUARDED_BY(mu_) = 0;
};

TEST(Mutex, MutexLockSerializesWriters) {
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.add();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000);
}

TEST(Mutex, TryLockFailsWhileAnotherThreadHoldsIt) {
  Mutex mu;
  MutexLock lock(mu);
  bool got = true;
  std::thread other([&] {
    got = mu.try_lock();
    if (got) mu.unlock();
  });
  other.join();
  EXPECT_FALSE(got);
}

TEST(UniqueLock, ReleasesAndRetakesWithinItsScope) {
  Mutex mu;
  UniqueLock lock(mu);
  lock.unlock();
  bool got = false;
  std::thread other([&] {
    got = mu.try_lock();
    if (got) mu.unlock();
  });
  other.join();
  EXPECT_TRUE(got);
  lock.lock();
}  // released here once, although it was released and taken again meanwhile

class Flag {
 public:
  void set() TY_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  // True once set() ran; false when `timeout` passed first.
  bool wait(std::chrono::milliseconds timeout) TY_EXCLUDES(mu_) {
    UniqueLock lock(mu_);
    while (!set_) {
      if (lock.wait_for(cv_, timeout) == std::cv_status::timeout) return set_;
    }
    return true;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  bool set_ TY_GUARDED_BY(mu_) = false;
};

TEST(UniqueLock, WaitReturnsWhenNotifiedWithTheStateVisible) {
  Flag flag;
  std::thread setter([&] { flag.set(); });
  EXPECT_TRUE(flag.wait(std::chrono::seconds(30)));
  setter.join();
}

TEST(UniqueLock, WaitForTimesOutWithoutNotification) {
  Flag flag;
  EXPECT_FALSE(flag.wait(std::chrono::milliseconds(5)));
}

}  // namespace
}  // namespace trainyard::util
