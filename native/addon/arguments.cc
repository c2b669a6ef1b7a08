// Argument checks, with one message shape for every bad value.
#include "arguments.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "native_error.h"

namespace vramfit {
namespace {

constexpr double kMaxSafeBytes = 9007199254740992.0;  // 2^53

// The value as String(value) shows it, strings quoted, like errors.ts does.
std::string Shown(const Napi::Value& value) {
  if (value.IsString()) return "\"" + value.As<Napi::String>().Utf8Value() + "\"";
  if (value.IsSymbol()) return "a symbol";  // String(symbol) works, but coercion throws
  return value.ToString().Utf8Value();
}

[[noreturn]] void Reject(const std::string& what, const std::string& expected, const Napi::Value& value) {
  throw InvalidArgument(what + ": expected " + expected + ", got " + Shown(value));
}

bool IsIntegerIn(const Napi::Value& value, double max) {
  if (!value.IsNumber()) return false;
  double number = value.As<Napi::Number>().DoubleValue();
  return std::isfinite(number) && std::trunc(number) == number && number >= 0 && number <= max;
}

const char kBytesExpectation[] = "a non-negative integer number of bytes (at most 2^53)";

// options[name] as a byte count; nullopt when undefined.
std::optional<size_t> OptionalBytes(const Napi::Object& options, const char* name) {
  Napi::Value value = options.Get(name);
  if (value.IsUndefined()) return std::nullopt;
  if (!IsIntegerIn(value, kMaxSafeBytes)) Reject(std::string("options.") + name, kBytesExpectation, value);
  return static_cast<size_t>(value.As<Napi::Number>().DoubleValue());
}

}  // namespace

std::string LibraryPathArgument(const Napi::Value& value, const char* library) {
  if (!value.IsString() || value.As<Napi::String>().Utf8Value().empty()) {
    bool nvml = std::string(library) == "NVML";
    Reject(nvml ? "loadNvml path" : "loadDriver path", std::string("the path of the ") + library + " library", value);
  }
  return value.As<Napi::String>().Utf8Value();
}

int OrdinalArgument(const Napi::Value& value) {
  if (!IsIntegerIn(value, std::numeric_limits<int>::max())) {
    Reject("device ordinal", "a non-negative integer", value);
  }
  return value.As<Napi::Number>().Int32Value();
}

std::vector<int> OrdinalsArgument(const Napi::Value& value) {
  if (!value.IsArray() || value.As<Napi::Array>().Length() == 0) Reject("device ordinals", "a non-empty array of device ordinals", value);
  Napi::Array array = value.As<Napi::Array>();
  std::vector<int> ordinals;
  for (uint32_t i = 0; i < array.Length(); ++i) {
    int ordinal = OrdinalArgument(array.Get(i));
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end()) Reject("device ordinals", "each device once", value);
    ordinals.push_back(ordinal);
  }
  return ordinals;
}

std::vector<size_t> SizesArgument(const Napi::Value& value) {
  // A Float64Array is read in one pass over its memory: an array's elements are one napi call
  // each, ~0.5 ms for a 1,500-allocation step, on the JS thread, for every probe of every device
  // (issue 22: the eight-GPU advice case makes 112 probes).
  if (value.IsTypedArray() && value.As<Napi::TypedArray>().TypedArrayType() == napi_float64_array) {
    Napi::Float64Array array = value.As<Napi::Float64Array>();
    const double* data = array.Data();
    std::vector<size_t> sizes(array.ElementLength());
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double size = data[i];
      if (!(std::isfinite(size) && std::trunc(size) == size && size >= 0 && size <= kMaxSafeBytes)) {
        Reject("sizes[" + std::to_string(i) + "]", kBytesExpectation, Napi::Number::New(value.Env(), size));
      }
      sizes[i] = static_cast<size_t>(size);
    }
    return sizes;
  }
  if (!value.IsArray()) Reject("sizes", "an array of byte counts", value);
  Napi::Array array = value.As<Napi::Array>();
  std::vector<size_t> sizes;
  sizes.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); ++i) {
    Napi::Value size = array.Get(i);
    if (!IsIntegerIn(size, kMaxSafeBytes)) {
      Reject("sizes[" + std::to_string(i) + "]", kBytesExpectation, size);
    }
    sizes.push_back(static_cast<size_t>(size.As<Napi::Number>().DoubleValue()));
  }
  return sizes;
}

CancelFlag::CancelFlag(Napi::Env env, Napi::Int32Array flag) {
  napi_create_reference(env, flag, 1, &ref_);
  data_ = flag.Data();
}

void CancelFlag::Release(Napi::Env env) {
  if (ref_ != nullptr) napi_delete_reference(env, ref_);
  ref_ = nullptr;
  data_ = nullptr;
}

ProbeOptions ProbeOptionsArgument(const Napi::Value& options) {
  ProbeOptions result;
  if (options.IsUndefined()) return result;
  if (!options.IsObject()) Reject("probe options", "an object like { touch: true }", options);
  Napi::Object object = options.As<Napi::Object>();
  if (std::optional<size_t> reserve = OptionalBytes(object, "reserveBytes")) result.reserveBytes = *reserve;
  result.limitBytes = OptionalBytes(object, "limitBytes");
  Napi::Value touch = options.As<Napi::Object>().Get("touch");
  if (!touch.IsUndefined()) {
    if (!touch.IsBoolean()) Reject("options.touch", "a boolean", touch);
    result.touch = touch.As<Napi::Boolean>().Value();
  }
  Napi::Value releases = object.Get("releases");
  if (!releases.IsUndefined()) {
    if (!releases.IsArray() || releases.As<Napi::Array>().Length() % 2 != 0) Reject("options.releases", "an array of (before, which) index pairs, flattened", releases);
    Napi::Array array = releases.As<Napi::Array>();
    for (uint32_t i = 0; i < array.Length(); i += 2) {
      Napi::Value before = array.Get(i);
      Napi::Value which = array.Get(i + 1);
      if (!IsIntegerIn(before, kMaxSafeBytes) || !IsIntegerIn(which, kMaxSafeBytes)) Reject("options.releases[" + std::to_string(i) + "]", "allocation indices", before);
      result.releases.emplace_back(static_cast<size_t>(before.As<Napi::Number>().DoubleValue()), static_cast<size_t>(which.As<Napi::Number>().DoubleValue()));
    }
  }
  Napi::Value pages = object.Get("pageBytes");
  if (!pages.IsUndefined()) result.pageBytes = SizesArgument(pages);
  Napi::Value cancel = options.As<Napi::Object>().Get("cancel");
  if (!cancel.IsUndefined()) {
    if (!cancel.IsTypedArray() || cancel.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array ||
        cancel.As<Napi::TypedArray>().ElementLength() < 1) {
      Reject("options.cancel", "an Int32Array of length 1 or more", cancel);
    }
    result.cancel = CancelFlag(options.Env(), cancel.As<Napi::Int32Array>());
  }
  return result;
}

}  // namespace vramfit
