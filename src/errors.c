/*
 * errors.c -- driver results as Lua errors, script locations, poisoning.
 */
#include "core.h"
#include "checker.h"

#include <stdio.h>
#include <string.h>

void gl_where(lua_State *L, char *buf, size_t len) {
  snprintf(buf, len, "%s", gl_loc_text(gl_loc_here(L))); /* the checker's interned locations */
}

void gl_check_view(lua_State *L, size_t total, const char *what, size_t *off, size_t *cnt) {
  lua_Integer o = luaL_checkinteger(L, 2);
  if (o < 0 || (uint64_t)o > total)
    luaL_argerror(L, 2, lua_pushfstring(L, "offset %I is outside the %s's %I elements", (LUAI_UACINT)o, what,
                                        (LUAI_UACINT)total));
  lua_Integer c = luaL_optinteger(L, 3, (lua_Integer)(total - (size_t)o)); /* o is checked: no overflow */
  if (c < 0 || (uint64_t)c > total - (size_t)o)
    luaL_argerror(L, 3, lua_pushfstring(L, "count %I from offset %I runs past the %s's %I elements", (LUAI_UACINT)c,
                                        (LUAI_UACINT)o, what, (LUAI_UACINT)total));
  *off = (size_t)o;
  *cnt = (size_t)c;
}

const char *gl_given(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_pushvalue(L, idx);
    return lua_pushfstring(L, "number %s", lua_tostring(L, -1)); /* from a copy: the original stays a number */
  }
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) return lua_tostring(L, -1);
  return luaL_typename(L, idx);
}

const char *gl_error_name(CUresult r) {
  const char *s = NULL;
  if (gl_drv.cuGetErrorName && gl_drv.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN";
}

static const char *error_string(CUresult r) {
  const char *s = NULL;
  if (gl_drv.cuGetErrorString && gl_drv.cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return "unrecognised error code";
}

/* Faults after which the context is unusable: the device is poisoned. */
static int is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
    return 1;
  default:
    return 0;
  }
}

int gl_push_error(lua_State *L, CUresult r, const char *call) {
  lua_pushfstring(L, "%s failed: %s: %s", call, gl_error_name(r), error_string(r));
  return 1;
}

void gl_check(lua_State *L, gl_device *dev, CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return;
  if (dev && is_sticky(r) && !dev->poison[0]) {
    char where[GL_WHERE_MAX];
    gl_where(L, where, sizeof where);
    const char *detail = r == CUDA_ERROR_LAUNCH_FAILED ? gl_host_kernel_error() : "";
    int n = snprintf(dev->poison, sizeof dev->poison, "device %d is poisoned by a fault: %s: %s (%s, seen at %s)%s%s",
                     dev->ordinal, gl_error_name(r), error_string(r), call, where, detail[0] ? ": " : "", detail);
    /* the driver reports a fault late and does not say which kernel: name the
     * launches not known to have finished, the likely culprits */
    int named = 0;
    for (gl_stream *s = dev->streams; s && n > 0 && (size_t)n < sizeof dev->poison; s = s->next_open) {
      if (s->last_launch_seq <= s->done_seq) continue;
      if (named == 3) {
        n += snprintf(dev->poison + n, sizeof dev->poison - (size_t)n, ", ...");
        break;
      }
      const char *at = s->last_launch_loc >= 0 ? gl_loc_text(s->last_launch_loc) : "an unrecorded line";
      n += snprintf(dev->poison + n, sizeof dev->poison - (size_t)n, "%s kernel '%s' launched on stream '%s' at %s",
                    named ? "," : "; not known to have finished:", gl_loc_text(s->last_kernel), s->name, at);
      named++;
    }
  }
  if (dev && dev->poison[0] && is_sticky(r)) luaL_error(L, "%s", dev->poison);
  gl_push_error(L, r, call);
  lua_error(L);
}

void gl_check_poison(lua_State *L, gl_device *dev) {
  if (dev->poison[0]) luaL_error(L, "%s", dev->poison);
}
