/*
 * main.c -- the `gpulua` host executable.
 *
 * A faithful adaptation of Lua 5.4's standalone interpreter (lua.c):
 *
 *   gpulua [options] [script [args]]
 *
 * with the same options (-e, -l, -i, -v, -E, -W, --, -), the same `arg`
 * table, LUA_INIT handling, REPL and Ctrl-C behaviour, plus the gpulua
 * long options (--backend=, --policy=, --trace=, --timeline, --help) and the
 * `gpulua` module opened as the global `gpu`.
 *
 * The REPL and its line editing are in repl.c; host.h declares what the
 * two files share.
 */

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "gpulua.h"
#include "host.h"


#define LUA_INIT_VAR        "LUA_INIT"
#define LUA_INITVARVERSION  LUA_INIT_VAR LUA_VERSUFFIX

/* mark in a module name: '-l a-b' loads module 'a-b' into global 'a' */
#if !defined(LUA_IGMARK)
#define LUA_IGMARK "-"
#endif


static lua_State *globalL = NULL;

const char *progname = GPULUA_PROGNAME;


/*
** {==================================================================
** Signal handling (Ctrl-C interrupts the running chunk)
** ===================================================================
*/

static void setsignal (int sig, void (*handler)(int)) {
  struct sigaction sa;
  sa.sa_handler = handler;
  sa.sa_flags = 0;
  sigemptyset(&sa.sa_mask);  /* do not mask any signal */
  sigaction(sig, &sa, NULL);
}


/*
** Hook set by signal function to stop the interpreter.
*/
static void lstop (lua_State *L, lua_Debug *ar) {
  (void)ar;  /* unused arg. */
  lua_sethook(L, NULL, 0, 0);  /* reset hook */
  luaL_error(L, "interrupted!");
}


/*
** Function to be called at a C signal. Because a C signal cannot
** just change a Lua state (as there is no proper synchronization),
** this function only sets a hook that, when called, will stop the
** interpreter.
*/
/* set by Ctrl-C; an interrupted run exits 130 (128 + SIGINT), like a shell */
volatile sig_atomic_t got_interrupt = 0;

static void laction (int i) {
  int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  got_interrupt = 1;
  setsignal(i, SIG_DFL);  /* if another SIGINT happens, terminate process */
  lua_sethook(globalL, lstop, flag, 1);
  gpulua_sethook_host_kernel(lstop, flag, 1);  /* a sim host kernel running now */
}

/* }================================================================== */


/*
** {==================================================================
** Messages
** ===================================================================
*/

/*
** Prints an error message, adding the program name in front of it
** (if present)
*/
void l_message (const char *pname, const char *msg) {
  /* the library's start-up errors say "gpulua: " (for any interpreter that
     loads it): here the program's name stands in its place, not beside it */
  static const char own[] = GPULUA_PROGNAME ": ";
  if (pname && strncmp(msg, own, sizeof own - 1) == 0)
    msg += sizeof own - 1;
  if (pname) fprintf(stderr, "%s: ", pname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}


/*
** Check whether 'status' is not OK and, if so, prints the error
** message on the top of the stack.
*/
int report (lua_State *L, int status) {
  if (status != LUA_OK) {
    int top = lua_gettop(L);
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL)  /* error object is not a string? */
      msg = lua_pushfstring(L, "(error object is a %s value)",
                               luaL_typename(L, -1));
    l_message(progname, msg);
    lua_settop(L, top - 1);  /* remove message */
  }
  return status;
}


/*
** Message handler used to run all chunks
*/
static int msghandler (lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {  /* is error object not a string? */
    if (luaL_callmeta(L, 1, "__tostring") &&  /* does it have a metamethod */
        lua_type(L, -1) == LUA_TSTRING)  /* that produces a string? */
      return 1;  /* that is the message */
    else
      msg = lua_pushfstring(L, "(error object is a %s value)",
                               luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);  /* append a standard traceback */
  return 1;  /* return the traceback */
}


/*
** Interface to 'lua_pcall', which sets appropriate message function
** and C-signal handler. Used to run all chunks.
*/
int docall (lua_State *L, int narg, int nres) {
  int status;
  int base = lua_gettop(L) - narg;  /* function index */
  lua_pushcfunction(L, msghandler);  /* push message handler */
  lua_insert(L, base);  /* put it under function and args */
  globalL = L;  /* to be available to 'laction' */
  setsignal(SIGINT, laction);  /* set C-signal handler */
  status = lua_pcall(L, narg, nres, base);
  setsignal(SIGINT, SIG_DFL);  /* reset C-signal handler */
  lua_remove(L, base);  /* remove message handler from the stack */
  return status;
}


/* }================================================================== */


/*
** Create the 'arg' table, which stores all arguments from the
** command line ('argv'). It should be aligned so that, at index 0,
** it has 'argv[script]', which is the script name. The arguments
** to the script (everything after 'script') go to positive indices;
** other arguments (before the script name) go to negative indices.
** If there is no script name, assume interpreter's name as base.
*/
static void createargtable (lua_State *L, char **argv, int argc, int script) {
  int i, narg;
  if (script < 0) script = 0;  /* no script name and empty argv */
  narg = argc - (script + 1);  /* number of positive indices */
  if (narg < 0) narg = 0;
  lua_createtable(L, narg, script + 1);
  for (i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}


static int dochunk (lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status);
}


static int dofile (lua_State *L, const char *name) {
  return dochunk(L, luaL_loadfile(L, name));
}


static int dostring (lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}


/*
** Receives 'globname[=modname]' and runs 'globname = require(modname)'.
** If there is no explicit modname and globname contains a '-', cut
** the suffix after '-' (the "version") to make the global name.
*/
static int dolibrary (lua_State *L, char *globname) {
  int status;
  char *suffix = NULL;
  char *modname = strchr(globname, '=');
  if (modname == NULL) {  /* no explicit name? */
    modname = globname;  /* module name is equal to global name */
    suffix = strchr(modname, *LUA_IGMARK);  /* look for a suffix mark */
  }
  else {
    *modname = '\0';  /* global name ends here */
    modname++;  /* module name starts after the '=' */
  }
  lua_getglobal(L, "require");
  lua_pushstring(L, modname);
  status = docall(L, 1, 1);  /* call 'require(modname)' */
  if (status == LUA_OK) {
    if (suffix != NULL)  /* is there a suffix mark? */
      *suffix = '\0';  /* remove suffix from global name */
    lua_setglobal(L, globname);  /* globname = require(modname) */
  }
  return report(L, status);
}


/*
** Push on the stack the contents of table 'arg' from 1 to #arg
*/
static int pushargs (lua_State *L) {
  int i, n;
  if (lua_getglobal(L, "arg") != LUA_TTABLE)
    luaL_error(L, "'arg' is not a table");
  n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (i = 1; i <= n; i++)
    lua_rawgeti(L, -i, i);
  lua_remove(L, -i);  /* remove table from the stack */
  return n;
}


static int handle_script (lua_State *L, char **argv) {
  int status;
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0)
    fname = NULL;  /* stdin */
  status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = pushargs(L);  /* push arguments to script */
    status = docall(L, n, LUA_MULTRET);
  }
  return report(L, status);
}


/*
** {==================================================================
** Command-line options
** ===================================================================
*/

/* bits of various argument indicators in 'args' */
#define has_error   1   /* bad option */
#define has_i       2   /* -i */
#define has_v       4   /* -v */
#define has_e       8   /* -e */
#define has_E       16  /* -E */
#define has_help    32  /* -h / --help */
#define has_badvalue 64 /* a gpulua long option the library rejected */
#define has_version 128 /* --version */
#define has_l       256 /* -l */


/*
** Traverses all arguments from 'argv', returning a mask with those
** needed before running any Lua code or an error code if it finds any
** invalid argument. In case of error, 'first' is the index of the bad
** argument.  Otherwise, 'first' is -1 if there is no program name,
** 0 if there is no script name, or the index of the script name.
** The gpulua long options are handed to the library on the way; if it
** rejects a value, the mask has 'has_badvalue' and 'badvalue' is the
** index of the first such option (for the caller to report, after a bad
** option and -h, which win over it).
*/
static int collectargs (char **argv, int *first, int *badvalue) {
  int args = 0;
  int i;
  if (argv[0] == NULL) {  /* no program name? */
    *first = -1;
    return 0;
  }
  for (i = 1; argv[i] != NULL; i++) {  /* handle arguments */
    *first = i;
    if (argv[i][0] != '-')  /* not an option? */
        return args;  /* stop handling options */
    switch (argv[i][1]) {  /* else check option */
      case '-':  /* '--' */
        if (argv[i][2] != '\0') {  /* a long option? */
          int set = setlongoption(argv[i]);
          if (set == 0)
            return has_error;  /* unknown long option */
          if (set < 0 && !(args & has_badvalue)) {  /* first rejected value? */
            args |= has_badvalue;
            *badvalue = i;
          }
          if (strcmp(argv[i] + 2, "help") == 0)
            args |= has_help;
          else if (strcmp(argv[i] + 2, "version") == 0)
            args |= has_version;
          break;
        }
        *first = (argv[i + 1] != NULL) ? i + 1 : 0;  /* 0: no script */
        return args;
      case '\0':  /* '-' */
        return args;  /* script "name" is '-' */
      case 'E':
        if (argv[i][2] != '\0')  /* extra characters? */
          return has_error;  /* invalid option */
        args |= has_E;
        break;
      case 'W':
        if (argv[i][2] != '\0')  /* extra characters? */
          return has_error;  /* invalid option */
        break;
      case 'h':
        if (argv[i][2] != '\0')  /* extra characters? */
          return has_error;  /* invalid option */
        args |= has_help;
        break;
      case 'i':
        args |= has_i;  /* (-i implies -v) */
        /* FALLTHROUGH */
      case 'v':
        if (argv[i][2] != '\0')  /* extra characters? */
          return has_error;  /* invalid option */
        args |= has_v;
        break;
      case 'e':
        args |= has_e;
        /* FALLTHROUGH */
      case 'l':  /* both options need an argument */
        if (argv[i][1] == 'l') args |= has_l;
        if (argv[i][2] == '\0') {  /* no concatenated argument? */
          i++;  /* try next 'argv' */
          if (argv[i] == NULL || argv[i][0] == '-')
            return has_error;  /* no next argument or it is another option */
        }
        break;
      default:  /* invalid option */
        return has_error;
    }
  }
  *first = 0;  /* no script name */
  return args;
}


/*
** Processes options 'e' and 'l', which involve running Lua code, and
** 'W', which also affects the state.
** Returns 0 if some code raises an error.
*/
static int runargs (lua_State *L, char **argv, int n) {
  int i;
  for (i = 1; i < n; i++) {
    int option = argv[i][1];
    switch (option) {
      case 'e':  case 'l': {
        int status;
        char *extra = argv[i] + 2;  /* both options need an argument */
        if (*extra == '\0') extra = argv[++i];
        status = (option == 'e')
                 ? dostring(L, extra, "=(command line)")
                 : dolibrary(L, extra);
        if (status != LUA_OK) return 0;
        break;
      }
      case 'W':
        lua_warning(L, "@on", 0);  /* warnings on */
        break;
      default:  /* other options (including long ones) were handled */
        break;
    }
  }
  return 1;
}


/* LUA_INIT_5_4 or LUA_INIT is set (handle_luainit would run something) */
static int has_luainit (void) {
  return getenv(LUA_INITVARVERSION) != NULL || getenv(LUA_INIT_VAR) != NULL;
}


static int handle_luainit (lua_State *L) {
  const char *name = "=" LUA_INITVARVERSION;
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=" LUA_INIT_VAR;
    init = getenv(name + 1);  /* try alternative name */
  }
  if (init == NULL) return LUA_OK;
  else if (init[0] == '@')
    return dofile(L, init+1);
  else
    return dostring(L, init, name);
}

/* }================================================================== */


/*
** Main body of the interpreter (to be called in protected mode).
** Reads the options and handles them all.
*/
static int pmain (lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script, badvalue = 0;
  int args = collectargs(argv, &script, &badvalue);
  int optlim = (script > 0) ? script : argc;  /* first argv not an option */
  luaL_checkversion(L);  /* check that interpreter has correct version */
  if (argv[0] && argv[0][0]) progname = argv[0];
  if (args == has_error) {  /* bad arg? */
    print_usage(argv[script]);  /* 'script' has index of bad arg. */
    return 0;
  }
  if (args & has_help) {  /* -h / --help? */
    print_usage_text(stdout);
    lua_pushboolean(L, 1);  /* not an error */
    return 1;
  }
  if (args & has_badvalue) {  /* a gpulua option's value rejected? */
    print_badvalue(argv[badvalue]);
    return 0;
  }
  if (args & has_E)  /* option '-E'? gpulua's variables go too */
    clear_gpulua_env();
  if (args & has_version) {  /* --version: say it and stop */
    print_version_long();
    lua_pushboolean(L, 1);  /* not an error */
    return 1;
  }
  if (args & has_v)  /* option '-v'? */
    print_version();
  if ((args & has_v) && !(args & (has_i | has_e | has_l)) && script < 1 &&
      ((args & has_E) || !has_luainit())) {  /* '-v' alone: no Lua to run */
    lua_pushboolean(L, 1);  /* so no backend is started either */
    return 1;
  }
  if (args & has_E) {  /* option '-E'? */
    lua_pushboolean(L, 1);  /* signal for libraries to ignore env. vars. */
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);  /* open standard libraries */
  luaL_requiref(L, "gpulua", luaopen_gpulua, 0);  /* package.loaded.gpulua (may raise) */
  lua_setglobal(L, "gpu");  /* ...and the global 'gpu' */
  createargtable(L, argv, argc, script);  /* create table 'arg' */
  lua_gc(L, LUA_GCRESTART);  /* start GC... */
  lua_gc(L, LUA_GCGEN, 0, 0);  /* ...in generational mode */
  if (!(args & has_E)) {  /* no option '-E'? */
    if (handle_luainit(L) != LUA_OK)  /* run LUA_INIT */
      return 0;  /* error running LUA_INIT */
  }
  if (!runargs(L, argv, optlim))  /* execute arguments -e and -l */
    return 0;  /* something failed */
  if (script > 0) {  /* execute main script (if there is one) */
    if (handle_script(L, argv + script) != LUA_OK)
      return 0;  /* interrupt in case of error */
  }
  if (args & has_i)  /* -i option? */
    glh_repl(L);  /* do read-eval-print loop */
  else if (script < 1 && !(args & (has_e | has_v))) { /* no active option? */
    if (lua_stdin_is_tty()) {  /* running in interactive mode? */
      print_version();
      glh_repl(L);  /* do read-eval-print loop */
    }
    else if (dofile(L, NULL) != LUA_OK)  /* executes stdin as a file */
      return 0;
  }
  lua_pushboolean(L, 1);  /* signal no errors */
  return 1;
}


int main (int argc, char **argv) {
  int status, result;
  lua_State *L = luaL_newstate();  /* create state */
  if (L == NULL) {
    l_message(argv[0], "cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP);  /* stop GC while building state */
  lua_pushcfunction(L, &pmain);  /* to call 'pmain' in protected mode */
  lua_pushinteger(L, argc);  /* 1st argument */
  lua_pushlightuserdata(L, argv); /* 2nd argument */
  status = lua_pcall(L, 2, 1, 0);  /* do the call */
  result = lua_toboolean(L, -1);  /* get result */
  report(L, status);
  lua_close(L);  /* finalizers drain pending GPU work */
  if (result && status == LUA_OK) return EXIT_SUCCESS;
  return got_interrupt ? 128 + SIGINT : EXIT_FAILURE;
}
