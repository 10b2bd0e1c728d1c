// LAPACK through OpenBLAS (Fortran interface; gfortran passes character
// arguments with hidden lengths, given last), on one thread.
#include "vkblr-fit/init/host_lapack.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vkblr/error.hpp"

extern "C" {
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t uplo_len);
void dtrtri_(const char* uplo, const char* diag, const int* n, double* a, const int* lda, int* info,
             std::size_t uplo_len, std::size_t diag_len);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, std::size_t jobz_len, std::size_t uplo_len);
void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b,
             const int* ldb, int* info, std::size_t uplo_len);
void dsysv_(const char* uplo, const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b,
            const int* ldb, double* work, const int* lwork, int* info, std::size_t uplo_len);
void openblas_set_num_threads(int threads);
}

namespace vkblr::fit {
namespace {

// OpenBLAS splits its blocked algorithms' sums by its thread count, which
// follows the cores the process may use (taskset, an MPI rank's binding)
// and OPENBLAS_NUM_THREADS. One thread, set before the first call, leaves
// the CPU's instruction set (which picks OpenBLAS's kernels) the only
// thing of the host that decides the bits (docs/guide.md, "Same bits").
// Cost: a 1600×1600 dsyevd takes about 0.4 s on one core.
void use_one_blas_thread() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

// Before each LAPACK call: n as LAPACK's int, checked against the values
// given, and OpenBLAS on one thread.
int prepare_lapack(std::size_t n, std::size_t have, const char* op) {
  use_one_blas_thread();
  require(n >= 1 && n <= static_cast<std::size_t>(std::numeric_limits<int>::max() / 2), "{}: n = {}", op, n);
  require(have == n * n, "{}: {} values for an {}×{} matrix", op, have, n, n);
  return static_cast<int>(n);
}

// Row-major upper = column-major lower: LAPACK sees the transpose.
constexpr char kRowUpper = 'L';

}  // namespace

bool cholesky_upper(std::vector<double>& g, std::size_t n) {
  const int ni = prepare_lapack(n, g.size(), "cholesky_upper");
  int info = 0;
  dpotrf_(&kRowUpper, &ni, g.data(), &ni, &info, 1);
  if (info != 0) return false;
  for (std::size_t i = 0; i < n; ++i) std::fill_n(g.begin() + static_cast<std::ptrdiff_t>(i * n), i, 0.0);
  return true;
}

void invert_upper(std::vector<double>& r, std::size_t n) {
  const int ni = prepare_lapack(n, r.size(), "invert_upper");
  int info = 0;
  const char diag = 'N';
  dtrtri_(&kRowUpper, &diag, &ni, r.data(), &ni, &info, 1, 1);
  require(info == 0, "invert_upper: the factor is singular (diagonal {} is zero)", info);
}

SymmetricEigen symmetric_eigen(std::vector<double> g, std::size_t n) {
  const int ni = prepare_lapack(n, g.size(), "symmetric_eigen");
  SymmetricEigen out;
  out.values.resize(n);
  const char jobz = 'V', uplo = 'U';
  int info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  double work_query = 0;
  dsyevd_(&jobz, &uplo, &ni, g.data(), &ni, out.values.data(), &work_query, &lwork, &iwork_query, &liwork, &info, 1,
          1);
  require(info == 0, "symmetric_eigen: workspace query failed (info {})", info);
  lwork = static_cast<int>(work_query);
  liwork = iwork_query;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsyevd_(&jobz, &uplo, &ni, g.data(), &ni, out.values.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1,
          1);
  require(info == 0, "symmetric_eigen: LAPACK dsyevd did not converge (info {})", info);
  // LAPACK: ascending values, vector j in column j of the column-major
  // result, i.e. in row j of `g` read row-major. Reverse to descending and
  // store vector j in column j of a row-major matrix.
  std::reverse(out.values.begin(), out.values.end());
  out.vectors.resize(n * n);
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t source = n - 1 - j;
    for (std::size_t i = 0; i < n; ++i) out.vectors[i * n + j] = g[source * n + i];
  }
  return out;
}

std::vector<double> solve_ridged(std::vector<double> g, std::vector<double> b, std::size_t n, double ridge) {
  const int ni = prepare_lapack(n, g.size(), "solve_ridged");
  require(b.size() == n, "solve_ridged: right-hand side of {} for n = {}", b.size(), n);
  double mean_diagonal = 0;
  for (std::size_t i = 0; i < n; ++i) mean_diagonal += g[i * n + i];
  mean_diagonal = std::max(mean_diagonal / static_cast<double>(n), 1e-300);
  for (std::size_t i = 0; i < n; ++i) g[i * n + i] += ridge * mean_diagonal;
  const std::vector<double> g0 = g, b0 = b;
  const int one = 1;
  int info = 0;
  dpotrf_(&kRowUpper, &ni, g.data(), &ni, &info, 1);
  if (info == 0) {
    dpotrs_(&kRowUpper, &ni, &one, g.data(), &ni, b.data(), &ni, &info, 1);
  } else {
    g = g0;
    b = b0;
    std::vector<int> ipiv(n);
    int lwork = -1;
    double work_query = 0;
    dsysv_(&kRowUpper, &ni, &one, g.data(), &ni, ipiv.data(), b.data(), &ni, &work_query, &lwork, &info, 1);
    lwork = std::max(1, static_cast<int>(work_query));
    std::vector<double> work(static_cast<std::size_t>(lwork));
    dsysv_(&kRowUpper, &ni, &one, g.data(), &ni, ipiv.data(), b.data(), &ni, work.data(), &lwork, &info, 1);
  }
  if (info != 0 || !std::all_of(b.begin(), b.end(), [](double x) { return std::isfinite(x); })) return {};
  return b;
}

}  // namespace vkblr::fit
