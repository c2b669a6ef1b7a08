// Parses CUDASIM_FAIL and CUDASIM_ASYNC_FAIL and counts calls per rule.
#include "fault_injection.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace cudasim {
namespace {

struct Rule {
  std::string function;
  int code = 0;
  unsigned long long passCalls = 0;  // calls let through before the rule fires
  unsigned long long calls = 0;
};

// One variable's rules, reparsed whenever its value changes (which restarts the counters).
struct RuleSet {
  const char* variable;
  std::string spec;  // the value the rules were parsed from
  std::vector<Rule> rules;
  // Whether `spec` is empty (no rules, nothing to count): read unlocked, so that while the variable
  // is unset, as it is outside fault tests, a call takes no lock that every device's thread shares.
  std::atomic<bool> unset{true};
};

// Never destroyed: a driver call on a worker thread may outlive static destruction at exit.
std::mutex& gMutex = *new std::mutex;
RuleSet& gFail = *new RuleSet{"CUDASIM_FAIL", "", {}, {true}};
RuleSet& gAsyncFail = *new RuleSet{"CUDASIM_ASYNC_FAIL", "", {}, {true}};

bool ParseRule(const std::string& text, Rule& rule) {
  std::istringstream in(text);
  std::string code, after;
  if (!std::getline(in, rule.function, ':') || !std::getline(in, code, ':')) return false;
  std::getline(in, after);
  char* end = nullptr;
  rule.code = static_cast<int>(std::strtol(code.c_str(), &end, 10));
  if (rule.function.empty() || code.empty() || *end != '\0' || rule.code == 0) return false;
  if (!after.empty()) {
    rule.passCalls = std::strtoull(after.c_str(), &end, 10);
    if (*end != '\0' || after[0] == '-') return false;
  }
  return true;
}

void Reparse(RuleSet& set, const std::string& spec) {
  set.spec = spec;
  set.unset.store(spec.empty(), std::memory_order_release);
  set.rules.clear();
  std::istringstream in(spec);
  std::string text;
  while (std::getline(in, text, ',')) {
    if (text.empty()) continue;
    Rule rule;
    if (ParseRule(text, rule)) {
      set.rules.push_back(rule);
    } else {
      // Loud, because a silently ignored rule makes a fault test pass for the wrong reason.
      std::fprintf(stderr, "cudasim: ignoring malformed %s rule \"%s\" (expected function:code[:afterN])\n", set.variable,
                   text.c_str());
    }
  }
}

int Match(RuleSet& set, const char* function, const char* spec) {
  // Unset now and when last parsed: the locked path below would find no rule and change nothing.
  if ((spec == nullptr || *spec == '\0') && set.unset.load(std::memory_order_acquire)) return 0;
  std::lock_guard<std::mutex> lock(gMutex);
  if (std::strcmp(spec ? spec : "", set.spec.c_str()) != 0) Reparse(set, spec ? spec : "");
  int injected = 0;
  for (Rule& rule : set.rules) {
    // Every matching rule counts the call, so two rules on one function keep their own schedules.
    if (rule.function == function && ++rule.calls > rule.passCalls && injected == 0) injected = rule.code;
  }
  return injected;
}

}  // namespace

int InjectedFault(const char* function) {
  return Match(gFail, function, std::getenv(gFail.variable));
}

int InjectedFault(const char* function, const char* spec) {
  return Match(gFail, function, spec);
}

int InjectedAsyncFault(const char* function, const char* spec) {
  return Match(gAsyncFail, function, spec);
}

}  // namespace cudasim
