/*
 * driver.c -- the process's driver table and extension table (filled once by
 * the chosen backend) and the names of its results.
 */
#include "driver.h"
#include "driver_ext.h"

gld_driver gld_drv;
gld_driver_ext gld_drv_ext;
const char *gld_backend_name;

const char *gld_error_name(CUresult r) {
  const char *s = NULL;
  if (gld_drv.cuGetErrorName && gld_drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN";
}

const char *gld_error_string(CUresult r) {
  const char *s = NULL;
  if (gld_drv.cuGetErrorString && gld_drv.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unrecognised error code";
}

int gld_error_is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
    return 1;
  default:
    return 0;
  }
}
