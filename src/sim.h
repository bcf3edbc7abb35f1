/*
 * sim.h -- what the sim backend offers beyond the CUDA-shaped driver table.
 */
#ifndef GPULUA_SIM_H
#define GPULUA_SIM_H

#include <cuda.h>
#include <stddef.h>

/* A host operation for a sim stream, run in stream order on its worker
 * thread. A non-zero return marks the stream failed with
 * CUDA_ERROR_LAUNCH_FAILED (as a faulting kernel would). */
typedef int (*gl_sim_fn)(void *user);

/* Queue fn(user) on a sim stream (the sim's stand-in for a kernel launch). */
CUresult gl_sim_enqueue(CUstream stream, gl_sim_fn fn, void *user);

/* The ordinal of the device a sim stream belongs to, or -1. */
int gl_sim_device_of(CUstream stream);

/* Check the GPULUA_SIM_* environment; on a bad value fill `why` and return -1. */
int gl_sim_config_error(char *why, size_t whylen);

#endif
