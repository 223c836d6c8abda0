// Turning a placement into worker processes: which GPU (or MIG instance) UUIDs each worker
// sees, its torchrun-style rank variables, the user it runs as, its run and checkpoint dirs.
// Also the JSON forms of placements and processes that the store keeps for re-adoption after a
// restart.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/accelerator.h"
#include "server/control_plane.h"
#include "server/job_arrays.h"
#include "server/state_dir.h"

namespace trainyard::server {
namespace {

// A free TCP port on loopback for the gang's rendezvous (MASTER_PORT); 29500 if none found.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string_view mig_profile_name(const LocalNode& node, int profile) {
  const model::Accelerator* acc = model::find_accelerator(node.node.gpu_model);
  if (acc == nullptr || profile < 0 || profile >= static_cast<int>(acc->mig_profiles.size()))
    return "";
  return acc->mig_profiles[profile].name;
}

// The CUDA_VISIBLE_DEVICES entry of one placement entry, or an error saying what is missing.
util::Result<std::string> device_for(const LocalNode& node, const Placed& a) {
  if (a.gpu_idx < 0 || a.gpu_idx >= static_cast<int>(node.gpus.size()))
    return util::internal_error(fmt::format("GPU {} is not on {}", a.gpu_idx, node.node.name));
  const telemetry::GpuDevice& gpu = node.gpus[a.gpu_idx];
  if (a.mig_profile < 0) return gpu.uuid;
  const std::string_view profile = mig_profile_name(node, a.mig_profile);
  if (gpu.simulated) return fmt::format("MIG-sim-{}-{}-{}", gpu.index, profile, a.mig_start);
  for (const auto& mi : gpu.mig_instances) {
    if (mi.profile == profile && mi.start == a.mig_start) return mi.uuid;
  }
  return util::failed_precondition(fmt::format(
      "GPU {} has no MIG instance {} at slice {}; create it with `nvidia-smi mig -i {} -cgi {} -C`",
      gpu.index, profile, a.mig_start, gpu.index, profile));
}

// Where the other ranks reach rank 0 (MASTER_ADDR): its node's address on a batch system,
// loopback for workers that all run here.
std::string master_address(const Placement& placement, const NodeBook& nodes) {
  for (const Placed& a : placement) {
    const LocalNode* n = a.worker == 0 ? nodes.find(a.node) : nullptr;
    if (n != nullptr && !n->address.empty()) return n->address;
  }
  return "127.0.0.1";
}

// One rank's part of the placement: its node, how many GPUs it holds there, the devices it sees
// (only when this process picks them, not a batch system), and its rank among the workers on
// its node.
struct RankShare {
  const LocalNode* node = nullptr;
  int gpus = 0;
  std::vector<std::string> visible_devices;
  util::Status status = util::Status::ok();  // a device that cannot be found
  int local_rank = 0;
};

RankShare rank_share(const Placement& placement, const NodeBook& nodes, int rank,
                     bool pick_devices) {
  RankShare out;
  for (const Placed& a : placement) {
    if (a.worker != rank) continue;
    out.node = nodes.find(a.node);
    if (a.gpu_idx < 0) continue;
    ++out.gpus;
    if (!pick_devices || !out.status.is_ok() || out.node == nullptr) continue;
    auto dev = device_for(*out.node, a);
    if (dev.is_ok()) {
      out.visible_devices.push_back(*dev);
    } else {
      out.status = dev.status();
    }
  }
  std::set<int> lower;  // workers on the same node before this one
  for (const Placed& a : placement)
    if (out.node != nullptr && a.node == out.node->node.id && a.worker < rank)
      lower.insert(a.worker);
  out.local_rank = static_cast<int>(lower.size());
  return out;
}

}  // namespace

util::Status ControlPlane::prepare_launch_dirs(const ActiveJob& job,
                                               const exec::Credentials* creds) const {
  TY_RETURN_IF_ERROR(prepare_attempt_dir(work_dir(), job.rec.id, job.rec.attempt, creds));
  // A spec's own checkpoint.dir is left to the worker, which makes it as that user.
  if (job.manifest.checkpoint.dir.empty())
    TY_RETURN_IF_ERROR(prepare_checkpoint_dir(checkpoint_dir(job), creds));
  return util::Status::ok();
}

exec::WorkerLaunch ControlPlane::worker_launch(const ActiveJob& job, int rank, int world,
                                               const std::string& master_addr, int port,
                                               const std::string& run_dir) const {
  const auto& proc = job.manifest.process;
  std::vector<std::string> argv = proc.command;
  argv.insert(argv.end(), proc.args.begin(), proc.args.end());
  return {.job = job.rec.id,
          .attempt = job.rec.attempt,
          .rank = rank,
          .world_size = world,
          .master_addr = master_addr,
          .master_port = port,
          .argv = std::move(argv),
          .env = worker_env(job),
          .working_dir = proc.working_dir,
          .checkpoint_dir = checkpoint_dir(job),
          .mtbf_seconds = job.manifest.spec.preemptible ? mtbf_estimate_seconds() : 0,
          .run_dir = run_dir,
          .log_cap_bytes = options_.config.log_cap_bytes};
}

util::Status ControlPlane::launch_workers(ActiveJob& job) {
  const int world = attempt_workers(job);
  const int port = world > 1 ? free_port() : 0;  // a rendezvous only for gangs
  job.workers.clear();
  // The team's user, and the dirs that user must reach before any of its workers starts.
  auto identity = identities_->for_launch(job.rec.team);
  const exec::Credentials* creds = identity.is_ok() && *identity ? &**identity : nullptr;
  const util::Status prepared =
      identity.is_ok() ? prepare_launch_dirs(job, creds) : identity.status();
  const bool gang = executor_.launches_gangs();
  exec::GangLaunch batch{.name = job.rec.name};
  const std::string master_addr = master_address(job.placement, nodes_);
  util::Status first_error = util::Status::ok();
  for (int rank = 0; rank < world; ++rank) {
    WorkerProcess w{.rank = rank, .run_dir = run_dir(job.rec.id, job.rec.attempt, rank).string()};
    exec::WorkerLaunch l = worker_launch(job, rank, world, master_addr, port, w.run_dir);
    if (creds != nullptr) l.run_as = *creds;
    RankShare share = rank_share(job.placement, nodes_, rank, !gang);
    l.visible_devices = std::move(share.visible_devices);
    l.local_rank = share.local_rank;
    util::Status st = share.status.is_ok() ? prepared : share.status;
    if (gang) {
      if (share.node == nullptr && st.is_ok()) st = util::internal_error("a worker has no node");
      if (!st.is_ok() && first_error.is_ok()) first_error = st;
      batch.workers.push_back({.launch = l,
                               .node = share.node != nullptr ? share.node->node.name : "",
                               .gpus = share.gpus,
                               .cpu_milli = job.manifest.spec.worker.cpu.value(),
                               .memory_bytes = job.manifest.spec.worker.memory.value()});
      job.workers.push_back(std::move(w));
      continue;
    }
    if (st.is_ok()) {
      auto ref = executor_.launch(l);
      if (ref.is_ok()) {
        w.ref = *ref;
      } else {
        st = ref.status();
      }
    }
    if (!st.is_ok()) {
      w.finished = true;
      w.status = {exec::ExitKind::Lost, 0, "could not be started: " + st.message()};
      if (first_error.is_ok()) first_error = st;
    }
    job.workers.push_back(std::move(w));
  }
  return gang ? launch_gang(job, batch, first_error) : first_error;
}

util::Status ControlPlane::launch_gang(ActiveJob& job, const exec::GangLaunch& batch,
                                       util::Status st) {
  // One batch job for the whole attempt: all workers start together, or none does.
  if (st.is_ok()) {
    auto refs = executor_.launch_gang(batch);
    if (refs.is_ok() && refs->size() == job.workers.size()) {
      for (size_t i = 0; i < refs->size(); ++i) job.workers[i].ref = (*refs)[i];
      return util::Status::ok();
    }
    st = refs.is_ok() ? util::internal_error("the executor returned the wrong number of workers")
                      : refs.status();
  }
  for (auto& w : job.workers) {
    w.finished = true;
    w.status = {st.code() == util::StatusCode::Unavailable ? exec::ExitKind::NotStarted
                                                           : exec::ExitKind::Lost,
                0, "could not be started: " + st.message()};
  }
  return st;
}

std::string ControlPlane::device_uuid(const Placed& a) const {
  const LocalNode* node = a.gpu_idx >= 0 ? nodes_.find(a.node) : nullptr;
  if (node == nullptr) return "";
  auto dev = device_for(*node, a);
  return dev.is_ok() ? *dev : "";
}

std::string ControlPlane::processes_json(const ActiveJob& job) const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& w : job.workers) {
    arr.push_back({{"rank", w.rank},
                   {"pid", w.ref.pid},
                   {"start_ticks", w.ref.start_ticks},
                   {"batch_job", w.ref.batch_job},
                   {"run_dir", w.run_dir},
                   {"status", w.finished ? w.status.detail : "running"}});
  }
  return arr.dump();
}

std::string ControlPlane::placement_to_json(const Placement& placement) const {
  nlohmann::json arr = nlohmann::json::array();
  for (const Placed& a : placement) {
    const LocalNode& node = nodes_.of(a);
    nlohmann::json e = {
        {"worker", a.worker}, {"node", node.node.name}, {"gpu", a.gpu_idx}, {"milli", a.milli}};
    if (a.mig_profile >= 0) {
      e["mig_profile"] = std::string(mig_profile_name(node, a.mig_profile));
      e["mig_start"] = a.mig_start;
    }
    if (a.gpu_idx >= 0) {
      auto dev = device_for(node, a);
      e["device"] = dev.is_ok() ? *dev : "";
    }
    arr.push_back(std::move(e));
  }
  return arr.dump();
}

util::Result<Placement> ControlPlane::placement_from_json(const std::string& text) const {
  Placement out;
  try {
    for (const auto& e : nlohmann::json::parse(text)) {
      Placed a;
      a.worker = e.at("worker").get<int32_t>();
      const auto name = e.at("node").get<std::string>();
      const LocalNode* node = nodes_.find(name);
      if (node == nullptr) return util::not_found("node " + name + " is no longer present");
      a.node = node->node.id;
      a.gpu_idx = e.at("gpu").get<int16_t>();
      if (a.gpu_idx >= node->node.gpu_count)
        return util::not_found(fmt::format("GPU {} of {} is no longer present", a.gpu_idx, name));
      a.milli = e.at("milli").get<int16_t>();
      if (e.contains("mig_profile")) {
        const auto* acc = model::find_accelerator(node->node.gpu_model);
        const auto profile = e["mig_profile"].get<std::string>();
        for (size_t i = 0; acc && i < acc->mig_profiles.size(); ++i)
          if (acc->mig_profiles[i].name == profile) a.mig_profile = static_cast<int8_t>(i);
        a.mig_start = e.at("mig_start").get<int8_t>();
      }
      out.push_back(a);
    }
  } catch (const nlohmann::json::exception& e) {
    return util::internal_error(std::string("stored placement is not readable: ") + e.what());
  }
  return out;
}

}  // namespace trainyard::server
