/*
 * retire.c -- the runtime's retire list (see retire.h).
 */
#include "retire.h"

#include <string.h>

#include "runtime.h"

void gl_retire(gl_runtime *rt, gl_retiree *r, void *obj, gl_accesses *fence, void (*destroy)(void *obj)) {
  r->obj = obj;
  r->fence = fence;
  r->destroy = destroy;
  r->next = rt->retired;
  rt->retired = r;
}

int gl_retire_pending(const gl_runtime *rt) { return rt->retired != NULL; }

static int ready(const gl_runtime *rt, gl_retiree *r, int wait) {
  if (!r->fence) return !rt->capture;
  if (wait) gl_access_wait_all(r->fence, 0, NULL);
  return wait || gl_access_finished(r->fence);
}

/* One pass: the ready entries are taken off the list first, then destroyed
 * (a destroy function may retire again, the same object among others). */
static int reap_once(gl_runtime *rt, int wait) {
  gl_retiree *done = NULL, **tail = &done;
  for (gl_retiree **pp = &rt->retired; *pp;) {
    gl_retiree *r = *pp;
    if (ready(rt, r, wait)) {
      *pp = r->next;
      r->next = NULL;
      *tail = r;
      tail = &r->next;
    } else {
      pp = &r->next;
    }
  }
  if (!done) return 0;
  gl_error saved = rt->err;
  memset(&rt->err, 0, sizeof rt->err);
  while (done) {
    gl_retiree *r = done;
    done = r->next;
    r->next = NULL;
    r->destroy(r->obj);
  }
  gl_buf_free(&rt->err.msg);
  rt->err = saved;
  return 1;
}

void gl_retire_reap(gl_runtime *rt, int wait) {
  if (rt->capture && !wait) return; /* nothing that may sync while a capture runs (graph.h) */
  while (reap_once(rt, wait) && wait) {
  }
}
