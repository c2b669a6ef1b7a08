// CUresult names and descriptions, as the real driver's cuGetErrorName/cuGetErrorString return them.
#ifndef CUDASIM_ERROR_TABLE_H
#define CUDASIM_ERROR_TABLE_H

namespace cudasim {

struct ErrorText {
  int code;
  const char* name;
  const char* description;
};

// nullptr for a value the driver does not define (it answers those with CUDA_ERROR_INVALID_VALUE).
const ErrorText* FindErrorText(int code);

}  // namespace cudasim

#endif  // CUDASIM_ERROR_TABLE_H
