/*
 * signature.h -- kernel signatures: "f32, const f32*, f32*, u64".
 */
#ifndef GPULUA_SIGNATURE_H
#define GPULUA_SIGNATURE_H

#include <stddef.h>

#define GL_MAX_PARAMS 64

typedef struct {
  int is_ptr;   /* a pointer parameter: a slice */
  int is_const; /* const T*: the kernel only reads it */
  int dtype;    /* a gl_dtype, or -1 for void* */
} gl_param;

typedef struct {
  int n;
  gl_param p[GL_MAX_PARAMS];
} gl_signature;

/* Parse `s`. Returns 0, or -1 with a message in err. */
int gl_signature_parse(const char *s, gl_signature *out, char *err, size_t errlen);

/* Room for the canonical text of any signature (64 times "const bf16*, "). */
#define GL_SIGNATURE_TEXT_MAX 1024

/* Write the canonical text of a signature ("f32, const f32*, u64"). */
void gl_signature_format(const gl_signature *sig, char *buf, size_t len);

/* Bytes the parameter takes in the kernel's parameter buffer. */
size_t gl_param_size(const gl_param *p);

#endif
