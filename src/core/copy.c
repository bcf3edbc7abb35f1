/*
 * copy.c -- copies, fills and reads (see ops.h): each request checked in
 * order, then queued. The driver call is picked from the operands:
 * host->device, device->host, device->device on one device, or a peer copy
 * between devices. Messages start with the request's call.
 */
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "hostmem.h"
#include "memory.h"
#include "ops.h"
#include "queue.h"
#include "runtime.h"
#include "stream.h"

static int check_end(gl_runtime *rt, gl_ref e, int arg) {
  if (e.x) {
    int rc = gl_slice_check(e.x, arg);
    if (rc == -2) return gl_fail(rt, "bad argument #%d: slice is not initialised", arg);
    return rc;
  }
  return gl_hostbuf_check(rt, e.h);
}

static void describe(gl_ref e, gl_buf *b) {
  if (e.x) gl_slice_describe(e.x, b);
  else gl_hostbuf_describe(e.h, b);
}

static size_t bytes_of(gl_ref e) { return e.x ? gl_slice_bytes(e.x) : gl_hostbuf_bytes(e.h); }

/* Operand o: e, argument `arg` of the call (its role in messages: the op's
 * call and arg, queue.h). */
static void operand(gl_ref e, int write, int arg, gl_operand *o) {
  memset(o, 0, sizeof *o);
  if (e.x) {
    o->acc = &e.x->a->acc;
    o->lo = gl_slice_lo(e.x);
    o->hi = o->lo + gl_slice_bytes(e.x);
    o->x = e.x;
  } else {
    o->acc = &e.h->m->acc;
    o->lo = gl_hostbuf_lo(e.h);
    o->hi = o->lo + gl_hostbuf_bytes(e.h);
    o->h = e.h;
  }
  o->write = write;
  o->arg = arg;
}

int gl_copy_submit(const gl_copy_req *r) {
  gl_stream *s = r->s;
  gl_ref dst = r->dst, src = r->src;
  const char *call = r->call;
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  if (check_end(rt, dst, 1) != 0 || check_end(rt, src, 2) != 0) return -1;
  if (dst.h && gl_hostbuf_writable(dst.h, call, "dst") != 0) return -1; /* a file mapped read-only */
  size_t bytes = bytes_of(dst);
  if (bytes != bytes_of(src)) {
    gl_buf dd = GL_BUF_INIT, sd = GL_BUF_INIT;
    describe(dst, &dd);
    describe(src, &sd);
    gl_fail(rt, "%s: sizes differ: dst is a %s (%zu bytes), src is a %s (%zu bytes)", call, gl_buf_str(&dd), bytes,
            gl_buf_str(&sd), bytes_of(src));
    gl_buf_free(&dd);
    gl_buf_free(&sd);
    return -1;
  }
  if (dst.h && src.h)
    return gl_fail(rt, "%s: both dst and src are host buffers; copy between host buffers in Lua "
                       "(one of them must be device memory)", call);
  if ((dst.x && gl_device_check(dst.x->a->dev) != 0) || (src.x && gl_device_check(src.x->a->dev) != 0)) return -1;
  gl_slice *dx = dst.x ? dst.x : src.x;
  if ((!dst.x || !src.x) && dx->a->dev != dev)
    return gl_fail(rt, "%s: the %s is on device %d, but stream '%s' is on device %d; copy between host "
                       "and a device on a stream of that device",
                   call, dst.x ? "dst slice" : "src slice", dx->a->dev->ordinal, s->name, dev->ordinal);
  if (dst.x && src.x && dst.x->a->dev != dev && src.x->a->dev != dev) {
    int a = dst.x->a->dev->ordinal, b = src.x->a->dev->ordinal;
    if (a == b)
      return gl_fail(rt, "%s: dst and src are both on device %d, but stream '%s' is on device %d; queue a copy on "
                         "a stream of the device of one of its ends", call, a, s->name, dev->ordinal);
    return gl_fail(rt, "%s: dst is on device %d and src on device %d, but stream '%s' is on device %d; queue a "
                       "copy on a stream of the device of one of its ends", call, a, b, s->name, dev->ordinal);
  }
  if (dst.x && src.x && gl_ranges_overlap(dst.x, dst.x->lo, dst.x->hi, src.x, src.x->lo, src.x->hi)) {
    gl_buf dd = GL_BUF_INIT, sd = GL_BUF_INIT;
    gl_slice_range(dst.x, dst.x->lo, dst.x->hi, 0, &dd);
    gl_slice_range(src.x, src.x->lo, src.x->hi, 1, &sd);
    gl_fail(rt, "%s: dst (%s) overlaps src (%s): a copy between overlapping ranges of one allocation is "
                "undefined on the GPU; copy through a separate slice, or between disjoint ranges",
            call, gl_buf_str(&dd), gl_buf_str(&sd));
    gl_buf_free(&dd);
    gl_buf_free(&sd);
    return -1;
  }
  gl_operand o[2];
  operand(dst, 1, 1, &o[0]);
  operand(src, 0, 2, &o[1]);
  gl_op op = {.call = call, .bytes = bytes, .opnd = o, .nopnd = 2};
  if (dst.h) {
    op.kind = GL_OP_D2H;
    op.u.copy.hdst = gl_hostbuf_ptr(dst.h);
    op.u.copy.src = gl_slice_ptr(src.x);
  } else if (src.h) {
    op.kind = GL_OP_H2D;
    op.u.copy.dst = gl_slice_ptr(dst.x);
    op.u.copy.hsrc = gl_hostbuf_ptr(src.h);
  } else {
    op.kind = dst.x->a->dev == src.x->a->dev ? GL_OP_D2D : GL_OP_PEER;
    op.u.copy.dst = gl_slice_ptr(dst.x);
    op.u.copy.src = gl_slice_ptr(src.x);
    op.u.copy.dctx = dst.x->a->dev->ctx;
    op.u.copy.sctx = src.x->a->dev->ctx;
  }
  return gl_queue_op(s, &op, r->site);
}

int gl_fill_submit(const gl_fill_req *r) {
  gl_stream *s = r->s;
  gl_slice *x = r->x;
  gl_device *dev = s->dev;
  gl_runtime *rt = dev->rt;
  int rc = gl_slice_check(x, 1);
  if (rc == -2) return gl_fail(rt, "bad argument #1: slice is not initialised"), GL_REFUSED;
  if (rc != 0) return -1;
  if (r->missing) return GL_REFUSED;
  if (r->why)
    return gl_fail(rt, "%s: value: %s for %s, got %s", r->call, r->why, gl_dtypes[x->dtype].name, r->given),
           GL_REFUSED;
  if (x->a->dev != dev && !gl_peer_granted(rt, x->a->dev, dev)) {
    char peer[64];
    snprintf(peer, sizeof peer, rt->names.peer, x->a->dev->ordinal, dev->ordinal);
    return gl_fail(rt, "%s: the slice is on device %d, but stream '%s' is on device %d (grant access with "
                       "%s where the devices support it)",
                   r->call, x->a->dev->ordinal, s->name, dev->ordinal, peer);
  }
  gl_operand o;
  operand((gl_ref){x, NULL}, 1, 0, &o);
  gl_op op = {.kind = GL_OP_FILL, .call = r->call, .bytes = gl_slice_bytes(x), .opnd = &o, .nopnd = 1};
  op.u.fill.p = gl_slice_ptr(x);
  op.u.fill.size = (unsigned)gl_dtypes[x->dtype].size;
  memcpy(op.u.fill.v, r->value, op.u.fill.size);
  return gl_queue_op(s, &op, r->site);
}

int gl_read_submit(const gl_read_req *r) {
  gl_slice *x = r->x;
  gl_stream *s = r->s;
  gl_device *dev = x->a->dev;
  gl_runtime *rt = dev->rt;
  if (s->dev != dev)
    return gl_fail(rt, "%s: stream '%s' is on device %d, but the slice is on device %d", r->call, s->name,
                   s->dev->ordinal, dev->ordinal);
  if (gl_hostbuf_writable(r->h, r->call, NULL) != 0) return -1;
  /* the slice read, and the buffer written: recorded on the buffer too, so
   * that a wait that fails (a poisoned device) does not let the buffer's
   * memory go while the copy may still run (the retire list holds it) */
  gl_operand o[2];
  operand((gl_ref){x, NULL}, 0, 0, &o[0]);
  operand((gl_ref){NULL, r->h}, 1, 0, &o[1]);
  gl_op op = {.kind = GL_OP_D2H, .name = r->call, .call = r->call, .bytes = gl_slice_bytes(x), .opnd = o, .nopnd = 2};
  op.u.copy.hdst = gl_hostbuf_ptr(r->h);
  op.u.copy.src = gl_slice_ptr(x);
  op.u.copy.read = 1;
  if (gl_queue_op(s, &op, r->site) != 0) return -1;
  return r->no_wait ? 0 : gl_stream_wait_host(s, r->site);
}
