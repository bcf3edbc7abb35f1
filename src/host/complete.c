/*
 * complete.c -- Tab completion in the REPL (libedit): the word before the
 * cursor, a chain of names such as `gpu.kernels.sc` or `s:fi`, completes
 * to the globals (and Lua's keywords), the keys of a table (`gpu.`, its
 * sub-tables), and a gpulua object's fields and methods (`dev.` gives
 * `main`, `name`, ...; after `:` only methods: `s:` gives `copy`, `fill`,
 * ...). Other values complete through their metatable's __index when it is
 * a table (`("x"):` gives the string methods).
 *
 * Completing runs no Lua code of the script's: tables are read raw, and
 * only gpulua objects' fields (which run none) are read through __index.
 * It runs in protected mode: an error (out of memory) completes nothing.
 */

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>

#include "gpulua.h"
#include "host.h"

#if defined(GPULUA_HAVE_LIBEDIT)
#include <editline/readline.h>
#endif

/* how deep a chain of __index tables is followed */
#define MAX_INDEX_DEPTH 8

static const char *const keywords[] = {
  "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
  "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while", NULL
};

static int is_name (const char *s, size_t n) {
  if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
  return 1;
}

/* the value at idx's metatable's __index, pushed when it is a table */
static int push_index_table (lua_State *L, int idx) {
  if (luaL_getmetafield(L, idx, "__index") == LUA_TNIL) return 0;
  if (lua_istable(L, -1)) return 1;
  lua_pop(L, 1);
  return 0;
}

/* Pushes v[name] for the value on top (replacing it), without running the
** script's code: a table raw, then through __index tables; a gpulua
** object's field through its own __index. Pushes nil when there is none. */
static void step (lua_State *L, const char *name, size_t n) {
  int v = lua_gettop(L);
  if (gpulua_object_names(L, v)) {
    lua_pop(L, 1);
    lua_pushlstring(L, name, n);
    lua_gettable(L, v);  /* the field (an error: nothing to complete) */
    lua_replace(L, v);
    return;
  }
  for (int depth = 0; depth < MAX_INDEX_DEPTH; depth++) {
    if (lua_istable(L, -1)) {
      lua_pushlstring(L, name, n);
      if (lua_rawget(L, -2) != LUA_TNIL) {
        lua_replace(L, v);
        lua_settop(L, v);
        return;
      }
      lua_pop(L, 1);
    }
    if (!push_index_table(L, lua_gettop(L))) break;
  }
  lua_settop(L, v);
  lua_pushnil(L);
  lua_replace(L, v);
}

/* set[name] = true for each name of the value at v that starts with
** 'word' (methods only: the names of functions, when 'methods') */
static void collect (lua_State *L, int v, int set, const char *word, int methods) {
  size_t wl = strlen(word);
  if (gpulua_object_names(L, v)) {
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      const char *k = lua_tostring(L, -2);
      if ((!methods || strcmp(lua_tostring(L, -1), "method") == 0) && strncmp(k, word, wl) == 0) {
        lua_pushvalue(L, -2);
        lua_pushboolean(L, 1);
        lua_rawset(L, set);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pushvalue(L, v);
  for (int depth = 0; depth < MAX_INDEX_DEPTH; depth++) {
    if (lua_istable(L, -1)) {
      int t = lua_gettop(L);
      lua_pushnil(L);
      while (lua_next(L, t)) {
        size_t kl;
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tolstring(L, -2, &kl) : NULL;
        if (k && is_name(k, kl) && strncmp(k, word, wl) == 0 && (!methods || lua_isfunction(L, -1))) {
          lua_pushvalue(L, -2);
          lua_pushboolean(L, 1);
          lua_rawset(L, set);
        }
        lua_pop(L, 1);
      }
    }
    if (!push_index_table(L, lua_gettop(L))) break;
  }
  lua_settop(L, set);
}

/*
** The completions of the word at 1 (protected): a sequence of the whole
** words ('prefix.name'), sorted.
*/
static int completions (lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *sep = NULL;
  for (const char *p = text; *p; p++)
    if (*p == '.' || *p == ':') sep = p;
  lua_newtable(L);  /* 2: the set of names */
  int set = lua_gettop(L);
  const char *word = sep ? sep + 1 : text;
  lua_pushglobaltable(L);  /* 3: the value whose names complete */
  if (sep == NULL) {
    for (int i = 0; keywords[i]; i++)
      if (strncmp(keywords[i], text, len) == 0) {
        lua_pushboolean(L, 1);
        lua_setfield(L, set, keywords[i]);
      }
  }
  else if (sep == text)  /* '.x' or ':x': what comes before is no name */
    return 0;
  else {  /* walk the names before the last separator, '.' between them */
    const char *p = text;
    while (p < sep) {
      const char *e = p;
      while (e < sep && *e != '.') e++;
      if (!is_name(p, (size_t)(e - p)) || (*e != '.' && e != sep)) return 0;
      step(L, p, (size_t)(e - p));
      if (lua_isnil(L, -1)) return 0;
      p = e + 1;
    }
  }
  collect(L, set + 1, set, word, sep != NULL && *sep == ':');
  lua_newtable(L);  /* the sorted whole words */
  int out = lua_gettop(L);
  size_t plen = sep ? (size_t)(sep + 1 - text) : 0;
  lua_pushnil(L);
  while (lua_next(L, set)) {
    lua_pop(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, text, plen);
    lua_pushvalue(L, -2);
    luaL_addvalue(&b);
    luaL_pushresult(&b);
    lua_rawseti(L, out, (lua_Integer)lua_rawlen(L, out) + 1);
  }
  lua_getglobal(L, "table");  /* table.sort, if the script left it */
  if (lua_istable(L, -1) && lua_getfield(L, -1, "sort") == LUA_TFUNCTION) {
    lua_pushvalue(L, out);
    lua_call(L, 1, 0);
  }
  lua_settop(L, out);
  return 1;
}


/* The completions of 'text' as a NULL-terminated array of strings (malloc'd,
** as libedit frees them), or NULL when there are none. */
static char **complete_text (lua_State *L, const char *text) {
  int top = lua_gettop(L);
  char **list = NULL;
  lua_pushcfunction(L, completions);
  lua_pushstring(L, text);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    if (n > 0 && (list = calloc((size_t)n + 1, sizeof *list)) != NULL) {
      for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, -1, i);
        list[i - 1] = strdup(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
    }
  }
  lua_settop(L, top);
  return list;
}


#if defined(GPULUA_HAVE_LIBEDIT)

static lua_State *complete_L = NULL;
static char **pending = NULL;  /* complete_text's list, handed out one by one */
static size_t next_one = 0;

static char *generator (const char *text, int state) {
  (void)text;
  if (pending == NULL || pending[next_one] == NULL) {
    free(pending);
    pending = NULL;
    return NULL;
  }
  (void)state;
  return pending[next_one++];
}

static char **attempt (const char *text, int start, int end) {
  (void)start; (void)end;
  rl_attempted_completion_over = 1;  /* no file names */
  if (pending != NULL)  /* a list not handed out to its end */
    for (size_t i = next_one; pending[i] != NULL; i++) free(pending[i]);
  free(pending);
  pending = complete_text(complete_L, text);
  next_one = 0;
  if (pending == NULL) return NULL;
  return rl_completion_matches(text, generator);
}

/* characters that end a word: '.' and ':' do not, so 'gpu.dev' is one */
static char word_breaks[] = " \t\n\"\\'`@$><=;|&{}()[],+-*/%^~#";

void glh_complete_init (lua_State *L) {
  complete_L = L;
  rl_attempted_completion_function = attempt;
  rl_basic_word_break_characters = word_breaks;
  rl_completer_word_break_characters = word_breaks;
  rl_completion_append_character = '\0';
}

#else

void glh_complete_init (lua_State *L) {
  (void)L;
  (void)complete_text;  /* no line editing: nothing completes */
}

#endif
