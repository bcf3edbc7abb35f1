/*
 * ptx_race.h -- racecheck of the sim's PTX interpreter (ptx_race.c): the
 * hooks the interpreter calls when a launch starts and ends, a block starts,
 * a barrier releases, a warp runs bar.warp.sync or a fence, and before each
 * shared or global access. Each hook does nothing when the launch runs
 * without racecheck (sim_ptx_launch.no_racecheck: c->race is NULL).
 */
#ifndef GPULUA_PTX_RACE_H
#define GPULUA_PTX_RACE_H

#include "ptx_exec.h"

/* At the launch's start: its shadow state (c->race), or none when the
 * launch runs without racecheck. 0, or -1 when out of memory. */
int sim_ptx_race_start(sim_ptx_ctx *c);
void sim_ptx_race_end(sim_ptx_ctx *c);
/* A block starts (c->ctaid set): 0, or -1 when out of memory. */
int sim_ptx_race_block(sim_ptx_ctx *c);
/* A barrier of the block released its threads. */
void sim_ptx_race_barrier(sim_ptx_ctx *c);
/* Lanes m of w ran `in`: bar.warp.sync (__syncwarp) or a fence. */
void sim_ptx_race_sync(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, uint32_t m);
/* What racecheck notes of one instruction of a warp, the same for its
 * lanes: sim_ptx_race_prepare fills it before the lanes' accesses, each of
 * which sim_ptx_race_lane checks as sim_ptx_race_access would. */
typedef struct {
  uint32_t epoch, sync, insn;
  unsigned first; /* the warp's first thread */
  int atomic;     /* atom or red */
  int skip;       /* local, param or const: never shared */
} sim_ptx_race_insn;
void sim_ptx_race_prepare(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, sim_ptx_race_insn *ri);
int sim_ptx_race_lane(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri, int lane,
                      const void *p, size_t bytes, int write, const void *data);
/* Lanes m of w access `size` bytes (1, 2, 4 or 8) each at p[l] for `in`, a
 * load or store: each checked as sim_ptx_race_lane does, in lane order; for
 * a store (vals not NULL: lane l's value in the low bytes of vals[l]) each
 * lane's value is stored right after its check, as the next lane's check
 * expects. 0, or -1 after the fault of the first racing lane (the lanes
 * before it have stored). */
int sim_ptx_race_lanes(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri, uint32_t m,
                       unsigned char *const *p, int size, const uint64_t *vals);
/* A whole warp's access of consecutive memory: lane l's lane_bytes (a
 * multiple of 4) at run + l * lane_bytes, for `in`, a load (of elements of
 * `elem` bytes; data NULL) or a store of `data` (the run's new bytes, which
 * it stores after the check): checked a word at a time as
 * sim_ptx_race_lanes checks lane by lane. 0, or -1 after the fault of the
 * first racing lane (the lanes before it have stored). */
int sim_ptx_race_run(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri,
                     unsigned char *run, size_t lane_bytes, size_t elem, const unsigned char *data);
/* The common case of sim_ptx_race_run, without the stored bytes: a run of
 * whole 128-byte segments where nothing recorded can race with the
 * access, whose records it notes (1: the caller then loads or stores the
 * run as it is). 0: not that case (the caller calls sim_ptx_race_run,
 * which may find some segments noted already, as this access's); -1 after
 * a fault (out of memory). */
int sim_ptx_race_quiet(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, const sim_ptx_race_insn *ri,
                       const unsigned char *run, size_t lane_bytes, size_t elem, int write);
/* Lane `lane` of w is about to access `bytes` at host address p (as
 * sim_ptx_access returned it) for `in`: a read, a write of `data`, or an
 * atomic (in->op atom or red; data NULL). 0, or -1 after the fault naming
 * both threads when the access races with an earlier one. Local memory,
 * parameters and constants are never shared: not checked. */
int sim_ptx_race_access(sim_ptx_ctx *c, sim_ptx_warp *w, const sim_ptx_insn *in, int lane, const void *p, size_t bytes,
                        int write, const void *data);

#endif
