// Typed field readers shared by the catalog parsers: each turns one CSV field into a value or
// an error naming file, line, column, the bad text and the fix.
#pragma once

#include <optional>

#include "util/csv_table.h"
#include "util/status.h"

namespace trainyard::cloud::internal {

// A price in USD/h: empty or zero means "not offered" (Vast writes 0.00 for no spot price).
util::Result<std::optional<double>> read_price(const util::CsvTable& t, size_t row, int col);
// A non-negative number (vCPUs, memory); empty reads as 0 when `allow_empty`.
util::Result<double> read_amount(const util::CsvTable& t, size_t row, int col, bool allow_empty);
// A GPU count > 0; the files write "8.0". Azure sells fractions of a GPU ("0.333"), which
// callers count and leave out: a fraction cannot host a worker that asks for whole GPUs.
util::Result<double> read_gpu_count(const util::CsvTable& t, size_t row, int col);
// The count as whole GPUs, or nullopt for a fraction.
std::optional<int> whole_gpus(double count);
// A required text field.
util::Result<std::string> read_text(const util::CsvTable& t, size_t row, int col);

}  // namespace trainyard::cloud::internal
