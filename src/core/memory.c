/*
 * memory.c -- allocations and slices (see memory.h).
 */
#include "memory.h"

#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "module.h"
#include "queue.h"
#include "runtime.h"
#include "stream.h"

void gl_slice_describe(const gl_slice *x, gl_buf *b) {
  const char *dt = gl_dtypes[x->dtype].name;
  size_t total = x->a->bytes / gl_dtypes[x->dtype].size;
  if (x->is_view)
    gl_buf_printf(b, "slice %s[%zu] (view at offset %zu of %s[%zu]) on device %d", dt, x->count, x->offset, dt, total,
                  x->a->dev->ordinal);
  else
    gl_buf_printf(b, "slice %s[%zu] on device %d", dt, x->count, x->a->dev->ordinal);
  if (x->a->owner) gl_buf_printf(b, " (variable '%s' of module '%s')", x->a->var, x->a->owner->name);
}

/* A handle more on a's memory (and on its module, for a module variable). */
static void alloc_ref(gl_alloc *a) {
  a->refs++;
  if (a->owner) gl_module_ref(a->owner);
}

void gl_slice_range(const gl_slice *x, uint64_t lo, uint64_t hi, int again, gl_buf *b) {
  size_t es = gl_dtypes[x->dtype].size;
  gl_buf_printf(b, "elements %llu to %llu of ", (unsigned long long)(lo / es), (unsigned long long)((hi - 1) / es));
  if (again) gl_buf_printf(b, "it");
  else
    gl_buf_printf(b, "%s[%zu] on device %d", gl_dtypes[x->dtype].name, x->a->bytes / es, x->a->dev->ordinal);
}

int gl_slice_alloc(gl_stream *s, gl_dtype dt, size_t n, int zero, gl_site *site, gl_slice *x) {
  return gl_slice_new(s, dt, n, zero, s->dev->rt->names.alloc, site, x);
}

int gl_slice_new(gl_stream *s, gl_dtype dt, size_t n, int zero, const char *call, gl_site *site, gl_slice *x) {
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  size_t bytes = n * gl_dtypes[dt].size;
  gl_alloc *a = calloc(1, sizeof *a);
  if (!a || gl_access_reserve(&a->acc, 1) != 0) {
    free(a);
    return gl_fail_nomem(rt, NULL);
  }
  gl_set_ctx(dev);
  CUresult r = gld_drv.cuMemAllocAsync(&a->ptr, bytes, s->cu);
  if (r != CUDA_SUCCESS) {
    gl_access_clear(&a->acc);
    free(a);
    if (r != CUDA_ERROR_OUT_OF_MEMORY) return gl_fail_cu(rt, dev, r, "cuMemAllocAsync", site);
    gl_device_trim(dev); /* a failed request can leave the pool holding the memory: the free bytes are real */
    size_t free_ = 0, total = 0;
    gld_drv.cuMemGetInfo(&free_, &total);
    return gl_fail_code(rt, r, "%s: out of memory on device %d: requested %s[%zu] (%zu bytes), %zu of %zu bytes free",
                        call, dev->ordinal, gl_dtypes[dt].name, n, bytes, free_, total);
  }
  a->refs = 1;
  a->live = 1;
  a->dev = dev;
  a->bytes = bytes;
  a->home = s;
  a->freed_at = GL_LOC_NONE;
  a->dtype = dt;
  a->alloc_at = gl_site_loc(rt, site);
  a->next_dev = dev->allocs;
  if (dev->allocs) dev->allocs->prev_dev = a;
  dev->allocs = a;
  gl_stream_ref(s);
  memset(x, 0, sizeof *x);
  x->a = a;
  x->count = n;
  x->dtype = dt;
  x->hi = bytes;
  x->released_at = GL_LOC_NONE;
  s->seq++;
  if (!zero) { /* the memory exists in s's order: its allocation counts as a write on s */
    gl_access_record(&a->acc, s, 0, bytes, 1, gl_site_loc(rt, site));
    return 0;
  }
  gl_operand o = {&a->acc, 0, bytes, 1, x, NULL, call, 0, NULL};
  gl_op op = {.kind = GL_OP_FILL, .name = call, .call = call, .bytes = bytes, .opnd = &o, .nopnd = 1};
  op.u.fill.p = a->ptr;
  op.u.fill.size = 1;
  return gl_queue_op(s, &op, site); /* on failure the slice stays valid: its memory is undefined */
}

gl_alloc *gl_alloc_at(gl_device *d, CUdeviceptr ptr) {
  for (gl_alloc *a = d->allocs; a; a = a->next_dev)
    if (a->ptr == ptr && !a->freed) return a;
  return NULL;
}

void gl_alloc_describe(const gl_alloc *a, const gl_device *on, gl_buf *b) {
  size_t es = gl_dtypes[a->dtype].size;
  gl_buf_printf(b, "slice %s[%zu]", gl_dtypes[a->dtype].name, a->bytes / es);
  if (a->dev != on) gl_buf_printf(b, " on device %d", a->dev->ordinal);
  if (a->alloc_at != GL_LOC_NONE) gl_buf_printf(b, " allocated at %s", gl_loc_text(a->dev->rt, a->alloc_at));
}

void gl_slice_view(gl_slice *x, size_t offset, size_t count, gl_slice *v) {
  memset(v, 0, sizeof *v);
  v->a = x->a;
  alloc_ref(x->a);
  x->a->live++;
  v->offset = x->offset + offset;
  v->count = count;
  v->dtype = x->dtype;
  v->lo = (uint64_t)v->offset * gl_dtypes[v->dtype].size;
  v->hi = v->lo + (uint64_t)count * gl_dtypes[v->dtype].size;
  v->is_view = 1;
  v->released_at = GL_LOC_NONE;
}

int gl_slice_check_as(const gl_slice *x, const char *who) {
  gl_alloc *a = x->a;
  if (!a) return -2; /* not initialised, or released by its finalizer: nothing to name */
  gl_runtime *rt = a->dev->rt;
  if (x->released || a->freed) {
    gl_buf d = GL_BUF_INIT;
    gl_buf_printf(&d, "%s: use of a freed ", who);
    gl_slice_describe(x, &d);
    if (x->released) gl_fail(rt, "%s (freed at %s)", gl_buf_str(&d), gl_loc_text(rt, x->released_at));
    else gl_fail(rt, "%s (its memory was freed at %s)", gl_buf_str(&d), gl_loc_text(rt, a->freed_at));
    gl_buf_free(&d);
    return -1;
  }
  if (!a->dev->opened) return gl_fail(rt, "gpulua has been shut down");
  return 0;
}

int gl_slice_alive(const gl_slice *x) { return x->a && !x->released && !x->a->freed && x->a->dev->opened; }

int gl_slice_check(const gl_slice *x, int arg) {
  if (x->a && !x->released && !x->a->freed && x->a->dev->opened) return 0; /* the usual case: no call, no message */
  gl_buf who = GL_BUF_INIT;
  gl_buf_printf(&who, "bad argument #%d", arg);
  int rc = gl_slice_check_as(x, gl_buf_str(&who));
  gl_buf_free(&who);
  return rc;
}

/* Queue the free of `a` after every recorded use. */
static int alloc_free(gl_alloc *a, int loc, gl_site *site) {
  a->freed = 1;
  a->freed_at = loc;
  gl_device *d = a->dev;
  if (!d->opened || !d->main || gl_device_poisoned(d)) return 0;
  gl_stream *fs = a->home->cu ? a->home : d->main;
  if (gl_access_order_all(&a->acc, fs, site) != 0) return -1;
  gl_set_ctx(d);
  CUresult r = gld_drv.cuMemFreeAsync(a->ptr, fs->cu);
  if (r != CUDA_SUCCESS) return gl_fail_cu(d->rt, d, r, "cuMemFreeAsync", site);
  fs->seq++;
  return 0;
}

/* A handle stops using the memory (freed, closed or collected); while a
 * graph uses it, its free waits for the graph's close. */
static int alloc_release(gl_alloc *a, int loc, gl_site *site) {
  if (--a->live > 0 || a->freed || a->owner) return 0; /* a module variable goes with its module */
  if (a->graph_uses) {
    a->free_pending = 1;
    return 0;
  }
  return alloc_free(a, loc, site);
}

static void alloc_unref(gl_alloc *a);

void gl_alloc_graph_use(gl_alloc *a, const struct gl_graph *g) {
  alloc_ref(a);
  a->graph_uses++;
  a->graph = g;
}

void gl_alloc_graph_rename(gl_alloc *a, const struct gl_graph *from, const struct gl_graph *to) {
  if (a->graph == from) a->graph = to;
}

void gl_alloc_graph_release(gl_alloc *a, const struct gl_graph *g) {
  if (a->graph == g) a->graph = NULL;
  if (--a->graph_uses == 0 && a->free_pending && !a->freed) {
    a->free_pending = 0;
    if (alloc_free(a, gl_intern(a->dev->rt, "the close of a graph"), NULL) != 0) gl_device_keep_error(a->dev);
  }
  alloc_unref(a);
}

static void alloc_unref(gl_alloc *a) {
  if (a->owner) { /* the module keeps the memory and its records */
    a->refs--;
    gl_module_unref(a->owner);
    return;
  }
  if (--a->refs > 0) return;
  if (a->prev_dev) a->prev_dev->next_dev = a->next_dev;
  else if (a->dev->allocs == a) a->dev->allocs = a->next_dev;
  if (a->next_dev) a->next_dev->prev_dev = a->prev_dev;
  gl_access_clear(&a->acc);
  gl_stream_unref(a->home);
  free(a);
}

void gl_slice_collect(gl_slice *x) {
  gl_alloc *a = x->a;
  if (!a) return;
  if (!x->released && alloc_release(a, gl_intern(a->dev->rt, "garbage collection"), NULL) != 0)
    gl_device_keep_error(a->dev);
  x->a = NULL;
  alloc_unref(a);
}

int gl_slice_released(const gl_slice *x, gl_buf *why) {
  gl_alloc *a = x->a;
  if (!a || !(x->released || a->freed)) return 0;
  gl_runtime *rt = a->dev->rt;
  gl_slice_describe(x, why);
  gl_buf_printf(why, " is already freed (at %s)", gl_loc_text(rt, x->released ? x->released_at : a->freed_at));
  return 1;
}

int gl_slice_free(gl_slice *x, int block, const char *call, gl_site *site) {
  gl_alloc *a = x->a;
  if (!a) return 0;
  gl_runtime *rt = a->dev->rt;
  gl_buf why = GL_BUF_INIT;
  if (gl_slice_released(x, &why)) {
    gl_fail(rt, "%s: %s", call, gl_buf_str(&why));
    gl_buf_free(&why);
    return -1;
  }
  if (a->owner && !x->is_view) {
    if (!block) {
      gl_buf d = GL_BUF_INIT;
      gl_slice_describe(x, &d);
      gl_fail(rt, "%s: %s cannot be freed: its memory belongs to the module and goes with it (let the slice go, "
                  "or release it with a <close> variable)", call, gl_buf_str(&d));
      gl_buf_free(&d);
      return -1;
    }
    x->released = 1; /* a <close> variable: the handle only */
    x->released_at = gl_site_loc(rt, site);
    return alloc_release(a, x->released_at, site);
  }
  if (a->graph_uses && !x->is_view) {
    if (block) { /* a <close> variable: the memory goes with the graph */
      x->released = 1;
      x->released_at = gl_site_loc(rt, site);
      return alloc_release(a, x->released_at, site);
    }
    gl_buf d = GL_BUF_INIT;
    gl_slice_describe(x, &d);
    if (a->graph)
      gl_fail(rt, "%s: %s is used by graph '%s' (captured at %s): close the graph first (%s)", call,
              gl_buf_str(&d), a->graph->name, gl_loc_text(rt, a->graph->capture_loc), rt->names.close_graph);
    else
      gl_fail(rt, "%s: %s is used by %d live graph%s: close them first (%s)", call, gl_buf_str(&d),
              a->graph_uses, a->graph_uses == 1 ? "" : "s", rt->names.close_graph);
    gl_buf_free(&d);
    return -1;
  }
  int loc = gl_site_loc(rt, site);
  x->released = 1;
  x->released_at = loc;
  if (x->is_view) return alloc_release(a, loc, site);
  a->live--;
  return alloc_free(a, loc, site);
}
