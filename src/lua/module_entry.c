/*
 * module_entry.c -- the translation unit of the loadable module gpulua.so;
 * everything it exports (luaopen_gpulua) comes from the core library.
 */
#include "gpulua.h"

typedef int gpulua_module_entry_unused; /* ISO C wants a declaration here */
