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
 * Build with GPULUA_HAVE_LIBEDIT defined (and -ledit) for line editing and a
 * persistent history in $HOME/.gpulua_history.
 */

#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "gpulua.h"

#if defined(GPULUA_HAVE_LIBEDIT)
#include <editline/readline.h>
#endif


#define GPULUA_PROGNAME "gpulua"

#define GPULUA_VERSION_LINE \
  GPULUA_PROGNAME " " GPULUA_VERSION " (" LUA_RELEASE ")"

#define LUA_INIT_VAR        "LUA_INIT"
#define LUA_INITVARVERSION  LUA_INIT_VAR LUA_VERSUFFIX

/* mark in a module name: '-l a-b' loads module 'a-b' into global 'a' */
#if !defined(LUA_IGMARK)
#define LUA_IGMARK "-"
#endif


static lua_State *globalL = NULL;

static const char *progname = GPULUA_PROGNAME;


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
static volatile sig_atomic_t got_interrupt = 0;

static void laction (int i) {
  int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  got_interrupt = 1;
  setsignal(i, SIG_DFL);  /* if another SIGINT happens, terminate process */
  lua_sethook(globalL, lstop, flag, 1);
}

/* }================================================================== */


/*
** {==================================================================
** Messages
** ===================================================================
*/

/* gpulua long options taking a value: --NAME=VALUE */
static const struct {
  const char *name;
  const char *expected;
} longopts[] = {
  {"backend", "cuda or sim"},
  {"policy", "strict, auto or off"},
  {"trace", "a file name"},
  {NULL, NULL}
};


static void print_usage_text (FILE *f) {
  fprintf(f,
  "usage: %s [options] [script [args]]\n"
  "Available options are:\n"
  "  -e stat   execute string 'stat'\n"
  "  -i        enter interactive mode after executing 'script'\n"
  "  -l mod    require library 'mod' into global 'mod'\n"
  "  -l g=mod  require library 'mod' into global 'g'\n"
  "  -v        show version information\n"
  "  -E        ignore environment variables\n"
  "  -W        turn warnings on\n"
  "  -h        show this help and exit (also --help)\n"
  "  --        stop handling options\n"
  "  -         stop handling options and execute stdin\n"
  "gpulua options (before the script name):\n"
  "  --backend=cuda|sim        choose the GPU backend (real CUDA or simulator)\n"
  "  --policy=strict|auto|off  set the gpulua policy\n"
  "  --trace=FILE.json         write a trace of GPU activity to FILE.json\n"
  "  --timeline                enable the GPU activity timeline\n",
  progname);
  fflush(f);
}


static void print_usage (const char *badoption) {
  fprintf(stderr, "%s: ", progname);
  if (badoption[0] == '-' && badoption[1] == '-') {  /* a long option */
    int i;
    for (i = 0; longopts[i].name != NULL; i++)
      if (strcmp(badoption + 2, longopts[i].name) == 0) break;
    if (longopts[i].name != NULL)  /* known, but without '=VALUE' */
      fprintf(stderr, "'%s' needs argument (%s=VALUE)\n", badoption, badoption);
    else
      fprintf(stderr, "unrecognized option '%s'\n", badoption);
  }
  else if (badoption[1] == 'e' || badoption[1] == 'l')
    fprintf(stderr, "'%s' needs argument\n", badoption);
  else
    fprintf(stderr, "unrecognized option '%s'\n", badoption);
  print_usage_text(stderr);
}


/*
** Prints an error message, adding the program name in front of it
** (if present)
*/
static void l_message (const char *pname, const char *msg) {
  if (pname) fprintf(stderr, "%s: ", pname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}


/*
** Check whether 'status' is not OK and, if so, prints the error
** message on the top of the stack.
*/
static int report (lua_State *L, int status) {
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
static int docall (lua_State *L, int narg, int nres) {
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


static void print_version (void) {
  fputs(GPULUA_VERSION_LINE "\n", stdout);
  fflush(stdout);
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


/*
** Checks whether 'arg' (which starts with "--" and has more after it)
** is a known gpulua long option. Returns 1 if it is, 0 otherwise.
*/
static int islongoption (const char *arg) {
  const char *opt = arg + 2;
  int i;
  if (strcmp(opt, "timeline") == 0 || strcmp(opt, "help") == 0)
    return 1;
  for (i = 0; longopts[i].name != NULL; i++) {
    size_t l = strlen(longopts[i].name);
    if (strncmp(opt, longopts[i].name, l) == 0 && opt[l] == '=')
      return 1;
  }
  return 0;
}


/*
** Traverses all arguments from 'argv', returning a mask with those
** needed before running any Lua code or an error code if it finds any
** invalid argument. In case of error, 'first' is the index of the bad
** argument.  Otherwise, 'first' is -1 if there is no program name,
** 0 if there is no script name, or the index of the script name.
*/
static int collectargs (char **argv, int *first) {
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
          if (!islongoption(argv[i]))
            return has_error;  /* unknown long option */
          if (strcmp(argv[i] + 2, "help") == 0)
            args |= has_help;
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
** Passes the gpulua long options among 'argv[1..n-1]' to the library
** (before any library is opened). Returns 1 if all were accepted; on an
** invalid value prints a message and returns 0.
*/
static int setlongoptions (char **argv, int n) {
  int i;
  for (i = 1; i < n; i++) {
    const char *arg = argv[i];
    if (arg[0] != '-')
      continue;
    if (arg[1] == 'e' || arg[1] == 'l') {  /* skip the option's argument */
      if (arg[2] == '\0') i++;
      continue;
    }
    if (arg[1] != '-' || arg[2] == '\0')
      continue;
    if (strcmp(arg + 2, "help") == 0)
      continue;
    if (strcmp(arg + 2, "timeline") == 0) {
      if (gpulua_set_option("timeline", "1") != 0) {
        fprintf(stderr, "%s: invalid option '--timeline'\n", progname);
        return 0;
      }
    }
    else {
      int k;
      for (k = 0; longopts[k].name != NULL; k++) {
        size_t l = strlen(longopts[k].name);
        if (strncmp(arg + 2, longopts[k].name, l) == 0 && arg[2 + l] == '=') {
          const char *value = arg + 2 + l + 1;
          if (gpulua_set_option(longopts[k].name, value) != 0) {
            fprintf(stderr,
                    "%s: invalid value '%s' for --%s (expected %s)\n",
                    progname, value, longopts[k].name, longopts[k].expected);
            return 0;
          }
          break;
        }
      }
    }
  }
  return 1;
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
** {==================================================================
** Read-Eval-Print Loop (REPL)
** ===================================================================
*/

#define LUA_PROMPT    "> "
#define LUA_PROMPT2   ">> "
#define LUA_MAXINPUT  512

#define lua_stdin_is_tty()  isatty(0)


#if defined(GPULUA_HAVE_LIBEDIT)

static int use_readline = 0;  /* line editing only when stdin is a tty */
static char *history_file = NULL;

static void lua_initreadline (lua_State *L) {
  (void)L;
  use_readline = lua_stdin_is_tty();
  if (!use_readline) return;
  rl_readline_name = GPULUA_PROGNAME;
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
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
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
    int status = luaL_loadbuffer(L, line, len, "=stdin");  /* try it */
    if (!incomplete(L, status)) {
      lua_saveline(L, line);  /* keep history */
      return status;  /* should not try to add continuation line */
    }
    if (!pushline(L, 0)) {  /* no more input for an incomplete statement? */
      lua_saveline(L, line);  /* keep history */
      /* reload it to get the syntax error message back on the stack */
      return luaL_loadbuffer(L, line, len, "=stdin");
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
** print any results.
*/
static void doREPL (lua_State *L) {
  int status;
  const char *oldprogname = progname;
  progname = NULL;  /* no 'progname' on errors in interactive mode */
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


/*
** Main body of the interpreter (to be called in protected mode).
** Reads the options and handles them all.
*/
static int pmain (lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script;
  int args = collectargs(argv, &script);
  int optlim = (script > 0) ? script : argc;  /* first argv not an option */
  luaL_checkversion(L);  /* check that interpreter has correct version */
  if (args == has_error) {  /* bad arg? */
    print_usage(argv[script]);  /* 'script' has index of bad arg. */
    return 0;
  }
  if (args & has_help) {  /* -h / --help? */
    print_usage_text(stdout);
    lua_pushboolean(L, 1);  /* not an error */
    return 1;
  }
  if (!setlongoptions(argv, optlim))  /* gpulua options, before any library */
    return 0;
  if (args & has_v)  /* option '-v'? */
    print_version();
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
    doREPL(L);  /* do read-eval-print loop */
  else if (script < 1 && !(args & (has_e | has_v))) { /* no active option? */
    if (lua_stdin_is_tty()) {  /* running in interactive mode? */
      print_version();
      doREPL(L);  /* do read-eval-print loop */
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
    l_message(GPULUA_PROGNAME, "cannot create state: not enough memory");
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
