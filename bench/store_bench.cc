// Durable job submissions per second through store::Store: each iteration commits `batch` jobs,
// each with its Submitted event, in one transaction() (synchronous=FULL: one fsync per commit),
// next to one autocommitted write per call. The server needs >= 2,000 submissions/s.
// The database lives under $TMPDIR; point that at the server's disk for meaningful numbers.
//   build/bench/store_bench
#include <stdlib.h>

#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "store/store.h"

namespace trainyard::bench {
namespace {

// A fresh database in a temporary directory, removed afterwards.
class BenchStore {
 public:
  BenchStore() {
    std::string dir = (std::filesystem::temp_directory_path() / "ty_store_bench_XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) return;
    dir_ = dir;
    auto opened = store::Store::open(dir_ / "state.db");
    if (opened.is_ok()) {
      store_ = std::move(opened).value();
    } else {
      error_ = opened.status().to_string();
    }
  }
  BenchStore(const BenchStore&) = delete;
  BenchStore& operator=(const BenchStore&) = delete;
  ~BenchStore() {
    store_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  store::Store* get() { return store_.get(); }
  const std::string& error() const { return error_; }

 private:
  std::filesystem::path dir_;
  store::StorePtr store_;
  std::string error_ = "cannot create a temporary directory";
};

// A job about the size of a real submission (the manifest is most of it).
store::JobRecord sample_job() {
  store::JobRecord job;
  job.name = "llama-finetune";
  job.team = "research";
  job.manifest_json = std::string(1200, 'x');
  job.submitted = util::from_seconds(1.7e9);
  job.updated = job.submitted;
  job.queued_since = job.submitted;
  job.reason = "submitted";
  return job;
}

util::Status submit(store::Store& store, const store::JobRecord& job) {
  TY_ASSIGN_OR_RETURN(util::JobId id, store.insert_job(job));
  return store
      .append_event({.job = id, .at = job.submitted, .type = "Submitted", .to_state = "pending"})
      .status();
}

void bm_batched_submissions(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  BenchStore db;
  if (db.get() == nullptr) return state.SkipWithError(db.error().c_str());
  const store::JobRecord job = sample_job();
  for (auto _ : state) {
    util::Status status = db.get()->transaction([&]() -> util::Status {
      for (int i = 0; i < batch; ++i) TY_RETURN_IF_ERROR(submit(*db.get(), job));
      return util::Status::ok();
    });
    if (!status.is_ok()) return state.SkipWithError(status.to_string().c_str());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
// Wall time: the cost is waiting for fsync, not CPU.
BENCHMARK(bm_batched_submissions)->Arg(1)->Arg(16)->Arg(64)->Arg(256)->UseRealTime();

// No transaction(): the job and its event are two durable commits.
void bm_autocommit_submissions(benchmark::State& state) {
  BenchStore db;
  if (db.get() == nullptr) return state.SkipWithError(db.error().c_str());
  const store::JobRecord job = sample_job();
  for (auto _ : state) {
    util::Status status = submit(*db.get(), job);
    if (!status.is_ok()) return state.SkipWithError(status.to_string().c_str());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(bm_autocommit_submissions)->UseRealTime();

}  // namespace
}  // namespace trainyard::bench

BENCHMARK_MAIN();
