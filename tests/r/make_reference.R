# Reference values from R's survey package for kanon's design-based estimates.
#
# Usage (from the repository root):
#   Rscript tests/r/make_reference.R [DATA_DIR] [OUT_DIR]
# Both default to tests/fixtures/r_survey. Reads design_a.csv and design_lonely.csv (made by
# make_data.R) and design_fpc.csv and design_fpc_lonely.csv (made by make_fpc_data.R), and writes
# expected_*.csv. tests/test_survey_r.py re-runs this script into a temporary
# directory when R is available; the stored expected_*.csv files are compared on every test run.
#
# Conventions mirrored by kanon (see kanon_core/utility/design.py):
#   * PSU ids are nested within strata (nest = TRUE), first-stage with-replacement; the *_fpc and
#     *_frac designs add a finite population correction (fpc = ~COL, population sizes or fractions);
#   * proportions: svymean(~factor(x), na.rm = TRUE) -> Wald CI from confint() (normal quantile);
#     logit CI from svyciprop(~I(x == level), design, method = "logit"), whose df is degf(design)
#     of the whole design;
#   * regression: svyglm (gaussian / quasibinomial); summary() t tests with
#     df = degf(design after dropping incomplete records) + 1 - number of coefficients;
#     regTermTest() Wald F (ddf = that df) and chi-square (df = Inf).

suppressMessages(library(survey))
args <- commandArgs(trailingOnly = TRUE)
data_dir <- if (length(args) >= 1) args[1] else "tests/fixtures/r_survey"
out_dir <- if (length(args) >= 2) args[2] else "tests/fixtures/r_survey"
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

read_data <- function(name) {
  read.csv(file.path(data_dir, name), stringsAsFactors = FALSE, na.strings = "")
}

make_design <- function(kind, data) {
  switch(kind,
    full = svydesign(id = ~psu, strata = ~stratum, weights = ~w, nest = TRUE, data = data),
    strata = svydesign(id = ~1, strata = ~stratum, weights = ~w, data = data),
    cluster = svydesign(id = ~psu_global, weights = ~w, data = data),
    weights = svydesign(id = ~1, weights = ~w, data = data),
    full_fpc = svydesign(id = ~psu, strata = ~stratum, weights = ~w, fpc = ~N_psu, nest = TRUE, data = data),
    full_frac = svydesign(id = ~psu, strata = ~stratum, weights = ~w, fpc = ~f_psu, nest = TRUE, data = data),
    full_fpc1 = svydesign(id = ~psu, strata = ~stratum, weights = ~w, fpc = ~N_psu1, nest = TRUE, data = data),
    strata_fpc = svydesign(id = ~1, strata = ~stratum, weights = ~w, fpc = ~N_rec, data = data),
    cluster_fpc = svydesign(id = ~psu_global, weights = ~w, fpc = ~N_clu, data = data),
    weights_frac = svydesign(id = ~1, weights = ~w, fpc = ~f_all, data = data)
  )
}

cases <- list(
  list(file = "design_a.csv", design = "full", lonely = "fail"),
  list(file = "design_a.csv", design = "strata", lonely = "fail"),
  list(file = "design_a.csv", design = "cluster", lonely = "fail"),
  list(file = "design_a.csv", design = "weights", lonely = "fail"),
  list(file = "design_lonely.csv", design = "full", lonely = "adjust"),
  list(file = "design_lonely.csv", design = "full", lonely = "remove"),
  list(file = "design_lonely.csv", design = "full", lonely = "certainty"),
  list(file = "design_lonely.csv", design = "full", lonely = "average"),
  list(file = "design_fpc.csv", design = "full_fpc", lonely = "fail"),
  list(file = "design_fpc.csv", design = "full_frac", lonely = "fail"),
  list(file = "design_fpc.csv", design = "strata_fpc", lonely = "fail"),
  list(file = "design_fpc.csv", design = "cluster_fpc", lonely = "fail"),
  list(file = "design_fpc.csv", design = "weights_frac", lonely = "fail"),
  list(file = "design_fpc_lonely.csv", design = "full_fpc", lonely = "adjust"),
  list(file = "design_fpc_lonely.csv", design = "full_fpc", lonely = "average"),
  list(file = "design_fpc_lonely.csv", design = "full_fpc1", lonely = "fail"),
  list(file = "design_fpc_lonely.csv", design = "full_fpc1", lonely = "average")
)

props <- list()
means <- list()
coefs <- list()
tests <- list()
ctl <- glm.control(epsilon = 1e-14, maxit = 100)

for (cs in cases) {
  options(survey.lonely.psu = cs$lonely)
  data <- read_data(cs$file)
  des <- make_design(cs$design, data)
  id <- c(file = cs$file, design = cs$design, lonely = cs$lonely)
  df_design <- degf(des)

  for (v in c("x", "a")) {
    est <- svymean(as.formula(paste0("~factor(", v, ")")), des, na.rm = TRUE)
    wald <- confint(est)
    levs <- sort(unique(data[[v]][!is.na(data[[v]])]))
    for (k in seq_along(levs)) {
      lev <- levs[k]
      f <- eval(bquote(~I(.(as.name(v)) == .(lev))))
      cp <- svyciprop(f, des, method = "logit")
      ci <- attr(cp, "ci")
      props[[length(props) + 1]] <- data.frame(
        t(id), variable = v, level = as.character(lev),
        estimate = unname(coef(est)[k]), se = unname(SE(est)[k]),
        wald_low = wald[k, 1], wald_high = wald[k, 2],
        logit_low = unname(ci[1]), logit_high = unname(ci[2]), degf = df_design
      )
    }
  }

  for (v in c("y", "b")) {
    est <- svymean(as.formula(paste0("~", v)), des, na.rm = TRUE)
    means[[length(means) + 1]] <- data.frame(
      t(id), variable = v, estimate = unname(coef(est)), se = unname(SE(est))
    )
  }

  models <- list(
    linear = list(formula = y ~ factor(a) + b + factor(c), family = gaussian()),
    logistic = list(formula = yb ~ factor(a) + b + factor(c), family = quasibinomial())
  )
  for (mname in names(models)) {
    spec <- models[[mname]]
    fit <- svyglm(spec$formula, design = des, family = spec$family, control = ctl)
    # glm's working weights lag one IRLS step behind the final coefficients; restarting from the
    # converged coefficients makes the sandwich use weights at the solution (SEs exact to ~1e-12).
    fit <- svyglm(spec$formula, design = des, family = spec$family, control = ctl, start = coef(fit))
    tab <- summary(fit)$coefficients
    coefs[[length(coefs) + 1]] <- data.frame(
      t(id), model = mname, term = rownames(tab),
      estimate = tab[, 1], se = tab[, 2], t = tab[, 3], p = tab[, 4],
      df_resid = fit$df.residual, n_used = nrow(model.matrix(fit)), row.names = NULL
    )
    for (term in attr(terms(spec$formula), "term.labels")) {
      tf <- as.formula(paste0("~", term))
      ft <- regTermTest(fit, tf)
      ch <- regTermTest(fit, tf, df = Inf)
      tests[[length(tests) + 1]] <- data.frame(
        t(id), model = mname, term = term,
        f = as.numeric(ft$Ftest), df = ft$df, ddf = ft$ddf, p_f = as.numeric(ft$p),
        chisq = as.numeric(ch$chisq), p_chisq = as.numeric(ch$p)
      )
    }
  }
}

write_out <- function(rows, name) {
  df <- do.call(rbind, rows)
  num <- vapply(df, is.numeric, TRUE)
  df[num] <- lapply(df[num], function(col) sprintf("%.17g", col))
  write.csv(df, file.path(out_dir, name), row.names = FALSE, quote = TRUE)
}
write_out(props, "expected_proportions.csv")
write_out(means, "expected_means.csv")
write_out(coefs, "expected_coefficients.csv")
write_out(tests, "expected_termtests.csv")

# lonely.psu = "fail" must refuse the design with a single-PSU stratum.
options(survey.lonely.psu = "fail")
des <- make_design("full", read_data("design_lonely.csv"))
failed <- tryCatch({ svymean(~y, des, na.rm = TRUE); FALSE }, error = function(e) TRUE)
writeLines(if (failed) "fail: error" else "fail: no error", file.path(out_dir, "expected_fail.txt"))
