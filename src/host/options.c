/*
 * options.c -- the `gpulua` host's own command-line surface: the usage text
 * (every option, Lua's and gpulua's, and every GPULUA_* environment variable
 * with its default), the gpulua long options handed to the library, the
 * version lines (-v and --version), and -E's clearing of the GPULUA_*
 * variables.
 *
 * main.c (lua.c's structure) walks argv once and calls these; host.h
 * declares them.
 */

#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE  /* environ */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lua.h>

#include "gpulua.h"
#include "host.h"


#define GPULUA_VERSION_LINE \
  GPULUA_PROGNAME " " GPULUA_VERSION " (" LUA_RELEASE ")"

/* the prefix of the variables that -E clears */
#define GPULUA_ENV_PREFIX "GPULUA_"


/* gpulua long options taking a value: --NAME=VALUE */
static const struct {
  const char *name;
  const char *expected;
} longopts[] = {
  {"backend", "cuda or sim"},
  {"policy", "strict, auto or off"},
  {"trace", "a file name"},
  {"timeline", "a file name (FILE.svg), 1 for the text timeline or 0 for none"},
  {"sim-model", "a timing model's file (FILE.json)"},
  {NULL, NULL}
};



/*
** Every environment variable gpulua reads: name, values, default, meaning.
** tests/host_env_check.sh fails when src/ or lua/ reads one not listed here.
*/
static const struct {
  const char *name;
  const char *values;
  const char *dflt;
  const char *meaning;
} envvars[] = {
  {"GPULUA_BACKEND", "cuda|sim",
   "cuda when libcuda.so.1 loads and has a device, else sim with a one-line notice on stderr",
   "the backend (as --backend); naming sim here or with --backend=sim silences that notice"},
  {"GPULUA_POLICY", "strict|auto|off", "strict",
   "how a hazard between streams is handled (as --policy)"},
  {"GPULUA_TRACE", "FILE.json", "none",
   "write a Chrome trace of the run to FILE.json (as --trace)"},
  {"GPULUA_TIMELINE", "0|1|FILE.svg", "0",
   "the timeline at exit: 1 as text on stderr, FILE.svg (any other value but 0) as a picture (as --timeline); "
   "yes, true, on and the like are refused"},
  {"GPULUA_CACHE_DIR", "DIR", "$XDG_CACHE_HOME/gpulua, else ~/.cache/gpulua",
   "where compiled kernels are cached"},
  {"GPULUA_LIBCUDA", "FILE", "libcuda.so.1 on the loader's path",
   "the CUDA driver library to load"},
  {"GPULUA_NVRTC", "FILE", "libnvrtc.so on the loader's path, else /usr/local/cuda/lib64",
   "the NVRTC library gpu.compile loads (also on sim)"},
  {"GPULUA_CUBLAS", "FILE", "libcublas.so.13, else .so.12, on the loader's path or in /usr/local/cuda",
   "the cuBLAS library s:gemm loads (cuda backend)"},
  {"GPULUA_NCCL", "FILE", "libnccl.so.2 on the loader's path or in /usr/local/cuda",
   "the NCCL library gpu.comm loads (cuda backend)"},
  {"GPULUA_SIM_DEVICES", "1..64", "2", "sim: the number of devices"},
  {"GPULUA_SIM_MEMORY", "BYTES (K, M, G)", "1G", "sim: memory per device"},
  {"GPULUA_SIM_HOST_MEMORY", "BYTES (K, M, G)", "no limit",
   "sim: a limit on pinned host memory, to test running out of it"},
  {"GPULUA_SIM_DELAY_US", "0..10000000", "0",
   "sim: microseconds added to every queued operation, to make races show"},
  {"GPULUA_SIM_MODEL", "FILE.json", "none: sim reports its host's times",
   "sim: a timing model (models/h200.json, or one gpu.calibrate wrote), so sim's device times predict that GPU's (as --sim-model)"},
  {"GPULUA_SIM_NCCL_FAULT", "N|async:N", "none",
   "sim: the N-th collective call fails (async: its communicator reports an error)"},
  {"GPULUA_SIM_NCCL_ADDR", "ADDRESS", "127.0.0.1",
   "sim: the numeric address rank 0 of a job of several processes (gpu.comm{}) serves the job's collectives on "
   "(a free port); the default keeps the job on one host"},
  {"GPULUA_SIM_KERNELS", "ptx|host|compare", "ptx",
   "sim: what a launch runs: ptx (the kernel's own PTX, memory and races checked), host (the function "
   "given with k:host) or compare (both, the host function on copies; the first element they write "
   "differently is a fault)"},
  {"GPULUA_SIM_SCHEDULE", "fixed|random:SEED", "fixed",
   "sim, under GPULUA_SIM_KERNELS=ptx or compare: the order blocks, warps and atomics run in; random:SEED permutes "
   "them (the same seed, the same order), to show a kernel whose result depends on it"},
  {"GPULUA_SIM_RACECHECK", "on|off", "on",
   "sim: whether kernels run as PTX are checked for data races on shared and global memory (off: faster)"},
  {"GPULUA_SIM_BUILTINS", "c|ptx", "c",
   "sim: what a built-in kernel (gpu.kernels) runs: c (its C implementation, fast) or ptx (kernels/builtins.cu's "
   "PTX through the interpreter, checked like any kernel; needs NVRTC), whatever GPULUA_SIM_KERNELS says"},
  {"GPULUA_RANK", "N", "none",
   "gpu.comm{}: this process's rank in a job of several processes (read first; else torchrun's RANK, Open MPI's, "
   "MPICH's or Slurm's variables)"},
  {"GPULUA_SIZE", "N", "none", "gpu.comm{}: the number of processes of the job (with GPULUA_RANK)"},
  {"GPULUA_LOCAL_RANK", "N", "the rank", "gpu.comm{}: the rank among the job's processes on this machine"},
  {"GPULUA_STORE", "HOST:PORT", "MASTER_ADDR:MASTER_PORT",
   "gpu.comm{}: where rank 0 serves the store the job's processes meet at"},
  {NULL, NULL, NULL, NULL}
};


/*
** {==================================================================
** Usage
** ===================================================================
*/

void print_usage_text (FILE *f) {
  int i;
  fprintf(f,
  "usage: %s [options] [script [args]]\n"
  "Available options are:\n"
  "  -e stat   execute string 'stat'\n"
  "  -i        enter interactive mode after executing 'script'\n"
  "  -l mod    require library 'mod' into global 'mod'\n"
  "  -l g=mod  require library 'mod' into global 'g'\n"
  "  -v        show version information (alone: starts no backend)\n"
  "  -E        ignore environment variables: LUA_INIT*, LUA_PATH*, LUA_CPATH*\n"
  "            and every GPULUA_* below (the run and the processes it starts\n"
  "            see none of them; the defaults apply)\n"
  "  -W        turn warnings on\n"
  "  -h        show this help and exit (also --help)\n"
  "  --        stop handling options\n"
  "  -         stop handling options and execute stdin\n"
  "gpulua options (before the script name; each wins over its variable):\n"
  "  --backend=cuda|sim        choose the GPU backend (real CUDA or simulator)\n"
  "  --policy=strict|auto|off  set the policy for hazards between streams\n"
  "  --trace=FILE.json         write a Chrome trace of GPU activity to FILE.json\n"
  "  --timeline                print a text timeline of GPU activity on stderr at exit\n"
  "  --timeline=FILE.svg       write that timeline as an SVG picture to FILE.svg\n"
  "                            (any value but 0 and 1 is the file's name; 0: none)\n"
  "  --sim-model=FILE.json     sim: report device times from this timing model\n"
  "  --version                 show gpulua's and Lua's versions, and the backend this\n"
  "                            machine would get and why, and exit\n"
  "  --help                    show this help and exit\n"
  "Environment variables (default in brackets):\n",
  progname);
  for (i = 0; envvars[i].name != NULL; i++)
    fprintf(f, "  %s=%s\n      %s [%s]\n", envvars[i].name, envvars[i].values,
            envvars[i].meaning, envvars[i].dflt);
  fprintf(f,
  "  LUA_INIT_5_4, LUA_INIT, LUA_PATH_5_4, LUA_PATH, LUA_CPATH_5_4, LUA_CPATH\n"
  "      Lua's own, as for lua5.4\n");
  fflush(f);
}


void print_usage (const char *badoption) {
  fprintf(stderr, "%s: ", progname);
  if (badoption[0] == '-' && badoption[1] == '-') {  /* a long option */
    int i;
    for (i = 0; longopts[i].name != NULL; i++)
      if (strcmp(badoption + 2, longopts[i].name) == 0) break;
    if (longopts[i].name != NULL)  /* known, but without '=VALUE' */
      fprintf(stderr, "'%s' needs its value after '=': %s=VALUE (%s)\n",
              badoption, badoption, longopts[i].expected);
    else
      fprintf(stderr, "unrecognized option '%s'\n", badoption);
  }
  else if (badoption[1] == 'e' || badoption[1] == 'l')
    fprintf(stderr, "'%s' needs argument\n", badoption);
  else
    fprintf(stderr, "unrecognized option '%s'\n", badoption);
  fprintf(stderr, "try '%s --help'\n", progname);
  fflush(stderr);
}

/* }================================================================== */


/*
** {==================================================================
** Versions
** ===================================================================
*/

/* -v: one line, as lua.c's */
void print_version (void) {
  fputs(GPULUA_VERSION_LINE "\n", stdout);
  fflush(stdout);
}


/*
** --version: the version line, then the backend this machine would get
** from the options and the environment, and why: the option or variable
** that names it, or what loading the CUDA driver said (the driver is
** loaded and asked for its devices; no backend starts).
*/
void print_version_long (void) {
  char why[2304];
  const char *backend = gpulua_backend_probe(why, sizeof why);
  print_version();
  if (backend != NULL)
    printf("backend: %s (%s)\n", backend, why);
  else
    printf("backend: none: %s\n", why);
  fflush(stdout);
}

/* }================================================================== */


/*
** {==================================================================
** gpulua long options
** ===================================================================
*/

/*
** Index in 'longopts' of the gpulua long option 'arg' ("--NAME=VALUE"),
** or -1 if it is none of them.
*/
static int findlongopt (const char *arg) {
  int i;
  for (i = 0; longopts[i].name != NULL; i++) {
    size_t l = strlen(longopts[i].name);
    if (strncmp(arg + 2, longopts[i].name, l) == 0 && arg[2 + l] == '=')
      return i;
  }
  return -1;
}


int setlongoption (const char *arg) {
  int k;
  const char *value;
  if (strcmp(arg + 2, "help") == 0 || strcmp(arg + 2, "version") == 0)
    return 1;
  if (strcmp(arg + 2, "timeline") == 0)  /* bare: the text timeline */
    return (gpulua_set_option("timeline", "1") == 0) ? 1 : -1;
  if ((k = findlongopt(arg)) < 0)
    return 0;
  value = arg + 3 + strlen(longopts[k].name);
  if (*value == '\0')  /* '--NAME=': no value is never one */
    return -1;
  if (gpulua_set_option(longopts[k].name, value) != 0)
    return -1;
  return 1;
}


void print_badvalue (const char *arg) {
  int k = findlongopt(arg);
  if (k < 0)  /* '--timeline' */
    fprintf(stderr, "%s: invalid option '--timeline'\n", progname);
  else
    fprintf(stderr, "%s: invalid value '%s' for --%s (expected %s)\n",
            progname, arg + 3 + strlen(longopts[k].name), longopts[k].name,
            longopts[k].expected);
}

/* }================================================================== */


/*
** -E: removes every GPULUA_* variable from the environment, before
** anything reads one (the library reads them when it is opened, and later:
** the sim's configuration, the libraries' paths, the kernel cache), so that
** gpulua runs with its defaults, as Lua does without LUA_INIT and LUA_PATH.
** Scripts' child processes (os.execute, io.popen) do not see them either.
*/
void clear_gpulua_env (void) {
  size_t n = strlen(GPULUA_ENV_PREFIX);
  int found = 1;
  while (found) {  /* unsetenv changes 'environ': scan again after each */
    char **e;
    found = 0;
    for (e = environ; e != NULL && *e != NULL; e++) {
      const char *eq = strchr(*e, '=');
      if (strncmp(*e, GPULUA_ENV_PREFIX, n) == 0 && eq != NULL) {
        /* the whole name, however long (a cut one would not match, and
           the scan would start again forever) */
        char *name = strndup(*e, (size_t)(eq - *e));
        int gone = name != NULL && unsetenv(name) == 0;
        free(name);
        if (gone) {
          found = 1;
          break;
        }
      }
    }
  }
}
