/*
 * retire.h -- the runtime's retire list: objects whose release must wait.
 *
 * A finalizer never blocks, and nothing may sync while a capture runs
 * (graph.h): an object whose last reference goes while queued work may
 * still use it (host memory its copies read or write, a module whose
 * launches are queued, a graph whose replays are queued), or that is let go
 * inside a capture (a graph closed there), is put on this one list with its
 * fence and the function that destroys it. gl_retire_reap releases what is
 * ready; it runs where new resources are taken (a host allocation, a module
 * load, a capture's start), when a capture ends, and at teardown.
 *
 * Ownership: the list holds the entry's object (one reference, where the
 * object is counted) until its destroy function runs. The entry is a member
 * of the object, so retiring never allocates and never fails.
 */
#ifndef GPULUA_CORE_RETIRE_H
#define GPULUA_CORE_RETIRE_H

#include "checker.h"
#include "types.h"

typedef struct gl_retiree gl_retiree;
struct gl_retiree {
  void *obj;                /* what destroy is given */
  gl_accesses *fence;       /* the work it waits for; NULL: it waits for no capture to run */
  void (*destroy)(void *obj);
  gl_retiree *next;         /* on the runtime's list */
};

/* Put obj on rt's list (r: its entry, not on the list now): destroy(obj)
 * runs once no capture runs and, with a fence, once the work recorded in the
 * fence has finished. */
void gl_retire(gl_runtime *rt, gl_retiree *r, void *obj, gl_accesses *fence, void (*destroy)(void *obj));
/* Destroy what is ready, asking the driver (never waiting); wait: destroy
 * everything, waiting for the fences (teardown), also what the destroy
 * functions retire meanwhile. Nothing is reaped without wait while a
 * capture runs. A destroy function that fails keeps its error for its
 * device's next call (gl_device_keep_error); the runtime's error stays the
 * caller's. */
void gl_retire_reap(gl_runtime *rt, int wait);
/* Whether anything is on the list. */
int gl_retire_pending(const gl_runtime *rt);

#endif
