// The CSV reader every trace, catalog and spot trace goes through: quoting, line ends, headers,
// and errors that name file, line and column.
#include "util/csv_reader.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace trainyard::util {
namespace {

std::vector<std::vector<std::string>> rows_of(CsvReader& csv) {
  std::vector<std::vector<std::string>> out;
  while (csv.next()) {
    EXPECT_TRUE(csv.row_status().is_ok()) << csv.row_status().message();
    auto& row = out.emplace_back();
    for (size_t col = 0; col < csv.field_count(); ++col) {
      row.emplace_back(csv.field(static_cast<int>(col)));
    }
  }
  return out;
}

using Rows = std::vector<std::vector<std::string>>;

TEST(CsvReader, QuotedFieldsHoldSeparatorsAndDoubledQuotes) {
  CsvReader csv = CsvReader::from_string(
      "name,note\n\"a,b\",\"say \"\"hi\"\"\"\n\"\",plain\n\"x\"tail,mid\"quote\n", "q.csv");
  ASSERT_TRUE(csv.read_header().is_ok());
  EXPECT_EQ(rows_of(csv), (Rows{{"a,b", "say \"hi\""}, {"", "plain"}, {"xtail", "mid\"quote"}}));
}

TEST(CsvReader, CrlfLineEndsAreNotPartOfTheLastField) {
  CsvReader csv = CsvReader::from_string("a,b\r\n1,\"2\"\r\n\r\n3,\r\n", "crlf.csv");
  ASSERT_TRUE(csv.read_header().is_ok());
  EXPECT_EQ(csv.header(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rows_of(csv), (Rows{{"1", "2"}, {"3", ""}}));
  EXPECT_EQ(csv.line(), 4);
}

TEST(CsvReader, EmptyFileIsAnErrorWhenAHeaderIsExpected) {
  CsvReader csv = CsvReader::from_string("", "empty.csv");
  const Status st = csv.read_header();
  EXPECT_EQ(st.code(), StatusCode::InvalidArgument);
  EXPECT_EQ(st.message(), "empty.csv:1: the file is empty; expected a header row");
  CsvReader blank = CsvReader::from_string("\n\r\n", "blank.csv");
  EXPECT_FALSE(blank.read_header().is_ok());
  CsvReader no_header = CsvReader::from_string("", "rows.csv");
  EXPECT_FALSE(no_header.next());
}

TEST(CsvReader, ErrorsNameFileLineAndColumn) {
  CsvReader csv = CsvReader::from_string("id,gpus\n\nj1,four\n", "jobs.csv");
  ASSERT_TRUE(csv.read_header().is_ok());
  ASSERT_TRUE(csv.next());
  EXPECT_EQ(csv.line(), 3);
  const auto gpus = csv.get_int(1);
  ASSERT_FALSE(gpus.is_ok());
  EXPECT_EQ(gpus.status().message(),
            "jobs.csv:3:2: column 'gpus': expected a whole number, got 'four'");
  EXPECT_EQ(csv.error_at(0, "is taken").message(), "jobs.csv:3:1: column 'id': is taken");
}

TEST(CsvReader, MalformedRowsAreReportedAndReadingGoesOn) {
  CsvReader csv = CsvReader::from_string("a,b\n1,\"open\n1,2,3\n4,5\n", "bad.csv");
  ASSERT_TRUE(csv.read_header().is_ok());
  ASSERT_TRUE(csv.next());
  EXPECT_EQ(csv.row_status().message(),
            "bad.csv:2: unterminated quoted field (a '\"' is not closed on this line)");
  ASSERT_TRUE(csv.next());
  EXPECT_EQ(csv.row_status().message(), "bad.csv:3: expected 2 fields as in the header, found 3");
  ASSERT_TRUE(csv.next());
  EXPECT_TRUE(csv.row_status().is_ok());
  EXPECT_EQ(csv.field(1), "5");
  EXPECT_FALSE(csv.next());
}

TEST(CsvReader, HeaderNamesAreTrimmedAndAByteOrderMarkDropped) {
  CsvReader csv = CsvReader::from_string("\xEF\xBB\xBFid , gpus\n1,2\n", "bom.csv");
  ASSERT_TRUE(csv.read_header().is_ok());
  EXPECT_EQ(*csv.column("id"), 0);
  EXPECT_EQ(*csv.column("gpus"), 1);
  EXPECT_EQ(csv.find_column("team"), -1);
  const auto missing = csv.column("team");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(),
            "bom.csv:1: missing column 'team' (the header has: id, gpus)");
}

TEST(CsvReader, NumbersAcceptIntegralDecimalsAndRejectJunk) {
  CsvReader csv = CsvReader::from_string("n,x\n4.0,2.5\n4.5,inf\n", "n.csv");
  ASSERT_TRUE(csv.read_header().is_ok());
  ASSERT_TRUE(csv.next());
  EXPECT_EQ(*csv.get_int(0), 4);
  EXPECT_DOUBLE_EQ(*csv.get_double(1), 2.5);
  ASSERT_TRUE(csv.next());
  EXPECT_FALSE(csv.get_int(0).is_ok());
  EXPECT_FALSE(csv.get_double(1).is_ok());
}

TEST(CsvReader, UnquotedModeSplitsAtTheSeparatorOnly) {
  CsvReader csv = CsvReader::from_string("JobID|State\n\"1\"|A,B\r\n", "sacct.txt",
                                         {.separator = '|', .quoting = false});
  ASSERT_TRUE(csv.read_header().is_ok());
  EXPECT_EQ(rows_of(csv), (Rows{{"\"1\"", "A,B"}}));
}

TEST(CsvReader, MultilineFieldsKeepLineEndsAndTheRowsFirstLine) {
  const std::string text = "a,b\n\"one\r\ntwo\",x\n3,\"\n\"\n5,6\n";
  CsvReader csv = CsvReader::from_string(text, "m.csv", kLenientCsv);
  ASSERT_TRUE(csv.read_header().is_ok());
  ASSERT_TRUE(csv.next());
  EXPECT_EQ(csv.field(0), "one\r\ntwo");
  EXPECT_EQ(csv.line(), 2);
  ASSERT_TRUE(csv.next());
  EXPECT_EQ(csv.field(1), "\n");
  EXPECT_EQ(csv.line(), 4);
  ASSERT_TRUE(csv.next());
  EXPECT_EQ(csv.line(), 6);
  EXPECT_FALSE(csv.next());

  CsvReader never = CsvReader::from_string("a\n\"open\nmore\n", "n.csv", kLenientCsv);
  ASSERT_TRUE(never.read_header().is_ok());
  ASSERT_TRUE(never.next());
  EXPECT_EQ(never.row_status().message(),
            "n.csv:2: unterminated quoted field (a '\"' is never closed)");
}

TEST(CsvReader, RaggedRowsAreAllowedWhenAsked) {
  CsvReader csv = CsvReader::from_string("a,b,c\n1\n1,2,3,4\n", "r.csv", kLenientCsv);
  ASSERT_TRUE(csv.read_header().is_ok());
  EXPECT_EQ(rows_of(csv), (Rows{{"1"}, {"1", "2", "3", "4"}}));
  EXPECT_EQ(csv.field(7), "");
}

TEST(CsvReader, BorrowedTextReadsLikeOwnedText) {
  const std::string text = "a,b\n\"x,y\",2\n";
  CsvReader borrowed = CsvReader::over(text, "b.csv");
  CsvReader owned = CsvReader::from_string(text, "b.csv");
  ASSERT_TRUE(borrowed.read_header().is_ok());
  ASSERT_TRUE(owned.read_header().is_ok());
  EXPECT_EQ(rows_of(borrowed), rows_of(owned));
}

}  // namespace
}  // namespace trainyard::util
