/*
 * halfprec.h -- f32 <-> f16 (IEEE half precision) and f32 <-> bf16, round to
 * nearest even; an f16 overflow goes to infinity, a NaN stays a NaN. In the
 * driver layer because the sim computes in these formats (sim_cublas.c) and
 * the core's dtypes read and write them (dtype.c).
 */
#ifndef GPULUA_DRIVER_HALFPREC_H
#define GPULUA_DRIVER_HALFPREC_H

#include <stdint.h>

uint16_t gld_f32_to_f16(float f);
float gld_f16_to_f32(uint16_t h);
uint16_t gld_f32_to_bf16(float f);
float gld_bf16_to_f32(uint16_t h);
/* from f64, rounded once to the nearest (even) 16-bit value (not through f32's nearest) */
uint16_t gld_f64_to_f16(double d);
uint16_t gld_f64_to_bf16(double d);

#endif
