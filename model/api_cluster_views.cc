// The cluster resources of the API (api_cluster_views.h): the only place their key names are
// written.
#include "model/api_cluster_views.h"

#include "model/internal/api_json.h"

namespace trainyard::model {

using api_json::FieldReader;
using api_json::Json;
using api_json::or_null;

namespace {

Json labels_json(const Labels& labels) {
  Json out = Json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

Json gpus_json(const GpusByModel& gpus) {
  Json out = Json::object();
  for (const auto& [k, v] : gpus) out[k] = v;
  return out;
}

Json share_json(const GpuShareView& s) {
  Json j = {{"job", s.job}, {"worker", s.worker}, {"gpuFraction", s.gpu_fraction}};
  if (s.mig_profile) j["migProfile"] = *s.mig_profile;
  if (s.mig_start) j["migStart"] = *s.mig_start;
  if (s.compute_slices) j["computeSlices"] = *s.compute_slices;
  if (s.memory_slices) j["memorySlices"] = *s.memory_slices;
  return j;
}

Json device_json(const NodeDeviceView& d) {
  Json shares = Json::array();
  for (const auto& s : d.shares) shares.push_back(share_json(s));
  return {{"index", d.index},
          {"uuid", d.uuid},
          {"name", d.name},
          {"memoryBytes", d.memory_bytes},
          {"mig", d.mig},
          {"jobs", d.jobs},
          {"shares", std::move(shares)}};
}

Json node_json(const NodeView& n) {
  Json devices = Json::array();
  for (const auto& d : n.devices) devices.push_back(device_json(d));
  Json j = {{"name", n.name},
            {"gpuModel", n.gpu_model},
            {"gpus", n.gpus},
            {"gpusInUse", n.gpus_in_use},
            {"simulated", n.simulated},
            {"mig", n.mig},
            {"cpuMilli", n.cpu_milli},
            {"memoryBytes", n.memory_bytes},
            {"labels", labels_json(n.labels)},
            {"pool", n.pool},
            {"zone", n.zone},
            {"state", n.state},
            {"pricePerHour", n.price_per_hour},
            {"cloud", n.cloud},
            {"devices", std::move(devices)}};
  if (n.batch) {
    j["executor"] = n.batch->executor;
    j["address"] = n.batch->address;
    j["gpusHeldOutside"] = n.batch->gpus_held_outside;
    if (n.batch->problem) j["problem"] = *n.batch->problem;
  }
  return j;
}

Json pool_json(const PoolView& p) {
  return {{"name", p.name},
          {"kind", p.kind},
          {"provider", p.provider},
          {"instanceType", p.instance_type},
          {"region", p.region},
          {"gpuModel", p.gpu_model},
          {"gpusPerNode", p.gpus_per_node},
          {"minNodes", p.min_nodes},
          {"maxNodes", p.max_nodes},
          {"pricePerNodeHour", p.price_per_node_hour},
          {"interruptions", p.interruptions}};
}

}  // namespace

Json to_json(const NodeListView& v) {
  Json items = Json::array();
  for (const auto& n : v.items) items.push_back(node_json(n));
  Json pools = Json::array();
  for (const auto& p : v.pools) pools.push_back(pool_json(p));
  return {{"items", std::move(items)}, {"pools", std::move(pools)}};
}

Json to_json(const QueueStandingView& v) {
  const FairShareView& f = v.fair_share;
  return {{"usage", gpus_json(v.usage)},
          {"borrowed", gpus_json(v.borrowed)},
          {"lent", gpus_json(v.lent)},
          {"fairShare",
           {{"dominantShare", f.dominant_share},
            {"pastUsageShare", f.past_usage_share},
            {"weightedShare", f.weighted_share},
            {"position", f.position},
            {"of", f.of}}}};
}

Json to_json(const QueueListView& v) {
  Json items = Json::array();
  for (const auto& q : v.items) {
    Json j = {{"name", q.name},
              {"weight", q.weight},
              {"cohort", q.cohort},
              {"quota", gpus_json(q.quota)},
              {"pending", q.pending},
              {"running", q.running},
              {"gpusInUse", q.gpus_in_use}};
    if (q.standing) j.update(to_json(*q.standing));
    j["budget"] = q.budget ? Json{{"period", q.budget->period},
                                  {"budgetUsd", q.budget->budget_usd},
                                  {"spentUsd", q.budget->spent_usd}}
                           : Json(nullptr);
    items.push_back(std::move(j));
  }
  return {{"items", std::move(items)}, {"policy", v.policy}};
}

// ---- readers ---------------------------------------------------------------------------------

void read_fields(FieldReader& r, GpuShareView& s) {
  r.required("job", s.job)
      .required("worker", s.worker)
      .required("gpuFraction", s.gpu_fraction)
      .optional("migProfile", s.mig_profile)
      .optional("migStart", s.mig_start)
      .optional("computeSlices", s.compute_slices)
      .optional("memorySlices", s.memory_slices);
}

void read_fields(FieldReader& r, NodeDeviceView& d) {
  r.required("index", d.index)
      .required("uuid", d.uuid)
      .required("name", d.name)
      .required("memoryBytes", d.memory_bytes)
      .required("mig", d.mig)
      .required("jobs", d.jobs)
      .required("shares", d.shares);
}

void read_fields(FieldReader& r, NodeView& n) {
  r.required("name", n.name)
      .required("gpuModel", n.gpu_model)
      .required("gpus", n.gpus)
      .required("gpusInUse", n.gpus_in_use)
      .required("simulated", n.simulated)
      .required("mig", n.mig)
      .required("cpuMilli", n.cpu_milli)
      .required("memoryBytes", n.memory_bytes)
      .required("labels", n.labels)
      .required("pool", n.pool)
      .required("zone", n.zone)
      .required("state", n.state)
      .required("pricePerHour", n.price_per_hour)
      .required("cloud", n.cloud)
      .required("devices", n.devices);
  n.batch.reset();
  if (r.has("executor")) {
    BatchNodeView& b = n.batch.emplace();
    r.required("executor", b.executor)
        .required("address", b.address)
        .required("gpusHeldOutside", b.gpus_held_outside)
        .optional("problem", b.problem);
  }
}

void read_fields(FieldReader& r, PoolView& p) {
  r.required("name", p.name)
      .required("kind", p.kind)
      .required("provider", p.provider)
      .required("instanceType", p.instance_type)
      .required("region", p.region)
      .required("gpuModel", p.gpu_model)
      .required("gpusPerNode", p.gpus_per_node)
      .required("minNodes", p.min_nodes)
      .required("maxNodes", p.max_nodes)
      .required("pricePerNodeHour", p.price_per_node_hour)
      .required("interruptions", p.interruptions);
}

void read_fields(FieldReader& r, NodeListView& v) {
  r.required("items", v.items).required("pools", v.pools);
}

void read_fields(FieldReader& r, FairShareView& f) {
  r.required("dominantShare", f.dominant_share)
      .required("pastUsageShare", f.past_usage_share)
      .required("weightedShare", f.weighted_share)
      .required("position", f.position)
      .required("of", f.of);
}

void read_fields(FieldReader& r, BudgetView& b) {
  r.required("period", b.period)
      .required("budgetUsd", b.budget_usd)
      .required("spentUsd", b.spent_usd);
}

void read_fields(FieldReader& r, QueueView& q) {
  r.required("name", q.name)
      .required("weight", q.weight)
      .required("cohort", q.cohort)
      .required("quota", q.quota)
      .required("pending", q.pending)
      .required("running", q.running)
      .required("gpusInUse", q.gpus_in_use)
      .nullable("budget", q.budget);
  q.standing.reset();
  if (r.has("fairShare")) {
    QueueStandingView& s = q.standing.emplace();
    r.required("usage", s.usage)
        .required("borrowed", s.borrowed)
        .required("lent", s.lent)
        .required("fairShare", s.fair_share);
  }
}

void read_fields(FieldReader& r, QueueListView& v) {
  r.required("policy", v.policy).required("items", v.items);
}

namespace {

template <typename View>
util::Status read_view(const Json& j, View& out) {
  FieldReader r(j, "");
  if (r.ok()) read_fields(r, out);
  return r.status();
}

}  // namespace

util::Status from_json(const Json& j, NodeListView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, QueueListView& out) {
  return read_view(j, out);
}

}  // namespace trainyard::model
