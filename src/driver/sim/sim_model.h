/*
 * sim_model.h -- the sim's timing model (GPULUA_SIM_MODEL / --sim-model): a
 * virtual device clock driven by a discrete-event model, so that the times
 * the sim reports predict a GPU's. Work still runs on the streams' workers
 * for its results; only the times the sim reports (events, and through them
 * e:elapsed, pipeline.run, traces and timelines) come from the model.
 *
 * Each operation queued on a sim stream becomes a model node when a model is
 * loaded: a copy (host to device, device to host, peer) with its bytes, a
 * memory-bound operation (a kernel, a fill, a copy within a device) with its
 * microseconds at the device's full rate, or an instant (a record, a wait, a
 * free, a host function). A node starts once the stream's previous node has
 * ended, the record it waits for (a wait) has ended, the host has queued it
 * (the host's virtual clock, which each queued operation advances by
 * host_us and each host sync moves to the time it waited for), and, for a
 * copy, an engine of its direction is free. It then pays its latency
 * (copy_latency_us, launch_us) and drains its work at its share of the
 * rates: copies of one direction share that direction's rate, both
 * directions together share bidir_gbps, memory-bound nodes of one device
 * share its mem_gbps (processor sharing: each running node drains at its
 * current share).
 *
 * The model is evaluated lazily, when the host observes a time (a sync, a
 * query that finds the work done, an elapsed time): a node queued later
 * starts at or after the host's virtual clock, which is at or after every
 * time observed, so no later node can change a time once reported. All
 * functions here are called with sim_S.mu held.
 */
#ifndef GPULUA_SIM_MODEL_H
#define GPULUA_SIM_MODEL_H

#include <stddef.h>

#include "sim.h"

/* What kind of work a queued operation is, for the model. */
enum sim_mclass {
  MC_NONE,  /* an instant: record, wait, free, host function */
  MC_H2D,   /* a copy host -> device: work in bytes */
  MC_D2H,   /* a copy device -> host: work in bytes */
  MC_PEER,  /* a copy between devices: work in bytes */
  MC_MEM    /* a kernel, a fill, a copy within a device: work in microseconds at the full rate */
};

/* The model's part of a queued operation, fixed when the operation is made
 * (a graph's nodes keep theirs for every replay). */
typedef struct sim_mwork {
  enum sim_mclass cls;
  double work;  /* bytes, or microseconds at the device's full memory rate */
  double lat;   /* microseconds before the work starts (latency, launch) */
} sim_mwork;

struct sim_mnode;
struct sim_mstream;

/* The loaded model (NULL: none, the sim reports host times). */
extern const gld_sim_model *sim_model;

/* The model's work of a copy of n bytes of the given class (MC_H2D, MC_D2H,
 * MC_PEER, or MC_MEM for a copy within a device), of a fill of n bytes, and
 * of a kernel launch that moves mem_bytes (at the model's mem_gbps) and
 * takes us microseconds of its own (the cost its launcher gave). */
sim_mwork sim_model_copy(enum sim_mclass cls, size_t n);
sim_mwork sim_model_fill(size_t n);
sim_mwork sim_model_launch(double mem_bytes, double us);

/* A stream's model state, made with the stream; the stream's destruction
 * hands it to the model, which frees it once its nodes have run. */
struct sim_mstream *sim_model_stream_new(int ordinal);
void sim_model_stream_gone(struct sim_mstream *ms);

/* Queue a node of w on ms. `waits`: the node a wait waits for (a record's
 * node), or NULL. Returns the node, with one reference for the caller when
 * `keep` (a record: its mark holds it), or NULL when out of memory. */
struct sim_mnode *sim_model_enqueue(struct sim_mstream *ms, const sim_mwork *w, struct sim_mnode *waits, int keep);
void sim_model_node_ref(struct sim_mnode *n);
void sim_model_node_unref(struct sim_mnode *n);

/* The host has seen these finish (a sync, a query, an elapsed time): run the
 * model until they have, move the host's virtual clock to their end, and
 * return it (microseconds from the model's start). */
double sim_model_observe_node(struct sim_mnode *n);
double sim_model_observe_stream(struct sim_mstream *ms);
/* Whether n (every node of ms) has ended by the host's virtual clock, the
 * model run that far and no further: what a quiet query may see. */
int sim_model_node_done_by_host(struct sim_mnode *n);
int sim_model_stream_done_by_host(struct sim_mstream *ms);
/* The host's virtual clock now (microseconds). */
double sim_model_host_clock(void);

#endif
