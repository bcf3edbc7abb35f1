/*
 * l_trace.c -- gpu.trace(file), gpu.trace(), gpu.trace(false), gpu.timeline()
 * and gpulua_record (the trace itself is core/trace.c, its timelines
 * core/trace_text.c and core/trace_svg.c).
 */
#include "bindings.h"

#include <stdio.h>
#include <string.h>

#include "gpulua.h"
#include "trace.h"

int gll_trace(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  if (lua_isboolean(L, 1) && !lua_toboolean(L, 1)) { /* gpu.trace(false): write and stop */
    if (!rt->trace) return 0;
    const char *file = gl_trace_file(rt);
    if (file) lua_pushstring(L, file);
    gl_trace_finish(rt);
    return file ? 1 : 0;
  }
  if (lua_isnoneornil(L, 1)) { /* write what we have now */
    if (gl_trace_write(rt, "gpu.trace") != 0) return gll_raise(L, rt);
    lua_pushstring(L, gl_trace_file(rt));
    return 1;
  }
  if (lua_type(L, 1) != LUA_TSTRING) /* not a number made a name: gpu.trace(123) is no file "123" */
    return luaL_error(L, "gpu.trace: expected a file name (a string), nothing (write now) or false (write and stop), "
                         "got %s", gll_given(L, 1));
  const char *file = lua_tostring(L, 1);
  if (!*file || strlen(file) >= 1024)
    return luaL_error(L, "gpu.trace: expected a file name, got %s", *file ? "a string of 1024 bytes or more" : "\"\"");
  if (gl_trace_start(rt, "gpu.trace", file, 0) != 0) return gll_raise(L, rt);
  lua_pushstring(L, file);
  return 1;
}

/* gpu.timeline(): the text timeline of the work so far, on stdout;
 * gpu.timeline{file = "x.svg"}: that timeline as SVG, returns the file.
 * Waits for nothing: work still queued is counted as pending. */
int gll_timeline(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  GL_NOT_IN_HOST_KERNEL(L, "gpu.");
  GL_NOT_IN_CAPTURE(L, rt, "gpu.timeline");
  static const char *const keys[] = {"file", NULL};
  if (!lua_isnoneornil(L, 1) && !lua_istable(L, 1))
    return luaL_argerror(L, 1, lua_pushfstring(L, "expected nothing or an options table {file = \"x.svg\"}, got %s",
                                               gll_given(L, 1)));
  const char *svg = NULL;
  if (gll_check_options(L, 1, "gpu.timeline", keys)) {
    lua_getfield(L, 1, "file");
    if (!lua_isnil(L, -1)) {
      if (lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "gpu.timeline: option 'file' expected a file name (a string), got %s", gll_given(L, -1));
      svg = lua_tostring(L, -1);
    }
    lua_pop(L, 1); /* the string stays the table's */
  }
  gl_buf text = GL_BUF_INIT;
  int r = gl_trace_timeline(rt, "gpu.timeline", &text, svg);
  if (r < 0) {
    gl_buf_free(&text);
    return gll_raise(L, rt);
  }
  if (!svg || r == 1) { /* the timeline, or the line saying that recording starts */
    lua_writestring(gl_buf_str(&text), strlen(gl_buf_str(&text)));
    fflush(stdout);
  }
  gl_buf_free(&text);
  if (!svg) return 0;
  lua_pushstring(L, svg);
  return 1;
}

static int record(lua_State *L) {
  gl_runtime *rt = gll_rt(L);
  if (!rt->trace && gl_trace_start(rt, "gpulua", NULL, 0) != 0) return gll_raise(L, rt);
  return 0;
}

int gpulua_record(lua_State *L) {
  lua_pushcfunction(L, record);
  return lua_pcall(L, 0, 0, 0) == LUA_OK ? 0 : -1;
}
