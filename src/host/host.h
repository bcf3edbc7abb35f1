/*
 * host.h -- what the two halves of the `gpulua` host executable share:
 * main.c (lua.c's chunk running and messages), options.c (the command
 * line's usage, versions and gpulua options), repl.c (the interactive
 * loop and its line editing) and complete.c (its Tab completion).
 *
 * The executable is linked with -rdynamic, which would put these names in
 * its dynamic symbol table, where they could stand in for same-named
 * symbols of the C modules it loads: they are kept hidden.
 */

#ifndef GPULUA_HOST_H
#define GPULUA_HOST_H

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <lua.h>

/* the program's name in messages, and libedit's name for its settings */
#define GPULUA_PROGNAME "gpulua"

/* interactive use: stdin is a terminal (lua.c's luaconf default) */
#define lua_stdin_is_tty()  isatty(0)

#pragma GCC visibility push(hidden)

/* --- main.c */

/* name put before error messages; NULL while the REPL runs (as in lua.c) */
extern const char *progname;

/* set by Ctrl-C; an interrupted run exits 130, the REPL clears it per line */
extern volatile sig_atomic_t got_interrupt;

/* prints 'msg' on stderr, after "PNAME: " when 'pname' is not NULL */
void l_message (const char *pname, const char *msg);

/* if 'status' is not LUA_OK, prints and pops the error message on top */
int report (lua_State *L, int status);

/* lua_pcall with a traceback handler and Ctrl-C stopping the chunk */
int docall (lua_State *L, int narg, int nres);

/* --- options.c */

/* the usage text: every option and every GPULUA_* variable with its default */
void print_usage_text (FILE *f);
/* a bad option (argv's text) on stderr, then "try 'PROGNAME --help'" */
void print_usage (const char *badoption);
/* -v: "gpulua 0.1.0 (Lua 5.4.x)" */
void print_version (void);
/* --version: -v's line, then the backend the options and environment name */
void print_version_long (void);
/* Hands 'arg' (which starts with "--" and has more after it) to the library
** when it is a gpulua long option. 1 if accepted (--help and --version
** too), 0 if it is none, -1 if the library rejected its value. */
int setlongoption (const char *arg);
/* why the library rejected the long option 'arg', on stderr */
void print_badvalue (const char *arg);
/* -E: unsets every GPULUA_* variable */
void clear_gpulua_env (void);

/* --- complete.c */

/* Tab completion for the REPL's line editing (libedit) in state L: globals
** and keywords, a table's keys, a gpulua object's fields and methods */
void glh_complete_init (lua_State *L);

/* --- repl.c */

/* the read-eval-print loop (lua.c's doREPL), until end of input */
void glh_repl (lua_State *L);

#pragma GCC visibility pop

#endif
