/*
 * halfprec.c -- conversions between f32 and the two 16-bit float formats
 * (IEEE half, f16, and bfloat16), for the core's dtypes and the sim's
 * arithmetic in them (its cuBLAS): see halfprec.h.
 */
#include "halfprec.h"

#include <math.h>
#include <string.h>

/* IEEE half precision, round to nearest even; overflow goes to infinity. */
uint16_t gld_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t man = x & 0x7fffff;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);
  if (e <= 0) { /* subnormal half or zero */
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000;
    int shift = 14 - e;
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into inf: correct */
  return (uint16_t)h;
}

float gld_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) x = sign;
    else { /* subnormal: normalise */
      int e = -1;
      do { man <<= 1; e++; } while (!(man & 0x400));
      x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t gld_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return (uint16_t)((x + rounding) >> 16);
}

float gld_bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* d rounded to f32 "to odd": truncated, with the last bit set when inexact.
 * f32 has more than two bits beyond either 16-bit format's, so rounding that
 * to nearest even gives the nearest 16-bit value to d itself (d -> f32 -> f16
 * by nearest even twice can be off by one: 1 + 2^-11 + 2^-30 to f16 1, not
 * its nearest 1 + 2^-10). */
static float f32_round_odd(double d) {
  float f = (float)d;
  if (isfinite(f) && (double)f != d) {
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f); /* rounded away from zero: take the one below */
    uint32_t u;
    memcpy(&u, &f, 4);
    u |= 1;
    memcpy(&f, &u, 4);
  }
  return f;
}

uint16_t gld_f64_to_f16(double d) { return gld_f32_to_f16(f32_round_odd(d)); }

uint16_t gld_f64_to_bf16(double d) { return gld_f32_to_bf16(f32_round_odd(d)); }
