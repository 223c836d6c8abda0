#include "telemetry/driver_name.h"

#include <gtest/gtest.h>

namespace trainyard::telemetry {
namespace {

constexpr model::Bytes kUnknown{0};

model::Bytes mib(int64_t n) {
  return model::mib(n);
}

TEST(ModelFromDriverName, MapsCommonDriverNamesToCatalogModels) {
  EXPECT_EQ(model_from_driver_name("NVIDIA H100 80GB HBM3", mib(81559)), "H100-80GB");
  EXPECT_EQ(model_from_driver_name("NVIDIA H100 PCIe", mib(81559)), "H100-80GB");
  EXPECT_EQ(model_from_driver_name("NVIDIA H200", mib(143771)), "H200-141GB");
  EXPECT_EQ(model_from_driver_name("NVIDIA A100-SXM4-80GB", mib(81920)), "A100-80GB");
  EXPECT_EQ(model_from_driver_name("NVIDIA A100-PCIE-40GB", mib(40960)), "A100-40GB");
  EXPECT_EQ(model_from_driver_name("NVIDIA A100 80GB PCIe", kUnknown), "A100-80GB");
  EXPECT_EQ(model_from_driver_name("NVIDIA L40S", mib(46068)), "L40S");
  EXPECT_EQ(model_from_driver_name("NVIDIA L4", mib(23034)), "L4");
  EXPECT_EQ(model_from_driver_name("NVIDIA A10G", mib(23028)), "A10G");
  EXPECT_EQ(model_from_driver_name("NVIDIA A10", mib(23028)), "A10");
  EXPECT_EQ(model_from_driver_name("Tesla T4", mib(15360)), "T4");
  EXPECT_EQ(model_from_driver_name("Tesla V100-SXM2-32GB", mib(32768)), "V100-32GB");
  EXPECT_EQ(model_from_driver_name("Tesla P100-PCIE-16GB", mib(16280)), "P100");
  EXPECT_EQ(model_from_driver_name("NVIDIA GeForce RTX 2080 Ti", mib(11264)), "RTX-2080TI");
}

TEST(ModelFromDriverName, UsesMemoryWhenTheNameDoesNotTellVariantsApart) {
  EXPECT_EQ(model_from_driver_name("Tesla V100-SXM2", mib(16160)), "V100-16GB");
  EXPECT_EQ(model_from_driver_name("Tesla V100-SXM2", mib(32510)), "V100-32GB");
  EXPECT_EQ(model_from_driver_name("Tesla V100-SXM2", kUnknown), "Tesla V100-SXM2");
}

TEST(ModelFromDriverName, KeepsUnknownNamesAndRefusesMatchesWithTheWrongMemory) {
  EXPECT_EQ(model_from_driver_name("  NVIDIA GH200 480GB ", kUnknown), "NVIDIA GH200 480GB");
  EXPECT_EQ(model_from_driver_name("NVIDIA L40", mib(46068)), "NVIDIA L40");
  // An H100 NVL has 94 GB: not the catalogued H100-80GB.
  EXPECT_EQ(model_from_driver_name("NVIDIA H100 NVL", mib(95830)), "NVIDIA H100 NVL");
  EXPECT_EQ(model_from_driver_name("", kUnknown), "");
}

TEST(MigProfileFromDriverName, ReadsTheProfileFromTheNameOrInfersItFromMemory) {
  EXPECT_EQ(mig_profile_from_driver_name("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "A100-40GB", kUnknown),
            "1g.5gb");
  EXPECT_EQ(mig_profile_from_driver_name("NVIDIA H100 80GB HBM3 MIG 3G.40GB", "", kUnknown),
            "3g.40gb");
  EXPECT_EQ(mig_profile_from_driver_name("NVIDIA H100 80GB HBM3", "H100-80GB", mib(9984)),
            "1g.10gb");
  // 1g.20gb and 2g.20gb have the same memory: the one with fewer compute slices is assumed.
  EXPECT_EQ(mig_profile_from_driver_name("", "H100-80GB", mib(19968)), "1g.20gb");
  EXPECT_EQ(mig_profile_from_driver_name("", "L4", mib(9984)), "");
  EXPECT_EQ(mig_profile_from_driver_name("", "H100-80GB", kUnknown), "");
}

}  // namespace
}  // namespace trainyard::telemetry
