/*
 * repl.c -- the `gpulua` host's interactive mode: lua.c's read-eval-print
 * loop, with the same prompts (_PROMPT, _PROMPT2), '=' shorthand,
 * continuation lines and printing of results; an interrupted line
 * (Ctrl-C) leaves the GPU quiet before the next one. The GPU work is
 * recorded from the start, so that gpu.timeline() shows all of it.
 *
 * With GPULUA_HAVE_LIBEDIT defined (and -ledit), a terminal gets line
 * editing, Tab completion of names (complete.c) and a persistent history
 * in $HOME/.gpulua_history; otherwise
 * lines are read with plain fgets, like lua.c's default.
 */

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>

#include "gpulua.h"
#include "host.h"

#if defined(GPULUA_HAVE_LIBEDIT)
#include <editline/readline.h>
#endif


/*
** {==================================================================
** Read-Eval-Print Loop (REPL)
** ===================================================================
*/

#define LUA_PROMPT    "> "
#define LUA_PROMPT2   ">> "
#define LUA_MAXINPUT  512


#if defined(GPULUA_HAVE_LIBEDIT)

static int use_readline = 0;  /* line editing only when stdin is a tty */
static char *history_file = NULL;

static void lua_initreadline (lua_State *L) {
  use_readline = lua_stdin_is_tty();
  if (!use_readline) return;
  rl_readline_name = GPULUA_PROGNAME;
  glh_complete_init(L);  /* Tab completes names (complete.c) */
  using_history();
  if (history_file == NULL) {
    const char *home = getenv("HOME");
    if (home != NULL && home[0] != '\0') {
      static const char base[] = "/.gpulua_history";
      size_t l = strlen(home);
      history_file = (char *)malloc(l + sizeof(base));
      if (history_file != NULL) {
        memcpy(history_file, home, l);
        memcpy(history_file + l, base, sizeof(base));
      }
    }
  }
  if (history_file != NULL)
    (void)read_history(history_file);  /* ignore failures */
}

static int lua_readline (lua_State *L, char **b, const char *prompt) {
  (void)L;
  if (use_readline) {
    *b = readline(prompt);
    return *b != NULL;
  }
  fputs(prompt, stdout);
  fflush(stdout);
  return fgets(*b, LUA_MAXINPUT, stdin) != NULL;
}

static void lua_saveline (lua_State *L, const char *line) {
  (void)L;
  add_history(line);  /* in-memory history */
  if (use_readline && history_file != NULL)
    (void)write_history(history_file);  /* keep it; ignore failures */
}

static void lua_freeline (lua_State *L, char *b, char *buffer) {
  (void)L;
  if (b != buffer) free(b);
}

static void lua_endreadline (lua_State *L) {
  (void)L;
  if (use_readline && history_file != NULL)
    (void)write_history(history_file);  /* ignore failures */
  free(history_file);
  history_file = NULL;
}

#else  /* no line editing: plain fgets, like lua.c's default */

static void lua_initreadline (lua_State *L) {
  (void)L;
}

static int lua_readline (lua_State *L, char **b, const char *prompt) {
  (void)L;
  fputs(prompt, stdout);
  fflush(stdout);
  return fgets(*b, LUA_MAXINPUT, stdin) != NULL;
}

static void lua_saveline (lua_State *L, const char *line) {
  (void)L; (void)line;
}

static void lua_freeline (lua_State *L, char *b, char *buffer) {
  (void)L; (void)b; (void)buffer;
}

static void lua_endreadline (lua_State *L) {
  (void)L;
}

#endif


/*
** Return the string to be used as a prompt by the interpreter. Leave
** the string (or nil, if using the default value) on the stack, to keep
** it anchored.
*/
static const char *get_prompt (lua_State *L, int firstline) {
  if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") == LUA_TNIL)
    return (firstline ? LUA_PROMPT : LUA_PROMPT2);  /* use the default */
  else {  /* apply 'tostring' over the value */
    const char *p = luaL_tolstring(L, -1, NULL);
    lua_remove(L, -2);  /* remove original value */
    return p;
  }
}

/* mark in error messages for incomplete statements */
#define EOFMARK   "<eof>"
#define marklen   (sizeof(EOFMARK)/sizeof(char) - 1)


/*
** Check whether 'status' signals a syntax error and the error
** message at the top of the stack ends with the above mark for
** incomplete statements.
*/
static int incomplete (lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    if (lmsg >= marklen && strcmp(msg + lmsg - marklen, EOFMARK) == 0) {
      lua_pop(L, 1);
      return 1;
    }
  }
  return 0;  /* else... */
}


/* Lines read so far, and the first line of the statement being read: a
** statement is compiled as if it began on that line of "stdin", so that
** error messages and gpulua's locations name the REPL's input lines
** (stdin:12), not stdin:1 for every line as lua.c does. */
static int lines_read = 0;
static int statement_line = 1;

/* luaL_loadbuffer of s, as the chunk "=stdin" starting at statement_line */
static int load_statement (lua_State *L, const char *s, size_t len) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i < statement_line; i++) luaL_addchar(&b, '\n');
  luaL_addlstring(&b, s, len);
  luaL_pushresult(&b);
  size_t n;
  const char *chunk = lua_tolstring(L, -1, &n);
  int status = luaL_loadbuffer(L, chunk, n, "=stdin");
  lua_remove(L, -2);  /* the chunk's text */
  return status;
}


/*
** Prompt the user, read a line, and push it into the Lua stack.
** Returns 0 (and pushes nothing) when there is no more input.
*/
static int pushline (lua_State *L, int firstline) {
  char buffer[LUA_MAXINPUT];
  char *b = buffer;
  size_t l;
  const char *prmt = get_prompt(L, firstline);
  int readstatus = lua_readline(L, &b, prmt);
  lua_pop(L, 1);  /* remove prompt */
  if (readstatus == 0)
    return 0;  /* no input */
  lines_read++;
  l = strlen(b);
  if (l > 0 && b[l-1] == '\n')  /* line ends with newline? */
    b[--l] = '\0';  /* remove it */
  if (firstline && b[0] == '=')  /* for compatibility with 5.2, ... */
    lua_pushfstring(L, "return %s", b + 1);  /* change '=' to 'return' */
  else
    lua_pushlstring(L, b, l);
  lua_freeline(L, b, buffer);
  return 1;
}


/*
** Try to compile line on the stack as 'return <line>;'; on return, stack
** has either compiled chunk or original line (if compilation failed).
*/
static int addreturn (lua_State *L) {
  const char *line = lua_tostring(L, -1);  /* original line */
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = load_statement(L, retline, strlen(retline));
  if (status == LUA_OK) {
    lua_remove(L, -2);  /* remove modified line */
    if (line[0] != '\0')  /* non empty? */
      lua_saveline(L, line);  /* keep history */
  }
  else
    lua_pop(L, 2);  /* pop result from 'luaL_loadbuffer' and modified line */
  return status;
}


/*
** Read multiple lines until a complete Lua statement
*/
static int multiline (lua_State *L) {
  for (;;) {  /* repeat until gets a complete statement */
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);  /* get what it has */
    int status = load_statement(L, line, len);  /* try it */
    if (!incomplete(L, status)) {
      lua_saveline(L, line);  /* keep history */
      return status;  /* should not try to add continuation line */
    }
    if (!pushline(L, 0)) {  /* no more input for an incomplete statement? */
      lua_saveline(L, line);  /* keep history */
      /* reload it to get the syntax error message back on the stack */
      return load_statement(L, line, len);
    }
    lua_pushliteral(L, "\n");  /* add newline... */
    lua_insert(L, -2);  /* ...between the two lines */
    lua_concat(L, 3);  /* join them */
  }
}


/*
** Read a line and try to load (compile) it first as an expression (by
** adding "return " in front of it) and second as a statement. Return
** the final status of load/call with the resulting function (if any)
** in the top of the stack.
*/
static int loadline (lua_State *L) {
  int status;
  lua_settop(L, 0);
  statement_line = lines_read + 1;
  if (!pushline(L, 1))
    return -1;  /* no input */
  if ((status = addreturn(L)) != LUA_OK)  /* 'return ...' did not work? */
    status = multiline(L);  /* try as command, maybe with continuation lines */
  lua_remove(L, 1);  /* remove line from the stack */
  return status;
}


/*
** Prints (calling the Lua 'print' function) any values on the stack
*/
static void l_print (lua_State *L) {
  int n = lua_gettop(L);
  if (n > 0) {  /* any result to be printed? */
    luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
    lua_getglobal(L, "print");
    lua_insert(L, 1);
    if (lua_pcall(L, n, 0, 0) != LUA_OK)
      l_message(progname, lua_pushfstring(L, "error calling 'print' (%s)",
                                             lua_tostring(L, -1)));
  }
}


/*
** After an interrupted REPL line: collect what the stopped chunk left
** behind (its slices queue their frees) and wait for the GPU work it
** queued, so the next line starts from a quiet device. A failure (a
** poisoned device) is reported, and the REPL goes on.
*/
static void drain_after_interrupt (lua_State *L) {
  lua_sethook(L, NULL, 0, 0);  /* a late Ctrl-C must not stop the drain */
  lua_gc(L, LUA_GCCOLLECT);
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "gpulua") == LUA_TTABLE &&
      lua_getfield(L, -1, "sync") == LUA_TFUNCTION) {
    if (lua_pcall(L, 0, 0, 0) != LUA_OK)
      l_message(progname, lua_pushfstring(L, "after the interrupt, waiting for the GPU work failed: %s",
                                             luaL_tolstring(L, -1, NULL)));
  }
  lua_settop(L, 0);
}


/*
** Do the REPL: repeatedly read (load) a line, evaluate (call) it, and
** print any results. (lua.c's doREPL.)
*/
void glh_repl (lua_State *L) {
  int status;
  const char *oldprogname = progname;
  progname = NULL;  /* no 'progname' on errors in interactive mode */
  if (gpulua_record(L) != 0) {  /* gpu.timeline() shows the work from the first line */
    l_message(GPULUA_PROGNAME, lua_pushfstring(L, "recording for gpu.timeline() did not start: %s",
                                               lua_tostring(L, -1)));
    lua_pop(L, 2);
  }
  lua_initreadline(L);
  while ((status = loadline(L)) != -1) {
    if (status == LUA_OK)
      status = docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK) l_print(L);
    else report(L, status);
    if (got_interrupt) drain_after_interrupt(L);
    got_interrupt = 0;  /* the REPL carries on after an interrupted line */
  }
  lua_endreadline(L);
  lua_settop(L, 0);  /* clear stack */
  lua_writeline();
  progname = oldprogname;
}

/* }================================================================== */
