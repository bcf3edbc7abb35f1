/*
 * test_sim_driver.c -- unit tests of the sim backend's driver table: main
 * and the table of tests, run in its order.
 *
 * Everything goes through the table filled by gld_driver_sim_load() (d.cuXxx),
 * plus gld_sim_enqueue()/gld_sim_device_of() from sim.h. No external framework:
 * CHECK() records a failure with file:line and carries on; each test function
 * passes when it recorded no failure; the last line is "N passed, M failed".
 * The harness (CHECK, the helpers) is sim_driver_harness.h/.c; the tests are
 * in test_sim_devices.c, test_sim_streams.c, test_sim_events.c,
 * test_sim_queue.c, test_sim_memory.c, test_sim_hostreg.c, test_sim_memmap.c, test_sim_modules.c,
 * test_sim_graphs.c and test_sim_compare.c, declared in sim_driver_tests.h.
 *
 * Determinism: work is held back with "gates" (host functions, queued with
 * cuLaunchHostFunc, that block until the test thread opens them), and progress
 * is observed through flags and sequence logs written by host functions. The
 * only sleeps are short bounded waits (SHORT_WAIT_MS) before asserting that
 * something has NOT happened yet, and sleeps inside queued host functions
 * whose completion a synchronising call must then wait for.
 *
 * The test sets GPULUA_SIM_MEMORY=64M (so the out-of-memory test is cheap)
 * and GPULUA_SIM_DEVICES=2 when it is unset, before cuInit.
 *
 * Each test is named for the behaviour it checks. Calls that would crash the
 * process if the sim read memory it does not own (frees of pointers it did
 * not hand out, or no longer owns) run in a forked child, so a crash fails
 * one test instead of the run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sim_driver_harness.h"
#include "sim_driver_tests.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- main ------------------------------------------------------------- */

typedef struct {
  const char *name;
  void (*fn)(void);
} test_case;

static const test_case tests[] = {
#define T(name) {#name, test_##name}
    T(table_filled),
    T(not_initialized), /* must come before init */
    T(kernels_setting), /* before init, which reads the setting */
    T(schedule_setting),
    T(init),
    T(devices),
    T(invalid_ordinals),
    T(no_context),
    T(primary_ctx), /* sets up the contexts the rest use */
    T(priority_range),
    T(stream_create_destroy),
    T(fifo_order),
    T(stream_query),
    T(stream_sync_waits),
    T(queue_bounded),
    T(queue_wakes_in_batches),
    T(queue_grows_while_its_worker_waits),
    T(events_basic),
    T(event_rerecord),
    T(wait_captures_the_record_at_the_wait),
    T(cross_stream_wait),
    T(elapsed_time),
    T(mem_accounting),
    T(out_of_memory),
    T(free_errors),
    T(double_free_after_the_free_ran_is_refused),
    T(free_of_a_foreign_pointer_is_refused),
    T(memcpy),
    T(memset),
    T(host_register_refusals),
    T(host_unregister_refusals),
    T(host_register_read_only),
    T(host_register_concurrent),
    T(memmap_device_memory),
    T(memmap_host_memory),
    T(memmap_ranges),
    T(memmap_cache),
    T(memmap_concurrent),
    T(memmap_module_globals),
    T(ctx_sync),
    T(destroy_with_work),
    T(workers_joined),
    T(launch_failed),
    T(error_strings),
    T(modules),
    T(set_host_while_queued),
    T(ptx_params),
    T(builtins_run_ptx),
    T(graph_capture_and_replay),
    T(graph_fork_join),
    T(graph_capture_errors),
    T(graph_kernels_and_update),
    T(compare_values),
    T(compare_launch),
#undef T
};

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  setenv("GPULUA_SIM_MEMORY", "64M", 1);
  setenv("GPULUA_SIM_DEVICES", "2", 0);
  g_ndev_expected = atoi(getenv("GPULUA_SIM_DEVICES"));
  gld_driver_sim_load(&d);

  int passed = 0, failed = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    g_test = tests[i].name;
    g_failures = 0;
    tests[i].fn();
    if (g_failures == 0) {
      passed++;
      printf("PASS %s\n", tests[i].name);
    } else {
      failed++;
      printf("FAIL %s (%d check%s)\n", tests[i].name, g_failures, g_failures == 1 ? "" : "s");
    }
    fflush(stderr);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
