/*
 * l_copy.c -- s:copy(dst, src) and s:fill(x, value), asynchronous on s.
 *
 * copy picks the driver call from the operands: host->device, device->host,
 * device->device on one device, or a peer copy between devices. Everything is
 * checked (liveness, sizes in bytes, devices) before anything is queued.
 */
#include "core.h"
#include "checker.h"
#include "trace.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  gl_slice *x;      /* device operand, or NULL */
  gl_hostbuf *h;    /* host operand, or NULL */
  size_t bytes;
  gl_accesses *acc; /* the memory's access records */
  uint64_t lo, hi;  /* the bytes it covers there */
} operand;

static void get_operand(lua_State *L, int idx, const char *role, operand *o) {
  memset(o, 0, sizeof *o);
  if ((o->x = gl_test_slice(L, idx))) {
    gl_slice_check_alive(L, o->x, idx - 1);
    o->bytes = gl_slice_bytes(o->x);
    o->acc = &o->x->a->acc;
    o->lo = (uint64_t)(gl_slice_ptr(o->x) - o->x->a->ptr);
  } else if ((o->h = gl_test_hostbuf(L, idx))) {
    gl_check_hostbuf(L, idx); /* a freed buffer or an expired host-kernel view says so */
    o->bytes = gl_hostbuf_bytes(o->h);
    o->acc = gl_hostbuf_accesses(o->h);
    o->lo = gl_hostbuf_offset_bytes(o->h);
  } else {
    luaL_error(L, "s:copy: %s (argument #%d) expected a slice or a host buffer, got %s", role, idx - 1,
               gl_given(L, idx));
  }
}

static void describe(const operand *o, char *buf, size_t len) {
  if (o->x) gl_slice_describe(o->x, buf, len);
  else gl_hostbuf_describe(o->h, buf, len);
}

int gl_stream_copy(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  operand dst, src;
  get_operand(L, 2, "dst", &dst);
  get_operand(L, 3, "src", &src);
  if (dst.bytes != src.bytes) {
    char dd[200], sd[200];
    describe(&dst, dd, sizeof dd);
    describe(&src, sd, sizeof sd);
    return luaL_error(L, "s:copy: sizes differ: dst is a %s (%I bytes), src is a %s (%I bytes)", dd,
                      (LUAI_UACINT)dst.bytes, sd, (LUAI_UACINT)src.bytes);
  }
  if (dst.h && src.h)
    return luaL_error(L, "s:copy: both dst and src are host buffers; copy between host buffers in Lua "
                         "(one of them must be device memory)");
  gl_device *dev = s->dev;
  gl_slice *dx = dst.x ? dst.x : src.x;
  if (dst.x) gl_check_poison(L, dst.x->a->dev);
  if (src.x) gl_check_poison(L, src.x->a->dev);
  if ((!dst.x || !src.x) && dx->a->dev != dev)
    return luaL_error(L, "s:copy: the %s is on device %d, but stream '%s' is on device %d; copy between host "
                         "and a device on a stream of that device",
                      dst.x ? "dst slice" : "src slice",
                      dx->a->dev->ordinal, s->name, dev->ordinal);
  dst.hi = dst.lo + dst.bytes;
  src.hi = src.lo + src.bytes;
  gl_access_desc dd = {dst.x, dst.h, "s:copy dst", NULL, 0}, sd = {src.x, src.h, "s:copy src", NULL, 0};
  gl_access_check(L, dst.acc, s, dst.lo, dst.hi, 1, &dd);
  gl_access_check(L, src.acc, s, src.lo, src.hi, 0, &sd);
  gl_set_ctx(dev);
  if (dst.bytes == 0) { /* empty views: nothing to queue, but return s as always */
    lua_settop(L, 1);
    return 1;
  }
  gl_op_kind kind = dst.h ? GL_OP_D2H : src.h ? GL_OP_H2D
                    : dst.x->a->dev == src.x->a->dev ? GL_OP_D2D : GL_OP_PEER;
  gl_trace_begin(s);
  if (dst.h) {
    GL_CALL(L, dev, cuMemcpyDtoHAsync, gl_hostbuf_ptr(dst.h), gl_slice_ptr(src.x), dst.bytes, s->cu);
  } else if (src.h) {
    GL_CALL(L, dev, cuMemcpyHtoDAsync, gl_slice_ptr(dst.x), gl_hostbuf_ptr(src.h), dst.bytes, s->cu);
  } else if (dst.x->a->dev == src.x->a->dev) {
    GL_CALL(L, dev, cuMemcpyDtoDAsync, gl_slice_ptr(dst.x), gl_slice_ptr(src.x), dst.bytes, s->cu);
  } else {
    GL_CALL(L, dev, cuMemcpyPeerAsync, gl_slice_ptr(dst.x), dst.x->a->dev->ctx, gl_slice_ptr(src.x),
            src.x->a->dev->ctx, dst.bytes, s->cu);
  }
  s->seq++;
  gl_trace_end(s, kind, NULL, dst.bytes);
  int loc = dev->rt->policy != GL_POLICY_OFF ? gl_loc_here(L) : -1;
  gl_access_record(dev->rt, dst.acc, s, dst.lo, dst.hi, 1, loc);
  gl_access_record(dev->rt, src.acc, s, src.lo, src.hi, 0, loc);
  lua_settop(L, 1);
  return 1;
}

int gl_stream_fill(lua_State *L) {
  gl_stream *s = gl_check_stream(L, 1);
  gl_slice *x = gl_test_slice(L, 2);
  if (!x) {
    if (gl_test_hostbuf(L, 2))
      return luaL_error(L, "s:fill: argument #1 is a host buffer; fill it with h:fill(value)");
    return luaL_typeerror(L, 2, "gpulua slice");
  }
  gl_slice_check_alive(L, x, 1);
  gl_device *dev = s->dev;
  if (x->a->dev != dev && !gl_peer_granted(dev->rt, x->a->dev, dev))
    return luaL_error(L, "s:fill: the slice is on device %d, but stream '%s' is on device %d (grant access with "
                         "gpu.peer(%d, %d) where the devices support it)",
                      x->a->dev->ordinal, s->name, dev->ordinal, x->a->dev->ordinal, dev->ordinal);
  luaL_checkany(L, 3);
  unsigned char v[8];
  const char *why = gl_dtype_encode(L, 3, x->dtype, v);
  if (why) {
    const char *given = lua_type(L, 3) == LUA_TNUMBER ? lua_tostring(L, 3) : luaL_typename(L, 3);
    return luaL_error(L, "s:fill: value: %s for %s, got %s", why, gl_dtypes[x->dtype].name, given);
  }
  CUdeviceptr p = gl_slice_ptr(x);
  size_t n = x->count;
  gl_access_desc desc = {x, NULL, "s:fill", NULL, 0};
  uint64_t lo = (uint64_t)(p - x->a->ptr), hi = lo + gl_slice_bytes(x);
  gl_access_check(L, &x->a->acc, s, lo, hi, 1, &desc);
  gl_set_ctx(dev);
  if (n == 0) {
    lua_settop(L, 1);
    return 1;
  }
  gl_trace_begin(s);
  switch (gl_dtypes[x->dtype].size) {
  case 1: GL_CALL(L, dev, cuMemsetD8Async, p, v[0], n, s->cu); break;
  case 2: {
    unsigned short u;
    memcpy(&u, v, 2);
    GL_CALL(L, dev, cuMemsetD16Async, p, u, n, s->cu);
    break;
  }
  case 4: {
    unsigned u;
    memcpy(&u, v, 4);
    GL_CALL(L, dev, cuMemsetD32Async, p, u, n, s->cu);
    break;
  }
  default: {
    unsigned lo, hi;
    memcpy(&lo, v, 4);
    memcpy(&hi, v + 4, 4);
    if (lo == hi) {
      GL_CALL(L, dev, cuMemsetD32Async, p, lo, 2 * n, s->cu);
    } else { /* 8-byte pattern: the low and the high words as two pitched 2D fills */
      GL_CALL(L, dev, cuMemsetD2D32Async, p, 8, lo, 1, n, s->cu);
      GL_CALL(L, dev, cuMemsetD2D32Async, p + 4, 8, hi, 1, n, s->cu);
      s->seq++;
    }
    break;
  }
  }
  s->seq++;
  gl_trace_end(s, GL_OP_FILL, NULL, gl_slice_bytes(x));
  gl_access_record(dev->rt, &x->a->acc, s, lo, hi, 1, gl_loc_here(L));
  lua_settop(L, 1);
  return 1;
}
