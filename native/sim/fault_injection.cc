// Parses CUDASIM_FAIL and counts calls per rule.
#include "fault_injection.h"

#include <cstdio>
#include <cstdlib>
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

// Never destroyed: a driver call on a worker thread may outlive static destruction at exit.
std::mutex& gMutex = *new std::mutex;
std::string& gSpec = *new std::string;  // the CUDASIM_FAIL value gRules was parsed from
std::vector<Rule>& gRules = *new std::vector<Rule>;

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

void Reparse(const std::string& spec) {
  gSpec = spec;
  gRules.clear();
  std::istringstream in(spec);
  std::string text;
  while (std::getline(in, text, ',')) {
    if (text.empty()) continue;
    Rule rule;
    if (ParseRule(text, rule)) {
      gRules.push_back(rule);
    } else {
      // Loud, because a silently ignored rule makes a fault test pass for the wrong reason.
      std::fprintf(stderr, "cudasim: ignoring malformed CUDASIM_FAIL rule \"%s\" (expected function:code[:afterN])\n",
                   text.c_str());
    }
  }
}

}  // namespace

int InjectedFault(const char* function) {
  std::lock_guard<std::mutex> lock(gMutex);
  const char* spec = std::getenv("CUDASIM_FAIL");
  if ((spec ? spec : "") != gSpec) Reparse(spec ? spec : "");
  int injected = 0;
  for (Rule& rule : gRules) {
    // Every matching rule counts the call, so two rules on one function keep their own schedules.
    if (rule.function == function && ++rule.calls > rule.passCalls && injected == 0) injected = rule.code;
  }
  return injected;
}

}  // namespace cudasim
