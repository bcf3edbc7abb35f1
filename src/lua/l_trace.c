/*
 * l_trace.c -- gpu.trace(file), gpu.trace(), gpu.trace(false) (the trace
 * itself is core/trace.c).
 */
#include "bindings.h"

#include <stdio.h>
#include <string.h>

#include "trace.h"

int gl_trace_lua(lua_State *L) {
  gl_runtime *rt = gl_rt(L);
  GL_NOT_IN_HOST_KERNEL(L, rt, "gpu.");
  if (lua_isboolean(L, 1) && !lua_toboolean(L, 1)) { /* gpu.trace(false): write and stop */
    if (!rt->trace) return 0;
    const char *file = gl_trace_file(rt);
    if (file) lua_pushstring(L, file);
    gl_trace_finish(rt);
    return file ? 1 : 0;
  }
  if (lua_isnoneornil(L, 1)) { /* write what we have now */
    if (gl_trace_write(rt) != 0) return gl_raise(L, rt);
    lua_pushstring(L, gl_trace_file(rt));
    return 1;
  }
  const char *file = luaL_checkstring(L, 1);
  if (!*file || strlen(file) >= 1024) return luaL_argerror(L, 1, "expected a file name");
  if (gl_trace_start(rt, "gpu.trace", file, 0) != 0) return gl_raise(L, rt);
  lua_pushstring(L, file);
  return 1;
}
