/*
 * sim_ptx.h -- the sim's PTX reader: an entry, its parameters, its .maxntid.
 * Plain C on strings, apart from the sim (the fuzzer links it alone).
 */
#ifndef GPULUA_SIM_PTX_H
#define GPULUA_SIM_PTX_H

#include <stddef.h>

/* The text just after ".entry name" in `ptx`, or NULL when there is none. */
const char *gld_ptx_entry(const char *ptx, const char *name);

/* The parameter list at `after` (from gld_ptx_entry), as cuFuncGetParamInfo
 * reports it: fills offsets[i] and sizes[i] in bytes and returns the number
 * of parameters; 0 when there is no list, -1 when it cannot be read (or has
 * more than `max` parameters). */
int gld_ptx_params(const char *after, size_t *offsets, size_t *sizes, int max);

/* The threads a block of the entry at `after` may have: its .maxntid
 * product, or 1024. */
int gld_ptx_max_threads(const char *after);

#endif
