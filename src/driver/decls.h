/*
 * decls.h -- how gpulua writes its own declarations of NVIDIA's APIs
 * (cuda_decls.h: the driver; nvrtc_table.h: NVRTC; cublas_table.h: cuBLAS),
 * so that gpulua builds without the CUDA toolkit's headers.
 *
 * Each API's declarations are lists (X-macros), and these macros turn a list
 * into C declarations. The lists are the single source of both gpulua's
 * declarations and their check: tests/c/test_cuda_decls.c includes the
 * toolkit's headers and then gpulua's with GL_DECLS_FROM_TOOLKIT defined,
 * which leaves out every type and value gpulua would declare (the toolkit
 * declares them) and keeps the lists, so the test walks the same lists and
 * compares each entry with the toolkit's.
 *
 * The lists' shapes:
 *   scalars     X(name, C type)                     typedef type name;
 *   handles     X(name, struct tag)                 typedef struct tag *name;
 *   fn types    X(name, return type, (parameters))  typedef ret (*name)(params);
 *   enums       X(type, enum tag, VALUES)           typedef enum tag {...} type;
 *     VALUES    V(name, value)                      each name = value
 *   constants   X(name, value)                      an enum constant (the toolkit's
 *                                                   are #defines of the same value)
 *   structs     X(type, struct tag, MEMBERS)        typedef struct tag {...} type;
 *     MEMBERS   (M, S): M(S, member type, name)     in the toolkit's order (S is
 *                                                   the struct's type, for the test)
 * Only what gpulua uses is declared: an enum lists the values gpulua names,
 * not all of the toolkit's (its type keeps the toolkit's size and sign,
 * which the test checks).
 */
#ifndef GPULUA_DRIVER_DECLS_H
#define GPULUA_DRIVER_DECLS_H

#define GL_DECL_SCALAR(name, type) typedef type name;
#define GL_DECL_HANDLE(name, tag) typedef struct tag *name;
#define GL_DECL_FN_TYPE(name, ret, params) typedef ret(*name) params;
#define GL_DECL_VALUE(name, value) name = (value),
#define GL_DECL_ENUM(type, tag, values) typedef enum tag { values(GL_DECL_VALUE) } type;
#define GL_DECL_MEMBER(stype, type, name) type name;
#define GL_DECL_STRUCT(type, tag, members) typedef struct tag { members(GL_DECL_MEMBER, type) } type;

#endif
