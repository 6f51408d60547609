// The header compiles as C++ (g++ -std=c++11 -Wall -Wextra -Werror -pedantic) and its
// declarations link against libguards from C++.
#include "guards.h"

#include <cstdio>

int main() {
  guards_circuit_breaker_config cfg;
  guards_circuit_breaker *b = nullptr;
  if (guards_circuit_breaker_config_default(&cfg) != GUARDS_RESULT_OK) return 1;
  if (guards_circuit_breaker_new(&cfg, &b) != GUARDS_RESULT_OK) return 1;
  guards_permit p;
  int ok = guards_circuit_breaker_try_acquire(b, guards_now_ns(), &p) == GUARDS_RESULT_OK &&
           guards_circuit_breaker_report(b, p, GUARDS_OUTCOME_SUCCESS, guards_now_ns()) ==
               GUARDS_RESULT_OK;
  guards_circuit_breaker_free(b);
  std::printf("%s\n", ok ? "1 passed, 0 failed" : "0 passed, 1 failed");
  return ok ? 0 : 1;
}
