/*
 * ptx_race_shadow.h -- racecheck's records of global memory (ptx_race.c
 * checks against them; ptx_race_shadow.c keeps them): for each 4-byte
 * word, the last write and two reads, in 4 KiB chunks found by a hash of
 * their address.
 *
 * A thread's shadow outlives its launches: epochs number the blocks and
 * barrier intervals of every launch the thread runs, in increasing order,
 * so a record whose epoch is below the current launch's first is stale
 * (another launch's, ordered before it by the stream) and reads as no
 * access. Nothing is cleared between launches: the chunks' memory is
 * mapped once and reused while the shadows of all threads together stay
 * under SIM_PTX_SHADOW_MAX (a launch that ends above it empties its
 * thread's).
 */
#ifndef GPULUA_PTX_RACE_SHADOW_H
#define GPULUA_PTX_RACE_SHADOW_H

#include <stddef.h>
#include <stdint.h>

enum { SIM_PTX_RACE_ATOMIC = 1 }; /* sim_ptx_race_acc.flags; the access's log2(bytes) above it */

typedef struct {
  uint32_t epoch; /* below the launch's first: none */
  uint32_t sync;  /* its warp's bar.warp.sync count */
  uint32_t insn;  /* function << 20 | instruction */
  uint16_t tid;   /* the thread's index in its block */
  uint8_t mask;   /* the bytes of the word it touched */
  uint8_t flags;
} sim_ptx_race_acc;

/* A word's records: its last write (part 0) and two reads (parts 1 and 2).
 * A chunk keeps each part of its 1,024 words in an array of its own, made
 * when the first record of that part is stored: memory only read needs no
 * writes. A part not made reads as records of no access.
 *
 * A segment (32 words, 128 bytes aligned) that a whole warp accessed as
 * one run may instead hold, for each part, one summary record standing for
 * its 32 words' records (sum[segment * 3 + part]; ptx_race.c): a summary's
 * mask is 0 when the part's words hold their own records, else
 * SIM_PTX_SUMMARY | (words a lane log2, plus 1) << 4, and its tid the
 * thread of the segment's first word (word j's: tid + (j >> words a lane
 * log2)). */
enum { SIM_PTX_CHUNK_SHIFT = 12, SIM_PTX_CHUNK_WORDS = 1 << (SIM_PTX_CHUNK_SHIFT - 2) };
enum { SIM_PTX_SEG_SHIFT = 5, SIM_PTX_SEG_WORDS = 1 << SIM_PTX_SEG_SHIFT, SIM_PTX_SUMMARY = 0xf };
enum { SIM_PTX_CHUNK_SUMS = 3 * (SIM_PTX_CHUNK_WORDS / SIM_PTX_SEG_WORDS) };

typedef struct {
  uint64_t key1; /* address >> SIM_PTX_CHUNK_SHIFT, plus 1 (0: a free slot) */
  sim_ptx_race_acc *part[3];
  sim_ptx_race_acc *sum; /* SIM_PTX_CHUNK_SUMS summaries, or NULL: none */
  uint32_t launch;       /* the first epoch of the launch that `segs` is of */
  uint32_t segs;         /* bit k: segment k has records of that launch (any not set: stale) */
} sim_ptx_race_chunk;

typedef struct sim_ptx_shadow sim_ptx_shadow;

extern const sim_ptx_race_acc sim_ptx_race_none; /* the record of a part not made */

/* The calling thread's shadow, made on first use, and the first epoch of a
 * launch starting on it (*first; the launch numbers its epochs from there,
 * through sim_ptx_shadow_epoch): NULL when out of memory. */
sim_ptx_shadow *sim_ptx_shadow_begin(uint32_t *first);
/* A launch on it ended, its last epoch `last`: the shadow is kept for the
 * next, or emptied when the threads' shadows hold more than
 * SIM_PTX_SHADOW_MAX bytes together. */
void sim_ptx_shadow_end(sim_ptx_shadow *s, uint32_t last);
/* The chunk of global memory at host address a, made on first use (its
 * parts not yet): NULL when out of memory. */
sim_ptx_race_chunk *sim_ptx_shadow_chunk(sim_ptx_shadow *s, uintptr_t a);
/* A new part's records, zeroed: NULL when out of memory. */
sim_ptx_race_acc *sim_ptx_shadow_part(sim_ptx_shadow *s);
/* A chunk's SIM_PTX_CHUNK_SUMS summaries, zeroed: NULL when out of memory. */
sim_ptx_race_acc *sim_ptx_shadow_sums(sim_ptx_shadow *s);

#define SIM_PTX_SHADOW_MAX ((size_t)256 << 20)

#endif
