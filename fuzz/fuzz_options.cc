// Sanitizer defaults linked into every fuzz target: the root build compiles UBSan in recover
// mode, where a report only prints; halting makes libFuzzer keep the input as a crash.

extern "C" const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}
