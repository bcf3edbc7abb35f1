// printf of every conversion CUDA's printf has, and assert: each thread below
// n prints one line; `checked` asserts each element is below n
#include <cassert>
#include <cstdio>
extern "C" __global__ void show(const char *name, int n, double d, float f, long long ll, unsigned long long u, char c,
                                short h, long l) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n)
    printf("[%d] %s %5.2f|%-10.3e|%g|%lld|%llu|%x|%X|%#o|%c|%+05d|%hd|%hhu|%%|%8s|%-6s|%.2s|%ld|%lu|%i|%u|%E|%G|%F|%a|%lf\n",
           t, name, d, f, d, ll, u, t * 4099, t * 4099, t, c, t - 3, h, (unsigned char)(t + 250), name, name, name, l,
           (unsigned long)l, -t, (unsigned)-t, d, d * 1e10, d, d, (double)f);
}

// block after block, thread after thread: the order printf's lines come in
extern "C" __global__ void hello() { printf("hello from thread %d of block %d\n", threadIdx.x, blockIdx.x); }

// a width and a precision given as arguments (negative width: left-justified)
extern "C" __global__ void star(int w, int p, double d) { printf("<%*.*f|%*d>\n", w, p, d, -w, 7); }

// a null string, a pointer, no arguments at all
extern "C" __global__ void odd(const char *s, const void *p) {
  printf("%s|%p\n", s, p);
  printf("plain\n");
}

// printf's result: how many arguments it read
extern "C" __global__ void count(int *out) { out[threadIdx.x] = printf("%d %d %s\n", 1, 2, "x"); }

extern "C" __global__ void checked(const int *x, int n) { assert(x[threadIdx.x] < n); }
