#include "cloud/catalog.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace trainyard::cloud {
namespace {

constexpr const char* kAwsHeader =
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,"
    "AvailabilityZone\n";

Catalog parse_ok(const std::string& text, const std::string& provider) {
  Catalog c;
  auto st = parse_catalog_csv(text, "t.csv", provider, c);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return c;
}

std::string parse_error(const std::string& text, const std::string& provider = "aws") {
  Catalog c;
  auto st = parse_catalog_csv(text, "t.csv", provider, c);
  EXPECT_FALSE(st.is_ok());
  return st.message();
}

TEST(Catalog, ReadsMachineRowsByHeaderName) {
  // Lambda's column order differs from AWS's and it has no SpotPrice or zone column.
  auto c = parse_ok(
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region\n"
      "gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,31.92,us-east-1\n",
      "lambda");
  ASSERT_EQ(c.offerings.size(), 1u);
  const Offering& o = c.offerings[0];
  EXPECT_EQ(o.provider, "lambda");
  EXPECT_EQ(o.accelerator, "H100-80GB");
  EXPECT_EQ(o.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(o.vcpus, 208.0);
  EXPECT_DOUBLE_EQ(*o.on_demand_per_hour, 31.92);
  EXPECT_FALSE(o.spot_per_hour.has_value());
  EXPECT_TRUE(o.zone.empty());
}

TEST(Catalog, MapsSkyPilotGpuNamesAndCountsUnknownOnes) {
  auto c = parse_ok(std::string(kAwsHeader) +
                        "p4d.24xlarge,A100,8.0,96,1152,32.77,5.1,us-east-1,use1-az1\n"
                        "p3.2xlarge,V100,1.0,8,61,3.06,,us-east-1,use1-az2\n"
                        "x.big,MI300X,8,96,1152,40,,us-east-1,use1-az1\n"
                        "x.big,MI300X,8,96,1152,40,,us-east-1,use1-az2\n",
                    "aws");
  ASSERT_EQ(c.offerings.size(), 2u);
  EXPECT_EQ(c.offerings[0].accelerator, "A100-40GB");
  EXPECT_EQ(c.offerings[1].accelerator, "V100-16GB");
  EXPECT_FALSE(c.offerings[1].spot_per_hour.has_value());
  EXPECT_EQ(c.skipped_unknown_gpu.at("MI300X"), 2);
  EXPECT_EQ(c.skipped_total(), 2);
}

TEST(Catalog, KeepsRowsWhereSpotCostsAtLeastOnDemand) {
  auto c =
      parse_ok(std::string(kAwsHeader) + "p5e.48xlarge,H200,8,192,2048,80.0,84.5,r,z\n", "aws");
  ASSERT_EQ(c.offerings.size(), 1u);
  EXPECT_DOUBLE_EQ(*c.offerings[0].on_demand_per_hour, 80.0);
  EXPECT_DOUBLE_EQ(*c.offerings[0].spot_per_hour, 84.5);
}

TEST(Catalog, BadPriceNamesFileLineColumnAndValue) {
  auto msg = parse_error(std::string(kAwsHeader) + "p3.2xlarge,V100,1,8,61,3.06,,r,z\n" +
                         "p3.2xlarge,V100,1,8,61,cheap,,r,z\n");
  EXPECT_EQ(msg,
            "t.csv:3: column 'Price' must be a non-negative price in USD per hour, got \"cheap\" "
            "(write a number like 3.06, or leave it empty when not offered)");
}

TEST(Catalog, NegativeSpotPriceIsAnError) {
  auto msg = parse_error(std::string(kAwsHeader) + "p3.2xlarge,V100,1,8,61,3.06,-1,r,z\n");
  EXPECT_NE(msg.find("t.csv:2: column 'SpotPrice'"), std::string::npos) << msg;
}

TEST(Catalog, ZeroOrTextGpuCountIsAnError) {
  EXPECT_NE(parse_error(std::string(kAwsHeader) + "p,V100,0,8,61,3,,r,z\n")
                .find("column 'AcceleratorCount' must be a GPU count > 0, got \"0\""),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kAwsHeader) + "p,V100,many,8,61,3,,r,z\n").find("\"many\""),
            std::string::npos);
}

TEST(Catalog, FractionalGpuRowsAreCountedAndLeftOut) {
  auto c = parse_ok(std::string(kAwsHeader) + "Standard_NV6ads_A10_v5,A10,0.167,6,55,0.45,,r,\n",
                    "azure");
  EXPECT_TRUE(c.offerings.empty());
  EXPECT_EQ(c.skipped_fractional_gpu.at("A10"), 1);
}

TEST(Catalog, BadVcpusAndEmptyRegionAreErrors) {
  EXPECT_NE(parse_error(std::string(kAwsHeader) + "p,V100,1,eight,61,3,,r,z\n")
                .find("t.csv:2: column 'vCPUs' must be a non-negative number, got \"eight\""),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(kAwsHeader) + "p,V100,1,8,61,3,,,z\n")
                .find("column 'Region' must be non-empty"),
            std::string::npos);
}

TEST(Catalog, MissingColumnNamesTheColumnAndTheHeader) {
  auto msg = parse_error(
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Region\n"
      "p,V100,1,8,61,r\n");
  EXPECT_NE(msg.find("t.csv:1: missing column 'Price'"), std::string::npos) << msg;
}

TEST(Catalog, UnterminatedQuoteIsAnError) {
  auto msg = parse_error(std::string(kAwsHeader) + "p,\"V100,1,8,61,3,,r,z\n");
  EXPECT_NE(msg.find("t.csv:2: unterminated quoted field"), std::string::npos) << msg;
}

TEST(Catalog, GcpMachinePriceIsHostPlusGpus) {
  auto c = parse_ok(
      "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
      "AvailabilityZone,Price,SpotPrice\n"
      "a3-highgpu-8g,208.0,1872.0,,,,us-central1,us-central1-a,9.46006,3.86318\n"
      ",,,H100,8,\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}\",us-central1,"
      "us-central1-a,33.60609,32.0104\n"
      "n1-standard-8,8,30,,,,us-central1,us-central1-a,0.38,0.08\n"
      ",,,V100,1,,us-central1,us-central1-a,2.48,1.24\n"
      ",,,P4,1,,us-central1,us-central1-a,0.6,0.2\n"
      "a3-highgpu-8g,208.0,1872.0,,,,us-east5,us-east5-a,9.46006,\n",
      "gcp");
  ASSERT_EQ(c.offerings.size(), 2u);
  const Offering& a3 = c.offerings[0];
  EXPECT_EQ(a3.instance_type, "a3-highgpu-8g");
  EXPECT_EQ(a3.accelerator, "H100-80GB");
  EXPECT_EQ(a3.gpus_per_node, 8);
  EXPECT_EQ(a3.zone, "us-central1-a");
  EXPECT_DOUBLE_EQ(a3.vcpus, 208.0);
  EXPECT_NEAR(*a3.on_demand_per_hour, 43.06615, 1e-9);
  EXPECT_NEAR(*a3.spot_per_hour, 35.87358, 1e-9);
  const Offering& n1 = c.offerings[1];
  EXPECT_EQ(n1.instance_type, "n1-standard-8");
  EXPECT_EQ(n1.accelerator, "V100-16GB");
  EXPECT_NEAR(*n1.on_demand_per_hour, 2.86, 1e-9);
  EXPECT_EQ(c.skipped_unknown_gpu.at("P4"), 1);
}

TEST(Catalog, LoadsTheBundledCatalog) {
  const std::string dir = std::string(TY_SHARED_DIR) + "/catalog";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " not present";
  auto c = load_catalog(dir);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  std::map<std::string, int> by_provider;
  int unpriced = 0;  // AWS p5e has neither price in this snapshot; such rows are kept
  for (const auto& o : c->offerings) {
    ++by_provider[o.provider];
    EXPECT_GE(o.gpus_per_node, 1);
    if (!o.on_demand_per_hour && !o.spot_per_hour) {
      ++unpriced;
      EXPECT_EQ(o.instance_type, "p5e.48xlarge");
    }
  }
  EXPECT_LT(unpriced, 20);
  EXPECT_EQ(by_provider["aws"], 174);  // every p-family row has a catalogued GPU
  EXPECT_GT(by_provider["gcp"], 300);
  EXPECT_GT(by_provider["azure"], 400);
  EXPECT_GT(by_provider["lambda"], 200);
  EXPECT_GT(c->skipped_unknown_gpu["B200"], 0);
  EXPECT_GT(c->skipped_unknown_gpu["MI300X"], 0);
}

}  // namespace
}  // namespace trainyard::cloud
