/*
 * sim_builtins.h -- the sim's C implementations of the built-in kernels
 * (kernels/builtins.cu), computing what the CUDA kernels compute to the last
 * bit: sim_builtins.c (the elementwise kernels, and the lookup by name) and
 * sim_builtins_reduce.c (the reductions). The upper layer reaches them
 * through gld_drv_ext.func_set_builtin (sim_ext.c).
 */
#ifndef GPULUA_SIM_BUILTINS_H
#define GPULUA_SIM_BUILTINS_H

#include "halfprec.h"
#include "sim.h"

/* The dtypes, in the order of each kernel's implementations: the names
 * kernels/builtins.cu instantiates (GL_DTYPE_<name>). */
#define SIM_NDTYPES 12
extern const char *const sim_dtype_names[SIM_NDTYPES];

/* The reductions' implementations, in sim_dtype_names' order. */
extern const gld_sim_kernel_fn sim_sum_host[SIM_NDTYPES], sim_dot_host[SIM_NDTYPES], sim_min_host[SIM_NDTYPES],
    sim_max_host[SIM_NDTYPES];

/* The host implementation of built-in `kernel` for `dtype`, or NULL. */
gld_sim_kernel_fn sim_builtin_host(const char *kernel, const char *dtype);

/* f32 to f16 and bf16 as the GPU's conversions give them: round to nearest
 * even, and a NaN becomes the canonical NaN 0x7fff. */
static inline uint16_t sim_store_f16(float f) { return f != f ? (uint16_t)0x7fff : gld_f32_to_f16(f); }
static inline uint16_t sim_store_bf16(float f) { return f != f ? (uint16_t)0x7fff : gld_f32_to_bf16(f); }

#endif
