// The doctor's tensor-core rule: a busy GPU with tensor cores whose measured tensor activity
// (GPM, Hopper and newer) stays near zero trains without them, whatever the job says its dtype
// is. With an fp32 dtype the step rule has already said so, and this adds the measurement; with
// a mixed-precision dtype it points at autocast not covering the model.
#include <algorithm>
#include <cctype>
#include <string>

#include <fmt/format.h>

#include "telemetry/doctor_internal.h"

namespace trainyard::telemetry::doctor_internal {
namespace {

bool is_mixed_precision(std::string dtype) {
  std::transform(dtype.begin(), dtype.end(), dtype.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* mixed : {"bf16", "bfloat16", "fp16", "float16", "half", "amp", "mixed", "fp8"}) {
    if (dtype.find(mixed) != std::string::npos) return true;
  }
  return false;
}

std::string amp_action(const TensorCoreInfo& tc) {
  return tc.bf16 ? "train under torch.autocast(\"cuda\", dtype=torch.bfloat16) (no loss scaling "
                   "needed), and let the remaining fp32 matmuls use TF32: "
                   "torch.set_float32_matmul_precision(\"high\")"
                 : "train under torch.autocast(\"cuda\", dtype=torch.float16) with "
                   "torch.cuda.amp.GradScaler (this GPU has fp16 tensor cores but no bf16 or "
                   "TF32)";
}

}  // namespace

void run_tensor_rules(Context& ctx) {
  std::vector<std::string> evidence;
  for (const DeviceSeries* d : busy_devices(ctx)) {
    if (static_cast<int64_t>(d->tensor.size()) < ctx.t.min_samples_per_gpu) continue;
    if (!tensor_core_info(d->model.empty() ? ctx.model : d->model).tensor_cores) continue;
    if (d->util_mean < ctx.t.tensor_busy_util_mean) continue;
    if (d->tensor_mean >= ctx.t.tensor_idle_percent) continue;
    evidence.push_back(
        fmt::format("{}: tensor-core activity mean {:.2f}% over {} samples while "
                    "util mean {:.1f}%",
                    d->label, d->tensor_mean, d->tensor.size(), d->util_mean));
  }
  if (evidence.empty()) return;
  if (Finding* f = ctx.find("fp32-on-tensor-cores")) {  // the dtype said it; this measures it
    f->evidence.insert(f->evidence.end(), evidence.begin(), evidence.end());
    return;
  }
  const TensorCoreInfo tc = tensor_core_info(ctx.model);
  const std::string& dtype = ctx.stats.dtype;
  const bool claims_mixed = is_mixed_precision(dtype);
  if (!dtype.empty()) {
    evidence.push_back(fmt::format("the job reports dtype \"{}\"", dtype));
  }
  ctx.findings.push_back(Finding{
      .rule = "tensor-cores-idle",
      .severity = "warning",
      .summary =
          claims_mixed
              ? fmt::format("the job reports {} but its tensor cores stay idle: the "
                            "matmuls still run in fp32",
                            dtype)
              : fmt::format("the GPU computes without its tensor cores (fp32 math on {})",
                            ctx.model.empty() ? std::string("a tensor-core GPU") : ctx.model),
      .evidence = std::move(evidence),
      .action = claims_mixed
                    ? "check that the forward pass and loss run inside torch.autocast (a model "
                      "called outside the autocast block, or layers cast back with .float(), run "
                      "in fp32), and that matmul dimensions are multiples of 8; then " +
                          amp_action(tc)
                    : amp_action(tc),
  });
}

}  // namespace trainyard::telemetry::doctor_internal
