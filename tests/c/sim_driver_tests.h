/*
 * sim_driver_tests.h -- the test functions of test_sim_driver, one group per
 * test file, for the table in test_sim_driver.c's main (which runs them in
 * its own order).
 */
#ifndef GPULUA_TEST_SIM_DRIVER_TESTS_H
#define GPULUA_TEST_SIM_DRIVER_TESTS_H

/* test_sim_devices.c */
void test_table_filled(void);
void test_not_initialized(void);
void test_kernels_setting(void);
void test_schedule_setting(void);
void test_init(void);
void test_devices(void);
void test_invalid_ordinals(void);
void test_no_context(void);
void test_primary_ctx(void);
void test_priority_range(void);

/* test_sim_streams.c */
void test_stream_create_destroy(void);
void test_fifo_order(void);
void test_stream_query(void);
void test_stream_sync_waits(void);
void test_ctx_sync(void);
void test_destroy_with_work(void);
void test_workers_joined(void);

/* test_sim_queue.c */
void test_queue_bounded(void);
void test_queue_wakes_in_batches(void);
void test_queue_grows_while_its_worker_waits(void);

/* test_sim_events.c */
void test_events_basic(void);
void test_event_rerecord(void);
void test_wait_captures_the_record_at_the_wait(void);
void test_cross_stream_wait(void);
void test_elapsed_time(void);

/* test_sim_memory.c */
void test_mem_accounting(void);
void test_out_of_memory(void);
void test_free_errors(void);
void test_double_free_after_the_free_ran_is_refused(void);
void test_free_of_a_foreign_pointer_is_refused(void);
void test_memcpy(void);
void test_memset(void);

/* test_sim_hostreg.c */
void test_host_register_refusals(void);
void test_host_unregister_refusals(void);
void test_host_register_read_only(void);
void test_host_register_concurrent(void);

/* test_sim_memmap.c */
void test_memmap_device_memory(void);
void test_memmap_host_memory(void);
void test_memmap_ranges(void);
void test_memmap_cache(void);
void test_memmap_concurrent(void);
void test_memmap_module_globals(void);

/* test_sim_modules.c */
void test_launch_failed(void);
void test_error_strings(void);
void test_modules(void);
void test_set_host_while_queued(void);
void test_ptx_params(void);
void test_builtins_run_ptx(void);

/* test_sim_graphs.c */
void test_graph_capture_and_replay(void);
void test_graph_fork_join(void);
void test_graph_capture_errors(void);
void test_graph_kernels_and_update(void);

/* test_sim_compare.c */
void test_compare_values(void);
void test_compare_launch(void);

#endif
