/*
 * hostmap.c -- a file mapped as a host buffer (gl_hostbuf_map, hostmem.h).
 *
 * The file is mapped shared, so that what is written to the memory (from
 * Lua, or by a copy from the device) is written to the file, and read-only
 * where the caller asks (the mapping's pages too: a stray write faults
 * rather than changes the file). The mapping is then page-locked with
 * cuMemHostRegister (portable, as pinned buffers are; read-only where it is)
 * so that copies run asynchronously; where the driver refuses (read-only or
 * file-backed registration unsupported, too little memory to lock), the
 * buffer stays pageable and copies still work. hostmem.c releases it like
 * any buffer, once its copies have finished: unregistered, then unmapped.
 * The descriptor is closed once the file is mapped.
 */
#include "hostmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "runtime.h"

/* The open file's descriptor, checked: a regular file of a whole, non-zero
 * number of elements; -1 with the error. */
static int open_file(gl_runtime *rt, const char *path, gl_dtype dt, int writable, const char *call, size_t *bytes) {
  /* O_NONBLOCK: a FIFO's open would otherwise wait for a writer before it is refused */
  int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == EISDIR) return gl_fail(rt, "%s: %s: is a directory, not a file", call, path);
    return gl_fail(rt, "%s: %s: cannot open it%s: %s", call, path, writable ? " for reading and writing" : "",
                   strerror(e));
  }
  struct stat st;
  const char *why = NULL;
  if (fstat(fd, &st) != 0) why = strerror(errno);
  else if (S_ISDIR(st.st_mode)) why = "is a directory, not a file";
  else if (!S_ISREG(st.st_mode)) why = "is not a regular file";
  else if (st.st_size == 0) why = "the file is empty (0 bytes): nothing to map";
  if (why) {
    close(fd);
    return gl_fail(rt, "%s: %s: %s", call, path, why);
  }
  size_t size = gl_dtypes[dt].size;
  if ((uint64_t)st.st_size % size != 0) {
    close(fd);
    return gl_fail(rt, "%s: %s: %lld bytes is not a whole number of %s (%zu bytes each)", call, path,
                   (long long)st.st_size, gl_dtypes[dt].name, size);
  }
  *bytes = (size_t)st.st_size;
  return fd;
}

/* Page-lock m's mapping (a context is needed, device 0's as for pinned
 * buffers): 0 locked, 1 left pageable (the driver refused, or the file is
 * larger than the host's memory: locking it would only thrash), -1 with the
 * error when no device opens. */
static int lock_pages(gl_runtime *rt, gl_hostmem *m) {
  if (gl_host_larger_than_memory(m->bytes)) return 1;
  gl_device *d0;
  if (gl_device_open(rt, 0, rt->names.device, &d0) != 0) return -1;
  gl_set_ctx(d0);
  unsigned flags = CU_MEMHOSTREGISTER_PORTABLE | (m->readonly ? CU_MEMHOSTREGISTER_READ_ONLY : 0);
  if (gld_drv.cuMemHostRegister(m->ptr, m->bytes, flags) != CUDA_SUCCESS) return 1;
  rt->pinned_held += m->bytes;
  return 0;
}

int gl_hostbuf_map(gl_runtime *rt, const char *path, gl_dtype dt, int writable, const char *call, gl_hostbuf *h) {
  if (gl_retire_pending(rt)) gl_retire_reap(rt, 0);
  size_t bytes = 0;
  int fd = open_file(rt, path, dt, writable, call, &bytes);
  if (fd < 0) return -1;
  void *p = mmap(NULL, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd); /* the mapping keeps the file */
  if (p == MAP_FAILED) return gl_fail(rt, "%s: %s: cannot map its %zu bytes: %s", call, path, bytes, strerror(e));
  gl_hostmem *m = calloc(1, sizeof *m);
  char *name = strdup(path);
  if (!m || !name) {
    free(m);
    free(name);
    munmap(p, bytes);
    return gl_fail_nomem(rt, call);
  }
  m->rt = rt;
  m->ptr = p;
  m->bytes = bytes;
  m->mapped = 1;
  m->readonly = !writable;
  m->path = name;
  int rc = lock_pages(rt, m);
  if (rc < 0) {
    munmap(p, bytes);
    free(name);
    free(m);
    return -1;
  }
  m->registered = m->pinned = rc == 0;
  m->refs = 1;
  m->freed_at = GL_LOC_NONE;
  gl_hostbuf_init(h, m, dt, bytes / gl_dtypes[dt].size);
  return 0;
}
