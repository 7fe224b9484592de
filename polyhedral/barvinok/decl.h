/* polyc's declarations of the isl and barvinok functions it calls in the barvinok
 * library loaded at run time (see polyhedral/src/barvinok.rs). Written for polyc from the
 * functions' documented signatures; bindgen turns this file into the FFI.
 *
 * Every object crosses this boundary as isl text: polyc's own isl (linked statically by
 * isl-rs) and the isl that barvinok was built against are two different libraries, and
 * no pointer of one may reach the other. The types are therefore opaque here. */

#include <stddef.h>

typedef struct isl_ctx isl_ctx;
typedef struct isl_set isl_set;
typedef struct isl_union_set isl_union_set;
typedef struct isl_union_map isl_union_map;
typedef struct isl_point isl_point;
typedef struct isl_val isl_val;
typedef struct isl_union_pw_qpolynomial isl_union_pw_qpolynomial;
typedef struct isl_union_pw_qpolynomial_fold isl_union_pw_qpolynomial_fold;
typedef struct isl_pw_qpolynomial_fold isl_pw_qpolynomial_fold;

/* isl_fold: the kind of bound (isl/polynomial_type.h). */
enum isl_fold { isl_fold_error = -1, isl_fold_min = 0, isl_fold_max = 1, isl_fold_list = 2 };
/* isl_bool (isl/ctx.h). */
typedef int isl_bool;
/* isl_stat (isl/ctx.h). */
typedef int isl_stat;

/* Contexts and options. */
isl_ctx *isl_ctx_alloc(void);
void isl_ctx_free(isl_ctx *ctx);
isl_stat isl_options_set_on_error(isl_ctx *ctx, int val);
const char *isl_ctx_last_error_msg(isl_ctx *ctx);
void isl_ctx_reset_error(isl_ctx *ctx);

/* Reading (the text crosses, never the objects). */
isl_set *isl_set_read_from_str(isl_ctx *ctx, const char *str);
isl_union_set *isl_union_set_read_from_str(isl_ctx *ctx, const char *str);
isl_union_map *isl_union_map_read_from_str(isl_ctx *ctx, const char *str);
isl_union_pw_qpolynomial *isl_union_pw_qpolynomial_read_from_str(isl_ctx *ctx, const char *str);

/* Freeing. */
isl_set *isl_set_free(isl_set *set);
isl_union_set *isl_union_set_free(isl_union_set *uset);
isl_union_map *isl_union_map_free(isl_union_map *umap);
isl_point *isl_point_free(isl_point *pnt);
isl_val *isl_val_free(isl_val *v);
isl_union_pw_qpolynomial *isl_union_pw_qpolynomial_free(isl_union_pw_qpolynomial *upwqp);
isl_union_pw_qpolynomial_fold *isl_union_pw_qpolynomial_fold_free(
	isl_union_pw_qpolynomial_fold *upwf);

/* Printing: the strings are malloc'ed and freed by the caller with free(). */
char *isl_union_pw_qpolynomial_to_str(isl_union_pw_qpolynomial *upwqp);
char *isl_union_pw_qpolynomial_fold_to_str(isl_union_pw_qpolynomial_fold *upwf);
char *isl_val_to_str(isl_val *v);

/* Arithmetic and simplification on quasi-polynomials. */
isl_union_pw_qpolynomial *isl_union_pw_qpolynomial_copy(isl_union_pw_qpolynomial *upwqp);
isl_union_pw_qpolynomial *isl_union_pw_qpolynomial_gist_params(
	isl_union_pw_qpolynomial *upwqp, isl_set *context);
isl_union_pw_qpolynomial *isl_union_pw_qpolynomial_scale_val(
	isl_union_pw_qpolynomial *upwqp, isl_val *v);
isl_union_pw_qpolynomial *isl_union_pw_qpolynomial_add(
	isl_union_pw_qpolynomial *upwqp1, isl_union_pw_qpolynomial *upwqp2);
isl_union_pw_qpolynomial_fold *isl_union_pw_qpolynomial_fold_gist_params(
	isl_union_pw_qpolynomial_fold *upwf, isl_set *context);
isl_val *isl_val_int_from_si(isl_ctx *ctx, long i);
isl_point *isl_set_sample_point(isl_set *set);

/* barvinok's isl-level counting (barvinok/isl.h in the barvinok sources). */
isl_union_pw_qpolynomial *isl_union_set_card(isl_union_set *uset);
isl_union_pw_qpolynomial *isl_union_map_card(isl_union_map *umap);
isl_union_pw_qpolynomial *isl_union_pw_qpolynomial_sum(isl_union_pw_qpolynomial *upwqp);
isl_union_pw_qpolynomial_fold *isl_union_pw_qpolynomial_bound(
	isl_union_pw_qpolynomial *upwqp, enum isl_fold type, isl_bool *tight);
isl_val *isl_union_pw_qpolynomial_eval(isl_union_pw_qpolynomial *upwqp, isl_point *pnt);
/* Bounds (folds) over parameters only, read back from their text and evaluated. */
isl_pw_qpolynomial_fold *isl_pw_qpolynomial_fold_read_from_str(isl_ctx *ctx, const char *str);
isl_val *isl_pw_qpolynomial_fold_eval(isl_pw_qpolynomial_fold *pwf, isl_point *pnt);
