// The ILP handed to GLPK: the LP relaxation by the simplex method, then branch and bound from it,
// both under one time limit.
#include "src/spmd/ilp_solver.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"

namespace vkspmd::spmd {
namespace {

struct ProblemDeleter {
  void operator()(glp_prob* problem) const { glp_delete_prob(problem); }
};

int Milliseconds(double seconds) {
  return static_cast<int>(std::clamp(seconds * 1000.0, 1.0, 2.0e9));
}

}  // namespace

int64_t IlpProblem::AddVariable(double cost, bool binary) {
  costs_.push_back(cost);
  binary_.push_back(binary);
  return variable_count() - 1;
}

void IlpProblem::AddRow(std::vector<Term> terms, double lower, double upper) {
  rows_.push_back(Row{std::move(terms), lower, upper});
}

int64_t IlpProblem::nonzero_count() const {
  int64_t count = 0;
  for (const Row& row : rows_) count += static_cast<int64_t>(row.terms.size());
  return count;
}

absl::StatusOr<IlpProblem::Solution> IlpProblem::Solve(double time_limit_seconds) const {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::unique_ptr<glp_prob, ProblemDeleter> problem(glp_create_prob());
  glp_prob* lp = problem.get();
  glp_set_obj_dir(lp, GLP_MIN);
  const int columns = static_cast<int>(variable_count());
  if (columns == 0) return Solution{{}, 0, true, 0};
  glp_add_cols(lp, columns);
  for (int v = 0; v < columns; ++v) {
    glp_set_col_kind(lp, v + 1, binary_[v] ? GLP_BV : GLP_CV);
    glp_set_col_bnds(lp, v + 1, GLP_DB, 0.0, 1.0);
    glp_set_obj_coef(lp, v + 1, costs_[v]);
  }
  // GLPK's arrays are 1-based: element 0 is unused.
  std::vector<int> row_index(1), column_index(1);
  std::vector<double> values(1);
  if (!rows_.empty()) glp_add_rows(lp, static_cast<int>(rows_.size()));
  for (size_t r = 0; r < rows_.size(); ++r) {
    const Row& row = rows_[r];
    const int type = std::isinf(row.lower)    ? (std::isinf(row.upper) ? GLP_FR : GLP_UP)
                     : std::isinf(row.upper)  ? GLP_LO
                     : row.lower == row.upper ? GLP_FX
                                              : GLP_DB;
    glp_set_row_bnds(lp, static_cast<int>(r) + 1, type, std::isinf(row.lower) ? 0 : row.lower,
                     std::isinf(row.upper) ? 0 : row.upper);
    for (const Term& term : row.terms) {
      row_index.push_back(static_cast<int>(r) + 1);
      column_index.push_back(static_cast<int>(term.variable) + 1);
      values.push_back(term.coefficient);
    }
  }
  glp_load_matrix(lp, static_cast<int>(values.size()) - 1, row_index.data(), column_index.data(),
                  values.data());

  glp_smcp simplex;
  glp_init_smcp(&simplex);
  simplex.msg_lev = GLP_MSG_OFF;
  simplex.presolve = GLP_ON;
  simplex.meth = GLP_DUALP;  // faster than the primal here: a plan is feasible from the start
  simplex.tm_lim = Milliseconds(time_limit_seconds);
  const int relaxed = glp_simplex(lp, &simplex);
  if (relaxed == GLP_ENOPFS || relaxed == GLP_ENODFS || glp_get_status(lp) == GLP_NOFEAS) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the auto-sharding ILP has no feasible solution (", variable_count(), " variables, ",
        row_count(), " rows): the memory limit is below every plan's memory"));
  }
  if (relaxed != 0 || glp_get_status(lp) != GLP_OPT) {
    return absl::DeadlineExceededError(absl::StrCat(
        "GLPK did not solve the auto-sharding LP relaxation in the ", time_limit_seconds,
        " s it was given (glp_simplex code ", relaxed, ", ", variable_count(), " variables)"));
  }
  glp_iocp branch;
  glp_init_iocp(&branch);
  branch.msg_lev = GLP_MSG_OFF;
  branch.presolve = GLP_OFF;  // the basis from the simplex above is the starting point
  branch.fp_heur = GLP_ON;    // a feasible plan early, in case the time limit stops the search
  branch.tm_lim = Milliseconds(time_limit_seconds - elapsed());
  const int searched = glp_intopt(lp, &branch);
  const int status = glp_mip_status(lp);
  if (status == GLP_NOFEAS) {
    return absl::FailedPreconditionError(
        "the auto-sharding ILP has no integer solution: the memory limit is below every plan's "
        "memory");
  }
  if (status != GLP_OPT && status != GLP_FEAS) {
    return absl::DeadlineExceededError(absl::StrCat(
        "GLPK found no integer solution of the auto-sharding ILP in the ", time_limit_seconds,
        " s it was given (glp_intopt code ", searched, ", ", variable_count(), " variables)"));
  }
  Solution solution;
  solution.values.resize(columns);
  for (int v = 0; v < columns; ++v) solution.values[v] = glp_mip_col_val(lp, v + 1);
  solution.objective = glp_mip_obj_val(lp);
  solution.optimal = searched == 0 && status == GLP_OPT;
  solution.stopped_at_time_limit = searched == GLP_ETMLIM;
  solution.seconds = elapsed();
  return solution;
}

}  // namespace vkspmd::spmd
