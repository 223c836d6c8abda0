// CsvTable: all rows of a CSV file kept for random access, with the reader's located errors.
#include "util/csv_table.h"

#include <gtest/gtest.h>

namespace trainyard::util {
namespace {

TEST(CsvTable, RowsKeepTheirSourceLines) {
  auto t = CsvTable::parse("Name,Price\r\n\r\na,\"1,5\"\r\nb\r\n", "p.csv", kLenientCsv);
  ASSERT_TRUE(t.is_ok()) << t.status().message();
  ASSERT_EQ(t->row_count(), 2u);
  EXPECT_EQ(t->field(0, *t->require_column("Price")), "1,5");
  EXPECT_EQ(t->line(0), 3);
  EXPECT_EQ(t->field_count(1), 1u);
  EXPECT_EQ(t->field(1, 1), "");  // shorter than the header
  EXPECT_EQ(t->find_column("Region"), -1);
  EXPECT_EQ(t->require_column("Region").status().message(),
            "p.csv:1: missing column 'Region' (the header has: Name, Price)");
}

TEST(CsvTable, BadValueNamesLineColumnAndFix) {
  auto t = CsvTable::parse("Name,vCPUs\nx,eight\n", "c.csv", kLenientCsv);
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->bad_value(0, 1, "a number", "write 8").message(),
            "c.csv:2: column 'vCPUs' must be a number, got \"eight\" (write 8)");
  auto rows = CsvTable::parse_rows("1,2\n", "h.csv", kLenientCsv);
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows->bad_value(0, 1, "a count", "fix").message(),
            "h.csv:1: field 2 must be a count, got \"2\" (fix)");
}

TEST(CsvTable, EmptyTextHasNoRowsButNeedsAHeaderToParse) {
  auto rows = CsvTable::parse_rows("", "e.csv", kLenientCsv);
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows->row_count(), 0u);
  auto table = CsvTable::parse("\n", "e.csv", kLenientCsv);
  ASSERT_FALSE(table.is_ok());
  EXPECT_EQ(table.status().message(), "e.csv:1: the file is empty; expected a header row");
}

TEST(CsvTable, AnUnterminatedQuoteFailsTheWholeFile) {
  auto t = CsvTable::parse("a,b\n1,\"2\n3,4\n", "u.csv", kLenientCsv);
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().message(), "u.csv:2: unterminated quoted field (a '\"' is never closed)");
}

}  // namespace
}  // namespace trainyard::util
