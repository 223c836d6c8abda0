// The worker wrapper alone, for the executor tests: the same exec::wrapper_main() that
// `trainyard __exec-wrapper` runs, without building the whole CLI (which the sanitizer stage
// would otherwise compile only for this).
#include <cstdio>
#include <string_view>

#include "exec/wrapper.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == trainyard::exec::kWrapperSubcommand)
    return trainyard::exec::wrapper_main(argc, argv);
  std::fprintf(stderr, "usage: %s %s ...\n", argv[0], trainyard::exec::kWrapperSubcommand);
  return 2;
}
