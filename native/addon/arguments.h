// Checking the JS arguments before any work is queued.
#ifndef VRAMFIT_ARGUMENTS_H
#define VRAMFIT_ARGUMENTS_H

#include <napi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace vramfit {

// Each throws NativeError ERR_INVALID_ARGUMENT in the shape of errors.ts's invalidArgument:
// "<what>: expected <expectation>, got <value>".

std::string LibraryPathArgument(const Napi::Value& value);
int OrdinalArgument(const Napi::Value& value);
// Non-negative integers up to 2^53, the largest byte count a JS number holds exactly.
std::vector<size_t> SizesArgument(const Napi::Value& value);
// options.touch; options may be undefined (no touch).
bool TouchOption(const Napi::Value& options);

}  // namespace vramfit

#endif  // VRAMFIT_ARGUMENTS_H
